//! toolgate's own JSON: a small value model ([`Value`], an order-preserving [`Map`], [`Number`]s kept
//! as their source text), a strict parser with serde_json's error messages and positions and a depth
//! limit, a non-allocating skipper for walks that keep only part of a document, and a writer.
//!
//! Also the helpers the core modules share: checking UTF-8 without copying, describing a value's
//! type for messages.

mod parse;
mod value;
mod write;

pub use value::{Map, Number, Value};
pub use write::ToJson;

pub(crate) use parse::{to_error, Parser, Syntax};
pub(crate) use write::ToJsonDyn;
pub(crate) use write::{u64_string, write_str, write_u64, write_value, Obj};

use crate::error::Error;

/// The input as `&str` without copying; invalid UTF-8 is a `parse_error` pointing at the first bad byte
/// (1-based line, 1-based byte column, like serde_json).
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, Error> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(err) => {
            let at = err.valid_up_to();
            // Just past the first bad byte (never a line feed), as for a syntax error there.
            let (line, column) = parse::line_column(bytes, at + 1);
            let message = if err.error_len().is_none() {
                "unexpected end of input: incomplete UTF-8 sequence".to_owned()
            } else {
                let mut m = "invalid UTF-8 at byte ".to_owned();
                m.push_str(&u64_string(at as u64));
                m
            };
            Err(Error::parse(message).at(line, column))
        }
    }
}

/// A string as a JSON string literal, for messages: `"id"`.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::new();
    write_str(&mut out, s);
    out
}

/// "a string", "an array", ... for messages such as "expected an object, got a string".
pub(crate) fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Like [`describe`], from the first byte of a JSON value.
pub(crate) fn describe_byte(first: Option<u8>) -> &'static str {
    match first {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't') | Some(b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

/// `true` for `None`, empty and whitespace-only strings.
pub(crate) fn is_blank(s: Option<&str>) -> bool {
    s.map_or(true, |s| s.trim().is_empty())
}

#[cfg(test)]
mod tests;
