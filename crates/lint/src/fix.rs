//! Structured fixes: what a finding's message tells the user to write, as
//! data (a JSON merge patch at a path of the document, RFC 7386) and as text
//! edits of the file (what SARIF's `fixes` carry and an editor applies).
//!
//! The edits change as little text as they can: a key that is missing is
//! inserted before the first key of its mapping, in that mapping's style
//! (block or flow); a key that is there has its value rewritten after the
//! colon; a key set to null is removed. Values are written in flow style
//! (`{httpGet: {path: /health, port: 8000}}`). When the layout is one these
//! edits cannot handle (an empty `{}`, a deletion beside an insertion in
//! one mapping), the enclosing entry is rewritten whole instead; at the
//! root, there is no edit (the JSON patch still says what to change).

use serde_json::Value as Json;

use infera_model::manifest::node::{Node, Seg, Value};

/// One text edit: replace `[start, end)` (1-based lines, 1-based character
/// columns; an empty range inserts) with `text`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TextEdit {
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
    pub text: String,
}

/// A path as a JSON pointer (RFC 6901): `/spec/template/spec/containers/0`.
pub fn pointer(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        s.push('/');
        match seg {
            Seg::Key(k) => s.push_str(&k.replace('~', "~0").replace('/', "~1")),
            Seg::Index(i) => s.push_str(&i.to_string()),
        }
    }
    s
}

/// RFC 7386: objects merge key by key, null removes a key, anything else
/// replaces the target.
pub fn merge_patch(target: &mut Json, patch: &Json) {
    let Json::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Json::Object(serde_json::Map::new());
    }
    if let Json::Object(map) = target {
        for (k, v) in patch {
            if v.is_null() {
                map.remove(k);
            } else {
                merge_patch(map.entry(k.clone()).or_insert(Json::Null), v);
            }
        }
    }
}

/// Apply a merge patch at `path` of a document: missing mappings on the
/// way are created; a missing sequence item is an error.
pub fn apply_change(doc: &mut Json, path: &[Seg], patch: &Json) -> Result<(), String> {
    let mut cur = doc;
    for seg in path {
        cur = match seg {
            Seg::Key(k) => {
                if !cur.is_object() {
                    *cur = Json::Object(serde_json::Map::new());
                }
                match cur {
                    Json::Object(m) => m.entry(k.clone()).or_insert(Json::Null),
                    _ => return Err(format!("{k}: not a mapping")),
                }
            }
            Seg::Index(i) => cur
                .get_mut(*i)
                .ok_or_else(|| format!("[{i}]: no such item"))?,
        };
    }
    merge_patch(cur, patch);
    Ok(())
}

/// A value in YAML flow style, as short as it stays unambiguous.
pub fn flow(v: &Json) -> String {
    match v {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::String(s) if plain_safe(s) => s.clone(),
        Json::String(s) => Json::String(s.clone()).to_string(),
        Json::Array(items) => {
            let items: Vec<String> = items.iter().map(flow).collect();
            format!("[{}]", items.join(", "))
        }
        Json::Object(m) => {
            let entries: Vec<String> = m
                .iter()
                .map(|(k, v)| {
                    let key = flow(&Json::String(k.clone()));
                    format!("{key}: {}", flow(v))
                })
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
    }
}

/// True when `s` reads back as the same string as a plain scalar.
fn plain_safe(s: &str) -> bool {
    const WORDS: [&str; 11] = [
        "true", "false", "yes", "no", "on", "off", "null", "y", "n", "~", "",
    ];
    let first_ok = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '_');
    first_ok
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '.' | '-'))
        && !WORDS.contains(&s.to_ascii_lowercase().as_str())
}

/// Apply text edits to a file's text (the test of every fix, and what an
/// editor does with SARIF's replacements). Edits at one place apply in
/// their order.
pub fn apply_edits(text: &str, edits: &[TextEdit]) -> String {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let starts: Vec<usize> = std::iter::once(0)
        .chain(body.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let offset = |line: usize, column: usize| -> usize {
        let Some(&start) = starts.get(line.saturating_sub(1)) else {
            return body.len();
        };
        let end = starts.get(line).map_or(body.len(), |&e| e);
        let line_text = &body[start..end];
        line_text
            .char_indices()
            .nth(column.saturating_sub(1))
            .map_or(end, |(i, _)| start + i)
    };
    let mut order: Vec<usize> = (0..edits.len()).collect();
    order.sort_by_key(|&i| (offset(edits[i].line, edits[i].column), i));
    let mut out = body.to_string();
    for &i in order.iter().rev() {
        let e = &edits[i];
        let (from, to) = (offset(e.line, e.column), offset(e.end_line, e.end_column));
        out.replace_range(from..to.max(from), &e.text);
    }
    out
}

/// The text edits that apply `patch` at `path` of a document, or None
/// when no edit of this layout does it. `text` is the document's text (the
/// lines its nodes' positions count from).
pub fn text_edits(root: &Node, text: &str, path: &[Seg], patch: &Json) -> Option<Vec<TextEdit>> {
    let src = Src {
        lines: text.split('\n').map(|l| l.trim_end_matches('\r')).collect(),
    };
    let mut out = Vec::new();
    src.merge_at(root, path, patch, &mut out)?;
    Some(out)
}

/// A 1-based (line, character column) position.
type Pos = (usize, usize);

struct Src<'t> {
    lines: Vec<&'t str>,
}

fn wrap(rest: &[Seg], patch: &Json) -> Option<Json> {
    let mut v = patch.clone();
    for seg in rest.iter().rev() {
        let Seg::Key(k) = seg else { return None };
        let mut m = serde_json::Map::new();
        m.insert(k.clone(), v);
        v = Json::Object(m);
    }
    Some(v)
}

fn edit(from: Pos, to: Pos, text: String) -> TextEdit {
    TextEdit {
        line: from.0,
        column: from.1,
        end_line: to.0,
        end_column: to.1,
        text,
    }
}

impl Src<'_> {
    fn line(&self, l: usize) -> &str {
        self.lines.get(l.wrapping_sub(1)).copied().unwrap_or("")
    }

    fn char_at(&self, (l, c): Pos) -> Option<char> {
        self.line(l).chars().nth(c.wrapping_sub(1))
    }

    /// The position after `p` on its line, or the start of the next line.
    fn next(&self, (l, c): Pos) -> Option<Pos> {
        if c <= self.line(l).chars().count() {
            Some((l, c + 1))
        } else if l < self.lines.len() {
            Some((l + 1, 1))
        } else {
            None
        }
    }

    /// The last non-blank character before `p`, skipping blank lines and
    /// comment lines: `{` or `,` there means `p` is in a flow collection.
    fn prev_significant(&self, (l, c): Pos) -> Option<char> {
        let before: String = self.line(l).chars().take(c.saturating_sub(1)).collect();
        if let Some(ch) = before.trim_end().chars().last() {
            return Some(ch);
        }
        (1..l).rev().find_map(|k| {
            let t = self.line(k);
            let t = t.find(" #").map_or(t, |i| &t[..i]);
            let t = t.trim_end();
            (!t.is_empty() && !t.trim_start().starts_with('#'))
                .then(|| t.chars().last())
                .flatten()
        })
    }

    fn in_flow(&self, key: Pos) -> bool {
        matches!(self.prev_significant(key), Some('{' | ',' | '['))
    }

    /// The position just after the colon that ends the key at `key`.
    fn after_colon(&self, key: Pos) -> Option<Pos> {
        let chars: Vec<char> = self.line(key.0).chars().collect();
        let mut i = key.1.checked_sub(1)?;
        if let Some(&q @ ('"' | '\'')) = chars.get(i) {
            i += 1;
            while chars.get(i).is_some_and(|&c| c != q) {
                i += if chars[i] == '\\' && q == '"' { 2 } else { 1 };
            }
            i += 1;
            while chars.get(i) == Some(&' ') {
                i += 1;
            }
            return (chars.get(i) == Some(&':')).then_some((key.0, i + 2));
        }
        while i < chars.len() {
            if chars[i] == ':'
                && chars
                    .get(i + 1)
                    .is_none_or(|c| matches!(c, ' ' | ',' | '}'))
            {
                return Some((key.0, i + 2));
            }
            i += 1;
        }
        None
    }

    /// The end (exclusive) of the entry whose key is at `key`: in a flow
    /// mapping, the `,` or `}` that closes its value; in a block mapping,
    /// the end of its last line (the lines indented deeper than the key).
    fn entry_end(&self, key: Pos) -> Option<Pos> {
        let start = self.after_colon(key)?;
        if self.in_flow(key) {
            return self.flow_value_end(start);
        }
        let indent = key.1 - 1;
        let mut last = key.0;
        for l in key.0 + 1..=self.lines.len() {
            let t = self.line(l);
            let trimmed = t.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if t.len() - trimmed.len() <= indent {
                break;
            }
            last = l;
        }
        // Up to a trailing comment, which stays.
        let text = self.line(last);
        let text = text.find(" #").map_or(text, |i| &text[..i]).trim_end();
        Some((last, text.chars().count() + 1))
    }

    /// Where a flow value starting at `p` ends: the `,`, `}` or `]` at
    /// depth 0, outside quotes, with white space before it trimmed.
    fn flow_value_end(&self, mut p: Pos) -> Option<Pos> {
        let mut depth = 0usize;
        let mut quote: Option<char> = None;
        let mut last_content = p;
        loop {
            let Some(ch) = self.char_at(p) else {
                p = self.next(p)?;
                continue;
            };
            match (quote, ch) {
                (Some('"'), '\\') => p = self.next(p)?,
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(ch),
                (None, '{' | '[') => depth += 1,
                (None, '}' | ']' | ',') if depth == 0 => return Some(last_content),
                (None, '}' | ']') => depth -= 1,
                _ => {}
            }
            if !ch.is_whitespace() {
                last_content = self.next(p)?;
            }
            p = self.next(p)?;
        }
    }

    /// Merge `patch` into the node at `path` under `node`.
    fn merge_at(
        &self,
        node: &Node,
        path: &[Seg],
        patch: &Json,
        out: &mut Vec<TextEdit>,
    ) -> Option<()> {
        let Some((seg, rest)) = path.split_first() else {
            return self.merge_map(node, patch, out);
        };
        match (seg, &node.value) {
            (Seg::Index(i), Value::Seq(items)) => self.merge_at(items.get(*i)?, rest, patch, out),
            (Seg::Key(k), Value::Map(entries)) => {
                let Some((key, child)) = entries.iter().find(|(key, _)| key.name == k.as_str())
                else {
                    return self.insert(node, k, &wrap(rest, patch)?, out);
                };
                let mut attempt = Vec::new();
                if self.merge_at(child, rest, patch, &mut attempt).is_some() {
                    out.extend(attempt);
                    return Some(());
                }
                let mut merged = child.to_json();
                apply_change(&mut merged, rest, patch).ok()?;
                self.replace(key_pos(key)?, &merged, out)
            }
            _ => None,
        }
    }

    /// Merge an object patch into a mapping, key by key.
    fn merge_map(&self, node: &Node, patch: &Json, out: &mut Vec<TextEdit>) -> Option<()> {
        let (Value::Map(entries), Json::Object(patch)) = (&node.value, patch) else {
            return None;
        };
        let find = |k: &str| entries.iter().position(|(key, _)| key.name == k);
        let deletes = patch.iter().any(|(k, v)| v.is_null() && find(k).is_some());
        let inserts = patch.iter().any(|(k, v)| !v.is_null() && find(k).is_none());
        if entries.is_empty() || deletes && inserts {
            return None;
        }
        for (k, v) in patch {
            match (find(k), v) {
                (None, Json::Null) => {}
                (None, v) => self.insert(node, k, v, out)?,
                (Some(i), Json::Null) => self.delete(entries, i, out)?,
                (Some(i), v) => {
                    let (key, child) = &entries[i];
                    let mut attempt = Vec::new();
                    let nested = v.is_object()
                        && matches!(child.value, Value::Map(_))
                        && self.merge_map(child, v, &mut attempt).is_some();
                    if nested {
                        out.extend(attempt);
                    } else {
                        let mut merged = child.to_json();
                        merge_patch(&mut merged, v);
                        self.replace(key_pos(key)?, &merged, out)?;
                    }
                }
            }
        }
        Some(())
    }

    /// Insert `key: value` before the first key of the mapping `node`.
    fn insert(&self, node: &Node, key: &str, value: &Json, out: &mut Vec<TextEdit>) -> Option<()> {
        let Value::Map(entries) = &node.value else {
            return None;
        };
        let first = key_pos(&entries.first()?.0)?;
        let entry = format!("{}: {}", flow(&Json::String(key.to_string())), flow(value));
        let text = if self.in_flow(first) {
            format!("{entry}, ")
        } else {
            format!("{entry}\n{}", " ".repeat(first.1 - 1))
        };
        out.push(edit(first, first, text));
        Some(())
    }

    /// Rewrite the value of the entry whose key is at `key`.
    fn replace(&self, key: Pos, value: &Json, out: &mut Vec<TextEdit>) -> Option<()> {
        let from = self.after_colon(key)?;
        let to = self.entry_end(key)?;
        out.push(edit(from, to, format!(" {}", flow(value))));
        Some(())
    }

    /// Remove entry `i` of a mapping: up to the next key, or (the last
    /// one) its whole lines, or back to the end of the previous entry.
    fn delete(
        &self,
        entries: &[(infera_model::manifest::node::Key, Node)],
        i: usize,
        out: &mut Vec<TextEdit>,
    ) -> Option<()> {
        let at = key_pos(&entries[i].0)?;
        if let Some((next, _)) = entries.get(i + 1) {
            out.push(edit(at, key_pos(next)?, String::new()));
            return Some(());
        }
        let end = self.entry_end(at)?;
        if self.in_flow(at) {
            let prev = key_pos(&entries.get(i.checked_sub(1)?)?.0)?;
            out.push(edit(self.entry_end(prev)?, end, String::new()));
            return Some(());
        }
        let first_on_line = self
            .line(at.0)
            .chars()
            .take(at.1 - 1)
            .all(char::is_whitespace);
        if !first_on_line {
            return None;
        }
        let to = self
            .next((end.0, self.line(end.0).chars().count() + 1))
            .unwrap_or(end);
        out.push(edit((at.0, 1), to, String::new()));
        Some(())
    }
}

fn key_pos(key: &infera_model::manifest::node::Key) -> Option<Pos> {
    (key.line > 0).then_some((key.line as usize, key.column as usize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Apply `patch` at `path` by text edits; the result must parse to the
    /// same tree as the JSON merge patch gives.
    fn edited(text: &str, path: &[Seg], patch: Json) -> String {
        let root = infera_model::manifest::fast::tree(text).expect("yaml");
        let edits = text_edits(&root, text, path, &patch).expect("edits");
        let out = apply_edits(text, &edits);
        let mut want = root.to_json();
        apply_change(&mut want, path, &patch).unwrap();
        let got = infera_model::manifest::fast::tree(&out)
            .unwrap_or_else(|| panic!("not YAML:\n{out}"))
            .to_json();
        assert_eq!(got, want, "{out}");
        out
    }

    fn key(k: &str) -> Seg {
        Seg::Key(k.into())
    }

    #[test]
    fn inserts_in_block_and_flow_mappings() {
        let block = "spec:\n  containers:\n  - name: a\n    image: x\n";
        let out = edited(
            block,
            &[
                key("spec"),
                key("containers"),
                Seg::Index(0),
                key("readinessProbe"),
            ],
            json!({"httpGet": {"path": "/health", "port": 8000}}),
        );
        assert_eq!(
            out,
            "spec:\n  containers:\n  - readinessProbe: {httpGet: {path: /health, port: 8000}}\n    name: a\n    image: x\n"
        );
        let flow = "spec: {containers: [{name: a, image: x}]}\n";
        let out = edited(
            flow,
            &[
                key("spec"),
                key("containers"),
                Seg::Index(0),
                key("readinessProbe"),
            ],
            json!({"tcpSocket": {"port": 80}}),
        );
        assert!(
            out.contains("[{readinessProbe: {tcpSocket: {port: 80}}, name: a"),
            "{out}"
        );
    }

    #[test]
    fn replaces_scalars_and_whole_entries() {
        let text = "spec:\n  replicas: 1 # one\n  strategy:\n    type: Recreate\n  selector: {}\n";
        let out = edited(text, &[key("spec"), key("replicas")], json!(2));
        assert!(out.contains("  replicas: 2 # one\n"), "{out}");
        let out = edited(
            text,
            &[key("spec"), key("strategy")],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}),
        );
        assert!(
            out.contains(
                "    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}\n    type: RollingUpdate\n"
            ),
            "{out}"
        );
        // Into an empty flow mapping: the entry is rewritten.
        let out = edited(text, &[key("spec"), key("selector"), key("a")], json!("b"));
        assert!(out.contains("selector: {a: b}"), "{out}");
        let quoted = "a:\n  \"b\": \"5\"\n  c: {d: 1, e: [1, 2]}\n";
        edited(quoted, &[key("a"), key("b")], json!(10));
        edited(quoted, &[key("a"), key("c"), key("e")], json!("x"));
        edited(quoted, &[key("a"), key("c")], json!({"d": null}));
        edited(quoted, &[key("a"), key("c")], json!({"e": null}));
    }

    #[test]
    fn deletes_beside_inserts_rewrite_the_entry() {
        let text = "c:\n  readinessProbe:\n    tcpSocket:\n      port: 8000\n    periodSeconds: 5\n  name: x\n";
        let out = edited(
            text,
            &[key("c"), key("readinessProbe")],
            json!({"tcpSocket": null, "httpGet": {"path": "/ready", "port": 30090}}),
        );
        assert!(out.contains("readinessProbe: {httpGet: {path: /ready, port: 30090}, periodSeconds: 5}\n  name: x"), "{out}");
        let out = edited(
            text,
            &[key("c"), key("readinessProbe")],
            json!({"periodSeconds": null}),
        );
        assert!(!out.contains("periodSeconds"), "{out}");
    }

    #[test]
    fn flow_scalars_read_back_as_written() {
        for s in [
            "8000",
            "true",
            "no",
            "",
            "a: b",
            "-x",
            "/v2/health/ready",
            "RollingUpdate",
        ] {
            let text = format!("k: {}\n", flow(&json!(s)));
            let back = infera_model::manifest::fast::tree(&text).unwrap().to_json();
            assert_eq!(back, json!({"k": s}), "{text}");
        }
        assert_eq!(
            pointer(&[key("a/b"), Seg::Index(0), key("m~")]),
            "/a~1b/0/m~0"
        );
    }
}
