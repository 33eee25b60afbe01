//! A parsed [`Node`] as a serde `Deserializer`, so typed views are read
//! straight from the tree (strings borrowed, unread subtrees skipped)
//! instead of through a `serde_json::Value` copy of it.
//!
//! It calls the same visitor methods `serde_json::Value` does for the same
//! data (non-negative integers as `u64`, null as unit, …), so typed views
//! and their error messages are the ones a JSON copy gives.

use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

use super::node::{Key, Node, Value};

/// A deserialisation error: the message only (the caller adds the path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

/// Deserialise from a borrowed node.
#[derive(Clone, Copy)]
pub struct NodeDeserializer<'a>(pub &'a Node<'a>);

impl<'de> de::Deserializer<'de> for NodeDeserializer<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.0.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Int(n) if *n >= 0 => visitor.visit_u64(n.unsigned_abs()),
            Value::Int(n) => visitor.visit_i64(*n),
            // A JSON copy has no NaN or infinity: they become null.
            Value::Float(f) if !f.is_finite() => visitor.visit_unit(),
            Value::Float(f) => visitor.visit_f64(*f),
            Value::Str(s) => visitor.visit_borrowed_str(s),
            Value::Seq(items) => {
                let mut seq = SeqAccess {
                    items: items.iter(),
                };
                let v = visitor.visit_seq(&mut seq)?;
                match seq.items.len() {
                    0 => Ok(v),
                    _ => Err(de::Error::invalid_length(
                        items.len(),
                        &"fewer elements in array",
                    )),
                }
            }
            Value::Map(entries) => {
                let mut map = MapAccess {
                    entries: entries.iter(),
                    value: None,
                };
                let v = visitor.visit_map(&mut map)?;
                match map.entries.len() {
                    0 => Ok(v),
                    _ => Err(de::Error::invalid_length(
                        entries.len(),
                        &"fewer elements in map",
                    )),
                }
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0.value {
            Value::Null => visitor.visit_none(),
            Value::Float(f) if !f.is_finite() => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match &self.0.value {
            Value::Str(s) => visitor.visit_enum(s.as_ref().into_deserializer()),
            Value::Map(entries) if entries.len() == 1 => {
                let (key, value) = &entries[0];
                visitor.visit_enum(EnumAccess { key, value })
            }
            Value::Map(_) => Err(de::Error::invalid_value(
                de::Unexpected::Map,
                &"map with a single key",
            )),
            _ => Err(de::Error::invalid_type(
                unexpected(self.0),
                &"string or map",
            )),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
    }
}

fn unexpected<'a>(node: &'a Node<'_>) -> de::Unexpected<'a> {
    match &node.value {
        Value::Null => de::Unexpected::Unit,
        Value::Float(f) if !f.is_finite() => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Int(n) if *n >= 0 => de::Unexpected::Unsigned(n.unsigned_abs()),
        Value::Int(n) => de::Unexpected::Signed(*n),
        Value::Float(f) => de::Unexpected::Float(*f),
        Value::Str(s) => de::Unexpected::Str(s),
        Value::Seq(_) => de::Unexpected::Seq,
        Value::Map(_) => de::Unexpected::Map,
    }
}

struct SeqAccess<'a> {
    items: std::slice::Iter<'a, Node<'a>>,
}

impl<'de> de::SeqAccess<'de> for SeqAccess<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.items
            .next()
            .map(|n| seed.deserialize(NodeDeserializer(n)))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct MapAccess<'a> {
    entries: std::slice::Iter<'a, (Key<'a>, Node<'a>)>,
    value: Option<&'a Node<'a>>,
}

impl<'de> de::MapAccess<'de> for MapAccess<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        seed.deserialize(KeyDeserializer(&key.name)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.value.take() {
            Some(v) => seed.deserialize(NodeDeserializer(v)),
            None => Err(de::Error::custom("value is missing")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// A mapping key: always text (as in JSON).
struct KeyDeserializer<'a>(&'a str);

impl<'de> de::Deserializer<'de> for KeyDeserializer<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_borrowed_str(self.0)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

struct EnumAccess<'a> {
    key: &'a Key<'a>,
    value: &'a Node<'a>,
}

impl<'de> de::EnumAccess<'de> for EnumAccess<'de> {
    type Error = Error;
    type Variant = VariantAccess<'de>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), Error> {
        let variant = seed.deserialize(KeyDeserializer(&self.key.name))?;
        Ok((variant, VariantAccess(self.value)))
    }
}

struct VariantAccess<'a>(&'a Node<'a>);

impl<'de> de::VariantAccess<'de> for VariantAccess<'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.0.value {
            Value::Null => Ok(()),
            _ => Err(de::Error::invalid_type(unexpected(self.0), &"unit variant")),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(NodeDeserializer(self.0))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_seq(NodeDeserializer(self.0), visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_map(NodeDeserializer(self.0), visitor)
    }
}
