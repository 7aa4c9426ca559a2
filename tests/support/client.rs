//! Helpers shared by the client scenario tests (`tests/client_*.rs`, each includes this file as
//! `mod support` and defines `KEY`, the storage key of its drafts): reading the outputs of a step.
#![allow(dead_code)]

use serde_json::Value;
use toolgate::client::{HttpRequest, OpId, Output};
use toolgate::error::ErrorCode;

use super::KEY;

/// `Client::check_invariants()` where the build keeps the invariant bookkeeping (debug builds,
/// `--features invariants`, `--cfg fuzzing`). A release build without the feature keeps none, so
/// there is nothing to check: `cargo test --release` still compiles and runs every scenario.
pub trait Invariants {
    fn invariants(&self) -> Result<(), String>;
}

impl Invariants for toolgate::client::Client {
    fn invariants(&self) -> Result<(), String> {
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        return self.check_invariants();
        #[cfg(not(any(debug_assertions, fuzzing, feature = "invariants")))]
        return Ok(());
    }
}

/// What a driver that converts the messages for its UI does when they change: it asks how many
/// leading views are unchanged (`Client::take_unchanged_messages`), here at two message changes in
/// three, so that changes also add up over several steps. The invariants then hold those views to
/// the ones seen at the call.
pub fn take_unchanged(c: &mut toolgate::client::Client) {
    if c.snapshot().messages_version % 3 != 1 {
        convert(c);
    }
}

thread_local! {
    static CONVERTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A driver's conversion of the messages: the views from the first changed one on are counted
/// as converted (see [`converted`]).
pub fn convert(c: &mut toolgate::client::Client) {
    let kept = c.take_unchanged_messages();
    let len = c.snapshot().messages.as_slice().len();
    assert!(kept <= len, "{kept} views kept of {len}");
    CONVERTED.with(|n| n.set(n.get() + len - kept));
}

/// How many views this test's conversions converted so far (each test runs on a thread of its
/// own).
pub fn converted() -> usize {
    CONVERTED.with(std::cell::Cell::get)
}

/// A toolgate value as a serde_json value (serde_json is the oracle of these tests).
pub fn sj<T: toolgate::json::ToJson + ?Sized>(value: &T) -> Value {
    serde_json::from_str(&value.to_json_string()).expect("toolgate writes valid JSON")
}

pub fn https(outs: &[Output]) -> Vec<HttpRequest> {
    outs.iter()
        .filter_map(|o| match o {
            Output::Http(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

pub fn one_http(outs: &[Output]) -> HttpRequest {
    let all = https(outs);
    assert_eq!(all.len(), 1, "expected exactly one request: {outs:?}");
    all.into_iter().next().expect("one")
}

pub fn no_http(outs: &[Output]) {
    assert!(https(outs).is_empty(), "unexpected request: {outs:?}");
}

pub fn done(outs: &[Output], op: OpId) -> Result<(), ErrorCode> {
    let found: Vec<&Result<(), toolgate::error::Error>> = outs
        .iter()
        .filter_map(|o| match o {
            Output::Done { op: o, result } if *o == op => Some(result),
            _ => None,
        })
        .collect();
    assert_eq!(found.len(), 1, "expected one Done for op {op}: {outs:?}");
    match found[0] {
        Ok(()) => Ok(()),
        Err(e) => Err(e.code),
    }
}

pub fn no_done(outs: &[Output]) {
    assert!(
        !outs.iter().any(|o| matches!(o, Output::Done { .. })),
        "unexpected Done: {outs:?}"
    );
}

pub fn persists(outs: &[Output]) -> Vec<Option<String>> {
    outs.iter()
        .filter_map(|o| match o {
            Output::Persist { key, value } => {
                assert_eq!(key, KEY);
                Some(value.clone())
            }
            _ => None,
        })
        .collect()
}

pub fn err_code<T: std::fmt::Debug>(r: Result<T, toolgate::error::Error>) -> ErrorCode {
    r.expect_err("expected an error").code
}

/// What another tab's `storage` event hands over after this step: the last value it wrote (`""`
/// when it removed the drafts), if it wrote any.
pub fn written(outs: &[Output]) -> Option<String> {
    persists(outs).pop().map(Option::unwrap_or_default)
}

/// One write, of a record with no drafts: while paused, storage keeps the pause's record when its
/// drafts are all gone (so that another tab knows which pause they were cleared on), and the key is
/// removed only when nothing is paused.
pub fn cleared(persists: &[Option<String>]) -> bool {
    matches!(persists, [Some(v)] if serde_json::from_str::<Value>(v)
        .is_ok_and(|j| j["drafts"] == serde_json::json!({})))
}

/// `Client::head_json()` is the JSON of the snapshot's head (without the streaming text). Asked
/// at even versions only: at odd ones the text is left as the step made it, which a later step
/// then compares against (or writes afresh), as in a client whose snapshot nobody reads.
pub fn check_head_json(c: &mut toolgate::client::Client) {
    if c.version() % 2 == 0 {
        assert_eq!(
            c.head_json(),
            toolgate::json::ToJson::to_json_string(&c.snapshot().head_without_stream_text()),
            "head_json at version {}",
            c.version()
        );
    }
}
