//! The simulator's object store: the etcd + registry layer of a tiny API server.
//!
//! Objects are kept in wire form (`serde_json::Value`, unknown fields kept),
//! keyed by kind, namespace and name. Every write takes the next value of one
//! global, monotonically increasing resource version (like etcd's revision),
//! is appended to a bounded watch history (so a watch can resume from a
//! version it saw) and is broadcast to live subscribers. `compact()` forgets
//! the history, so resuming from an older version fails with `Gone` (410).
//!
//! The API is synchronous and cheap: writers hold one lock briefly, readers
//! clone `Arc`s. Each write serializes the object once; lists, watch events
//! and the history share those bytes, so listing 5,000 pods over HTTP is
//! mostly a memcpy, and the history keeps past versions only as JSON.
//!
//! Beside it, what only the store needs: [`recorder`] (Events written into
//! it) and [`truth`] (the ground truth read off its event stream). The
//! world does not depend on this crate: it reaches the store only over HTTP.

pub mod lease;
pub mod recorder;
pub mod truth;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

/// How many past events a store keeps for watch resume. Older resumes get 410.
pub const DEFAULT_HISTORY: usize = 20_000;
/// How many bytes of encoded objects the watch history keeps at most (the
/// count bound alone lets a history of large objects grow to gigabytes).
pub const DEFAULT_HISTORY_BYTES: usize = 256 << 20;
/// Distinct request-count keys kept (verbs × resources × subresources is
/// under 200); past it, requests are counted under [`OTHER_REQUESTS`].
pub const MAX_REQUEST_KEYS: usize = 1024;
/// The request-count key past [`MAX_REQUEST_KEYS`].
pub const OTHER_REQUESTS: &str = "other";
/// Live-event channel capacity; a watcher lagging further than this is closed
/// (the client then resumes from its last version, as after any dropped watch).
const BROADCAST_CAPACITY: usize = 16_384;

use infera_sim_core::clock::now_rfc3339;
use infera_sim_core::kind::Kind;

/// Identity of one stored object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub kind: Kind,
    pub namespace: Option<String>,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    #[error("already exists")]
    AlreadyExists,
    #[error(
        "the object has been modified; please apply your changes to the latest version and try again"
    )]
    Conflict,
    #[error("invalid: {0}")]
    Invalid(String),
    #[error("too old resource version")]
    Gone,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    /// The watch wire name (`ADDED`, `MODIFIED`, `DELETED`).
    pub fn wire(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as delivered to watchers.
#[derive(Debug, Clone)]
pub struct StoreEvent {
    pub kind: Kind,
    pub event: EventType,
    pub object: Arc<Value>,
    /// The object as it was before this change, as JSON (`None` for a
    /// creation and for the synthetic `Added` events of a watch from
    /// "now"): selector watches need it to tell entering, staying in and
    /// leaving the selection apart, as upstream's watch cache does. Only
    /// the encoding is kept (shared with the earlier version's), so neither
    /// the live channel nor the history keeps old `Value`s alive.
    pub prev_json: Option<Arc<[u8]>>,
    pub resource_version: u64,
    /// `object`'s JSON encoding (made once per write, shared by every
    /// watcher and by lists).
    pub json: Arc<[u8]>,
    /// When the change was made (the host's clock; for a replayed event,
    /// when it was replayed).
    pub at: std::time::SystemTime,
}

/// A past event as the watch history keeps it: the object only in its JSON
/// encoding (a small fraction of a `Value`'s memory; usually shared with
/// the live object), decoded again only when a watch resumes.
#[derive(Debug, Clone)]
struct Recorded {
    kind: Kind,
    event: EventType,
    namespace: Option<Box<str>>,
    resource_version: u64,
    json: Arc<[u8]>,
    /// The object before the change, as JSON (selector watches need it on
    /// resume); shared with the encoding of the version that was live then.
    prev_json: Option<Arc<[u8]>>,
}

impl Recorded {
    fn of(event: &StoreEvent) -> Recorded {
        Recorded {
            kind: event.kind,
            event: event.event,
            namespace: event.namespace().map(Box::from),
            resource_version: event.resource_version,
            json: Arc::clone(&event.json),
            prev_json: event.prev_json.clone(),
        }
    }

    /// The bytes this entry accounts for (the object's encoding; the
    /// previous state's is the entry before's).
    fn bytes(&self) -> usize {
        self.json.len()
    }

    fn event(&self) -> StoreEvent {
        let object = serde_json::from_slice(&self.json).unwrap_or(Value::Null);
        StoreEvent {
            at: std::time::SystemTime::now(),
            kind: self.kind,
            event: self.event,
            object: Arc::new(object),
            prev_json: self.prev_json.clone(),
            resource_version: self.resource_version,
            json: Arc::clone(&self.json),
        }
    }
}

impl StoreEvent {
    pub fn namespace(&self) -> Option<&str> {
        self.object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
    }
}

/// The events a watch replays before its live ones. Past events are
/// decoded one at a time as the watch takes them: a resume from far back
/// holds the history's shared JSON, never thousands of decoded objects at
/// once, and what was sent is dropped as the watch goes on.
#[derive(Debug)]
pub struct Replay {
    items: std::vec::IntoIter<ReplayItem>,
}

#[derive(Debug)]
enum ReplayItem {
    /// A synthetic `Added` for an object stored now (shares its `Arc`s).
    Current(StoreEvent),
    /// A recorded change, decoded when taken.
    Past(Recorded),
}

impl Iterator for Replay {
    type Item = StoreEvent;

    fn next(&mut self) -> Option<StoreEvent> {
        self.items.next().map(|item| match item {
            ReplayItem::Current(event) => event,
            ReplayItem::Past(recorded) => recorded.event(),
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.items.size_hint()
    }
}

impl ExactSizeIterator for Replay {}

/// Where a watch starts: the replayed events, the live receiver, and the
/// store version the receiver starts after.
#[derive(Debug)]
pub struct WatchStart {
    pub events: Replay,
    pub receiver: broadcast::Receiver<StoreEvent>,
    pub resource_version: u64,
}

fn encode(value: &Value) -> Arc<[u8]> {
    serde_json::to_vec(value).unwrap_or_default().into()
}

/// A stored object plus its serialized form, made once when it is written
/// (the watch events and the history carry the same bytes).
#[derive(Debug)]
pub struct StoredObject {
    value: Arc<Value>,
    json: Arc<[u8]>,
    /// When this version was written (an Event's lease runs from here).
    written: Instant,
}

impl StoredObject {
    fn new(value: Value) -> Arc<StoredObject> {
        Arc::new(StoredObject {
            json: encode(&value),
            value: Arc::new(value),
            written: Instant::now(),
        })
    }

    pub fn value(&self) -> &Value {
        &self.value
    }

    pub fn value_arc(&self) -> Arc<Value> {
        Arc::clone(&self.value)
    }

    /// The object's JSON encoding.
    pub fn json(&self) -> &[u8] {
        &self.json
    }

    pub fn json_arc(&self) -> Arc<[u8]> {
        Arc::clone(&self.json)
    }
}

/// Namespace (empty for cluster-scoped kinds) and name.
type NameKey = (String, String);

/// How much watch history a store keeps: the older of the two bounds wins
/// (a resume from before what is kept gets 410 Gone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    /// Past events (at least one is kept).
    pub events: usize,
    /// Encoded bytes of the objects they carry.
    pub bytes: usize,
}

struct State {
    resource_version: u64,
    objects: HashMap<Kind, BTreeMap<NameKey, Arc<StoredObject>>>,
    history: VecDeque<Recorded>,
    history_limit: usize,
    /// The encoded bytes `history` holds, and their bound.
    history_bytes: usize,
    history_bytes_limit: usize,
    /// Every event with a version greater than this is still in `history`.
    history_floor: u64,
    /// Events' time to live (wall clock; `None`: kept forever) and their
    /// leases in write order: (written, key). A lease whose object was
    /// written again since is stale and skipped (`lease.rs`).
    event_ttl: Option<Duration>,
    leases: VecDeque<(Instant, NameKey)>,
    uid_counter: u64,
    rng: ChaCha8Rng,
}

struct Inner {
    state: RwLock<State>,
    events: broadcast::Sender<StoreEvent>,
    request_counts: Mutex<BTreeMap<String, u64>>,
}

/// The simulator's object store. Cheap to clone; all clones share state.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("resource_version", &self.resource_version())
            .finish_non_exhaustive()
    }
}

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}

/// `now + seconds`, as a Kubernetes `Time`.
pub fn rfc3339_in(seconds: i64) -> String {
    let now = infera_sim_core::clock::server_now();
    let then = now
        .checked_add(jiff::SignedDuration::from_secs(seconds))
        .unwrap_or(now);
    then.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

fn metadata_mut(obj: &mut Value) -> Result<&mut Map<String, Value>, StoreError> {
    let map = obj
        .as_object_mut()
        .ok_or_else(|| StoreError::Invalid("the object is not a JSON object".into()))?;
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    meta.as_object_mut()
        .ok_or_else(|| StoreError::Invalid("metadata must be an object".into()))
}

/// Everything but `metadata` and `status`: what the generation tracks.
fn spec_differs(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a != b;
    };
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| !matches!(k.as_str(), "metadata" | "status" | "kind" | "apiVersion"))
        .any(|k| a.get(k) != b.get(k))
}

/// A DNS-1123 subdomain, as upstream requires for most object names.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric())
}

fn parse_rv(obj: &Value) -> Result<Option<u64>, StoreError> {
    match meta_str(obj, "resourceVersion") {
        None | Some("") => Ok(None),
        Some(s) => s.parse::<u64>().map(Some).map_err(|_| {
            StoreError::Invalid(format!("metadata.resourceVersion: invalid value {s:?}"))
        }),
    }
}

impl State {
    fn next_rv(&mut self) -> u64 {
        self.resource_version += 1;
        self.resource_version
    }

    fn record(&mut self, tx: &broadcast::Sender<StoreEvent>, event: StoreEvent) {
        let recorded = Recorded::of(&event);
        self.history_bytes += recorded.bytes();
        self.history.push_back(recorded);
        while self.history.len() > self.history_limit
            || (self.history_bytes > self.history_bytes_limit && self.history.len() > 1)
        {
            let Some(old) = self.history.pop_front() else {
                break;
            };
            self.history_bytes = self.history_bytes.saturating_sub(old.bytes());
            self.history_floor = old.resource_version;
        }
        // No receivers is fine: nobody is watching.
        let _ = tx.send(event);
    }

    fn map(&mut self, kind: Kind) -> &mut BTreeMap<NameKey, Arc<StoredObject>> {
        self.objects.entry(kind).or_default()
    }

    fn generate_suffix(&mut self) -> String {
        // Upstream's alphabet for generated names (no vowels, no look-alikes).
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        (0..5)
            .map(|_| {
                let i = self.rng.random_range(0..ALPHABET.len());
                char::from(ALPHABET.get(i).copied().unwrap_or(b'x'))
            })
            .collect()
    }

    fn new_uid(&mut self) -> String {
        self.uid_counter += 1;
        let random: u64 = self.rng.random();
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            (random >> 32) as u32,
            (random >> 16) as u16,
            (random & 0xfff) as u16,
            (self.uid_counter >> 48) & 0xfff,
            self.uid_counter & 0xffff_ffff_ffff
        )
    }
}

impl Store {
    /// A store with the namespaces every cluster has (`default`,
    /// `kube-system`, `kube-public`, `kube-node-lease`).
    pub fn new() -> Store {
        Store::with_options(0, DEFAULT_HISTORY)
    }

    /// A store whose generated names and uids derive from `seed`, keeping
    /// `history` past events for watch resume.
    pub fn with_options(seed: u64, history: usize) -> Store {
        Store::with_limits(
            seed,
            HistoryLimits {
                events: history,
                bytes: DEFAULT_HISTORY_BYTES,
            },
        )
    }

    /// A store whose generated names and uids derive from `seed`, its watch
    /// history bounded by `limits`.
    pub fn with_limits(seed: u64, limits: HistoryLimits) -> Store {
        let (events, _) = broadcast::channel(BROADCAST_CAPACITY);
        let store = Store {
            inner: Arc::new(Inner {
                state: RwLock::new(State {
                    resource_version: 0,
                    objects: HashMap::new(),
                    history: VecDeque::new(),
                    history_limit: limits.events.max(1),
                    history_bytes: 0,
                    history_bytes_limit: limits.bytes,
                    history_floor: 0,
                    event_ttl: None,
                    leases: VecDeque::new(),
                    uid_counter: 0,
                    rng: ChaCha8Rng::seed_from_u64(seed),
                }),
                events,
                request_counts: Mutex::new(BTreeMap::new()),
            }),
        };
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let _ = store.create(
                Kind::Namespace,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            );
        }
        store
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.inner
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.inner
            .state
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The current (latest) resource version.
    pub fn resource_version(&self) -> u64 {
        self.read().resource_version
    }

    fn key(kind: Kind, ns: Option<&str>, name: &str) -> NameKey {
        let ns = if kind.namespaced() {
            ns.unwrap_or("default")
        } else {
            ""
        };
        (ns.to_string(), name.to_string())
    }

    /// The stored object (shared, with cached JSON).
    pub fn get_stored(
        &self,
        kind: Kind,
        ns: Option<&str>,
        name: &str,
    ) -> Option<Arc<StoredObject>> {
        let key = Self::key(kind, ns, name);
        self.read().objects.get(&kind)?.get(&key).cloned()
    }

    pub fn get(&self, kind: Kind, ns: Option<&str>, name: &str) -> Option<Value> {
        self.get_stored(kind, ns, name).map(|o| o.value().clone())
    }

    pub fn get_typed<T: DeserializeOwned>(
        &self,
        kind: Kind,
        ns: Option<&str>,
        name: &str,
    ) -> Option<T> {
        let stored = self.get_stored(kind, ns, name)?;
        T::deserialize(stored.value()).ok()
    }

    /// All objects of `kind` (in namespace `ns`, or all namespaces for
    /// `None`), sorted by namespace and name, and the list's resource version.
    pub fn list_stored(&self, kind: Kind, ns: Option<&str>) -> (Vec<Arc<StoredObject>>, u64) {
        let state = self.read();
        let rv = state.resource_version;
        let Some(map) = state.objects.get(&kind) else {
            return (Vec::new(), rv);
        };
        let items = match ns {
            Some(ns) if kind.namespaced() => map
                .range((ns.to_string(), String::new())..)
                .take_while(|((n, _), _)| n == ns)
                .map(|(_, o)| Arc::clone(o))
                .collect(),
            _ => map.values().cloned().collect(),
        };
        (items, rv)
    }

    pub fn list(&self, kind: Kind, ns: Option<&str>) -> (Vec<Value>, u64) {
        let (items, rv) = self.list_stored(kind, ns);
        (items.iter().map(|o| o.value().clone()).collect(), rv)
    }

    /// Objects that do not deserialize as `T` are skipped.
    pub fn list_typed<T: DeserializeOwned>(&self, kind: Kind, ns: Option<&str>) -> Vec<T> {
        let (items, _) = self.list_stored(kind, ns);
        items
            .iter()
            .filter_map(|o| T::deserialize(o.value()).ok())
            .collect()
    }

    /// Create: sets uid, resourceVersion, creationTimestamp, generation 1,
    /// resolves `generateName`, defaults the namespace to `default`, and
    /// applies the API server's defaults for the kind.
    pub fn create(&self, kind: Kind, obj: Value) -> Result<Value, StoreError> {
        self.create_shared(kind, obj).map(|v| (*v).clone())
    }

    /// [`Store::create`], returning the stored object itself (no copy).
    pub fn create_shared(&self, kind: Kind, mut obj: Value) -> Result<Arc<Value>, StoreError> {
        if !obj.is_object() {
            return Err(StoreError::Invalid(
                "the object is not a JSON object".into(),
            ));
        }
        if let Some(map) = obj.as_object_mut() {
            map.insert("apiVersion".into(), Value::from(kind.api_version()));
            map.insert("kind".into(), Value::from(kind.kind()));
        }
        infera_sim_core::defaults::apply(kind, &mut obj);
        let mut state = self.write();
        let meta = metadata_mut(&mut obj)?;
        let name = match meta.get("name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => name.to_string(),
            _ => match meta.get("generateName").and_then(Value::as_str) {
                Some(prefix) if !prefix.is_empty() => {
                    // Retry on the (unlikely) collision, as upstream's client would.
                    let mut name = String::new();
                    for _ in 0..16 {
                        name = format!("{prefix}{}", state.generate_suffix());
                        let key =
                            Self::key(kind, meta.get("namespace").and_then(Value::as_str), &name);
                        if !state.map(kind).contains_key(&key) {
                            break;
                        }
                    }
                    name
                }
                _ => {
                    return Err(StoreError::Invalid(
                        "metadata.name: Required value: name or generateName is required".into(),
                    ));
                }
            },
        };
        if kind != Kind::Event && !valid_name(&name) {
            return Err(StoreError::Invalid(format!(
                "metadata.name: Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
            )));
        }
        meta.insert("name".into(), Value::from(name.clone()));
        let ns = if kind.namespaced() {
            let ns = meta
                .get("namespace")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or("default")
                .to_string();
            meta.insert("namespace".into(), Value::from(ns.clone()));
            Some(ns)
        } else {
            meta.remove("namespace");
            None
        };
        let key = Self::key(kind, ns.as_deref(), &name);
        if state.map(kind).contains_key(&key) {
            return Err(StoreError::AlreadyExists);
        }
        let rv = state.next_rv();
        let uid = state.new_uid();
        let meta = metadata_mut(&mut obj)?;
        meta.insert("uid".into(), Value::from(uid));
        meta.insert("resourceVersion".into(), Value::from(rv.to_string()));
        meta.insert("creationTimestamp".into(), Value::from(now_rfc3339()));
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        if kind != Kind::Event {
            meta.insert("generation".into(), Value::from(1));
        }
        let stored = StoredObject::new(obj);
        let value = stored.value_arc();
        let event = StoreEvent {
            at: std::time::SystemTime::now(),
            kind,
            event: EventType::Added,
            object: stored.value_arc(),
            prev_json: None,
            resource_version: rv,
            json: stored.json_arc(),
        };
        state.attach_lease(kind, &key, stored.written);
        state.map(kind).insert(key, stored);
        state.record(&self.inner.events, event);
        Ok(value)
    }

    /// Write `new` over the stored object at `key` under the held lock.
    /// Keeps identity fields, bumps the generation when the spec changed,
    /// skips no-op writes (no new version, no event, like upstream), and
    /// removes an object whose deletion was only waiting for finalizers.
    fn commit(
        &self,
        state: &mut State,
        kind: Kind,
        key: &NameKey,
        old: &Arc<StoredObject>,
        mut new: Value,
    ) -> Result<Arc<Value>, StoreError> {
        let old_value = old.value();
        if let Some(map) = new.as_object_mut() {
            map.insert("apiVersion".into(), Value::from(kind.api_version()));
            map.insert("kind".into(), Value::from(kind.kind()));
        }
        let generation = old_value
            .pointer("/metadata/generation")
            .and_then(Value::as_i64);
        let bump = kind != Kind::Event && spec_differs(old_value, &new);
        {
            let meta = metadata_mut(&mut new)?;
            for field in [
                "name",
                "namespace",
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
            ] {
                match old_value.get("metadata").and_then(|m| m.get(field)) {
                    Some(v) => {
                        meta.insert(field.into(), v.clone());
                    }
                    None => {
                        meta.remove(field);
                    }
                }
            }
            match generation {
                Some(g) => {
                    meta.insert(
                        "generation".into(),
                        Value::from(if bump { g + 1 } else { g }),
                    );
                }
                None => {
                    meta.remove("generation");
                }
            }
            // Compare without the version: a write that changes nothing is a no-op.
            meta.insert(
                "resourceVersion".into(),
                old_value
                    .pointer("/metadata/resourceVersion")
                    .cloned()
                    .unwrap_or(Value::Null),
            );
        }
        if &new == old_value {
            return Ok(old.value_arc());
        }
        let finalized = kind != Kind::Pod
            && new.pointer("/metadata/deletionTimestamp").is_some()
            && new
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty);
        let rv = state.next_rv();
        metadata_mut(&mut new)?.insert("resourceVersion".into(), Value::from(rv.to_string()));
        let stored = StoredObject::new(new);
        let value = stored.value_arc();
        let event_type = if finalized {
            state.map(kind).remove(key);
            EventType::Deleted
        } else {
            state.attach_lease(kind, key, stored.written);
            state.map(kind).insert(key.clone(), Arc::clone(&stored));
            EventType::Modified
        };
        let event = StoreEvent {
            at: std::time::SystemTime::now(),
            kind,
            event: event_type,
            object: stored.value_arc(),
            prev_json: Some(old.json_arc()),
            resource_version: rv,
            json: stored.json_arc(),
        };
        state.record(&self.inner.events, event);
        Ok(value)
    }

    fn locate(obj: &Value, kind: Kind) -> Result<NameKey, StoreError> {
        let name = meta_str(obj, "name")
            .filter(|n| !n.is_empty())
            .ok_or_else(|| StoreError::Invalid("metadata.name: Required value".into()))?;
        Ok(Self::key(kind, meta_str(obj, "namespace"), name))
    }

    /// Replace the object (PUT). A present, stale `metadata.resourceVersion`
    /// is a `Conflict`; the stored `.status` is kept (it has its own
    /// subresource); the generation is bumped when the spec changed.
    pub fn update(&self, kind: Kind, mut obj: Value) -> Result<Value, StoreError> {
        let key = Self::locate(&obj, kind)?;
        let expected = parse_rv(&obj)?;
        infera_sim_core::defaults::apply(kind, &mut obj);
        let mut state = self.write();
        let old = state
            .map(kind)
            .get(&key)
            .cloned()
            .ok_or(StoreError::NotFound)?;
        check_rv(&old, expected)?;
        if kind.has_status()
            && let Some(map) = obj.as_object_mut()
        {
            match old.value().get("status") {
                Some(status) => map.insert("status".into(), status.clone()),
                None => map.remove("status"),
            };
        }
        self.commit(&mut state, kind, &key, &old, obj)
            .map(|v| (*v).clone())
    }

    /// Write only `.status` (the `status` subresource); everything else in
    /// `obj` is ignored. Optimistic concurrency as `update`.
    pub fn update_status(&self, kind: Kind, obj: Value) -> Result<Value, StoreError> {
        let key = Self::locate(&obj, kind)?;
        let expected = parse_rv(&obj)?;
        let mut state = self.write();
        let old = state
            .map(kind)
            .get(&key)
            .cloned()
            .ok_or(StoreError::NotFound)?;
        check_rv(&old, expected)?;
        let mut new = old.value().clone();
        if let Some(map) = new.as_object_mut() {
            match obj.get("status") {
                Some(status) => map.insert("status".into(), status.clone()),
                None => map.remove("status"),
            };
        }
        // The status writer's managedFields entry (see `api::managed`).
        if let (Some(mf), Some(meta)) = (
            obj.pointer("/metadata/managedFields"),
            new.get_mut("metadata").and_then(Value::as_object_mut),
        ) {
            meta.insert("managedFields".into(), mf.clone());
        }
        self.commit(&mut state, kind, &key, &old, new)
            .map(|v| (*v).clone())
    }

    /// Read-modify-write under the lock (no conflicts), for controllers.
    /// Identity fields are kept whatever `f` does; generation rule as `update`.
    pub fn mutate(
        &self,
        kind: Kind,
        ns: Option<&str>,
        name: &str,
        f: impl FnOnce(&mut Value),
    ) -> Result<Value, StoreError> {
        self.mutate_shared(kind, ns, name, f).map(|v| (*v).clone())
    }

    /// [`Store::mutate`], returning the stored object itself (no copy).
    pub fn mutate_shared(
        &self,
        kind: Kind,
        ns: Option<&str>,
        name: &str,
        f: impl FnOnce(&mut Value),
    ) -> Result<Arc<Value>, StoreError> {
        let key = Self::key(kind, ns, name);
        let mut state = self.write();
        let old = state
            .map(kind)
            .get(&key)
            .cloned()
            .ok_or(StoreError::NotFound)?;
        let mut new = old.value().clone();
        f(&mut new);
        self.commit(&mut state, kind, &key, &old, new)
    }

    /// Delete. Pods with a grace period > 0 (`grace_seconds`, else
    /// `spec.terminationGracePeriodSeconds`, else 30) get
    /// `metadata.deletionTimestamp` (now + grace) and
    /// `deletionGracePeriodSeconds` and stay until the kubelet `remove`s them;
    /// unscheduled or finished pods, and everything else, go at once (objects
    /// with finalizers wait for them). Deleting a namespace deletes its
    /// contents. Dependents are garbage-collected by the controllers.
    pub fn delete(
        &self,
        kind: Kind,
        ns: Option<&str>,
        name: &str,
        grace_seconds: Option<i64>,
    ) -> Result<Value, StoreError> {
        let key = Self::key(kind, ns, name);
        let mut state = self.write();
        let old = state
            .map(kind)
            .get(&key)
            .cloned()
            .ok_or(StoreError::NotFound)?;
        let value = old.value();
        let has_finalizers = value
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if kind == Kind::Pod {
            let scheduled = value
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            let finished = matches!(
                value.pointer("/status/phase").and_then(Value::as_str),
                Some("Succeeded" | "Failed")
            );
            let grace = grace_seconds
                .or_else(|| {
                    value
                        .pointer("/spec/terminationGracePeriodSeconds")
                        .and_then(Value::as_i64)
                })
                .unwrap_or(30)
                .max(0);
            let grace = if scheduled && !finished { grace } else { 0 };
            if grace > 0 || has_finalizers {
                let existing = value
                    .pointer("/metadata/deletionGracePeriodSeconds")
                    .and_then(Value::as_i64);
                // A second delete may shorten the grace period, never extend it.
                if existing.is_some_and(|e| e <= grace) {
                    return Ok(value.clone());
                }
                let mut new = value.clone();
                let meta = metadata_mut(&mut new)?;
                meta.insert("deletionTimestamp".into(), Value::from(rfc3339_in(grace)));
                meta.insert("deletionGracePeriodSeconds".into(), Value::from(grace));
                return self.commit_deletion_marks(&mut state, kind, &key, &old, new);
            }
        } else if has_finalizers {
            if value.pointer("/metadata/deletionTimestamp").is_some() {
                return Ok(value.clone());
            }
            let mut new = value.clone();
            let meta = metadata_mut(&mut new)?;
            meta.insert("deletionTimestamp".into(), Value::from(now_rfc3339()));
            meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
            return self.commit_deletion_marks(&mut state, kind, &key, &old, new);
        }
        let removed = Self::remove_locked(&self.inner.events, &mut state, kind, &key)
            .ok_or(StoreError::NotFound)?;
        if kind == Kind::Namespace {
            for k in Kind::ALL.into_iter().filter(|k| k.namespaced()) {
                let keys: Vec<NameKey> = state
                    .map(k)
                    .range((name.to_string(), String::new())..)
                    .take_while(|((n, _), _)| n == name)
                    .map(|(key, _)| key.clone())
                    .collect();
                for key in keys {
                    Self::remove_locked(&self.inner.events, &mut state, k, &key);
                }
            }
        }
        Ok(removed)
    }

    /// `commit` refuses to change deletion fields (they are identity for
    /// ordinary writes), so deletion marks are written here.
    fn commit_deletion_marks(
        &self,
        state: &mut State,
        kind: Kind,
        key: &NameKey,
        old: &Arc<StoredObject>,
        mut new: Value,
    ) -> Result<Value, StoreError> {
        let rv = state.next_rv();
        metadata_mut(&mut new)?.insert("resourceVersion".into(), Value::from(rv.to_string()));
        let stored = StoredObject::new(new);
        let value = stored.value().clone();
        state.attach_lease(kind, key, stored.written);
        state.map(kind).insert(key.clone(), Arc::clone(&stored));
        let event = StoreEvent {
            at: std::time::SystemTime::now(),
            kind,
            event: EventType::Modified,
            object: stored.value_arc(),
            prev_json: Some(old.json_arc()),
            resource_version: rv,
            json: stored.json_arc(),
        };
        state.record(&self.inner.events, event);
        Ok(value)
    }

    fn remove_locked(
        tx: &broadcast::Sender<StoreEvent>,
        state: &mut State,
        kind: Kind,
        key: &NameKey,
    ) -> Option<Value> {
        let old = state.map(kind).remove(key)?;
        let rv = state.next_rv();
        // The DELETED event carries the deletion's version, as etcd's watch does.
        let mut value = old.value().clone();
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::from(rv.to_string()));
        }
        let event = StoreEvent {
            at: std::time::SystemTime::now(),
            kind,
            event: EventType::Deleted,
            json: encode(&value),
            object: Arc::new(value.clone()),
            prev_json: Some(old.json_arc()),
            resource_version: rv,
        };
        state.record(tx, event);
        Some(value)
    }

    /// Final removal (the kubelet after termination; the garbage collector).
    /// Removing something already gone is not an error.
    pub fn remove(&self, kind: Kind, ns: Option<&str>, name: &str) {
        let key = Self::key(kind, ns, name);
        let mut state = self.write();
        Self::remove_locked(&self.inner.events, &mut state, kind, &key);
    }

    /// Every change from now on, all kinds.
    pub fn subscribe(&self) -> broadcast::Receiver<StoreEvent> {
        self.inner.events.subscribe()
    }

    /// Resume a watch of `kind` (in `ns`, or everywhere) after version `rv`:
    /// the recorded events newer than `rv`, and a receiver for everything
    /// after them (no gap, no duplicate: it subscribes under the lock; the
    /// receiver still carries all kinds, filter it). `rv == 0` means "from
    /// the current state": one synthetic `Added` per existing object, as
    /// upstream does for a watch without a version. `Gone` when `rv` is older
    /// than the kept history (compacted).
    pub fn watch_from(
        &self,
        kind: Kind,
        ns: Option<&str>,
        rv: u64,
    ) -> Result<(Vec<StoreEvent>, broadcast::Receiver<StoreEvent>), StoreError> {
        self.watch_start(kind, ns, rv)
            .map(|start| (start.events.collect(), start.receiver))
    }

    /// `watch_from`, also telling the version the receiver starts after
    /// (every event it yields is newer), for bookmarks.
    pub fn watch_start(
        &self,
        kind: Kind,
        ns: Option<&str>,
        rv: u64,
    ) -> Result<WatchStart, StoreError> {
        let state = self.read();
        let current = state.resource_version;
        let ns = ns.filter(|_| kind.namespaced());
        let in_scope =
            |e: &Recorded| e.kind == kind && ns.is_none_or(|ns| e.namespace.as_deref() == Some(ns));
        let receiver = self.inner.events.subscribe();
        if rv == 0 {
            let events = state
                .objects
                .get(&kind)
                .into_iter()
                .flat_map(|m| m.iter())
                .filter(|((n, _), _)| ns.is_none_or(|ns| n == ns))
                .map(|(_, o)| {
                    ReplayItem::Current(StoreEvent {
                        at: std::time::SystemTime::now(),
                        kind,
                        event: EventType::Added,
                        object: o.value_arc(),
                        prev_json: None,
                        json: o.json_arc(),
                        resource_version: o
                            .value()
                            .pointer("/metadata/resourceVersion")
                            .and_then(Value::as_str)
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(0),
                    })
                })
                .collect::<Vec<_>>();
            return Ok(WatchStart {
                events: Replay {
                    items: events.into_iter(),
                },
                receiver,
                resource_version: current,
            });
        }
        if rv < state.history_floor {
            return Err(StoreError::Gone);
        }
        // A version from the future (another store, a restart): upstream waits;
        // treating it as "now" is the useful simplification.
        let start = state.history.partition_point(|e| e.resource_version <= rv);
        let events = state
            .history
            .range(start..)
            .filter(|e| in_scope(e))
            .map(|e| ReplayItem::Past(e.clone()))
            .collect::<Vec<_>>();
        Ok(WatchStart {
            events: Replay {
                items: events.into_iter(),
            },
            receiver,
            resource_version: current,
        })
    }

    /// What the watch history holds now: (events, encoded bytes).
    pub fn history_size(&self) -> (usize, usize) {
        let state = self.read();
        (state.history.len(), state.history_bytes)
    }

    /// The oldest version a watch can still resume from.
    pub fn history_floor(&self) -> u64 {
        self.read().history_floor
    }

    /// Forget the watch history before now: resuming from any older version
    /// gets `Gone` (410), as after an etcd compaction.
    pub fn compact(&self) {
        let mut state = self.write();
        state.history.clear();
        state.history_bytes = 0;
        state.history_floor = state.resource_version;
    }

    /// Count one API request, keyed like `"list pods"`, `"patch deployments"`.
    /// Past [`MAX_REQUEST_KEYS`] distinct keys (a client inventing
    /// subresources or methods), new ones are counted under `"other"`.
    pub fn record_request(&self, key: &str) {
        let mut counts = self
            .inner
            .request_counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = counts.get_mut(key) {
            *n += 1;
            return;
        }
        let key = if counts.len() < MAX_REQUEST_KEYS {
            key
        } else {
            OTHER_REQUESTS
        };
        *counts.entry(key.to_string()).or_insert(0) += 1;
    }

    /// Requests served so far by verb and resource (`"list pods"`,
    /// `"watch pods"`, `"patch inferadeployments"`, ...).
    pub fn request_counts(&self) -> BTreeMap<String, u64> {
        self.inner
            .request_counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

fn check_rv(old: &StoredObject, expected: Option<u64>) -> Result<(), StoreError> {
    let Some(expected) = expected else {
        return Ok(());
    };
    let current = parse_rv(old.value())?.unwrap_or(0);
    if current == expected {
        Ok(())
    } else {
        Err(StoreError::Conflict)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ns: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": ns, "labels": {"app": "x"}},
               "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}})
    }

    #[test]
    fn create_sets_identity_and_versions() {
        let store = Store::new();
        let created = store.create(Kind::Pod, pod("a", "default")).unwrap();
        assert_eq!(created["apiVersion"], "v1");
        assert_eq!(created["kind"], "Pod");
        assert!(created["metadata"]["uid"].is_string());
        assert_eq!(created["metadata"]["generation"], 1);
        let rv: u64 = created["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(rv, store.resource_version());
        assert_eq!(
            store.create(Kind::Pod, pod("a", "default")),
            Err(StoreError::AlreadyExists)
        );
        let generated = store
            .create(
                Kind::Pod,
                json!({"metadata": {"generateName": "web-", "namespace": "default"}}),
            )
            .unwrap();
        let name = generated["metadata"]["name"].as_str().unwrap();
        assert!(name.starts_with("web-") && name.len() == 9, "{name}");
    }

    #[test]
    fn update_conflicts_on_stale_version_and_bumps_generation() {
        let store = Store::new();
        let created = store
            .create(
                Kind::Deployment,
                json!({"metadata": {"name": "d"}, "spec": {"replicas": 1}}),
            )
            .unwrap();
        let mut stale = created.clone();
        let mut fresh = created.clone();
        fresh["spec"]["replicas"] = json!(3);
        let updated = store.update(Kind::Deployment, fresh).unwrap();
        assert_eq!(updated["metadata"]["generation"], 2);
        stale["spec"]["replicas"] = json!(5);
        assert_eq!(
            store.update(Kind::Deployment, stale),
            Err(StoreError::Conflict)
        );
        // Status-only change keeps the generation.
        let mut status = updated.clone();
        status["status"] = json!({"replicas": 3});
        let after = store.update_status(Kind::Deployment, status).unwrap();
        assert_eq!(after["metadata"]["generation"], 2);
        assert_eq!(after["status"]["replicas"], 3);
        // update keeps the stored status.
        let mut put = after.clone();
        put["status"] = json!({"replicas": 99});
        let after_put = store.update(Kind::Deployment, put).unwrap();
        assert_eq!(after_put["status"]["replicas"], 3);
    }

    #[test]
    fn noop_write_keeps_version() {
        let store = Store::new();
        store.create(Kind::Pod, pod("a", "default")).unwrap();
        let before = store.resource_version();
        store
            .mutate(Kind::Pod, Some("default"), "a", |_| {})
            .unwrap();
        assert_eq!(store.resource_version(), before);
    }

    #[test]
    fn graceful_pod_delete_then_remove() {
        let store = Store::new();
        store.create(Kind::Pod, pod("a", "default")).unwrap();
        let deleting = store.delete(Kind::Pod, Some("default"), "a", None).unwrap();
        assert!(deleting["metadata"]["deletionTimestamp"].is_string());
        assert_eq!(deleting["metadata"]["deletionGracePeriodSeconds"], 30);
        assert!(store.get(Kind::Pod, Some("default"), "a").is_some());
        store
            .delete(Kind::Pod, Some("default"), "a", Some(0))
            .unwrap();
        assert!(store.get(Kind::Pod, Some("default"), "a").is_none());
    }

    #[test]
    fn watch_resume_and_compaction() {
        let store = Store::new();
        let a = store.create(Kind::Pod, pod("a", "default")).unwrap();
        let rv_a: u64 = a["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        store.create(Kind::Pod, pod("b", "other")).unwrap();
        store.create(Kind::Pod, pod("c", "default")).unwrap();
        let (events, _) = store.watch_from(Kind::Pod, Some("default"), rv_a).unwrap();
        let names: Vec<_> = events
            .iter()
            .map(|e| e.object["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["c"]);
        let (all, _) = store.watch_from(Kind::Pod, None, 0).unwrap();
        assert_eq!(all.len(), 3);
        store.compact();
        assert!(matches!(
            store.watch_from(Kind::Pod, None, rv_a),
            Err(StoreError::Gone)
        ));
        assert!(
            store
                .watch_from(Kind::Pod, None, store.resource_version())
                .is_ok()
        );
    }

    /// The watch history keeps at most `events` entries and `bytes` of
    /// encoded objects (at least the newest entry); a resume from before
    /// what it keeps is Gone, from what it keeps replays the rest.
    #[test]
    fn history_is_bounded_by_count_and_bytes() {
        let by_count = Store::with_limits(
            0,
            HistoryLimits {
                events: 3,
                bytes: usize::MAX,
            },
        );
        let first = by_count.resource_version();
        for i in 0..10 {
            by_count
                .create(Kind::Pod, pod(&format!("p{i}"), "default"))
                .unwrap();
        }
        assert_eq!(by_count.history_size().0, 3);
        let floor = by_count.history_floor();
        assert_eq!(floor, by_count.resource_version() - 3);
        assert!(matches!(
            by_count.watch_from(Kind::Pod, None, first),
            Err(StoreError::Gone)
        ));
        assert_eq!(
            by_count.watch_from(Kind::Pod, None, floor).unwrap().0.len(),
            3
        );
        let one = by_count
            .get_stored(Kind::Pod, Some("default"), "p9")
            .unwrap()
            .json()
            .len();
        let by_bytes = Store::with_limits(
            0,
            HistoryLimits {
                events: 1000,
                bytes: 2 * one + one / 2,
            },
        );
        for i in 0..10 {
            by_bytes
                .create(Kind::Pod, pod(&format!("p{i}"), "default"))
                .unwrap();
        }
        let (events, bytes) = by_bytes.history_size();
        assert_eq!(events, 2, "{bytes} bytes");
        assert!(bytes <= 2 * one + one / 2);
    }

    /// A replay decodes past events as they are taken and yields them in
    /// order; the live receiver carries what follows.
    #[test]
    fn a_replay_yields_the_recorded_events_in_order() {
        let store = Store::new();
        let from = store.resource_version();
        for i in 0..5 {
            store
                .create(Kind::Pod, pod(&format!("p{i}"), "default"))
                .unwrap();
        }
        let mut start = store.watch_start(Kind::Pod, None, from).unwrap();
        assert_eq!(start.events.len(), 5);
        let versions: Vec<u64> = start.events.by_ref().map(|e| e.resource_version).collect();
        assert_eq!(versions, (from + 1..=from + 5).collect::<Vec<_>>());
        store.create(Kind::Pod, pod("live", "default")).unwrap();
        let live = start.receiver.try_recv().unwrap();
        assert_eq!(live.object["metadata"]["name"], "live");
    }

    /// The live channel is one shared ring of [`BROADCAST_CAPACITY`]: a
    /// receiver further behind gets `Lagged` (its watch is closed and
    /// resumes), and holds nothing of its own.
    #[test]
    fn a_receiver_further_behind_than_the_channel_lags() {
        let store = Store::new();
        let mut slow = store.subscribe();
        for i in 0..=BROADCAST_CAPACITY {
            store
                .create(Kind::Event, json!({"metadata": {"name": format!("e{i}")}}))
                .unwrap();
        }
        assert!(matches!(
            slow.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(1))
        ));
        let next = slow.try_recv().unwrap();
        assert_eq!(next.object["metadata"]["name"], "e1");
    }

    /// Request counts keep at most [`MAX_REQUEST_KEYS`] keys; the rest are
    /// counted under `other`.
    #[test]
    fn request_counts_are_bounded() {
        let store = Store::new();
        for i in 0..MAX_REQUEST_KEYS + 10 {
            store.record_request(&format!("get pods/sub{i}"));
        }
        store.record_request("get pods/sub0");
        let counts = store.request_counts();
        assert_eq!(counts.len(), MAX_REQUEST_KEYS + 1);
        assert_eq!(counts.get(OTHER_REQUESTS), Some(&10));
        assert_eq!(counts.get("get pods/sub0"), Some(&2));
    }

    #[test]
    fn namespace_scoped_list() {
        let store = Store::new();
        store.create(Kind::Pod, pod("a", "default")).unwrap();
        store.create(Kind::Pod, pod("b", "other")).unwrap();
        assert_eq!(store.list(Kind::Pod, Some("other")).0.len(), 1);
        assert_eq!(store.list(Kind::Pod, None).0.len(), 2);
        assert_eq!(store.list(Kind::Namespace, None).0.len(), 4);
    }
}
