//! Reading fields out of objects kept in wire form (`serde_json::Value`),
//! the form the store, the controllers and the world all handle: one home
//! for the JSON-pointer accessors every one of them uses.

use serde_json::Value;

/// The string at JSON pointer `pointer`, or `""` when absent or not a string.
pub fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The integer at JSON pointer `pointer`, if there is one.
pub fn i64_at(v: &Value, pointer: &str) -> Option<i64> {
    v.pointer(pointer).and_then(Value::as_i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accessors_read_present_fields_and_default_the_rest() {
        let v = json!({"metadata": {"name": "a", "generation": 3}});
        assert_eq!(str_at(&v, "/metadata/name"), "a");
        assert_eq!(str_at(&v, "/metadata/generation"), "");
        assert_eq!(str_at(&v, "/metadata/missing"), "");
        assert_eq!(i64_at(&v, "/metadata/generation"), Some(3));
        assert_eq!(i64_at(&v, "/metadata/name"), None);
    }
}
