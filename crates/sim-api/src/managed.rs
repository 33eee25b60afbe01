//! `metadata.managedFields`, kept as upstream keeps them closely enough for a
//! client to tell who wrote which field: one entry per (manager, operation,
//! subresource) with its time (RFC 3339, whole seconds) and the fields it
//! owns as `fieldsV1` (`{"f:spec": {"f:replicas": {}}}`).
//!
//! The manager is the request's `fieldManager`, else the part of the
//! `User-Agent` before its first `/` (upstream's default), else `unknown`.
//! Ownership, as structured-merge-diff decides it for the cases that matter
//! here:
//!
//! * a create (or an apply that creates) gives its manager every field set;
//! * an update (PUT or a merge/JSON/strategic patch, operation `Update`)
//!   gives its manager the fields it added or changed, takes them from every
//!   other manager, and takes removed fields from everyone;
//! * an apply (operation `Apply`, always forced here: no conflicts are
//!   reported) gives its manager exactly the fields of the applied
//!   configuration, taking them from every other manager.
//!
//! Simplifications: lists are atomic (one field: the whole list; upstream
//! keys `containers` and `env` by name), a map's own `"."` entry is not
//! written, entries left with no field are dropped except the writer's own
//! (so the last writer always shows, with its time), and the in-store
//! controllers' direct writes record nothing (upstream:
//! `kube-controller-manager`, `kube-scheduler`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

/// One field: its path of map keys from the object root.
type Path = Vec<String>;

/// Metadata fields the server owns: never tracked.
const SERVER_METADATA: [&str; 9] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "managedFields",
    "selfLink",
];

/// Upstream's default manager: the User-Agent up to its first `/`.
pub fn manager_from_user_agent(user_agent: Option<&str>) -> String {
    user_agent
        .and_then(|ua| ua.split('/').next())
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .unwrap_or("unknown")
        .chars()
        .take(128)
        .collect()
}

/// What a write is, for its managedFields entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Update,
    /// Server-side apply, with the applied configuration.
    Apply,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Update => "Update",
            Operation::Apply => "Apply",
        }
    }
}

/// A write about to be stored: who, how, through which subresource.
#[derive(Debug, Clone, Copy)]
pub struct Write<'a> {
    pub manager: &'a str,
    pub operation: Operation,
    /// `None` for the main resource, `Some("status")`.
    pub subresource: Option<&'a str>,
    /// The applied configuration (operation `Apply`).
    pub applied: Option<&'a Value>,
}

/// Record `write` on `new` (the object about to be stored; `old` the stored
/// one, `None` on create).
pub fn record(old: Option<&Value>, new: &mut Value, write: Write<'_>) {
    let status_only = write.subresource == Some("status");
    let mut entries = match old {
        Some(o) => entries_of(o),
        None => Vec::new(),
    };
    let (gained, lost): (BTreeSet<Path>, BTreeSet<Path>) = match (write.operation, old) {
        (Operation::Apply, _) => {
            let applied = write.applied.map(|a| leaves(a, status_only));
            let gained = applied.unwrap_or_default();
            (gained, BTreeSet::new())
        }
        (Operation::Update, None) => (leaves(new, status_only), BTreeSet::new()),
        (Operation::Update, Some(o)) => changed(o, new, status_only),
    };
    for e in entries.iter_mut() {
        e.fields
            .retain(|p| !gained.contains(p) && !lost.contains(p));
    }
    let key = (
        write.manager.to_string(),
        write.operation.as_str(),
        write.subresource.unwrap_or("").to_string(),
    );
    let now = infera_sim_core::clock::now_rfc3339();
    match entries.iter_mut().find(|e| e.key() == key) {
        Some(e) => {
            if write.operation == Operation::Apply {
                e.fields = gained;
            } else {
                e.fields.extend(gained);
            }
            e.time = now;
        }
        None => entries.push(Entry {
            manager: key.0.clone(),
            operation: key.1,
            subresource: key.2.clone(),
            api_version: new
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("v1")
                .to_string(),
            time: now,
            fields: gained,
        }),
    }
    entries.retain(|e| !e.fields.is_empty() || e.key() == key);
    let list: Vec<Value> = entries.iter().map(Entry::to_json).collect();
    if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("managedFields".into(), Value::Array(list));
    }
}

#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: &'static str,
    subresource: String,
    api_version: String,
    time: String,
    fields: BTreeSet<Path>,
}

impl Entry {
    fn key(&self) -> (String, &'static str, String) {
        (
            self.manager.clone(),
            self.operation,
            self.subresource.clone(),
        )
    }

    fn to_json(&self) -> Value {
        let mut v = json!({
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1(&self.fields),
        });
        if !self.subresource.is_empty() {
            v["subresource"] = Value::from(self.subresource.clone());
        }
        v
    }
}

fn entries_of(obj: &Value) -> Vec<Entry> {
    let Some(list) = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|e| {
            let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let operation = match e.get("operation").and_then(Value::as_str) {
                Some("Apply") => "Apply",
                _ => "Update",
            };
            let mut fields = BTreeSet::new();
            if let Some(f) = e.get("fieldsV1") {
                parse_fields_v1(f, &mut Vec::new(), &mut fields);
            }
            Some(Entry {
                manager: Some(s("manager")).filter(|m| !m.is_empty())?,
                operation,
                subresource: s("subresource"),
                api_version: s("apiVersion"),
                time: s("time"),
                fields,
            })
        })
        .collect()
}

/// Every leaf field of `obj` (objects are walked, anything else is a leaf),
/// without the server's metadata and without `apiVersion`/`kind`; only
/// `status` for a status write, never `status` otherwise.
fn leaves(obj: &Value, status_only: bool) -> BTreeSet<Path> {
    let mut out = BTreeSet::new();
    let Some(map) = obj.as_object() else {
        return out;
    };
    for (k, v) in map {
        let tracked = match k.as_str() {
            "status" => status_only,
            "apiVersion" | "kind" => false,
            _ => !status_only,
        };
        if !tracked {
            continue;
        }
        let mut path = vec![k.clone()];
        walk(v, &mut path, k == "metadata", &mut out);
    }
    out
}

fn walk(v: &Value, path: &mut Path, metadata: bool, out: &mut BTreeSet<Path>) {
    match v.as_object() {
        Some(map) if !map.is_empty() => {
            for (k, child) in map {
                if metadata && path.len() == 1 && SERVER_METADATA.contains(&k.as_str()) {
                    continue;
                }
                path.push(k.clone());
                walk(child, path, false, out);
                path.pop();
            }
        }
        _ => {
            if !(v.is_null() || (metadata && path.len() == 1)) {
                out.insert(path.clone());
            }
        }
    }
}

/// (added or changed, removed) leaves from `old` to `new`.
fn changed(old: &Value, new: &Value, status_only: bool) -> (BTreeSet<Path>, BTreeSet<Path>) {
    let before = leaf_values(old, status_only);
    let after = leaf_values(new, status_only);
    let gained = after
        .iter()
        .filter(|(p, v)| before.get(*p) != Some(*v))
        .map(|(p, _)| p.clone())
        .collect();
    let lost = before
        .keys()
        .filter(|p| !after.contains_key(*p))
        .cloned()
        .collect();
    (gained, lost)
}

fn leaf_values(obj: &Value, status_only: bool) -> BTreeMap<Path, &Value> {
    leaves(obj, status_only)
        .into_iter()
        .filter_map(|p| {
            let mut v = obj;
            for k in &p {
                v = v.get(k)?;
            }
            Some((p, v))
        })
        .collect()
}

fn fields_v1(fields: &BTreeSet<Path>) -> Value {
    let mut root = Map::new();
    for path in fields {
        let mut node = &mut root;
        for k in path {
            let entry = node
                .entry(format!("f:{k}"))
                .or_insert_with(|| Value::Object(Map::new()));
            let Some(next) = entry.as_object_mut() else {
                break;
            };
            node = next;
        }
    }
    Value::Object(root)
}

fn parse_fields_v1(v: &Value, path: &mut Path, out: &mut BTreeSet<Path>) {
    let children: Vec<(&String, &Value)> = v
        .as_object()
        .map(|m| m.iter().filter(|(k, _)| k.as_str() != ".").collect())
        .unwrap_or_default();
    if children.is_empty() {
        if !path.is_empty() {
            out.insert(path.clone());
        }
        return;
    }
    for (k, child) in children {
        // `k:`/`v:`/`i:` list members (from a real server's object) are
        // folded into their list, which is atomic here.
        let Some(name) = k.strip_prefix("f:") else {
            if !path.is_empty() {
                out.insert(path.clone());
            }
            continue;
        };
        path.push(name.to_string());
        parse_fields_v1(child, path, out);
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn managers(obj: &Value) -> Vec<(String, String)> {
        obj["metadata"]["managedFields"]
            .as_array()
            .map(|l| {
                l.iter()
                    .map(|e| {
                        (
                            e["manager"].as_str().unwrap_or("").to_string(),
                            e["operation"].as_str().unwrap_or("").to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    fn update(manager: &str) -> Write<'_> {
        Write {
            manager,
            operation: Operation::Update,
            subresource: None,
            applied: None,
        }
    }

    #[test]
    fn ownership_moves_with_writes() {
        let applied = json!({"apiVersion": "infera.amd.com/v1alpha1", "kind": "InferaDeployment",
            "metadata": {"name": "x", "labels": {"a": "1"}},
            "spec": {"services": {"decode": {"image": "v1", "replicas": 1}}}});
        let mut created = applied.clone();
        record(
            None,
            &mut created,
            Write {
                manager: "kustomize-controller",
                operation: Operation::Apply,
                subresource: None,
                applied: Some(&applied),
            },
        );
        assert_eq!(
            created["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:metadata": {"f:labels": {"f:a": {}}},
                   "f:spec": {"f:services": {"f:decode": {"f:image": {}, "f:replicas": {}}}}})
        );
        let mut changed = created.clone();
        changed["spec"]["services"]["decode"]["image"] = json!("v2");
        record(Some(&created), &mut changed, update("infera"));
        assert_eq!(
            managers(&changed),
            [
                ("kustomize-controller".to_string(), "Apply".to_string()),
                ("infera".to_string(), "Update".to_string())
            ]
        );
        assert_eq!(
            changed["metadata"]["managedFields"][1]["fieldsV1"],
            json!({"f:spec": {"f:services": {"f:decode": {"f:image": {}}}}})
        );
        // The forced apply takes the image back; infera's entry goes empty
        // and is dropped.
        let mut reverted = changed.clone();
        reverted["spec"]["services"]["decode"]["image"] = json!("v1");
        record(
            Some(&changed),
            &mut reverted,
            Write {
                manager: "kustomize-controller",
                operation: Operation::Apply,
                subresource: None,
                applied: Some(&applied),
            },
        );
        assert_eq!(
            managers(&reverted),
            [("kustomize-controller".to_string(), "Apply".to_string())]
        );
        // Parsing back what was written keeps the fields.
        let mut again = reverted.clone();
        record(Some(&reverted), &mut again, update("kubectl-edit"));
        assert_eq!(
            again["metadata"]["managedFields"][0]["fieldsV1"],
            reverted["metadata"]["managedFields"][0]["fieldsV1"]
        );
    }

    #[test]
    fn status_writes_own_status_only_and_user_agent_names_the_default() {
        let old =
            json!({"metadata": {"name": "p"}, "spec": {"a": 1}, "status": {"phase": "Pending"}});
        let mut new = old.clone();
        new["status"]["phase"] = json!("Running");
        record(
            Some(&old),
            &mut new,
            Write {
                manager: "kubelet",
                operation: Operation::Update,
                subresource: Some("status"),
                applied: None,
            },
        );
        let e = &new["metadata"]["managedFields"][0];
        assert_eq!(e["subresource"], "status");
        assert_eq!(e["fieldsV1"], json!({"f:status": {"f:phase": {}}}));
        assert_eq!(
            manager_from_user_agent(Some("kubectl/v1.37.2 (linux/amd64)")),
            "kubectl"
        );
        assert_eq!(manager_from_user_agent(None), "unknown");
    }
}
