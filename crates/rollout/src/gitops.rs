//! GitOps-aware triggers: who else keeps the target, and who put a field
//! back.
//!
//! Argo CD and Flux re-apply what is in Git. With self-heal (Argo CD) or
//! drift correction (Flux) a change made beside them to a field they apply
//! is put back at their next sync: a `set-image` on an InferaDeployment they
//! manage rolls the Deployment half-way and back. They only put back fields
//! their manifest sets (server-side apply, or a three-way merge): a restart
//! label the manifest does not carry stays.
//!
//! * [`assess`] (preflight): the managers in `metadata.managedFields`
//!   (`argocd-controller`, `kustomize-controller`, `helm-controller`, …) and
//!   the labels and annotations those tools set; for each field the rollout
//!   will set, whether a GitOps manager owns it (field ownership in
//!   `fieldsV1`; on an object with a tool's marker but no managedFields
//!   entry of a GitOps manager — Argo CD's client-side apply has no apply
//!   manager of its own — an image or env var already set counts as
//!   applied from Git).
//! * [`TriggerField`] (driving): the fields infera set, read back from every
//!   version of the target the watch delivers; [`who_wrote`] names the
//!   writer of a field that changed from the managedFields of the new
//!   version.

use serde_json::Value;

use super::trigger::{self, Change};

/// Field manager of infera's own writes to the target.
pub const FIELD_MANAGER: &str = "infera";

/// The GitOps tool a field manager belongs to.
pub fn tool_of_manager(manager: &str) -> Option<&'static str> {
    match manager {
        m if m.starts_with("argocd") => Some("Argo CD"),
        "kustomize-controller" | "helm-controller" => Some("Flux"),
        _ => None,
    }
}

/// Labels and annotations a GitOps tool sets on what it manages, the tool,
/// and whether it is an annotation.
const MARKERS: [(&str, &str, bool); 6] = [
    ("argocd.argoproj.io/instance", "Argo CD", false),
    ("argocd.argoproj.io/tracking-id", "Argo CD", true),
    ("kustomize.toolkit.fluxcd.io/name", "Flux", false),
    ("kustomize.toolkit.fluxcd.io/namespace", "Flux", false),
    ("helm.toolkit.fluxcd.io/name", "Flux", false),
    ("helm.toolkit.fluxcd.io/namespace", "Flux", false),
];

/// One step of a field path: a map key, or the list item with this `name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Named(String),
}

/// A field the trigger sets, and the value it sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerField {
    /// The leg whose trigger sets it.
    pub leg: String,
    /// As a person reads it: `services.decode.image`.
    pub display: String,
    pub path: Vec<Seg>,
    pub value: String,
}

fn keys(parts: &[&str]) -> Vec<Seg> {
    parts.iter().map(|p| Seg::Key((*p).to_string())).collect()
}

/// The fields `change` sets on leg `leg` of `live` (the InferaDeployment,
/// or the Deployment when `!is_idep`).
pub fn trigger_fields(
    live: &Value,
    leg: &str,
    change: &Change,
    is_idep: bool,
) -> Vec<TriggerField> {
    let mut out = Vec::new();
    let (base, shown, containers): (Vec<Seg>, String, Option<Vec<Seg>>) = if is_idep {
        let svc = live.pointer(&format!("/spec/services/{leg}"));
        let extra = svc.and_then(|s| s.get("extraPodSpec")).is_some();
        let containers =
            extra.then(|| keys(&["spec", "services", leg, "extraPodSpec", "containers"]));
        (
            keys(&["spec", "services", leg]),
            format!("services.{leg}"),
            containers,
        )
    } else {
        let containers = Some(keys(&["spec", "template", "spec", "containers"]));
        (
            keys(&["spec", "template"]),
            "spec.template".into(),
            containers,
        )
    };
    if let Some(at) = &change.restart_at {
        let (path, display) = if is_idep {
            let label = trigger::RESTARTED_AT_LABEL;
            let mut p = base.clone();
            p.extend(keys(&["podLabels", label]));
            (p, format!("{shown}.podLabels[\"{label}\"]"))
        } else {
            let ann = trigger::KUBECTL_RESTARTED_AT;
            let mut p = base.clone();
            p.extend(keys(&["metadata", "annotations", ann]));
            (p, format!("{shown}.metadata.annotations[\"{ann}\"]"))
        };
        out.push(TriggerField {
            leg: leg.to_string(),
            display,
            path,
            value: at.clone(),
        });
    }
    // Where the image and env live: the main container, or (an
    // InferaDeployment service without extraPodSpec) the service itself.
    let (holder, holder_shown) = match &containers {
        Some(list) => {
            let items = read(live, list)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let name = trigger::main_container_index(&items)
                .and_then(|i| items.get(i))
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("main")
                .to_string();
            let mut p = list.clone();
            p.push(Seg::Named(name.clone()));
            let list_shown = if is_idep {
                format!("{shown}.extraPodSpec.containers")
            } else {
                format!("{shown}.spec.containers")
            };
            (p, format!("{list_shown}[{name}]"))
        }
        None => (base.clone(), shown.clone()),
    };
    if let Some(image) = &change.image {
        let mut path = holder.clone();
        path.push(Seg::Key("image".into()));
        out.push(TriggerField {
            leg: leg.to_string(),
            display: format!("{holder_shown}.image"),
            path,
            value: image.clone(),
        });
    }
    for e in &change.env {
        let mut path = holder.clone();
        path.extend([Seg::Key("env".into()), Seg::Named(e.name.clone())]);
        path.push(Seg::Key("value".into()));
        out.push(TriggerField {
            leg: leg.to_string(),
            display: format!("{holder_shown}.env[{}]", e.name),
            path,
            value: e.value.clone(),
        });
    }
    out
}

/// The value at `path` (a named list item found by its `name`).
pub fn read<'a>(obj: &'a Value, path: &[Seg]) -> Option<&'a Value> {
    let mut v = obj;
    for seg in path {
        v = match seg {
            Seg::Key(k) => v.get(k)?,
            Seg::Named(n) => v
                .as_array()?
                .iter()
                .find(|i| i.get("name").and_then(Value::as_str) == Some(n.as_str()))?,
        };
    }
    Some(v)
}

impl TriggerField {
    /// The value on `obj` when it is not what infera set (`Some(None)`:
    /// the field is gone).
    pub fn changed_on(&self, obj: &Value) -> Option<Option<String>> {
        let now = read(obj, &self.path).map(|v| match v.as_str() {
            Some(s) => s.to_string(),
            None => v.to_string(),
        });
        (now.as_deref() != Some(self.value.as_str())).then_some(now)
    }
}

/// One `metadata.managedFields` entry of the main resource.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    manager: String,
    operation: String,
    time: String,
    fields: Value,
}

fn entries(obj: &Value) -> Vec<Entry> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter(|e| {
                    e.get("subresource")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .is_empty()
                })
                .map(|e| {
                    let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    Entry {
                        manager: s("manager"),
                        operation: s("operation"),
                        time: s("time"),
                        fields: e.get("fieldsV1").cloned().unwrap_or(Value::Null),
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `fieldsV1` holds `path` (or an atomic prefix of it).
fn owns(fields: &Value, path: &[Seg]) -> bool {
    let mut node = fields;
    for seg in path {
        let children = node
            .as_object()
            .map(|m| m.keys().filter(|k| k.as_str() != ".").count())
            .unwrap_or(0);
        if children == 0 {
            // A leaf above the field: owned whole (an atomic list or map).
            return !std::ptr::eq(node, fields);
        }
        let key = match seg {
            Seg::Key(k) => format!("f:{k}"),
            Seg::Named(n) => format!("k:{}", serde_json::json!({ "name": n })),
        };
        let Some(next) = node.get(&key) else {
            return false;
        };
        node = next;
    }
    true
}

/// The managers owning `path` on `obj`.
pub fn owners(obj: &Value, path: &[Seg]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in entries(obj).into_iter().filter(|e| owns(&e.fields, path)) {
        if !out.contains(&e.manager) {
            out.push(e.manager);
        }
    }
    out
}

/// Who wrote `field` on `new`: its owner (not infera), else a manager whose
/// entry is new or newer than on `prev`; GitOps managers first.
pub fn who_wrote(prev: Option<&Value>, new: &Value, field: &TriggerField) -> Option<String> {
    let prefer = |mut names: Vec<String>| {
        names.retain(|m| m != FIELD_MANAGER);
        names.sort_by_key(|m| tool_of_manager(m).is_none());
        names.into_iter().next()
    };
    if let Some(owner) = prefer(owners(new, &field.path)) {
        return Some(owner);
    }
    let before = prev.map(entries).unwrap_or_default();
    let touched: Vec<String> = entries(new)
        .into_iter()
        .filter(|e| {
            !before
                .iter()
                .any(|b| b.manager == e.manager && b.operation == e.operation && b.time == e.time)
        })
        .map(|e| e.manager)
        .collect();
    prefer(touched)
}

/// A field the rollout sets, and what the GitOps tool will do to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldFate {
    pub leg: String,
    pub display: String,
    /// The GitOps manager that applies it (`None`: it does not).
    pub applied_by: Option<String>,
}

/// Who manages the target, and what will happen to the rollout's change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitOps {
    /// `Argo CD`, `Flux`.
    pub tool: &'static str,
    /// Its field managers on the object (may be empty: Argo CD's
    /// client-side apply records none).
    pub managers: Vec<String>,
    /// `label kustomize.toolkit.fluxcd.io/name=llama`.
    pub markers: Vec<String>,
    pub fields: Vec<FieldFate>,
    /// How to stop it reverting (a command where the markers name the app).
    pub suspend: String,
}

impl GitOps {
    /// A field the tool applies is changed: its next sync reverts it.
    pub fn refuses(&self) -> bool {
        self.fields.iter().any(|f| f.applied_by.is_some())
    }

    /// Whether the tool would revert the change on `leg`.
    pub fn reverts(&self, leg: &str) -> bool {
        self.fields
            .iter()
            .any(|f| f.leg == leg && f.applied_by.is_some())
    }

    /// `Flux (kustomize-controller)`.
    pub fn who(&self) -> String {
        match self.managers.is_empty() {
            true => self.tool.to_string(),
            false => format!("{} ({})", self.tool, self.managers.join(", ")),
        }
    }

    /// The plan's lines.
    pub fn render(&self, target: &str) -> Vec<String> {
        let mut lines = vec![format!(
            "  GitOps: {} manages {target} ({}).",
            self.who(),
            if self.markers.is_empty() {
                "managedFields".to_string()
            } else {
                self.markers.join(", ")
            }
        )];
        for f in &self.fields {
            lines.push(match &f.applied_by {
                Some(m) => format!(
                    "  GitOps: {} is applied by {m}: with self-heal / drift correction its next sync puts the old value back and the roll undoes itself half-way.",
                    f.display
                ),
                None => format!(
                    "  GitOps: {} is not a field {} applies: a sync keeps it (a replace sync, or the field committed to Git, would not).",
                    f.display,
                    self.tool
                ),
            });
        }
        if self.refuses() {
            lines.push(format!(
                "  GitOps fix: commit the change to Git, or suspend reconciliation first ({}), or rerun with --force: infera watches {target} and stops if the change is reverted.",
                self.suspend
            ));
        } else {
            lines.push(format!(
                "  GitOps: proceeding; infera watches {target} and stops if the change is reverted."
            ));
        }
        lines
    }
}

fn marker_value<'a>(live: &'a Value, key: &str, annotation: bool) -> Option<&'a str> {
    let map = if annotation { "annotations" } else { "labels" };
    live.pointer(&format!("/metadata/{map}"))
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
}

fn suspend_hint(tool: &str, live: &Value) -> String {
    let get = |k: &str, a: bool| marker_value(live, k, a);
    match tool {
        "Flux" => {
            let (kind, name, ns) = match get("kustomize.toolkit.fluxcd.io/name", false) {
                Some(n) => (
                    "kustomization",
                    n,
                    get("kustomize.toolkit.fluxcd.io/namespace", false),
                ),
                None => (
                    "helmrelease",
                    get("helm.toolkit.fluxcd.io/name", false).unwrap_or("NAME"),
                    get("helm.toolkit.fluxcd.io/namespace", false),
                ),
            };
            let ns = ns.map(|n| format!(" -n {n}")).unwrap_or_default();
            format!("`flux suspend {kind} {name}{ns}`")
        }
        _ => {
            let app = get("argocd.argoproj.io/instance", false)
                .or_else(|| {
                    get("argocd.argoproj.io/tracking-id", true).and_then(|t| t.split(':').next())
                })
                .unwrap_or("APP");
            format!("`argocd app set {app} --self-heal=false`, or turn auto-sync off")
        }
    }
}

/// The preflight's view: `None` when no GitOps tool manages `live`.
/// `fields`: what the rollout will set, per leg.
pub fn assess(live: &Value, fields: &[TriggerField]) -> Option<GitOps> {
    let mut managers: Vec<(String, &'static str)> = Vec::new();
    for e in entries(live) {
        if let Some(tool) = tool_of_manager(&e.manager)
            && !managers.iter().any(|(m, _)| *m == e.manager)
        {
            managers.push((e.manager, tool));
        }
    }
    let markers: Vec<(String, &'static str)> = MARKERS
        .iter()
        .filter_map(|(key, tool, annotation)| {
            marker_value(live, key, *annotation).map(|v| {
                let what = if *annotation { "annotation" } else { "label" };
                (format!("{what} {key}={v}"), *tool)
            })
        })
        .collect();
    let tool = managers
        .first()
        .map(|(_, t)| *t)
        .or_else(|| markers.first().map(|(_, t)| *t))?;
    let fates = fields
        .iter()
        .map(|f| {
            let owner = owners(live, &f.path)
                .into_iter()
                .find(|m| tool_of_manager(m).is_some());
            // A marker but no GitOps manager entry: a value already there
            // that infera did not set came from Git.
            let from_git = managers.is_empty()
                && !f
                    .path
                    .iter()
                    .any(|s| matches!(s, Seg::Key(k) if k == "podLabels" || k == "annotations"))
                && read(live, &f.path).is_some()
                && !owners(live, &f.path).iter().any(|m| m == FIELD_MANAGER);
            FieldFate {
                leg: f.leg.clone(),
                display: f.display.clone(),
                applied_by: owner.or_else(|| from_git.then(|| tool.to_string())),
            }
        })
        .collect();
    Some(GitOps {
        tool,
        managers: managers.into_iter().map(|(m, _)| m).collect(),
        markers: markers.into_iter().map(|(m, _)| m).collect(),
        fields: fates,
        suspend: suspend_hint(tool, live),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn idep() -> Value {
        json!({"metadata": {"name": "llama",
            "labels": {"kustomize.toolkit.fluxcd.io/name": "llama", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"},
            "managedFields": [
              {"manager": "kustomize-controller", "operation": "Apply", "time": "2026-12-03T10:00:00Z",
               "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:services": {"f:decode": {"f:image": {}, "f:replicas": {}}}}}},
              {"manager": "infera-operator", "operation": "Update", "subresource": "status", "time": "2026-12-03T10:00:01Z",
               "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}]},
          "spec": {"services": {"decode": {"image": "v1", "replicas": 1}, "prefill": {"replicas": 1}}}})
    }

    fn change(image: Option<&str>) -> Change {
        Change {
            restart_at: image.is_none().then(|| "T".to_string()),
            image: image.map(str::to_string),
            env: Vec::new(),
        }
    }

    #[test]
    fn flux_applied_image_refuses_a_restart_label_does_not() {
        let live = idep();
        let image = trigger_fields(&live, "decode", &change(Some("v2")), true);
        assert_eq!(image[0].display, "services.decode.image");
        let g = assess(&live, &image).expect("managed");
        assert_eq!(g.who(), "Flux (kustomize-controller)");
        assert!(g.refuses());
        let text = g.render("idep/llama").join("\n");
        assert!(
            text.contains("services.decode.image is applied by kustomize-controller"),
            "{text}"
        );
        assert!(
            text.contains("flux suspend kustomization llama -n flux-system"),
            "{text}"
        );
        // prefill's image is inherited, not applied: set-image adds a field.
        let prefill = trigger_fields(&live, "prefill", &change(Some("v2")), true);
        assert!(!assess(&live, &prefill).expect("managed").refuses());
        let restart = trigger_fields(&live, "decode", &change(None), true);
        assert!(!assess(&live, &restart).expect("managed").refuses());
        let mut plain = live.clone();
        plain["metadata"] = json!({"name": "llama"});
        assert_eq!(assess(&plain, &image), None);
    }

    #[test]
    fn argo_client_side_apply_is_known_by_its_marker() {
        let live = json!({"metadata": {"annotations": {"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:prod/web"}},
            "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "v1"}]}}}});
        let f = trigger_fields(&live, "web", &change(Some("v2")), false);
        assert_eq!(f[0].display, "spec.template.spec.containers[web].image");
        let g = assess(&live, &f).expect("managed");
        assert_eq!(g.tool, "Argo CD");
        assert!(g.refuses());
        assert!(g.suspend.contains("argocd app set shop"), "{}", g.suspend);
    }

    #[test]
    fn revert_is_detected_and_named() {
        let live = idep();
        let f = trigger_fields(&live, "decode", &change(Some("v2")), true).remove(0);
        let mut ours = live.clone();
        ours["spec"]["services"]["decode"]["image"] = json!("v2");
        ours["metadata"]["managedFields"][0]["fieldsV1"] =
            json!({"f:spec": {"f:services": {"f:decode": {"f:replicas": {}}}}});
        ours["metadata"]["managedFields"]
            .as_array_mut()
            .unwrap()
            .push(
                json!({"manager": "infera", "operation": "Update", "time": "2026-12-03T10:01:00Z",
                "fieldsV1": {"f:spec": {"f:services": {"f:decode": {"f:image": {}}}}}}),
            );
        assert_eq!(f.changed_on(&ours), None);
        let back = live.clone();
        assert_eq!(f.changed_on(&back), Some(Some("v1".into())));
        assert_eq!(
            who_wrote(Some(&ours), &back, &f).as_deref(),
            Some("kustomize-controller")
        );
        // A removal leaves no owner: the manager whose entry moved.
        let mut removed = ours.clone();
        removed["metadata"]["managedFields"][0]["time"] = json!("2026-12-03T10:01:20Z");
        removed["metadata"]["managedFields"][2]["fieldsV1"] = json!({});
        assert_eq!(
            who_wrote(Some(&ours), &removed, &f).as_deref(),
            Some("kustomize-controller")
        );
        assert_eq!(who_wrote(Some(&ours), &ours, &f), None);
    }
}
