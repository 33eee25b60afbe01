//! GitHub Actions workflow commands, one line per finding:
//! `::error file=F,line=L,col=C,title=IR001 skip-probe-serving::message`.
//!
//! Escaping follows the runner's rules: in the message `%`, `\r`, `\n`; in
//! property values additionally `:` and `,`.

use std::io::{self, Write};

use super::emit::{Emitter, End};
use crate::engine::LintOutcome;
use crate::engine::summary::InputError;
use crate::finding::{Finding, Severity};

/// Escape the message part of a workflow command.
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escape a property value (`file=`, `title=`) of a workflow command.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

fn location(file: &str, line: usize, column: usize) -> String {
    let mut props = format!("file={}", escape_property(file));
    // Live objects have no position; a file-level annotation is the honest
    // rendering.
    if line > 0 {
        props.push_str(&format!(",line={line}"));
        if column > 0 {
            props.push_str(&format!(",col={column}"));
        }
    }
    props
}

fn finding_line(f: &Finding) -> String {
    let command = match f.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    format!(
        "::{command} {},title={}::{}",
        location(&f.file, f.line, f.column),
        escape_property(&format!("{} {}", f.code, f.name)),
        escape_data(&f.message)
    )
}

fn input_error_line(e: &InputError) -> String {
    format!(
        "::error {},title={}::{}",
        location(&e.file, e.line.unwrap_or(0), e.column.unwrap_or(0)),
        escape_property("infera input error"),
        escape_data(&e.message)
    )
}

/// One annotation per finding as it arrives; at the end one per input
/// error, then a notice per skipped kind and input.
pub(crate) struct GithubEmitter;

impl Emitter for GithubEmitter {
    fn finding(&mut self, out: &mut dyn Write, f: &Finding, _: Option<&str>) -> io::Result<()> {
        writeln!(out, "{}", finding_line(f))
    }

    fn finish(&mut self, out: &mut dyn Write, end: &End<'_>) -> io::Result<()> {
        for e in end.errors {
            writeln!(out, "{}", input_error_line(e))?;
        }
        for k in &end.summary.skipped_kinds {
            writeln!(
                out,
                "::notice title=infera lint::{}",
                super::skipped_line(k)
            )?;
        }
        for i in &end.summary.skipped_inputs {
            let line = super::skipped_input_line(i);
            writeln!(out, "::notice title=infera lint::{line}")?;
        }
        for u in &end.summary.unjudged {
            let line = super::unjudged_line(u);
            writeln!(out, "::notice title=infera lint::{line}")?;
        }
        Ok(())
    }
}

/// One annotation per finding, then one per input error.
pub fn write(out: &mut dyn Write, outcome: &LintOutcome) -> io::Result<()> {
    super::write_outcome(out, super::Format::Github, outcome, &[], None, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_support::{input_error, outcome_with, sample_findings};

    #[test]
    fn one_line_per_finding_in_the_documented_form() {
        let mut outcome = outcome_with(sample_findings());
        outcome.findings[0].message = "50% of pods: gone,\nfix it".into();
        outcome.input_errors.push(input_error());
        let mut buf = Vec::new();
        write(&mut buf, &outcome).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[0],
            "::error file=recipes/pd.yaml,line=12,col=9,title=IR001 skip-probe-serving::50%25 of pods: gone,%0Afix it"
        );
        assert!(lines[1].starts_with(
            "::warning file=recipes/pd.yaml,line=15,col=13,title=IR005 probe-not-registration::"
        ));
        assert!(
            lines[2].starts_with(
                "::error file=recipes/bad.yaml,line=3,col=7,title=infera input error::"
            )
        );
    }

    #[test]
    fn properties_escape_colon_and_comma() {
        assert_eq!(escape_property("C:\\a,b%\r\n"), "C%3A\\a%2Cb%25%0D%0A");
        assert_eq!(escape_data("a:b,c"), "a:b,c");
    }

    #[test]
    fn live_objects_have_no_line() {
        let mut findings = sample_findings();
        findings[0].file = "cluster".into();
        findings[0].line = 0;
        findings[0].column = 0;
        let mut buf = Vec::new();
        write(&mut buf, &outcome_with(findings)).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(
            text.starts_with("::error file=cluster,title=IR001"),
            "{text}"
        );
    }
}
