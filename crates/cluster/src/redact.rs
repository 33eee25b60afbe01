//! The credentials rule, in one place: nothing `infera` prints, logs or
//! writes contains a kubeconfig's or the cluster's credentials (tokens,
//! client keys and certificates, passwords, exec-plugin arguments and
//! output, `Authorization` headers, passwords in URLs).
//!
//! Three layers, each a function here and nowhere else:
//!
//! - [`KubeconfigProblem`]: errors about a kubeconfig are built from the file
//!   name, the line and a *kind* of problem. `kube`'s own `Display` of a
//!   YAML error embeds a code frame (the neighbouring lines: the token, the
//!   start of `client-key-data`); we never render it. Free text from the
//!   parser passes [`scrub_against_source`]: quoted fragments and any word
//!   that also occurs in the file become `…`.
//! - [`kube_error`] / [`auth_error`]: the one-line text of a `kube` error
//!   (HTTP, TLS, auth, exec plugin) without exec output, command arguments
//!   or decoder messages that quote their input.
//! - [`scrub`]: a last filter over every error line and every log line:
//!   secrets registered from the loaded kubeconfig ([`register_kubeconfig`]),
//!   `Bearer …` values, `Authorization:` headers, PEM blocks and URL
//!   userinfo become `[redacted]`.

use std::path::Path;
use std::sync::RwLock;

use kube::config::{KubeconfigError, LoadDataError};

/// What replaces a credential.
pub const REDACTED: &str = "[redacted]";

/// Secret values found in the loaded kubeconfig(s); [`scrub`] removes them.
static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Shorter values are not registered (they would redact ordinary words).
const MIN_SECRET_LEN: usize = 6;

/// Remember `value` as a credential for [`scrub`].
pub fn register_secret(value: &str) {
    let value = value.trim();
    if value.len() < MIN_SECRET_LEN {
        return;
    }
    if let Ok(mut secrets) = SECRETS.write()
        && !secrets.iter().any(|s| s == value)
    {
        secrets.push(value.to_string());
        // Longest first, so a secret containing another is removed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// Register every credential-bearing value of a parsed kubeconfig.
pub fn register_kubeconfig(config: &kube::config::Kubeconfig) {
    use secrecy::ExposeSecret;
    for named in &config.auth_infos {
        let Some(user) = &named.auth_info else {
            continue;
        };
        for secret in [&user.token, &user.password, &user.client_key_data]
            .into_iter()
            .flatten()
        {
            register_secret(secret.expose_secret());
        }
        if let Some(cert) = &user.client_certificate_data {
            register_secret(cert);
        }
        if let Some(exec) = &user.exec {
            exec.args.iter().flatten().for_each(|a| register_secret(a));
            for var in exec.env.iter().flatten() {
                var.get("value")
                    .into_iter()
                    .for_each(|v| register_secret(v));
            }
        }
        if let Some(provider) = &user.auth_provider {
            provider.config.values().for_each(|v| register_secret(v));
        }
    }
    for named in &config.clusters {
        let Some(cluster) = &named.cluster else {
            continue;
        };
        for url in [&cluster.server, &cluster.proxy_url].into_iter().flatten() {
            if let Some(userinfo) = userinfo(url) {
                register_secret(userinfo);
            }
        }
    }
}

/// The `user:password` part of `scheme://user:password@host…`.
fn userinfo(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    authority.rsplit_once('@').map(|(info, _)| info)
}

/// Remove every credential from `text` (the last filter of every error and
/// log line).
pub fn scrub(text: &str) -> String {
    let mut out = text.to_string();
    if let Ok(secrets) = SECRETS.read() {
        for secret in secrets.iter() {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
    }
    let out = scrub_pem(&out);
    let out = scrub_after_keyword(&out, "bearer ");
    let out = scrub_after_keyword(&out, "authorization:");
    let out = scrub_after_keyword(&out, "authorization=");
    scrub_url_userinfo(&out)
}

/// Replace the value after each case-insensitive `keyword` (up to the next
/// whitespace, quote or comma) with `[redacted]`.
fn scrub_after_keyword(text: &str, keyword: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    while let Some(found) = lower[pos..].find(keyword) {
        let value_start = pos + found + keyword.len();
        let skip = text[value_start..].len() - text[value_start..].trim_start().len();
        let value_start = value_start + skip;
        out.push_str(&text[pos..value_start]);
        let rest = &text[value_start..];
        let mut value_len = rest
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '}'))
            .unwrap_or(rest.len());
        // `Authorization: Bearer X`: the scheme is followed by the value.
        if rest[..value_len].eq_ignore_ascii_case("bearer")
            || rest[..value_len].eq_ignore_ascii_case("basic")
        {
            out.push_str(&rest[..value_len]);
            pos = value_start + value_len;
            continue;
        }
        if value_len > 0 && !rest[..value_len].starts_with(REDACTED) {
            out.push_str(REDACTED);
        } else {
            value_len = 0;
        }
        pos = value_start + value_len;
    }
    out.push_str(&text[pos..]);
    out
}

/// `-----BEGIN …-----` … `-----END …-----` (or to the end) → `[redacted]`.
fn scrub_pem(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN") {
        out.push_str(&rest[..start]);
        out.push_str(REDACTED);
        let after = &rest[start..];
        rest = match after.find("-----END") {
            Some(end) => {
                let tail = &after[end + "-----END".len()..];
                match tail.find("-----") {
                    Some(close) => &tail[close + 5..],
                    None => "",
                }
            }
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// `scheme://user:pass@host` → `scheme://[redacted]@host`.
fn scrub_url_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let authority_len = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '/' | '?' | '#' | '"' | '\''))
            .unwrap_or(tail.len());
        match tail[..authority_len].rfind('@') {
            Some(at) if !tail[..at].starts_with(REDACTED) => {
                out.push_str(REDACTED);
                rest = &tail[at..];
            }
            _ => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

/// Kubeconfig keys: a quoted fragment naming one of these is kept in a
/// parse error (`missing field \`server\``); every other quoted fragment
/// is content and becomes `…`.
const KUBECONFIG_KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "preferences",
    "clusters",
    "cluster",
    "contexts",
    "context",
    "current-context",
    "users",
    "user",
    "name",
    "namespace",
    "server",
    "certificate-authority",
    "certificate-authority-data",
    "insecure-skip-tls-verify",
    "tls-server-name",
    "proxy-url",
    "token",
    "tokenFile",
    "username",
    "password",
    "client-certificate",
    "client-certificate-data",
    "client-key",
    "client-key-data",
    "exec",
    "command",
    "args",
    "env",
    "auth-provider",
    "extensions",
    "extension",
];

/// Words of YAML parser messages, kept even when the file contains them
/// (a credential is not one of these).
const PARSER_WORDS: &[&str] = &[
    "binary",
    "string",
    "scalar",
    "mapping",
    "sequence",
    "anchor",
    "alias",
    "expected",
    "found",
    "invalid",
    "unexpected",
    "indentation",
    "block",
    "flow",
    "quote",
    "quoted",
    "document",
    "stream",
    "tabs",
    "null",
    "true",
    "false",
];

/// Free text from a parser about `source` (the file's content): quoted
/// fragments that are not kubeconfig keys, and every word of four or more
/// characters that occurs in `source` and is not a key, become `…`. What is
/// left describes the problem, not the content.
pub fn scrub_against_source(message: &str, source: &str) -> String {
    let unquoted = scrub_quoted(message);
    let words: Vec<String> = unquoted
        .split_whitespace()
        .map(|word| {
            let core = word.trim_matches(|c: char| !c.is_alphanumeric());
            let known = KUBECONFIG_KEYS.contains(&core) || PARSER_WORDS.contains(&core);
            if core.len() >= 4 && source.contains(core) && !known {
                word.replace(core, "…")
            } else {
                word.to_string()
            }
        })
        .collect();
    scrub(&words.join(" "))
}

/// `"…"`, `'…'` and `` `…` `` fragments → `…` unless they name a kubeconfig key.
fn scrub_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut chars = message.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let close = match c {
            '"' | '\'' | '`' => c,
            _ => {
                out.push(c);
                continue;
            }
        };
        let rest = &message[i + c.len_utf8()..];
        // An apostrophe inside a word ("don't") is not a quote.
        let in_word = c == '\'' && out.chars().last().is_some_and(char::is_alphanumeric);
        match rest.find(close) {
            Some(end) if !in_word => {
                let inner = &rest[..end];
                out.push(c);
                out.push_str(if KUBECONFIG_KEYS.contains(&inner) {
                    inner
                } else {
                    "…"
                });
                out.push(close);
                let resume = i + c.len_utf8() + end + close.len_utf8();
                while chars.peek().is_some_and(|(j, _)| *j < resume) {
                    chars.next();
                }
            }
            Some(_) => out.push(c),
            None => {
                // An unterminated quote: everything after it is content.
                out.push(c);
                out.push('…');
                break;
            }
        }
    }
    out
}

/// A problem with a kubeconfig file: the file, the line (when known) and
/// the kind of problem — never a line of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeconfigProblem {
    pub file: String,
    pub line: Option<u64>,
    pub column: Option<u64>,
    pub problem: String,
}

impl std::fmt::Display for KubeconfigProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(
                f,
                "{}: line {line}, column {column}: {}",
                self.file, self.problem
            ),
            (Some(line), None) => write!(f, "{}: line {line}: {}", self.file, self.problem),
            _ => write!(f, "{}: {}", self.file, self.problem),
        }
    }
}

impl KubeconfigProblem {
    /// A YAML error while reading `file`, whose content is `source`.
    pub fn yaml(file: &Path, err: &serde_saphyr::Error, source: &str) -> KubeconfigProblem {
        let err = err.without_snippet();
        let location = err.location().filter(|l| l.line() > 0);
        KubeconfigProblem {
            file: file.display().to_string(),
            line: location.map(|l| l.line()),
            column: location.map(|l| l.column()).filter(|c| *c > 0),
            problem: yaml_problem(err, source),
        }
    }

    /// Any other `kube` error about the kubeconfig `file` (or description).
    pub fn kube(file: &str, err: &KubeconfigError) -> KubeconfigProblem {
        KubeconfigProblem {
            file: file.to_string(),
            line: None,
            column: None,
            problem: kubeconfig_error(err),
        }
    }
}

/// The kind of a YAML problem, from fixed words where the variant carries
/// content (`invalid type: string "CANARY"` → `invalid type, expected …`).
fn yaml_problem(err: &serde_saphyr::Error, source: &str) -> String {
    use serde_saphyr::Error as E;
    let text = match err {
        E::SerdeInvalidType { expected, .. } => format!("invalid type, expected {expected}"),
        E::SerdeInvalidValue { expected, .. } => format!("invalid value, expected {expected}"),
        E::SerdeUnknownVariant { .. } => "unknown variant".to_string(),
        E::SerdeUnknownField { .. } => "unknown field".to_string(),
        E::SerdeMissingField { field, .. } => format!("missing field `{field}`"),
        E::DuplicateMappingKey { .. } => "duplicate mapping key".to_string(),
        E::NonFiniteFloat { .. } => "non-finite number".to_string(),
        E::AliasError { error, .. } => return yaml_problem(error.without_snippet(), source),
        other => strip_location(&other.to_string()),
    };
    let text = scrub_against_source(&one_line(&text), source);
    if text.is_empty() {
        "invalid YAML".to_string()
    } else {
        text
    }
}

/// Drop a trailing ` at line N column M` (we print the line ourselves).
fn strip_location(text: &str) -> String {
    let first = text.lines().next().unwrap_or("");
    match first.find(" at line ") {
        Some(i) => first[..i].to_string(),
        None => first.to_string(),
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The problem in a `kube` kubeconfig error, without content.
pub fn kubeconfig_error(err: &KubeconfigError) -> String {
    use KubeconfigError as K;
    match err {
        K::ReadConfig(io, _) => format!("cannot read: {io}"),
        K::Parse(_) => "invalid YAML".to_string(),
        K::LoadCertificateAuthority(e) => format!("certificate-authority: {}", load_data(e)),
        K::LoadClientCertificate(e) => format!("client-certificate: {}", load_data(e)),
        K::LoadClientKey(e) => format!("client-key: {}", load_data(e)),
        K::ParseCertificates(_) => "a certificate is not valid PEM".to_string(),
        K::ParseClusterUrl(_) => "the cluster's server is not a valid URL".to_string(),
        K::ParseProxyUrl(_) => "the cluster's proxy-url is not a valid URL".to_string(),
        other => scrub(&one_line(&other.to_string())),
    }
}

fn load_data(err: &LoadDataError) -> String {
    match err {
        LoadDataError::DecodeBase64(_) => "the *-data value is not valid base64".to_string(),
        LoadDataError::ReadFile(io, path) => {
            format!("cannot read {}: {io}", path.display())
        }
        LoadDataError::NoBase64DataOrFile => "neither a file nor *-data is set".to_string(),
    }
}

/// The problem in a `kube` auth error (token file, exec plugin, OIDC…),
/// without the exec plugin's output or arguments or a token.
pub fn auth_error(err: &kube::client::AuthError) -> String {
    use kube::client::AuthError as A;
    match err {
        A::InvalidBasicAuth(_) => "the username/password is not a valid header value".into(),
        A::InvalidBearerToken(_) => "the token is not a valid header value".into(),
        A::AuthExecRun { cmd, out } => format!(
            "exec plugin `{}` failed with {} (its output is not shown: it may hold credentials)",
            exec_program(cmd),
            out.status
        ),
        A::AuthExecParse(_) => "the exec plugin's output is not a valid ExecCredential".into(),
        A::AuthExec(_) => "the exec plugin failed".into(),
        A::ParseTokenKey(_) => "the auth-provider's token key is invalid".into(),
        A::MalformedTokenExpirationDate(_) => "malformed token expiration date".into(),
        other => scrub(&one_line(&other.to_string())),
    }
}

/// The program of an exec plugin command line as `kube` reports it: either
/// `cmd args…` or a `Command`'s debug form (`VAR="…" "cmd" "arg"…`). The
/// arguments and environment are left out: they may hold credentials.
fn exec_program(cmd: &str) -> String {
    let mut rest = cmd.trim_start();
    while !rest.is_empty() {
        let end = token_end(rest);
        let word = &rest[..end];
        let is_env = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if !is_env {
            return scrub(word.trim_matches('"'));
        }
        rest = rest[end..].trim_start();
    }
    "?".to_string()
}

/// The end of the first whitespace-separated token, quotes (with `\`
/// escapes) kept together.
fn token_end(text: &str) -> usize {
    let (mut quoted, mut escaped) = (false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => return i,
            _ => {}
        }
    }
    text.len()
}

/// The one-line text of a `kube` error and its causes, with the rule
/// applied: auth and kubeconfig errors by kind, everything else scrubbed.
pub fn kube_error(err: &kube::Error) -> String {
    match err {
        kube::Error::Auth(e) => auth_error(e),
        kube::Error::InferKubeconfig(e) => kubeconfig_error(e),
        kube::Error::HyperError(e) => error_chain(e),
        kube::Error::Service(e) => error_chain(e.as_ref()),
        kube::Error::SerdeError(e) => format!(
            "cannot decode the response (line {}, column {})",
            e.line(),
            e.column()
        ),
        other => scrub(&one_line(&other.to_string())),
    }
}

/// `e: cause: cause…` in one line, each step scrubbed; auth errors inside a
/// service error (a token refresh, an exec plugin) by kind.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(auth) = err.downcast_ref::<kube::client::AuthError>() {
            parts.push(auth_error(auth));
            break;
        }
        if let Some(kube_err) = err.downcast_ref::<kube::Error>() {
            parts.push(kube_error(kube_err));
            break;
        }
        let text = one_line(&err.to_string());
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = err.source();
    }
    scrub(&parts.join(": "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_removes_bearer_headers_pem_and_userinfo() {
        let text = "GET / Authorization: Bearer abc.def-123 https://bob:pw@k:6443/x -----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY----- done";
        let out = scrub(text);
        assert!(!out.contains("abc.def-123"), "{out}");
        assert!(!out.contains("bob:pw"), "{out}");
        assert!(!out.contains("MIIB"), "{out}");
        assert!(out.ends_with(" done"), "{out}");
        assert!(out.contains("https://[redacted]@k:6443/x"), "{out}");
    }

    #[test]
    fn exec_program_drops_env_and_args() {
        let debug = r#"KUBERNETES_EXEC_INFO="{\"kind\":\"x y\"}" "sh" "-c" "echo s3cret""#;
        assert_eq!(exec_program(debug), "sh");
        assert_eq!(
            exec_program("/usr/bin/gcloud --token=s3cret"),
            "/usr/bin/gcloud"
        );
    }

    #[test]
    fn registered_secrets_are_removed() {
        register_secret("unit-test-secret-42");
        assert_eq!(
            scrub("server said unit-test-secret-42!"),
            "server said [redacted]!"
        );
    }

    #[test]
    fn quoted_content_goes_keys_stay() {
        let src = "token: \"abc\nserver: x";
        assert_eq!(
            scrub_against_source("missing field `server`, got \"hunter22\"", src),
            "missing field `server`, got \"…\""
        );
        assert_eq!(
            scrub_against_source("unexpected 'hunter22 and more", src),
            "unexpected '…"
        );
        // A bare word of the file is content.
        let src = "token: supersecretvalue";
        assert_eq!(
            scrub_against_source("found supersecretvalue here", src),
            "found … here"
        );
    }
}
