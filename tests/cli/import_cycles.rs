//! No import circle between files anywhere in the workspace: within each
//! crate (`crates/*/src`, `src/`), the files that name each other through
//! `crate::`, `super::` or `self::` paths form no cycle. A module naming
//! its own ancestors or descendants is the module tree, not a circle (a
//! rule file using `super::Workload`, a `mod.rs` calling its children);
//! the edges counted are between files neither of which contains the
//! other. Crates cannot form cycles at all (Cargo refuses them); this is
//! the same rule one level down. Test modules (`#[cfg(test)]` to the end
//! of a file) are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::case::root;

type Module = Vec<String>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `a/b.rs` and `a/b/mod.rs` → `[a, b]`; `lib.rs`/`main.rs` → `[]`.
fn module_of(src: &Path, file: &Path) -> (Module, bool) {
    let rel = file
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let mut parts: Module = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let dir = matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) && parts.len() == 1
        || parts.last().is_some_and(|p| p == "mod");
    if dir {
        parts.pop();
    }
    (parts, dir)
}

/// The code a file imports from: comments and its test module removed.
fn code(text: &str) -> String {
    let end = text.find("#[cfg(test)]\nmod ").unwrap_or(text.len());
    text[..end]
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Every path a piece of code names from `crate`, `super` or `self`, as
/// (anchor, segments); a `{a, b::c}` group yields one path per member.
fn paths(code: &str) -> Vec<(&str, Vec<String>)> {
    let mut out = Vec::new();
    for anchor in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(anchor) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut rest = &code[at + anchor.len()..];
            let mut segs = Vec::new();
            while rest.starts_with("super::") {
                segs.push("super".to_string());
                rest = &rest["super::".len()..];
            }
            loop {
                let id = ident_at(rest);
                if id.is_empty() {
                    break;
                }
                segs.push(id.to_string());
                rest = &rest[id.len()..];
                match rest.strip_prefix("::") {
                    Some(r) => rest = r,
                    None => break,
                }
            }
            let name = anchor.trim_end_matches("::");
            if let Some(group) = rest.strip_prefix('{') {
                let inner = &group[..group.find('}').unwrap_or(group.len())];
                for member in inner.split(',') {
                    let id = ident_at(member.trim());
                    if !id.is_empty() {
                        let mut p = segs.clone();
                        p.push(id.to_string());
                        out.push((name, p));
                    }
                }
            } else {
                out.push((name, segs));
            }
        }
    }
    out
}

/// The file-level edges of one crate: module → (module, the line naming it).
fn edges(src: &Path) -> BTreeMap<Module, BTreeMap<Module, String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeMap<Module, (PathBuf, bool)> = files
        .iter()
        .map(|f| {
            let (m, dir) = module_of(src, f);
            (m, (f.clone(), dir))
        })
        .collect();
    let mut out: BTreeMap<Module, BTreeMap<Module, String>> = BTreeMap::new();
    for (module, (file, dir)) in &modules {
        let text = code(&std::fs::read_to_string(file).expect("readable"));
        for (anchor, segs) in paths(&text) {
            let mut full: Module = match anchor {
                "crate" => Vec::new(),
                "self" if *dir => module.clone(),
                "self" => module.clone(),
                _ if *dir => module[..module.len().saturating_sub(1)].to_vec(),
                _ => module[..module.len().saturating_sub(1)].to_vec(),
            };
            for s in segs {
                if s == "super" {
                    full.pop();
                } else {
                    full.push(s);
                }
            }
            let Some(target) = (0..=full.len())
                .rev()
                .map(|k| full[..k].to_vec())
                .find(|m| modules.contains_key(m))
            else {
                continue;
            };
            let nested = target.starts_with(module) || module.starts_with(&target);
            if !nested {
                let line = format!("{}: names {}", file.display(), full.join("::"));
                out.entry(module.clone())
                    .or_default()
                    .entry(target)
                    .or_insert(line);
            }
        }
    }
    out
}

/// Strongly connected components of more than one module (Tarjan).
fn cycles(graph: &BTreeMap<Module, BTreeMap<Module, String>>) -> Vec<Vec<Module>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<Module, BTreeMap<Module, String>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on: BTreeSet<&'a Module>,
        out: Vec<Vec<Module>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a Module) {
        let i = w.index.len();
        w.index.insert(v, i);
        w.low.insert(v, i);
        w.stack.push(v);
        w.on.insert(v);
        for next in w.graph.get(v).into_iter().flat_map(BTreeMap::keys) {
            if !w.index.contains_key(next) {
                visit(w, next);
                let l = w.low[next].min(w.low[v]);
                w.low.insert(v, l);
            } else if w.on.contains(next) {
                let l = w.index[next].min(w.low[v]);
                w.low.insert(v, l);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = Vec::new();
            while let Some(m) = w.stack.pop() {
                w.on.remove(m);
                component.push(m.clone());
                if m == v {
                    break;
                }
            }
            if component.len() > 1 {
                w.out.push(component);
            }
        }
    }
    let mut w = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !w.index.contains_key(v) {
            visit(&mut w, v);
        }
    }
    w.out
}

fn source_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![root().join("src")];
    let crates = std::fs::read_dir(root().join("crates")).expect("crates/");
    dirs.extend(crates.flatten().map(|e| e.path().join("src")));
    dirs.sort();
    dirs
}

#[test]
fn no_import_circle_between_files() {
    let mut found = Vec::new();
    for src in source_dirs() {
        let graph = edges(&src);
        for component in cycles(&graph) {
            let members: BTreeSet<&Module> = component.iter().collect();
            let lines: Vec<&String> = component
                .iter()
                .flat_map(|m| graph[m].iter())
                .filter(|(to, _)| members.contains(to))
                .map(|(_, line)| line)
                .collect();
            found.push(format!(
                "{}: {}\n    {}",
                src.display(),
                component
                    .iter()
                    .map(|m| m.join("::"))
                    .collect::<Vec<_>>()
                    .join(" ↔ "),
                lines
                    .iter()
                    .map(|l| l.as_str())
                    .collect::<Vec<_>>()
                    .join("\n    ")
            ));
        }
    }
    assert!(
        found.is_empty(),
        "import circles between files:\n{}",
        found.join("\n")
    );
}

/// The finder finds: two sibling files naming each other are a circle, a
/// child naming its parent is not.
#[test]
fn the_finder_sees_a_circle_and_not_the_module_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).expect("mkdir");
    let write = |p: &str, t: &str| std::fs::write(src.join(p), t).expect("write");
    write("lib.rs", "mod a;\nmod b;\nmod c;\n");
    write("a/mod.rs", "mod x;\npub struct T;\nuse x::f;\n");
    write("a/x.rs", "use super::T;\npub fn f() {}\n");
    write("b.rs", "use crate::{c::g, a::T};\npub fn h() {}\n");
    write("c.rs", "pub fn g() { crate::b::h() }\n// crate::a::x\n");
    let graph = edges(src);
    let found = cycles(&graph);
    assert_eq!(found.len(), 1, "{found:?}");
    let mut members: Vec<String> = found[0].iter().map(|m| m.join("::")).collect();
    members.sort();
    assert_eq!(members, ["b", "c"]);
}
