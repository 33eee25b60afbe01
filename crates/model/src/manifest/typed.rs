//! Parsed trees → typed views: k8s-openapi `Deployment`, the operator's
//! `InferaDeployment`, a minimal `LeaderWorkerSet`.
//!
//! A field that holds a template placeholder where the schema wants a number
//! (`replicas: ${REPLICAS}`) is set aside (nulled and remembered, for IR011)
//! instead of failing the object; any other type error (`replicas: "three"`)
//! fails the object with the path of the field.

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use serde::de::DeserializeOwned;

use super::node::{Node, Path, Seg, Value};
use crate::api::{INFERA_DEPLOYMENT, LEADER_WORKER_SET};
use crate::lws::LeaderWorkerSet;
use crate::operator::{InferaDeployment, IntOrText};

#[derive(Debug, Clone)]
pub enum TypedObject {
    InferaDeployment(Box<InferaDeployment>),
    Deployment(Box<Deployment>),
    LeaderWorkerSet(Box<LeaderWorkerSet>),
    StatefulSet(Box<StatefulSet>),
    DynamoGraphDeployment(Box<super::dynamo::DynamoGraphDeployment>),
    /// A serving custom resource whose operator renders the pods.
    Serving(Box<super::serving::ServingObject>),
}

impl TypedObject {
    pub fn kind(&self) -> &'static str {
        match self {
            TypedObject::InferaDeployment(_) => INFERA_DEPLOYMENT.kind,
            TypedObject::Deployment(_) => "Deployment",
            TypedObject::LeaderWorkerSet(_) => LEADER_WORKER_SET.kind,
            TypedObject::StatefulSet(_) => "StatefulSet",
            TypedObject::DynamoGraphDeployment(_) => super::dynamo::KIND,
            TypedObject::Serving(s) => s.kind.name(),
        }
    }
}

#[derive(Debug, Clone)]
pub enum ConvertOutcome {
    /// A kind infera does not analyse.
    Other,
    Typed {
        object: TypedObject,
        /// Fields holding a placeholder where a number was expected (removed
        /// from the typed view), with their raw text.
        set_aside: Vec<(Path, String)>,
    },
    /// The object does not match its schema.
    Invalid { path: Path, message: String },
}

/// True when text holds a template placeholder: `<…>`, `${…}` or `{{…}}`.
pub fn has_placeholder(s: &str) -> bool {
    if s.find("${").is_some_and(|i| s[i..].contains('}')) {
        return true;
    }
    if s.find("{{").is_some_and(|i| s[i..].contains("}}")) {
        return true;
    }
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'<' {
            let mut j = i + 1;
            while j < b.len()
                && (b[j].is_ascii_alphanumeric() || matches!(b[j], b'_' | b'-' | b'.' | b' '))
            {
                j += 1;
            }
            if j > i + 1 && j < b.len() && b[j] == b'>' {
                return true;
            }
            i = j;
        } else {
            i += 1;
        }
    }
    false
}

/// False when no string of a document with this source text can hold a
/// placeholder ([`has_placeholder`]): it has no `$`, `<` or `{{`, and no
/// backslash, the only way (a double-quoted escape such as `\u0024`) a
/// string's value gets a character its source text lacks. Kept beside
/// [`has_placeholder`]: a new placeholder form must be added to both.
pub fn text_may_hold_placeholder(text: &str) -> bool {
    let b = text.as_bytes();
    memchr::memchr3(b'$', b'<', b'\\', b).is_some() || memchr::memmem::find(b, b"{{").is_some()
}

/// Fields set aside during conversion, with their raw text.
pub type SetAside = Vec<(Path, String)>;

const MAX_SET_ASIDE: usize = 64;

fn typed_with_set_aside<T: DeserializeOwned>(node: &Node) -> Result<(T, SetAside), (Path, String)> {
    // Straight from the tree when it matches the schema (the common case);
    // otherwise through a JSON copy, whose sorted keys decide which error
    // is reported first and in which order placeholders are set aside.
    if let Ok(t) = T::deserialize(super::de::NodeDeserializer(node)) {
        return Ok((t, Vec::new()));
    }
    let mut json = node.to_json();
    let mut set_aside = Vec::new();
    loop {
        match serde_path_to_error::deserialize::<_, T>(&json) {
            Ok(t) => return Ok((t, set_aside)),
            Err(err) => {
                let path: Path = err
                    .path()
                    .iter()
                    .filter_map(|s| match s {
                        serde_path_to_error::Segment::Seq { index } => Some(Seg::Index(*index)),
                        serde_path_to_error::Segment::Map { key } => Some(Seg::Key(key.clone())),
                        _ => None,
                    })
                    .collect();
                let message = err.inner().to_string();
                let target = json_at_mut(&mut json, &path);
                match target {
                    Some(v)
                        if v.as_str().is_some_and(has_placeholder)
                            && set_aside.len() < MAX_SET_ASIDE =>
                    {
                        let raw = v.as_str().unwrap_or_default().to_string();
                        *v = serde_json::Value::Null;
                        set_aside.push((path, raw));
                    }
                    _ => return Err((path, message)),
                }
            }
        }
    }
}

fn json_at_mut<'a>(
    v: &'a mut serde_json::Value,
    path: &[Seg],
) -> Option<&'a mut serde_json::Value> {
    let mut cur = v;
    for seg in path {
        cur = match seg {
            Seg::Key(k) => cur.get_mut(k.as_str())?,
            Seg::Index(i) => cur.get_mut(*i)?,
        };
    }
    Some(cur)
}

/// Convert one object tree to its typed view.
pub fn convert(node: &Node) -> ConvertOutcome {
    let kind = node.get("kind").and_then(Node::as_str).unwrap_or("");
    let api_version = node.get("apiVersion").and_then(Node::as_str).unwrap_or("");
    let group = api_version.split('/').next().unwrap_or("");
    let result = if INFERA_DEPLOYMENT.is_kind_of(api_version, kind) {
        typed_with_set_aside::<InferaDeployment>(node).and_then(|(t, s)| {
            validate_idep(&t).map(|()| (TypedObject::InferaDeployment(Box::new(t)), s))
        })
    } else if (kind, group) == ("Deployment", "apps") {
        typed_with_set_aside::<Deployment>(node)
            .map(|(t, s)| (TypedObject::Deployment(Box::new(t)), s))
    } else if LEADER_WORKER_SET.is_kind_of(api_version, kind) {
        typed_with_set_aside::<LeaderWorkerSet>(node)
            .map(|(t, s)| (TypedObject::LeaderWorkerSet(Box::new(t)), s))
    } else if (kind, group) == ("StatefulSet", "apps") {
        typed_with_set_aside::<StatefulSet>(node)
            .map(|(t, s)| (TypedObject::StatefulSet(Box::new(t)), s))
    } else if (kind, group) == (super::dynamo::KIND, super::dynamo::GROUP)
        && super::dynamo::VERSIONS.contains(&api_version.rsplit('/').next().unwrap_or(""))
    {
        typed_with_set_aside::<super::dynamo::DynamoGraphDeployment>(node)
            .map(|(t, s)| (TypedObject::DynamoGraphDeployment(Box::new(t)), s))
    } else if let Some(kind) = super::serving::ServingKind::of(kind, group) {
        return serving(node, kind);
    } else {
        return ConvertOutcome::Other;
    };
    match result {
        Ok((object, set_aside)) => ConvertOutcome::Typed { object, set_aside },
        Err((path, message)) => ConvertOutcome::Invalid { path, message },
    }
}

/// A serving object, untyped.
fn serving(node: &Node, kind: super::serving::ServingKind) -> ConvertOutcome {
    use super::serving::ServingObject;
    let object = node.to_json();
    let metadata = match object.get("metadata") {
        Some(m) => match serde_path_to_error::deserialize::<
            _,
            k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        >(m)
        {
            Ok(m) => m,
            Err(err) => {
                let mut path = vec![Seg::Key("metadata".into())];
                path.extend(err.path().iter().filter_map(|s| match s {
                    serde_path_to_error::Segment::Map { key } => Some(Seg::Key(key.clone())),
                    serde_path_to_error::Segment::Seq { index } => Some(Seg::Index(*index)),
                    _ => None,
                }));
                return ConvertOutcome::Invalid {
                    path,
                    message: err.inner().to_string(),
                };
            }
        },
        None => Default::default(),
    };
    ConvertOutcome::Typed {
        object: TypedObject::Serving(Box::new(ServingObject {
            kind,
            metadata,
            object,
        })),
        set_aside: Vec::new(),
    }
}

/// The CRD's integer fields accept placeholders here (IR011 reports them),
/// but not other text. The path is built only for a field that fails (this
/// runs on every InferaDeployment lint reads).
fn validate_idep(idep: &InferaDeployment) -> Result<(), (Path, String)> {
    for (name, svc) in &idep.spec.services {
        let gpu = svc.resources.as_ref().and_then(|r| r.gpu.as_ref());
        let fields: [(&[&str], Option<&IntOrText>); 4] = [
            (&["replicas"], svc.replicas.as_ref()),
            (&["numberOfNodes"], svc.number_of_nodes.as_ref()),
            (&["port"], svc.port.as_ref()),
            (&["resources", "gpu"], gpu),
        ];
        for (field, v) in fields {
            if let Err(message) = check_int(v) {
                let path = ["spec", "services", name.as_str()]
                    .iter()
                    .chain(field)
                    .map(|k| Seg::Key((*k).to_string()))
                    .collect();
                return Err((path, message));
            }
        }
    }
    Ok(())
}

fn check_int(v: Option<&IntOrText>) -> Result<(), String> {
    if let Some(IntOrText::Text(t)) = v
        && !has_placeholder(t)
        && t.trim().parse::<i64>().is_err()
    {
        return Err(format!("invalid type: string {t:?}, expected an integer"));
    }
    Ok(())
}

/// True when a node is a string holding a placeholder.
pub fn node_is_placeholder(n: &Node) -> bool {
    matches!(&n.value, Value::Str(s) if has_placeholder(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Node<'_> {
        serde_saphyr::from_str(text).unwrap()
    }

    #[test]
    fn placeholders() {
        for s in [
            "<NODE>",
            "${X}",
            "{{ .Values.x }}",
            "a-<MODEL_DIR>/x",
            "<PREFILL NODE>",
        ] {
            assert!(has_placeholder(s), "{s}");
            // The text pre-check never hides a placeholder.
            assert!(text_may_hold_placeholder(s), "{s}");
        }
        for s in ["a < b", "x>y", "$X", "plain", "<>", "{}"] {
            assert!(!has_placeholder(s), "{s}");
        }
        for s in ["plain", "{}", "{a: {b: 1}}", "x>y"] {
            assert!(!text_may_hold_placeholder(s), "{s}");
        }
    }

    #[test]
    fn type_error_has_path_and_placeholder_is_set_aside() {
        let bad = parse(
            "apiVersion: apps/v1\nkind: Deployment\nspec:\n  replicas: three\n  selector: {}\n  template: {}\n",
        );
        match convert(&bad) {
            ConvertOutcome::Invalid { path, message } => {
                assert_eq!(
                    path,
                    vec![Seg::Key("spec".into()), Seg::Key("replicas".into())]
                );
                assert!(message.contains("three"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let tmpl = parse(
            "apiVersion: apps/v1\nkind: Deployment\nspec:\n  replicas: ${N}\n  selector: {}\n  template: {}\n",
        );
        match convert(&tmpl) {
            ConvertOutcome::Typed { set_aside, .. } => {
                assert_eq!(set_aside.len(), 1);
                assert_eq!(set_aside[0].1, "${N}");
            }
            other => panic!("{other:?}"),
        }
        let idep = parse(
            "apiVersion: infera.amd.com/v1alpha1\nkind: InferaDeployment\nspec:\n  services:\n    w: {componentType: worker, replicas: three}\n",
        );
        assert!(matches!(convert(&idep), ConvertOutcome::Invalid { .. }));
        let other = parse("apiVersion: v1\nkind: ConfigMap\n");
        assert!(matches!(convert(&other), ConvertOutcome::Other));
    }
}

#[cfg(test)]
mod straight_from_the_tree {
    use super::*;
    use crate::manifest::{objects, parse_document, split_documents};

    fn both<T: DeserializeOwned + serde::Serialize>(
        node: &Node,
    ) -> (serde_json::Value, serde_json::Value) {
        let direct: T = T::deserialize(crate::manifest::de::NodeDeserializer(node)).unwrap();
        let via_json: T = serde_json::from_value(node.to_json()).unwrap();
        (
            serde_json::to_value(direct).unwrap(),
            serde_json::to_value(via_json).unwrap(),
        )
    }

    /// Every analysed object of the real manifests reads the same straight
    /// from the tree as through a JSON copy of it.
    #[test]
    fn typed_views_equal_the_json_route() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "yaml") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            for raw in split_documents(&bytes) {
                let Ok(Some(doc)) = parse_document("f", &raw) else {
                    continue;
                };
                for (_, node) in objects(&doc.root) {
                    let (a, b) = match node.get("kind").and_then(Node::as_str) {
                        Some("InferaDeployment") => both::<InferaDeployment>(node),
                        Some("Deployment") => both::<Deployment>(node),
                        _ => continue,
                    };
                    assert_eq!(a, b, "{}", path.display());
                    seen += 1;
                }
            }
        }
        assert!(seen >= 15, "{seen} objects compared");
    }
}
