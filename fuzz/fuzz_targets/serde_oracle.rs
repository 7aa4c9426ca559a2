//! What the `thread_parse`, `pending` and `decisions` targets share: serde_json as the oracle.
//! Each target includes this file and uses a part of it.
#![allow(dead_code)]

/// serde_json (the oracle) to toolgate's own JSON value, through text.
pub fn tg(value: &serde_json::Value) -> toolgate::json::Value {
    toolgate::json::Value::parse(&value.to_string()).expect("serde_json output is valid JSON")
}

/// The document as serde_json (the oracle) reads it, or `None` where it cannot be the oracle: a
/// document with a key serde_json reserves for itself (with its `raw_value` feature, an object
/// keyed `$serde_json::private::RawValue` is read as a raw value, not as an object, so serde_json
/// refuses or reshapes a document toolgate reads as written).
pub fn serde_parse(text: &str) -> Option<serde_json::Result<serde_json::Value>> {
    (!reserved_key(text)).then(|| serde_json::from_str(text))
}

fn reserved_key(text: &str) -> bool {
    fn walk(v: &toolgate::json::Value) -> bool {
        match v {
            toolgate::json::Value::Object(m) => m
                .iter()
                .any(|(k, v)| k.starts_with("$serde_json::private::") || walk(v)),
            toolgate::json::Value::Array(a) => a.iter().any(walk),
            _ => false,
        }
    }
    toolgate::json::Value::parse(text).is_ok_and(|v| walk(&v))
}
