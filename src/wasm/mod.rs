//! The JS boundary: the only module that names wasm-bindgen (and the JS it imports).
//!
//! Exported functions and classes use camelCase names. Values cross as JSON text: the core writes
//! it and `JSON.parse` makes plain objects (`None` is `null`); JS values going in are
//! `JSON.stringify`-ed. Errors cross as `Error` objects with `name === "ToolgateError"` and a stable
//! `code` (see `error.rs`).

mod client;
mod error;
mod input;
mod types;

use wasm_bindgen::prelude::*;

use crate::approval::{self, Suspension};
use crate::decisions::{Decision, Decisions as CoreDecisions};
use crate::error::Error;
use crate::json::{self, ToJsonDyn};
use crate::prelude::*;
use crate::thread::{self, Message};
use input::Input;

#[cfg(debug_assertions)]
#[doc(hidden)]
pub use client::read_options_for_tests;
pub use client::ApprovalClient;

pub use error::is_toolgate_error;

/// A value for JS: its JSON text, `JSON.parse`d (plain objects and arrays, `null` for `None`).
pub(crate) fn to_js(value: &dyn ToJsonDyn) -> Result<JsValue, Error> {
    let mut text = String::new();
    value.write_dyn(&mut text);
    input::parse(&text)
}

// `parseThread(input)`: the whole thread as plain objects, `{ id, messages }`. `JSON.parse` builds
// the objects from the original text (nothing is lost, key order included) and `fast.js` checks
// the thread's shape on them; when that finds anything off, the crate's own parser checks the
// document (JSON and thread shape, every message) and reports the exact error.
#[wasm_bindgen(js_name = parseThread, unchecked_return_type = "Thread", skip_typescript, skip_jsdoc)]
pub fn parse_thread(
    #[wasm_bindgen(unchecked_param_type = "ThreadInput")] input: JsValue,
) -> Result<JsValue, JsValue> {
    // The crate's errors converted at one place.
    Ok((|| {
        let text = match input::kind(&input) {
            input::Kind::Text | input::Kind::Bytes => input,
            input::Kind::Value => JsValue::from_str(&input::stringify(&input, "$")?),
        };
        let fast = input::fast_thread(&text);
        if !fast.is_undefined() {
            return Ok(fast);
        }
        let (text, (id, bare)) = match &input::read(&text) {
            Input::Text(s) => {
                let checked = thread::check_thread_str(s)?;
                (text, checked)
            }
            Input::Bytes(bytes) => {
                let bytes = input::to_vec(bytes);
                let text = json::utf8(&bytes)?;
                let checked = thread::check_thread_str(text)?;
                (JsValue::from_str(text), checked)
            }
            Input::Value(_) => return Err(Error::parse("not a JSON value").with_path("$")),
        };
        let id = id.as_deref().map_or(JsValue::NULL, JsValue::from_str);
        let thread = input::thread_of(&text, &id, f64::from(u8::from(bare)));
        if thread.is_undefined() {
            return Err(Error::parse("invalid JSON"));
        }
        Ok(thread)
    })()?)
}

// `pendingApprovals(input, options)`: where the thread stands, by its last message alone. With
// `{ check: 'tail' }`, a string or bytes are first cut to their last message from the end (see
// `tailDoc` in `fast.js`) and only that is read; where the cut is no good, the whole document is,
// for the exact error.
#[wasm_bindgen(js_name = pendingApprovals, unchecked_return_type = "Suspension", skip_typescript, skip_jsdoc)]
pub fn pending_approvals(
    #[wasm_bindgen(unchecked_param_type = "ThreadInput")] input: JsValue,
    #[wasm_bindgen(unchecked_param_type = "PendingOptions")] options: JsValue,
) -> Result<JsValue, JsValue> {
    let cut = input::tail_doc(&input, &options);
    if error::is_toolgate_error(&cut) {
        return Err(cut);
    }
    let tail = match cut.is_undefined() {
        false => suspension_of(&cut).ok(),
        true => None,
    };
    let suspension = match tail {
        Some(s) => Ok(s),
        None => suspension_of(&input),
    };
    Ok(suspension.and_then(|s| to_js(&s))?)
}

fn suspension_of(input: &JsValue) -> Result<Suspension, Error> {
    // A JS string is read by `JSON.parse` (faster than copying it into wasm memory as UTF-8, and
    // nothing of the copy outlives the call), then only its tail crosses; a parsed value likewise.
    // Bytes are scanned by the crate a window at a time, and only the tail is built.
    if let input::Kind::Text | input::Kind::Value = input::kind(input) {
        if let Some(tail) = input::string_of(&input::fast_tail(input)) {
            if tail.is_empty() {
                return Ok(Suspension::default());
            }
            if let Ok(message) = Message::parse_str(&tail) {
                return Ok(Suspension::from_message(&message));
            }
        }
    }
    match &input::read(input) {
        Input::Text(text) => approval::pending_approvals_str(text),
        Input::Bytes(bytes) => input::pending_approvals_bytes(bytes),
        // A value `fastTail` did not take: its JSON text, read as text is, for the exact error.
        Input::Value(value) => approval::pending_approvals_str(&input::stringify(value, "$")?),
    }
}

/// What a `Decisions` method does with its callId.
#[derive(Clone, Copy)]
enum Op {
    Approve,
    Reject,
    Clear,
    Get,
}

impl JsDecisions {
    /// The callId methods, in one body: read the arguments, apply `op`, return the decision
    /// (`get`) or `undefined`.
    #[inline(never)]
    fn on(&mut self, op: Op, call_id: &JsValue, reason: &JsValue) -> Result<JsValue, JsValue> {
        // The core's errors converted at one place.
        Ok((|| {
            let (call_id, reason) = input::args(call_id, input::CALL_ID, reason)?;
            let d = &mut self.inner;
            // One call sets the draft, whichever the method.
            let local = match op {
                Op::Approve => Some(Decision::Approve),
                Op::Reject => Some(Decision::reject(reason.as_deref())),
                Op::Clear => None,
                // `null` when undecided: what `JSON.parse` makes of `None`'s JSON.
                Op::Get => return to_js(&d.get_ref(&call_id)?),
            };
            d.put(&call_id, local)?;
            Ok(JsValue::UNDEFINED)
        })()?)
    }
}

// The decision set for one suspension: `new Decisions(suspensionOrThread)`.
#[wasm_bindgen(js_name = Decisions, skip_typescript)]
pub struct JsDecisions {
    inner: CoreDecisions,
}

#[wasm_bindgen(js_class = Decisions)]
impl JsDecisions {
    // From a `Suspension` returned by `pendingApprovals`, or from any thread input.
    #[wasm_bindgen(constructor, skip_jsdoc)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "Suspension | ThreadInput")] source: JsValue,
    ) -> Result<JsDecisions, JsValue> {
        let read = types::read_suspension(&source);
        let suspension = if read.is_undefined() {
            suspension_of(&source)
        } else {
            types::suspension_from_js(read)?
        };
        Ok(JsDecisions {
            inner: suspension.and_then(|s| CoreDecisions::new(&s))?,
        })
    }

    // Approve a gated tool of the suspended tail (revisable until the set is complete).
    #[wasm_bindgen(skip_jsdoc)]
    pub fn approve(
        &mut self,
        #[wasm_bindgen(js_name = callId, unchecked_param_type = "string")] call_id: JsValue,
    ) -> Result<(), JsValue> {
        self.on(Op::Approve, &call_id, &JsValue::UNDEFINED)?;
        Ok(())
    }

    // Reject a gated tool, with an optional reason for the model (blank means none).
    #[wasm_bindgen(skip_jsdoc)]
    pub fn reject(
        &mut self,
        #[wasm_bindgen(js_name = callId, unchecked_param_type = "string")] call_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string | null | undefined")] reason: JsValue,
    ) -> Result<(), JsValue> {
        self.on(Op::Reject, &call_id, &reason)?;
        Ok(())
    }

    // Drop the local decision for a tool (its decision on the tail, if any, still counts).
    #[wasm_bindgen(skip_jsdoc)]
    pub fn clear(
        &mut self,
        #[wasm_bindgen(js_name = callId, unchecked_param_type = "string")] call_id: JsValue,
    ) -> Result<(), JsValue> {
        self.on(Op::Clear, &call_id, &JsValue::UNDEFINED)?;
        Ok(())
    }

    // The effective decision in wire form: `"approve"`, `"reject"`, `["reject", reason]`, or `null`.
    #[wasm_bindgen(unchecked_return_type = "DecisionValue | null", skip_jsdoc)]
    pub fn get(
        &mut self,
        #[wasm_bindgen(js_name = callId, unchecked_param_type = "string")] call_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        self.on(Op::Get, &call_id, &JsValue::UNDEFINED)
    }

    // Whether every gated tool of the tail has a decision.
    #[wasm_bindgen(getter, js_name = isComplete, skip_jsdoc)]
    pub fn is_complete(&self) -> bool {
        self.inner.is_complete()
    }

    // The callIds still without a decision, in tail order.
    #[wasm_bindgen(getter, unchecked_return_type = "string[]", skip_jsdoc)]
    pub fn undecided(&self) -> Result<JsValue, JsValue> {
        Ok(to_js(&self.inner.undecided_ids())?)
    }

    // `{ decisions: { callId: "approve" | "reject" | ["reject", reason] } }`, keys in tail order.
    #[wasm_bindgen(js_name = toJSON, unchecked_return_type = "DecisionPayload", skip_jsdoc)]
    pub fn to_json(&self) -> Result<JsValue, JsValue> {
        // The crate's errors converted at one place.
        Ok((|| input::parse(&self.inner.to_json_string()?))()?)
    }
}
