//! A YAML/JSON value tree that remembers where every node came from.
//!
//! Parsed by serde-saphyr with positions (its `Spanned<T>` protocol, read
//! lean by [`At`]) on keys and sequence items, so any finding
//! (a path into the object) can be turned back into a line and column.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// One node: its value and the 1-based line/column where it starts (0 when
/// unknown, e.g. objects read from a cluster, or mapping values, which are
/// located by their key). Text is borrowed from the source where the
/// parser allows it (plain scalars and keys), so a tree costs few
/// allocations.
#[derive(Debug, Clone, PartialEq)]
pub struct Node<'a> {
    pub value: Value<'a>,
    pub line: u32,
    pub column: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Cow<'a, str>),
    Seq(Vec<Node<'a>>),
    /// Entries in source order; the key keeps its own position.
    Map(Vec<(Key<'a>, Node<'a>)>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Key<'a> {
    pub name: Cow<'a, str>,
    pub line: u32,
    pub column: u32,
}

/// One step of a path into a tree.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Seg {
    Key(String),
    Index(usize),
}

impl fmt::Display for Seg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Seg::Key(k) => f.write_str(k),
            Seg::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path into a tree (`spec.services.prefill.skipReadinessProbe`).
pub type Path = Vec<Seg>;

/// Render a path as `a.b[0].c`.
pub fn path_string(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// Build a path from `"spec.services"`-style keys and indices.
#[macro_export]
macro_rules! path {
    ($($seg:expr),* $(,)?) => {{
        #[allow(unused_mut)]
        let mut p: $crate::manifest::Path = Vec::new();
        $( p.push($crate::manifest::node::IntoSeg::into_seg($seg)); )*
        p
    }};
}

pub trait IntoSeg {
    fn into_seg(self) -> Seg;
}
impl IntoSeg for &str {
    fn into_seg(self) -> Seg {
        Seg::Key(self.to_string())
    }
}
impl IntoSeg for &String {
    fn into_seg(self) -> Seg {
        Seg::Key(self.clone())
    }
}
impl IntoSeg for String {
    fn into_seg(self) -> Seg {
        Seg::Key(self)
    }
}
impl IntoSeg for usize {
    fn into_seg(self) -> Seg {
        Seg::Index(self)
    }
}
impl IntoSeg for Seg {
    fn into_seg(self) -> Seg {
        self
    }
}

impl<'a> Node<'a> {
    pub fn new(value: Value<'a>) -> Node<'a> {
        Node {
            value,
            line: 0,
            column: 0,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|(k, _)| k.name == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s.as_ref()),
            _ => None,
        }
    }

    /// The child at one path step.
    pub fn child(&self, seg: &Seg) -> Option<&Node<'a>> {
        match (seg, &self.value) {
            (Seg::Key(k), Value::Map(_)) => self.get(k),
            (Seg::Index(i), Value::Seq(items)) => items.get(*i),
            _ => None,
        }
    }

    pub fn at(&self, path: &[Seg]) -> Option<&Node<'a>> {
        let mut cur = self;
        for seg in path {
            cur = cur.child(seg)?;
        }
        Some(cur)
    }

    /// Line and column of the deepest node on `path` that exists: the key of
    /// a mapping entry when the path ends at one (so a finding points at
    /// `skipReadinessProbe:`), else the node itself.
    pub fn locate(&self, path: &[Seg]) -> (u32, u32) {
        let mut cur = self;
        let mut best = (self.line, self.column);
        for seg in path {
            match (seg, &cur.value) {
                (Seg::Key(k), Value::Map(entries)) => {
                    match entries.iter().find(|(key, _)| &key.name == k) {
                        Some((key, v)) => {
                            best = (key.line, key.column);
                            cur = v;
                        }
                        None => break,
                    }
                }
                (Seg::Index(i), Value::Seq(items)) => match items.get(*i) {
                    Some(v) => {
                        best = (v.line, v.column);
                        cur = v;
                    }
                    None => break,
                },
                _ => break,
            }
        }
        best
    }

    /// Mutable access, for nulling a field during typed conversion.
    pub fn at_mut(&mut self, path: &[Seg]) -> Option<&mut Node<'a>> {
        let mut cur = self;
        for seg in path {
            cur = match (seg, &mut cur.value) {
                (Seg::Key(k), Value::Map(entries)) => entries
                    .iter_mut()
                    .find(|(key, _)| &key.name == k)
                    .map(|(_, v)| v)?,
                (Seg::Index(i), Value::Seq(items)) => items.get_mut(*i)?,
                _ => return None,
            };
        }
        Some(cur)
    }

    /// The wire form (serde_json), for typed conversion.
    pub fn to_json(&self) -> serde_json::Value {
        match &self.value {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::Str(s) => serde_json::Value::String(s.to_string()),
            Value::Seq(items) => {
                serde_json::Value::Array(items.iter().map(Node::to_json).collect())
            }
            Value::Map(entries) => {
                let mut m = serde_json::Map::with_capacity(entries.len());
                for (k, v) in entries {
                    m.insert(k.name.to_string(), v.to_json());
                }
                serde_json::Value::Object(m)
            }
        }
    }

    /// A tree without positions from a wire-form value (live objects),
    /// borrowing its text.
    pub fn from_json(v: &'a serde_json::Value) -> Node<'a> {
        Node::new(match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(0.0)),
            },
            serde_json::Value::String(s) => Value::Str(Cow::Borrowed(s)),
            serde_json::Value::Array(items) => {
                Value::Seq(items.iter().map(Node::from_json).collect())
            }
            serde_json::Value::Object(m) => Value::Map(
                m.iter()
                    .map(|(k, v)| {
                        (
                            Key {
                                name: Cow::Borrowed(k),
                                line: 0,
                                column: 0,
                            },
                            Node::from_json(v),
                        )
                    })
                    .collect(),
            ),
        })
    }

    /// Visit every string scalar with its path.
    pub fn walk_strings<'s>(&'s self, path: &mut Path, f: &mut dyn FnMut(&Path, &'s str)) {
        match &self.value {
            Value::Str(s) => f(path, s),
            Value::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(Seg::Index(i));
                    item.walk_strings(path, f);
                    path.pop();
                }
            }
            Value::Map(entries) => {
                for (k, v) in entries {
                    path.push(Seg::Key(k.name.to_string()));
                    v.walk_strings(path, f);
                    path.pop();
                }
            }
            _ => {}
        }
    }
}

impl<'de> Deserialize<'de> for Node<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let at: At<Value<'de>> = At::deserialize(d)?;
        Ok(Node {
            value: at.value,
            line: at.line,
            column: at.column,
        })
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value<'de>, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value<'de>, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value<'de>, D::Error> {
        Value::deserialize(d)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value<'de>, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value<'de>, E> {
        Ok(Value::Int(v))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value<'de>, E> {
        Ok(i64::try_from(v).map_or(Value::Float(v as f64), Value::Int))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value<'de>, E> {
        Ok(i64::try_from(v).map_or(Value::Float(v as f64), Value::Int))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value<'de>, E> {
        Ok(i64::try_from(v).map_or(Value::Float(v as f64), Value::Int))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value<'de>, E> {
        Ok(Value::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value<'de>, E> {
        Ok(Value::Str(Cow::Owned(v.to_string())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value<'de>, E> {
        Ok(Value::Str(Cow::Owned(v)))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Value<'de>, E> {
        Ok(Value::Str(Cow::Borrowed(v)))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Value<'de>, E> {
        Ok(Value::Str(Cow::Owned(
            String::from_utf8_lossy(v).into_owned(),
        )))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Value::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value<'de>, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
        while let Some(key) = map.next_key::<At<KeyText<'de>>>()? {
            // A mapping value is located by its key (see `Node::locate`):
            // its own span is never read, so it is not asked for.
            let value = Node::new(map.next_value::<Value>()?);
            entries.push((
                Key {
                    name: key.value.0,
                    line: key.line,
                    column: key.column,
                },
                value,
            ));
        }
        Ok(Value::Map(entries))
    }
}

impl<'de> Deserialize<'de> for Value<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

/// A mapping key as text, whatever scalar it was written as.
struct KeyText<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for KeyText<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyText<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a scalar mapping key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Owned(v.to_string())))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Borrowed(v)))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Owned(v)))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Owned(v.to_string())))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Owned(v.to_string())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Owned(v.to_string())))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Owned(v.to_string())))
            }
            fn visit_unit<E: de::Error>(self) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Owned("null".to_string())))
            }
            fn visit_none<E: de::Error>(self) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Owned("null".to_string())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<KeyText<'de>, A::Error> {
                Err(de::Error::custom(
                    "a sequence used as a mapping key; Kubernetes manifests only use text keys",
                ))
            }
            fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<KeyText<'de>, A::Error> {
                Err(de::Error::custom(
                    "a mapping used as a mapping key; Kubernetes manifests only use text keys",
                ))
            }
        }
        d.deserialize_any(V)
    }
}

/// `T` with the line and column where the YAML parser found it (its use
/// site). serde-saphyr's `Spanned<T>` protocol, read lean: the public
/// `Spanned` also builds the definition site and byte spans and allocates
/// its marker key, for every key of every document.
struct At<T> {
    value: T,
    line: u32,
    column: u32,
}

/// The newtype name serde-saphyr answers with a span (`Spanned<T>`'s).
const SPANNED_NEWTYPE: &str = "__yaml_spanned";

impl<'de, T: Deserialize<'de>> Deserialize<'de> for At<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_newtype_struct(SPANNED_NEWTYPE, AtVisitor(std::marker::PhantomData))
    }
}

struct AtVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for AtVisitor<T> {
    type Value = At<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML node with its position")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<At<T>, D::Error> {
        d.deserialize_struct(
            "Spanned",
            &[
                "__serde_saphyr_private_spanned",
                "value",
                "referenced",
                "defined",
            ],
            self,
        )
    }

    /// The entries come in a fixed order: the marker, `value`,
    /// `referenced`, `defined` (left unread).
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<At<T>, A::Error> {
        let missing = || de::Error::custom("a YAML node without its position");
        map.next_key::<de::IgnoredAny>()?.ok_or_else(missing)?;
        map.next_value::<de::IgnoredAny>()?;
        map.next_key::<de::IgnoredAny>()?.ok_or_else(missing)?;
        let value = map.next_value::<T>()?;
        map.next_key::<de::IgnoredAny>()?.ok_or_else(missing)?;
        let LineColumn(line, column) = map.next_value()?;
        Ok(At {
            value,
            line,
            column,
        })
    }
}

/// A serde-saphyr `Location`'s line and column (its first two fields).
struct LineColumn(u32, u32);

impl<'de> Deserialize<'de> for LineColumn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LineColumn;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a location")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LineColumn, A::Error> {
                let missing = || de::Error::custom("a location without line and column");
                map.next_key::<de::IgnoredAny>()?.ok_or_else(missing)?;
                let line = map.next_value::<u32>()?;
                map.next_key::<de::IgnoredAny>()?.ok_or_else(missing)?;
                let column = map.next_value::<u32>()?;
                Ok(LineColumn(line, column))
            }
        }
        d.deserialize_struct("Location", &["line", "column", "span", "source_id"], V)
    }
}
