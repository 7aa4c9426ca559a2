//! Core errors become JS `Error` objects with `name === "ToolgateError"`, a stable `code`, and the
//! place in the input (`path`, `line`, `column`, each `null` when unknown).

use crate::error::Error;
use crate::json::u64_string;
use js_sys::Reflect;
use wasm_bindgen::prelude::*;

pub(crate) fn to_js(err: &Error) -> JsValue {
    // The `Display` form, written out by hand: no formatting machinery in the skin.
    let mut text = err.code.as_str().to_owned();
    text.push_str(": ");
    text.push_str(&err.message);
    if let Some(path) = &err.path {
        text.push_str(" at ");
        text.push_str(path);
    }
    if let (Some(line), Some(column)) = (err.line, err.column) {
        text.push_str(" (line ");
        text.push_str(&u64_string(line as u64));
        text.push_str(", column ");
        text.push_str(&u64_string(column as u64));
        text.push(')');
    }
    let e = js_sys::Error::new(&text);
    let obj: &JsValue = e.as_ref();
    let num = |n: Option<usize>| n.map_or(JsValue::NULL, |n| JsValue::from_f64(n as f64));
    let path = err.path.as_deref().map_or(JsValue::NULL, JsValue::from_str);
    // Setting a property on a fresh Error object cannot fail; ignore the Result rather than panic.
    let _ = Reflect::set(obj, &"name".into(), &"ToolgateError".into());
    let _ = Reflect::set(obj, &"code".into(), &err.code.as_str().into());
    let _ = Reflect::set(obj, &"detail".into(), &JsValue::from_str(&err.message));
    let _ = Reflect::set(obj, &"path".into(), &path);
    let _ = Reflect::set(obj, &"line".into(), &num(err.line));
    let _ = Reflect::set(obj, &"column".into(), &num(err.column));
    e.into()
}

impl From<Error> for JsValue {
    fn from(err: Error) -> JsValue {
        to_js(&err)
    }
}

// `isToolgateError(e)`: whether `e` is an error thrown by toolgate.
#[wasm_bindgen(js_name = isToolgateError, unchecked_return_type = "value is ToolgateError", skip_typescript, skip_jsdoc)]
pub fn is_toolgate_error(
    #[wasm_bindgen(unchecked_param_type = "unknown")] value: &JsValue,
) -> bool {
    value.is_instance_of::<js_sys::Error>()
        && Reflect::get(value, &"name".into()).is_ok_and(|n| n == "ToolgateError")
}
