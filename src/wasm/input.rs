//! Reading the inputs the exported functions accept: a JSON string, a `Uint8Array` (or
//! `ArrayBuffer`) of UTF-8 JSON, or an already-parsed JS value.

use crate::error::Error;
use js_sys::{Array, ArrayBuffer, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

pub(crate) enum Input {
    Text(String),
    Bytes(Vec<u8>),
    Value(JsValue),
}

pub(crate) fn read(input: &JsValue) -> Input {
    if let Some(text) = input.as_string() {
        return Input::Text(text);
    }
    if let Some(bytes) = input.dyn_ref::<Uint8Array>() {
        return Input::Bytes(bytes.to_vec());
    }
    if let Some(buf) = input.dyn_ref::<ArrayBuffer>() {
        return Input::Bytes(Uint8Array::new(buf).to_vec());
    }
    Input::Value(input.clone())
}

/// A JS value as JSON, for the core. Values that JSON cannot hold (functions, symbols, bigints,
/// `undefined` at the top) are a `parse_error`.
pub(crate) fn to_json(value: &JsValue, path: &str) -> Result<serde_json::Value, Error> {
    serde_wasm_bindgen::from_value(value.clone())
        .map_err(|e| Error::parse(format!("not a JSON value: {e}")).with_path(path))
}

/// The messages of an already-parsed thread document (`{ messages: [...] }` or a bare array),
/// without converting them.
pub(crate) fn messages_of(value: &JsValue) -> Result<(Array, &'static str), Error> {
    if Array::is_array(value) {
        return Ok((value.clone().unchecked_into(), "$"));
    }
    if value.is_object() {
        let messages = Reflect::get(value, &"messages".into()).unwrap_or(JsValue::UNDEFINED);
        if Array::is_array(&messages) {
            return Ok((messages.unchecked_into(), "$.messages"));
        }
        return Err(Error::parse("a thread needs a \"messages\" array").with_path("$.messages"));
    }
    Err(Error::parse(
        "expected a thread: a JSON string, a Uint8Array of UTF-8 JSON, an object with \"messages\", or an array of messages",
    )
    .with_path("$"))
}
