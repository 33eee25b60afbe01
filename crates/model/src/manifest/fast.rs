//! The fast loader: a document's [`Node`] tree built straight from the YAML
//! parser's events (granit-parser, the parser under serde-saphyr), with the
//! positions findings point at and text borrowed from the source.
//!
//! It covers what manifests are made of: block and flow mappings and
//! sequences with text keys, quoted and block scalars, and plain scalars in
//! their common spellings (null, `true`/`yes`/…, decimal integers, decimal
//! floats, text). Anything else — a tag, an anchor or alias, a merge key, a
//! key that is not text, a number in a rare spelling (`0x1F`, `1_000`,
//! `0127`, `.inf`), a duplicate key, a syntax error, a document near a
//! budget — answers `None`, and [`super::parse_document`] reads the
//! document through serde-saphyr, which gives the exact value or error.
//! So this loader only ever has to agree with serde-saphyr on the subset
//! it accepts; the tests here (every fixture, a table of spellings, seeded
//! random documents) hold the two together.
//!
//! Why it exists: serde-saphyr's generic path (events → its deserializer →
//! serde visitors) costs more than the events themselves; building the tree
//! from the events is what lets `infera lint` run faster than a generic
//! parse of the same files (the lint benchmark's first target,
//! `docs/benchmarks.md`).

use std::borrow::Cow;

use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, StrInput};

use super::MAX_DEPTH;
use super::node::{Key, Node, Value};

/// The fast path's depth cap: just under [`MAX_DEPTH`]. With its node and
/// event caps (half of serde-saphyr's budget, see [`tree`]) a document
/// anywhere near a limit is left to serde-saphyr, which decides and words
/// the error.
const FAST_MAX_DEPTH: usize = MAX_DEPTH - 2;

/// A collection being filled: its children so far are the builder's
/// scratch stack from `start` on.
enum Frame<'a> {
    Seq {
        start: usize,
        line: u32,
        column: u32,
    },
    Map {
        start: usize,
        key: Option<Key<'a>>,
        line: u32,
        column: u32,
    },
}

/// The tree of one document, or `None` when serde-saphyr must read it.
/// An empty document is `Some` null.
pub fn tree(text: &str) -> Option<Node<'_>> {
    let budget = serde_saphyr::Budget::default();
    let mut parser = Parser::with_options(StrInput::new(text), parser_options(&budget));
    let mut builder = Builder::new(budget.max_nodes / 2);
    let max_events = budget.max_events / 2;
    let mut documents = 0usize;
    let mut events = 0usize;
    while let Some(next) = parser.next_event() {
        let (event, span) = next.ok()?;
        events += 1;
        if events > max_events {
            return None;
        }
        let line = u32::try_from(span.start.line()).ok()?;
        let column = u32::try_from(span.start.col() + 1).ok()?;
        match event {
            Event::DocumentStart(..) => {
                documents += 1;
                if documents > 1 {
                    return None;
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                if anchor != 0 || tag.is_some() {
                    return None;
                }
                builder.scalar(text, style, line, column)?;
            }
            Event::SequenceStart(_, anchor, ref tag) | Event::MappingStart(_, anchor, ref tag) => {
                if anchor != 0 || tag.is_some() {
                    return None;
                }
                let is_map = matches!(event, Event::MappingStart(..));
                builder.open(is_map, line, column)?;
            }
            Event::SequenceEnd | Event::MappingEnd => builder.close()?,
            Event::Alias(_) => return None,
            // Stream and document ends, comments and other presentation
            // events carry no data.
            _ => {}
        }
    }
    builder.finish()
}

/// The parser's options as serde-saphyr sets them for our budget, so the
/// two accept the same syntax.
fn parser_options(budget: &serde_saphyr::Budget) -> serde_saphyr::granit_parser::Options {
    let mut options = serde_saphyr::granit_parser::Options::default();
    options.simple_key_max_lookahead = budget.simple_key_max_lookahead;
    options.flow_nesting_limit = budget.flow_nesting_limit;
    options.block_nesting_limit = options.block_nesting_limit.max(MAX_DEPTH + 1);
    // As `parse_options` tells serde-saphyr: comments carry no data.
    options.emit_comments = false;
    options
}

/// The children of every open collection live on two scratch stacks (items,
/// entries), each collection's on top of its parent's; a closed collection
/// takes its own off in one exactly sized `Vec`. One allocation per
/// collection instead of a `Vec` grown by doubling (a reallocation and a
/// copy at 4, 8, 16 … children), and no spare capacity kept in the tree.
struct Builder<'a> {
    stack: Vec<Frame<'a>>,
    items: Vec<Node<'a>>,
    entries: Vec<(Key<'a>, Node<'a>)>,
    root: Option<Node<'a>>,
    nodes: usize,
    max_nodes: usize,
}

impl<'a> Builder<'a> {
    fn new(max_nodes: usize) -> Self {
        Builder {
            stack: Vec::new(),
            items: Vec::new(),
            entries: Vec::new(),
            root: None,
            nodes: 0,
            max_nodes,
        }
    }

    fn count(&mut self) -> Option<()> {
        self.nodes += 1;
        (self.nodes <= self.max_nodes).then_some(())
    }

    fn scalar(
        &mut self,
        text: Cow<'a, str>,
        style: ScalarStyle,
        line: u32,
        column: u32,
    ) -> Option<()> {
        self.count()?;
        let value = match style {
            ScalarStyle::Plain => resolve_plain(text)?,
            _ => Value::Str(text),
        };
        if let Some(Frame::Map {
            key: key @ None, ..
        }) = self.stack.last_mut()
        {
            let Value::Str(name) = value else {
                // `8: x`, `true: x`, `~: x`: serde-saphyr turns the key into text.
                return None;
            };
            *key = Some(Key { name, line, column });
            return Some(());
        }
        self.attach(Node {
            value,
            line,
            column,
        })
    }

    fn open(&mut self, is_map: bool, line: u32, column: u32) -> Option<()> {
        self.count()?;
        if matches!(self.stack.last(), Some(Frame::Map { key: None, .. })) {
            // A collection as a mapping key.
            return None;
        }
        if self.stack.len() >= FAST_MAX_DEPTH {
            return None;
        }
        self.stack.push(if is_map {
            Frame::Map {
                start: self.entries.len(),
                key: None,
                line,
                column,
            }
        } else {
            Frame::Seq {
                start: self.items.len(),
                line,
                column,
            }
        });
        Some(())
    }

    fn close(&mut self) -> Option<()> {
        let node = match self.stack.pop()? {
            Frame::Seq {
                start,
                line,
                column,
            } => Node {
                value: Value::Seq(self.items.drain(start..).collect()),
                line,
                column,
            },
            Frame::Map {
                start,
                key: None,
                line,
                column,
            } => {
                if has_duplicate_key(&self.entries[start..]) {
                    return None;
                }
                Node {
                    value: Value::Map(self.entries.drain(start..).collect()),
                    line,
                    column,
                }
            }
            Frame::Map { key: Some(_), .. } => return None,
        };
        self.attach(node)
    }

    /// Put a finished node where it belongs. A mapping value keeps no
    /// position of its own: it is located by its key (`Node::locate`).
    fn attach(&mut self, node: Node<'a>) -> Option<()> {
        match self.stack.last_mut() {
            None if self.root.is_none() => self.root = Some(node),
            None => return None,
            Some(Frame::Seq { .. }) => self.items.push(node),
            Some(Frame::Map { key, .. }) => {
                let key = key.take()?;
                if key.name == "<<" {
                    // A merge key: serde-saphyr merges it.
                    return None;
                }
                self.entries.push((key, Node::new(node.value)));
            }
        }
        Some(())
    }

    fn finish(self) -> Option<Node<'a>> {
        if !self.stack.is_empty() {
            return None;
        }
        Some(self.root.unwrap_or_else(|| Node::new(Value::Null)))
    }
}

fn has_duplicate_key(entries: &[(Key<'_>, Node<'_>)]) -> bool {
    if entries.len() <= 32 {
        return entries
            .iter()
            .enumerate()
            .any(|(i, (k, _))| entries[..i].iter().any(|(prev, _)| prev.name == k.name));
    }
    let mut names: Vec<&str> = entries.iter().map(|(k, _)| k.name.as_ref()).collect();
    names.sort_unstable();
    names.windows(2).any(|w| w[0] == w[1])
}

/// A plain scalar's value as serde-saphyr's untyped path infers it (YAML
/// 1.1 booleans, as its default `strict_booleans: false` does), or `None`
/// for the spellings left to it.
fn resolve_plain(text: Cow<'_, str>) -> Option<Value<'_>> {
    let s = text.as_ref();
    if matches!(s, "" | "~" | "null" | "Null" | "NULL") {
        return Some(Value::Null);
    }
    let first = s.as_bytes()[0];
    if first.is_ascii_alphabetic() {
        return Some(yaml11_bool(s).map_or(Value::Str(text), Value::Bool));
    }
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    if !matches!(unsigned.as_bytes().first(), Some(b'0'..=b'9' | b'.')) {
        return Some(Value::Str(text));
    }
    number(s, unsigned).map(|n| n.unwrap_or(Value::Str(text)))
}

/// `Some(Some(number))`, `Some(None)` for text, `None` for a spelling left
/// to serde-saphyr. `unsigned` is `s` without its sign and starts with a
/// digit or a dot.
fn number<'a>(s: &str, unsigned: &str) -> Option<Option<Value<'a>>> {
    let rare = unsigned.contains('_')
        || unsigned.len() > 1
            && unsigned.starts_with('0')
            && matches!(unsigned.as_bytes()[1], b'0'..=b'9' | b'x' | b'o' | b'b');
    if rare {
        return None;
    }
    if matches!(unsigned.as_bytes(), [b'0', b'X' | b'O' | b'B', ..]) {
        // serde-saphyr keeps upper-case radix prefixes as text.
        return Some(None);
    }
    if unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return if s.starts_with('-') {
            s.parse::<i64>().ok().map(|n| Some(Value::Int(n)))
        } else {
            let n = unsigned.parse::<u64>().ok()?;
            Some(Some(
                i64::try_from(n).map_or(Value::Float(n as f64), Value::Int),
            ))
        };
    }
    if matches!(
        unsigned,
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF"
    ) {
        return None;
    }
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() => Some(Some(Value::Float(f))),
        Ok(_) => None,
        Err(_) => Some(None),
    }
}

fn yaml11_bool(s: &str) -> Option<bool> {
    const TRUE: [&str; 4] = ["true", "yes", "y", "on"];
    const FALSE: [&str; 4] = ["false", "no", "n", "off"];
    if TRUE.iter().any(|w| s.eq_ignore_ascii_case(w)) {
        Some(true)
    } else if FALSE.iter().any(|w| s.eq_ignore_ascii_case(w)) {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests_support {
    use super::super::parse_options;
    use super::*;

    /// serde-saphyr's reading of one document, the reference.
    fn full(text: &str) -> Option<Node<'_>> {
        serde_saphyr::from_str_with_options::<Node>(text, parse_options()).ok()
    }

    /// Whether the fast loader took the document; panics if it took it and
    /// disagrees with serde-saphyr (value, type or any position).
    pub fn check(text: &str) -> bool {
        let Some(fast) = tree(text) else {
            return false;
        };
        match full(text) {
            // A null document is dropped whatever its position.
            Some(reference) if fast.value == Value::Null => {
                assert_eq!(reference.value, Value::Null)
            }
            Some(reference) => assert_eq!(fast, reference, "the two loaders differ on:\n{text}"),
            None => panic!("the fast loader accepted what serde-saphyr refuses:\n{text}"),
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::{split_documents, with_parse_stack};
    use super::tests_support::check;
    use super::*;

    #[test]
    fn agrees_with_serde_saphyr_on_every_fixture_and_takes_them_all() {
        with_parse_stack(|| {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
            let mut documents = 0;
            for entry in std::fs::read_dir(&dir).expect("tests/fixtures") {
                let path = entry.expect("a fixture").path();
                if path.extension().is_none_or(|e| e != "yaml") {
                    continue;
                }
                let bytes = std::fs::read(&path).expect("read a fixture");
                for raw in split_documents(&bytes) {
                    let text = std::str::from_utf8(raw.bytes).expect("UTF-8 fixture");
                    assert!(
                        check(text),
                        "{}: a document left to serde-saphyr",
                        path.display()
                    );
                    documents += 1;
                }
            }
            assert!(documents > 20, "only {documents} fixture documents");
        })
        .expect("a parser thread");
    }

    /// Each plain spelling: `fast` says whether the fast loader decides it.
    /// Wherever it does, the value must be serde-saphyr's (checked in map,
    /// block sequence and flow sequence positions).
    #[test]
    fn plain_scalars_resolve_as_serde_saphyr_does() {
        let table: &[(&str, bool)] = &[
            ("", true),
            ("~", true),
            ("null", true),
            ("Null", true),
            ("NULL", true),
            ("nULL", true),
            ("true", true),
            ("True", true),
            ("FALSE", true),
            ("yes", true),
            ("No", true),
            ("on", true),
            ("OFF", true),
            ("y", true),
            ("N", true),
            ("yess", true),
            ("0", true),
            ("8", true),
            ("-8", true),
            ("+8", true),
            ("-0", true),
            ("+0", true),
            ("9223372036854775807", true),
            ("9223372036854775808", true),
            ("18446744073709551615", true),
            ("18446744073709551616", false),
            ("-9223372036854775808", true),
            ("-9223372036854775809", false),
            ("0127", false),
            ("-0127", false),
            ("00", false),
            ("0x1F", false),
            ("0o17", false),
            ("0b101", false),
            ("0X1F", true),
            ("0O17", true),
            ("-0B1", true),
            ("1_000", false),
            ("1.5", true),
            ("-1.5", true),
            ("+1.5", true),
            (".5", true),
            ("1.", true),
            ("0.9", true),
            ("0e5", true),
            ("1e3", true),
            ("1E-3", true),
            ("1e999", false),
            ("-1e999", false),
            (".inf", false),
            ("-.Inf", false),
            (".nan", false),
            ("+.nan", false),
            ("inf", true),
            ("-inf", true),
            ("nan", true),
            ("NaN", true),
            ("infinity", true),
            (".", true),
            ("..", true),
            ("1.2.3", true),
            ("0.9.1", true),
            ("8Gi", true),
            ("100m", true),
            ("2026-12-03", true),
            ("10.0.0.1", true),
            ("1e", true),
            ("-foo", true),
            ("+foo", true),
            ("/models/llama", true),
            ("<PREFILL_NODE>", true),
            ("${GPUS}", true),
            ("rocm/infera:0.9.1", true),
            ("héllo", true),
            ("a b  c", true),
        ];
        for (spelling, fast) in table {
            let mut docs = vec![format!("k: {spelling}\n"), format!("- {spelling}\n")];
            if !spelling.contains(['{', '}', '[', ']', ',']) {
                docs.push(format!("[{spelling}]\n"));
            }
            for doc in &docs {
                assert_eq!(check(doc), *fast, "fast loader on {doc:?}");
            }
        }
    }

    #[test]
    fn keys_positions_and_styles_agree() {
        let taken = [
            "a: 1\nb:\n  c: [1, 2, {d: e}]\n  'q': \"x\\ty\"\n",
            "- a: 1\n  b: 2\n- - x\n  - y\n- {}\n- []\n",
            "---\nkind: List\nitems:\n- kind: A\n  spec: {x: 1}\n...\n",
            "s: |\n  line\n  line2\nf: >-\n  folded\n  text\n",
            "\"quoted key\": 1\n'8': 2\n? complex\n: 3\n",
            "# only comments\n\n",
            "a:\n  - b\n  -\n  - c\n",
            "{a: 1, b: [x, y]}",
        ];
        for doc in taken {
            assert!(check(doc), "left to serde-saphyr: {doc:?}");
        }
        let left = [
            "a: !!str 8\n",
            "a: &x 1\nb: *x\n",
            "base: &b {x: 1}\nc:\n  <<: *b\n",
            "8: eight\n",
            "true: t\n",
            "~: n\n",
            "[a]: 1\n",
            "a: 1\na: 2\n",
            "a: [1\n",
            "a: b: c\n",
            "!custom\na: 1\n",
        ];
        for doc in left {
            assert!(!check(doc), "taken by the fast loader: {doc:?}");
        }
    }

    #[test]
    fn many_keys_duplicate_found_and_depth_left_to_serde_saphyr() {
        let mut doc: String = (0..100).map(|i| format!("k{i}: {i}\n")).collect();
        assert!(check(&doc));
        doc.push_str("k57: again\n");
        assert!(!check(&doc));
        let deep = format!(
            "{}1{}",
            "[".repeat(FAST_MAX_DEPTH + 1),
            "]".repeat(FAST_MAX_DEPTH + 1)
        );
        assert!(tree(&deep).is_none());
        let shallow = format!("{}1{}", "[".repeat(10), "]".repeat(10));
        assert!(check(&shallow));
    }
}

#[cfg(test)]
mod generated {
    //! Seeded random documents in many shapes and spellings: wherever the
    //! fast loader takes one, it must equal serde-saphyr's reading.

    use super::tests_support::check;

    /// xorshift64*: deterministic, so a failure names a reproducible seed.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[self.below(items.len())]
        }
    }

    const SCALARS: &[&str] = &[
        "",
        "~",
        "null",
        "true",
        "No",
        "y",
        "on",
        "0",
        "8",
        "-3",
        "+4",
        "1.5",
        ".5",
        "1e3",
        "0x1F",
        "0127",
        "1_0",
        ".inf",
        "-.nan",
        "9223372036854775808",
        "nan",
        "1.2.3",
        "8Gi",
        "<NODE>",
        "${GPUS}",
        "rocm/infera:0.9.1",
        "\"quoted\"",
        "'single'",
        "\"8\"",
        "\"a\\tb\"",
        "'it''s'",
        "a b",
        "héllo",
        "-x",
        "!!str 8",
        "&a 1",
        "*a",
        "#c",
    ];
    const KEYS: &[&str] = &[
        "a", "b", "name", "'q'", "\"d q\"", "8", "true", "<<", "~", "k-1", "x.y", "a",
    ];

    fn scalar(rng: &mut Rng) -> String {
        rng.pick(SCALARS).to_string()
    }

    fn block(rng: &mut Rng, indent: usize, depth: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        let entries = 1 + rng.below(4);
        let is_seq = rng.below(3) == 0;
        for _ in 0..entries {
            out.push_str(&pad);
            if is_seq {
                out.push_str("- ");
            } else {
                out.push_str(rng.pick(KEYS));
                out.push(':');
            }
            match rng.below(if depth > 4 { 2 } else { 5 }) {
                0 | 1 => {
                    out.push(' ');
                    out.push_str(&scalar(rng));
                    out.push('\n');
                }
                2 => {
                    out.push(' ');
                    flow(rng, depth + 1, out);
                    out.push('\n');
                }
                3 => {
                    out.push_str(" |\n");
                    out.push_str(&format!("{pad}    text {}\n", rng.below(100)));
                }
                _ => {
                    out.push('\n');
                    block(rng, indent + 2, depth + 1, out);
                }
            }
        }
    }

    fn flow(rng: &mut Rng, depth: usize, out: &mut String) {
        let is_seq = rng.below(2) == 0;
        out.push(if is_seq { '[' } else { '{' });
        for i in 0..rng.below(4) {
            if i > 0 {
                out.push_str(", ");
            }
            if !is_seq {
                out.push_str(rng.pick(KEYS));
                out.push_str(": ");
            }
            if depth < 6 && rng.below(4) == 0 {
                flow(rng, depth + 1, out);
            } else {
                out.push_str(&scalar(rng));
            }
        }
        out.push(if is_seq { ']' } else { '}' });
    }

    #[test]
    fn random_documents_agree_with_serde_saphyr() {
        let mut taken = 0;
        for seed in 1..=3_000u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut doc = String::new();
            if rng.below(4) == 0 {
                doc.push_str("---\n");
            }
            block(&mut rng, 0, 0, &mut doc);
            if check(&doc) {
                taken += 1;
            }
        }
        // Most shapes are the plain subset: the fast path is really tried.
        assert!(taken > 300, "the fast loader took only {taken} of 3000");
    }
}
