//! Reading the inputs the exported functions accept: a JSON string, a `Uint8Array` (or
//! `ArrayBuffer`) of UTF-8 JSON, or an already-parsed JS value. Values cross the boundary as JSON
//! text (`JSON.stringify` / `JSON.parse`), never converted field by field.

use crate::approval::{self, Suspension};
use crate::client::MessageView;
use crate::error::{Error, ErrorCode};
use crate::json::write_u64;
use crate::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

pub(crate) enum Input<'a> {
    Text(String),
    /// A `Uint8Array`, not yet copied (see [`to_vec`] and [`pending_approvals_bytes`]).
    Bytes(JsValue),
    /// Lent, not copied: nothing to clone or drop.
    Value(&'a JsValue),
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
    } else if bytes_of(input).is_undefined() {
        Kind::Value
    } else {
        Kind::Bytes
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

    /// `pendingApprovals`' tail check (see `fast.js`): the document cut to its last message, a
    /// string or bytes; `undefined` for a full read; the `ToolgateError` for a bad `check`.
    #[wasm_bindgen(js_name = tailDoc)]
    pub(crate) fn tail_doc(input: &JsValue, options: &JsValue) -> JsValue;

    /// `parseThread`'s result from JSON text the crate has checked: `{ id, messages }`, the
    /// messages being the document (`bare`) or its `messages`; `undefined` where `JSON.parse`
    /// throws. (`bare` as a number, 1 or 0: it crosses as it is, with no wrapper in the glue.)
    #[wasm_bindgen(js_name = threadOf)]
    pub(crate) fn thread_of(text: &JsValue, id: &JsValue, bare: f64) -> JsValue;

    /// `TextEncoder.encodeInto` into a view of wasm memory: the bytes written.
    #[wasm_bindgen(js_name = encodeInto)]
    fn encode_into(s: &JsValue, dest: &mut [u8]) -> u32;

    /// `JSON.parse` of a JS string (not copied through wasm memory); `undefined` where it throws.
    #[wasm_bindgen(js_name = parse)]
    fn json_parse(text: &JsValue) -> JsValue;

    /// `list` (its first `keep` items alone, in a new array, when `keep` is not 0) with the items
    /// of the array `items` appended (`items` itself when `list` is `undefined`).
    fn append(list: &JsValue, items: &JsValue, keep: u32) -> JsValue;

    /// A `Uint8Array`, or one over an `ArrayBuffer`; `undefined` for any other value.
    #[wasm_bindgen(js_name = bytesOf)]
    fn bytes_of(value: &JsValue) -> JsValue;

    /// Copies the bytes of a `Uint8Array` from `offset` into a view of wasm memory, as many as
    /// it holds.
    #[wasm_bindgen(js_name = copyInto)]
    fn copy_into(bytes: &JsValue, dest: &mut [u8], offset: u32);

    /// `JSON.stringify(value)` (see `fast.js`): its text, `undefined` for a value JSON cannot
    /// hold, or `[message]` when it throws.
    #[wasm_bindgen(js_name = stringify)]
    fn json_stringify(value: &JsValue) -> JsValue;

    /// `new ApprovalClient`'s options, read and checked (see `fast.js`): the config as JSON text
    /// for `Config::from_checked`, or the `ToolgateError` to throw.
    #[wasm_bindgen(js_name = readOptions)]
    pub(crate) fn read_options(options: &JsValue) -> JsValue;
}

#[wasm_bindgen]
extern "C" {
    // The few JS types the skin names, declared here rather than taken from js-sys: linking
    // js-sys brings its JSPI task machinery along (exported, then kept by the function table).
    /// An array (what a `fast.js` function returns as a tuple).
    pub(crate) type Array;
    /// `array[i]`.
    #[wasm_bindgen(method, indexing_getter)]
    pub(crate) fn get(this: &Array, i: u32) -> JsValue;
    /// A JS function.
    #[derive(Clone)]
    pub(crate) type Function;
    /// A promise (what the client's async methods return).
    pub type Promise;
    /// `performance.now()`: a clock that never steps back (the wall clock can, by hours: a
    /// retry's deadline would then lie that far ahead, the client stuck in its wait).
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    pub(crate) fn monotonic_now() -> f64;

    /// A string or an array.
    type Sized;
    /// Its `length`. (One import for both kinds, where `JsString::length` and
    /// `Uint8Array::length` are one each.)
    #[wasm_bindgen(method, getter)]
    fn length(this: &Sized) -> u32;
}

/// The bytes of a `Uint8Array`. (Not `Uint8Array::to_vec`, which asserts the length it reads
/// twice, with the assertion's formatting.)
pub(crate) fn to_vec(bytes: &JsValue) -> Vec<u8> {
    let mut buf = vec![0u8; bytes.unchecked_ref::<Sized>().length() as usize];
    copy_into(bytes, &mut buf, 0);
    buf
}

/// How much of a `Uint8Array` `pendingApprovals` copies into wasm memory at a time (measured:
/// see BENCHMARKS.md, section 1).
pub(crate) const WINDOW: usize = 1 << 20;

/// `pendingApprovals` of a `Uint8Array`, read a window at a time (wasm memory never holds the
/// whole document, unless it is bad: see [`approval::pending_approvals_windows`]).
pub(crate) fn pending_approvals_bytes(bytes: &JsValue) -> Result<Suspension, Error> {
    let len = bytes.unchecked_ref::<Sized>().length() as usize;
    approval::pending_approvals_windows(len, WINDOW, |at, dest| {
        copy_into(bytes, dest, at as u32);
    })
}

/// A JS string as UTF-8 (lone surrogates become U+FFFD), encoded straight into a buffer sized
/// for the worst case: one pass, no re-allocation while encoding.
fn utf8_of(s: &JsValue) -> String {
    let units = s.unchecked_ref::<Sized>().length() as usize;
    let mut buf = vec![0u8; units.saturating_mul(3)];
    let written = encode_into(s, &mut buf) as usize;
    buf.truncate(written);
    // SAFETY: `TextEncoder.encodeInto` writes UTF-8 only, and whole sequences only (a lone
    // surrogate becomes U+FFFD); with room for three bytes per UTF-16 unit it writes the whole
    // string, and `written` is the length of what it wrote.
    unsafe { String::from_utf8_unchecked(buf) }
}

/// A JS string as a Rust string, `None` for any other value. (Not `JsValue::as_string`: its
/// copy goes through wasm-bindgen's string passing, glue that `utf8_of` makes unnecessary.)
pub(crate) fn string_of(value: &JsValue) -> Option<String> {
    value.is_string().then(|| utf8_of(value))
}

pub(crate) fn read(input: &JsValue) -> Input<'_> {
    if input.is_string() {
        return Input::Text(utf8_of(input));
    }
    let bytes = bytes_of(input);
    if bytes.is_undefined() {
        return Input::Value(input);
    }
    Input::Bytes(bytes)
}

/// A JS value as JSON text (`JSON.stringify`). Values that JSON cannot hold (functions, symbols,
/// `undefined`, bigints, cycles) are a `parse_error` at `path`.
pub(crate) fn stringify(value: &JsValue, path: &str) -> Result<String, Error> {
    stringified(json_stringify(value), path)
}

/// What `stringify` in `fast.js` returned (`json`), as `stringify` reads it.
pub(crate) fn stringified(json: JsValue, path: &str) -> Result<String, Error> {
    if let Some(s) = string_of(&json) {
        return Ok(s);
    }
    let mut m = "not a JSON value".to_owned();
    if !json.is_undefined() {
        // `[message]`: what `JSON.stringify` threw.
        m.push_str(": ");
        if let Some(thrown) = string_of(&json.unchecked_ref::<Array>().get(0)) {
            m.push_str(&thrown);
        }
    }
    Err(Error::parse(m).with_path(path))
}

/// `JSON.parse` of text the core has already validated (crossing as a JS string).
pub(crate) fn parse(text: &str) -> Result<JsValue, Error> {
    let value = json_parse(&JsValue::from_str(text));
    if value.is_undefined() {
        return Err(Error::parse("invalid JSON"));
    }
    Ok(value)
}

/// The snapshot's messages for JS (each as [`MessageView::write_js`] writes it, its flags in an
/// array after the batch's items: `append` in `fast.js` puts back what it did not write twice),
/// written and parsed in batches of about 64 KiB of JSON: the text the crate holds at a time is
/// one batch (or one item larger than that), not the whole list's, which for a long thread would
/// be several times the thread's own size. The items follow the first `keep` of the JS array
/// `list` (a new array; `undefined` and 0 for none).
pub(crate) fn list_to_js(
    mut list: JsValue,
    mut keep: usize,
    mut items: &[MessageView],
) -> Result<JsValue, Error> {
    loop {
        let mut text = String::from("[");
        let mut flags = String::from("[");
        while let [item, rest @ ..] = items {
            if text.len() > 1 {
                text.push(',');
                flags.push(',');
            }
            write_u64(&mut flags, item.write_js(&mut text));
            items = rest;
            if text.len() >= 64 * 1024 {
                break;
            }
        }
        if text.len() > 1 {
            text.push(',');
        }
        text.push_str(&flags);
        text.push_str("]]");
        // The batch's text let go of before its items are checked: once for both outcomes.
        let batch = parse(&text);
        drop(text);
        list = append(&list, &batch?, keep as u32);
        keep = 0;
        if items.is_empty() {
            return Ok(list);
        }
    }
}

pub(crate) const CALL_ID: &str = "a callId must be a string";

/// A method's arguments: a string (`what` says which, in the error) and an optional reason
/// (`undefined` and `null` are none). Both are read first, and the one error made for the first
/// that is wrong.
pub(crate) fn args(
    value: &JsValue,
    what: &str,
    reason: &JsValue,
) -> Result<(String, Option<String>), Error> {
    let text = string_of(value);
    // `None`: a reason that is no string. (A plain match: smaller in wasm than `map(Some)`.)
    #[allow(clippy::manual_map)]
    let reason = if reason.is_null_or_undefined() {
        Some(None)
    } else {
        match string_of(reason) {
            Some(reason) => Some(Some(reason)),
            None => None,
        }
    };
    match (text, reason) {
        (Some(text), Some(reason)) => Ok((text, reason)),
        (text, _) => {
            let what = match text {
                Some(_) => "a reason must be a string",
                None => what,
            };
            Err(Error::new(ErrorCode::InvalidArgument, what))
        }
    }
}
