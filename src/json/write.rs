//! Writing JSON text: values, escaped strings, and a small builder for objects of known fields.
//! The output is compact and byte-for-byte what serde_json writes for the same entries.

use super::value::{Map, Value};
use crate::prelude::*;

/// Nesting deeper than this is written as `null` (parsed values never get close: the parser
/// stops at 127 levels; this only bounds the recursion on hand-built values).
pub(crate) const MAX_WRITE_DEPTH: usize = 512;

/// Something that writes itself as JSON.
pub trait ToJson {
    fn write_json(&self, out: &mut String);

    /// The compact JSON text.
    fn to_json_string(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }
}

impl ToJson for Value {
    fn write_json(&self, out: &mut String) {
        write_value(out, self);
    }
}

impl ToJson for Map {
    fn write_json(&self, out: &mut String) {
        write_map(out, self, 0);
    }
}

impl ToJson for str {
    fn write_json(&self, out: &mut String) {
        write_str(out, self);
    }
}

impl ToJson for String {
    fn write_json(&self, out: &mut String) {
        write_str(out, self);
    }
}

impl ToJson for bool {
    fn write_json(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

impl ToJson for u64 {
    fn write_json(&self, out: &mut String) {
        write_u64(out, *self);
    }
}

impl ToJson for usize {
    fn write_json(&self, out: &mut String) {
        write_u64(out, *self as u64);
    }
}

impl<T: ToJson> ToJson for Option<T> {
    fn write_json(&self, out: &mut String) {
        match self {
            Some(v) => v.write_json(out),
            None => out.push_str("null"),
        }
    }
}

impl<T: ToJson> ToJson for [T] {
    fn write_json(&self, out: &mut String) {
        // `[` before the first item, `,` before each other one (no index kept).
        let mut sep = '[';
        for item in self {
            out.push(sep);
            sep = ',';
            item.write_json(out);
        }
        if sep == '[' {
            out.push('[');
        }
        out.push(']');
    }
}

impl<T: ToJson> ToJson for Vec<T> {
    fn write_json(&self, out: &mut String) {
        self.as_slice().write_json(out);
    }
}

impl<T: ToJson + ?Sized> ToJson for &T {
    fn write_json(&self, out: &mut String) {
        (**self).write_json(out);
    }
}

pub(crate) fn write_value(out: &mut String, value: &Value) {
    write_at(out, value, 0);
}

fn write_at(out: &mut String, value: &Value, depth: usize) {
    match value {
        // Null, and any value past the depth limit: one write.
        _ if depth > MAX_WRITE_DEPTH || matches!(value, Value::Null) => out.push_str("null"),
        Value::Bool(b) => b.write_json(out),
        Value::Number(n) => out.push_str(n.as_str()),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_at(out, item, depth + 1);
            }
            out.push(']');
        }
        Value::Object(map) => write_map(out, map, depth),
        // Written by the first arm.
        Value::Null => {}
    }
}

fn write_map(out: &mut String, map: &Map, depth: usize) {
    out.push('{');
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, k);
        out.push(':');
        write_at(out, v, depth + 1);
    }
    out.push('}');
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The letter after the `\` of each control character's escape: `b`, `t`, `n`, `f` and `r` for
/// 0x08, 0x09, 0x0A, 0x0C and 0x0D, `u` (`\u00XX`) for the others.
const CONTROL: &[u8; 32] = b"uuuuuuuubtnufruuuuuuuuuuuuuuuuuu";

/// A JSON string literal: `"`, `\` and control characters escaped (`\n`, `\r`, `\t`, `\b`, `\f`,
/// else `\u00XX`), everything else verbatim.
pub(crate) fn write_str(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    // The runs between bytes to escape are found by the parser's scan (16 bytes a step in wasm).
    loop {
        let i = super::parse::scan(bytes, start);
        let Some(&b) = bytes.get(i) else {
            break;
        };
        // The letter after the `\`: `u` for `\u00XX`; `"` and `\` stand for themselves.
        let escape = CONTROL.get(usize::from(b)).copied().unwrap_or(b);
        out.push_str(cut(bytes.get(start..i)));
        if escape != b'u' {
            out.push('\\');
            out.push(char::from(escape));
        } else {
            // A control character (the scan stops at no other byte): its high digit is 0 or 1.
            out.push_str("\\u00");
            out.push(char::from(b'0' + (b >> 4)));
            out.push(char::from(
                HEX.get(usize::from(b & 15)).copied().unwrap_or(b'0'),
            ));
        }
        start = i + 1;
    }
    out.push_str(cut(bytes.get(start..)));
    out.push('"');
}

/// A run of `write_str`'s input between escaped bytes (or nothing).
fn cut(run: Option<&[u8]>) -> &str {
    // SAFETY: `write_str` cuts its `&str` input only just before or after an ASCII byte, so the
    // run is whole UTF-8 sequences (as bytes: no char-boundary checks of `str::get`).
    unsafe { core::str::from_utf8_unchecked(run.unwrap_or_default()) }
}

/// The decimal digits of `n`, without `core::fmt` (the leading digits first, by recursion: at
/// most 20 levels).
pub(crate) fn write_u64(out: &mut String, n: u64) {
    if n >= 10 {
        write_u64(out, n / 10);
    }
    out.push(char::from(b'0' + (n % 10) as u8));
}

/// `n` as a decimal string.
pub(crate) fn u64_string(n: u64) -> String {
    let mut s = String::new();
    write_u64(&mut s, n);
    s
}

/// Writes an object of known fields: `{"a":...,"b":...}`.
pub(crate) struct Obj<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> Obj<'a> {
    pub(crate) fn new(out: &'a mut String) -> Obj<'a> {
        out.push('{');
        Obj { out, first: true }
    }

    /// The rest of an object whose `{`, first members and `,` after them are written.
    pub(crate) fn after_first(out: &'a mut String) -> Obj<'a> {
        Obj { out, first: true }
    }

    /// Writes the key (and the separator before it); the caller writes the value. Keys are the
    /// crate's own names, which need no escapes: they are written as they are.
    pub(crate) fn key(&mut self, key: &str) -> &mut String {
        debug_assert!(!key.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\'));
        self.out.push_str(if self.first { "\"" } else { ",\"" });
        self.first = false;
        self.out.push_str(key);
        self.out.push_str("\":");
        self.out
    }

    pub(crate) fn field(&mut self, key: &str, value: &dyn ToJsonDyn) -> &mut Self {
        value.write_dyn(self.key(key));
        self
    }

    /// The field only when `Some` (absent otherwise).
    pub(crate) fn field_if(&mut self, key: &str, value: Option<&str>) -> &mut Self {
        if let Some(v) = value {
            write_str(self.key(key), v);
        }
        self
    }

    pub(crate) fn end(self) {
        self.out.push('}');
    }
}

/// Object-safe [`ToJson`], so [`Obj::field`] is compiled once.
pub(crate) trait ToJsonDyn {
    fn write_dyn(&self, out: &mut String);
}

impl<T: ToJson + ?Sized> ToJsonDyn for T {
    fn write_dyn(&self, out: &mut String) {
        self.write_json(out);
    }
}
