//! Reading the inputs the exported functions accept: a JSON string, a `Uint8Array` (or
//! `ArrayBuffer`) of UTF-8 JSON, or an already-parsed JS value. Values cross the boundary as JSON
//! text (`JSON.stringify` / `JSON.parse`), never converted field by field.

use crate::error::{Error, ErrorCode};
use crate::json::Value;
use crate::prelude::*;
use js_sys::{ArrayBuffer, Uint8Array, JSON};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

pub(crate) enum Input {
    Text(String),
    Bytes(Vec<u8>),
    Value(JsValue),
}

/// Which kind of input a value is, without reading it.
pub(crate) enum Kind {
    Text,
    Bytes,
    Value,
}

pub(crate) fn kind(input: &JsValue) -> Kind {
    if input.is_string() {
        Kind::Text
    } else if input.is_instance_of::<Uint8Array>() || input.is_instance_of::<ArrayBuffer>() {
        Kind::Bytes
    } else {
        Kind::Value
    }
}

#[wasm_bindgen(module = "/src/wasm/fast.js")]
extern "C" {
    /// `parseThread`'s fast path (see `fast.js`): `{ id, messages }`, or `undefined` when the
    /// crate's own parser has to look.
    #[wasm_bindgen(js_name = fastThread)]
    pub(crate) fn fast_thread(input: &JsValue) -> JsValue;

    /// `pendingApprovals`' fast path (see `fast.js`): the last message as JSON text, `""` when
    /// there is none, or `undefined` when the crate's own reading has to look.
    #[wasm_bindgen(js_name = fastTail)]
    pub(crate) fn fast_tail(input: &JsValue) -> JsValue;

    /// `parseThread`'s result from JSON text the crate has checked: `{ id, messages }`, the
    /// messages being the document (`bare`) or its `messages`.
    #[wasm_bindgen(js_name = threadOf, catch)]
    pub(crate) fn thread_of(text: &JsValue, id: &JsValue, bare: bool) -> Result<JsValue, JsValue>;

    /// `TextEncoder.encodeInto` into a view of wasm memory: the bytes written.
    #[wasm_bindgen(js_name = encodeInto)]
    fn encode_into(s: &JsValue, dest: &mut [u8]) -> u32;
}

/// A JS string as UTF-8 (lone surrogates become U+FFFD), encoded straight into a buffer sized
/// for the worst case: one pass, no re-allocation while encoding.
fn utf8_of(s: &JsValue) -> String {
    let units = s.unchecked_ref::<js_sys::JsString>().length() as usize;
    let mut buf = vec![0u8; units.saturating_mul(3)];
    let written = encode_into(s, &mut buf) as usize;
    buf.truncate(written);
    String::from_utf8(buf).unwrap_or_default()
}

/// A JS string as a Rust string, `None` for any other value. (Not `JsValue::as_string`: its
/// copy goes through wasm-bindgen's string passing, glue that `utf8_of` makes unnecessary.)
pub(crate) fn string_of(value: &JsValue) -> Option<String> {
    value.is_string().then(|| utf8_of(value))
}

/// `err.message` of a thrown `Error`, `""` for any other value.
pub(crate) fn message_of(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .and_then(|e| string_of(&e.message()))
        .unwrap_or_default()
}

pub(crate) fn read(input: &JsValue) -> Input {
    if input.is_string() {
        return Input::Text(utf8_of(input));
    }
    if let Some(bytes) = input.dyn_ref::<Uint8Array>() {
        return Input::Bytes(bytes.to_vec());
    }
    if let Some(buf) = input.dyn_ref::<ArrayBuffer>() {
        return Input::Bytes(Uint8Array::new(buf).to_vec());
    }
    Input::Value(input.clone())
}

/// A JS value as JSON text (`JSON.stringify`). Values that JSON cannot hold (functions, symbols,
/// `undefined`, bigints, cycles) are a `parse_error` at `path`.
pub(crate) fn stringify(value: &JsValue, path: &str) -> Result<String, Error> {
    match JSON::stringify(value) {
        Ok(s) => string_of(&s).ok_or_else(|| Error::parse("not a JSON value").with_path(path)),
        Err(e) => {
            let mut m = "not a JSON value: ".to_owned();
            m.push_str(&message_of(&e));
            Err(Error::parse(m).with_path(path))
        }
    }
}

/// A JS value as JSON, for the core.
pub(crate) fn to_json(value: &JsValue, path: &str) -> Result<Value, Error> {
    Value::parse(&stringify(value, path)?).map_err(|e| e.with_path(path))
}

#[wasm_bindgen]
extern "C" {
    /// `JSON.parse` of a JS string, without copying it through wasm memory.
    #[wasm_bindgen(js_namespace = JSON, js_name = parse, catch)]
    fn json_parse(text: &JsValue) -> Result<JsValue, JsValue>;
}

/// `JSON.parse` of text (a JS string) the core has already validated.
pub(crate) fn parse(text: &JsValue) -> Result<JsValue, Error> {
    json_parse(text).map_err(|_| Error::parse("invalid JSON"))
}

pub(crate) const CALL_ID: &str = "a callId must be a string";

/// A method's arguments: a string (`what` says which, in the error) and an optional reason
/// (`undefined` and `null` are none).
pub(crate) fn args(
    value: &JsValue,
    what: &str,
    reason: Option<JsValue>,
) -> Result<(String, Option<String>), Error> {
    let text = string(value, what)?;
    let reason = match reason {
        Some(v) if !v.is_undefined() && !v.is_null() => {
            Some(string(&v, "a reason must be a string")?)
        }
        _ => None,
    };
    Ok((text, reason))
}

#[inline(never)]
pub(crate) fn string(value: &JsValue, what: &str) -> Result<String, Error> {
    string_of(value).ok_or_else(|| Error::new(ErrorCode::InvalidArgument, what))
}
