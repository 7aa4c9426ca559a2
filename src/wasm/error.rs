//! Core errors become JS `Error` objects with `name === "ToolgateError"`, a stable `code`, and the
//! place in the input (`path`, `line`, `column`, each `null` when unknown).

use crate::error::Error;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/src/wasm/fast.js")]
extern "C" {
    /// `isToolgateError`'s test: an `Error` whose `name` is `"ToolgateError"`.
    #[wasm_bindgen(js_name = isToolgateError)]
    fn is_error_named_toolgate(value: &JsValue) -> bool;

    /// The `Error` object: `name`, `code`, `detail`, `path`, `line`, `column` (`null` for a
    /// negative number), and the `Display` form of the error as its message.
    #[wasm_bindgen(js_name = toolgateError)]
    fn toolgate_error(code: &str, detail: &str, path: &JsValue, line: f64, column: f64) -> JsValue;
}

pub(crate) fn to_js(err: &Error) -> JsValue {
    let num = |n: Option<usize>| n.map_or(-1.0, |n| n as f64);
    let path = err.path.as_deref().map_or(JsValue::NULL, JsValue::from_str);
    toolgate_error(
        err.code.as_str(),
        &err.message,
        &path,
        num(err.line),
        num(err.column),
    )
}

impl From<Error> for JsValue {
    fn from(err: Error) -> JsValue {
        to_js(&err)
    }
}

/// `isToolgateError(e)`: whether `e` is an error thrown by toolgate, for Rust code. The package
/// exports the JS function itself (`src/wasm/fast.js`, by `scripts/build.sh`), so that it works
/// before `init()` and after a failed one, where no export of the module can be called.
pub fn is_toolgate_error(value: &JsValue) -> bool {
    is_error_named_toolgate(value)
}
