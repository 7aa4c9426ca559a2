//! Helpers shared by the browser tests (`tests/web*.rs`, each includes this file as `mod support`):
//! reading JS values and an `ApprovalClient`'s snapshot, awaiting promises, the reference endpoint.
#![allow(dead_code)]

use js_sys::{Array, Promise, Reflect};
use toolgate::wasm::ApprovalClient;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// The reference endpoint `scripts/test-browser.sh` started.
pub const ENDPOINT: Option<&str> = option_env!("TOOLGATE_ENDPOINT");

/// The wasm memory's size, in bytes.
pub fn memory_bytes() -> f64 {
    let buffer = get(&wasm_bindgen::memory(), "buffer");
    get(&buffer, "byteLength")
        .as_f64()
        .expect("the memory's byteLength")
}

pub fn array(v: &JsValue) -> Vec<JsValue> {
    v.dyn_ref::<Array>().map(|a| a.to_vec()).unwrap_or_default()
}

pub fn call_id_of(c: &ApprovalClient, name: &str) -> String {
    pending(c)
        .into_iter()
        .find(|(_, n)| n == name)
        .map(|(id, _)| id)
        .unwrap_or_else(|| panic!("no pending {name}: {:?}", pending(c)))
}

pub fn code(e: &JsValue) -> String {
    string(&get(e, "code"))
}

pub fn endpoint() -> &'static str {
    ENDPOINT.unwrap_or("http://127.0.0.1:8787")
}

pub fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &key.into()).unwrap_or(JsValue::UNDEFINED)
}

pub fn path(v: &JsValue, keys: &[&str]) -> JsValue {
    keys.iter()
        .fold(v.clone(), |acc, k| match k.parse::<u32>() {
            Ok(i) => acc
                .dyn_ref::<Array>()
                .map_or(JsValue::UNDEFINED, |a| a.get(i)),
            Err(_) => get(&acc, k),
        })
}

/// `(callId, name)` of the undecided gated tools on the paused tail.
pub fn pending(c: &ApprovalClient) -> Vec<(String, String)> {
    array(&path(&snap(c), &["suspension", "pending"]))
        .iter()
        .map(|t| (string(&get(t, "callId")), string(&get(t, "name"))))
        .collect()
}

pub fn phase(c: &ApprovalClient) -> String {
    string(&get(&snap(c), "phase"))
}

pub fn s(text: &str) -> JsValue {
    JsValue::from_str(text)
}

pub async fn sleep(ms: i32) {
    let p = Promise::new(&mut |resolve, _| {
        let _ = web_sys::window()
            .expect("window")
            .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
    });
    let _ = JsFuture::from(p).await;
}

pub fn snap(c: &ApprovalClient) -> JsValue {
    c.get_snapshot().expect("snapshot")
}

pub fn string(v: &JsValue) -> String {
    v.as_string().unwrap_or_default()
}

pub async fn wait(p: impl Into<JsValue>) -> Result<JsValue, JsValue> {
    JsFuture::from(Promise::from(p.into())).await
}
