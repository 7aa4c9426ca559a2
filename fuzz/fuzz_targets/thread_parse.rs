//! `parse_thread_bytes` / `parse_thread_str` / `parse_thread_value` agree; a parsed thread survives
//! serialize → parse unchanged, message by message too; pending detection on the serialized form
//! equals the tail rule applied to the parsed thread. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate::approval::{pending_approvals_str, Suspension};
use toolgate::json::ToJson;
use toolgate::thread::{parse_thread_bytes, parse_thread_str, parse_thread_value, Message};

/// serde_json (the oracle) to toolgate's own JSON value, through text.
fn tg(value: &serde_json::Value) -> toolgate::json::Value {
    toolgate::json::Value::parse(&value.to_string()).expect("serde_json output is valid JSON")
}

fuzz_target!(|data: &[u8]| {
    let from_bytes = parse_thread_bytes(data);
    let Ok(text) = std::str::from_utf8(data) else {
        let err = from_bytes.expect_err("invalid UTF-8 must not parse");
        assert_eq!(err.code.as_str(), "parse_error");
        return;
    };
    let from_str = parse_thread_str(text);
    assert_eq!(from_bytes, from_str, "bytes and str disagree");
    let Ok(thread) = from_str else {
        return;
    };

    // The value path accepts everything the streaming walk accepts, with the same result.
    let value: serde_json::Value =
        serde_json::from_str(text).expect("a parsed thread is valid JSON");
    let from_value = parse_thread_value(tg(&value)).expect("value path refuses what str accepted");
    assert_eq!(from_value, thread, "value and str disagree");

    // Round trip: parse → serialize → parse is the identity.
    let out = thread.to_json_string();
    let again = parse_thread_str(&out).expect("re-parse of serialized thread");
    assert_eq!(again, thread, "round trip changed the thread");
    let out2 = again.to_json_string();
    assert_eq!(out, out2, "serialization not stable");

    // Each message alone round-trips too.
    for m in &thread.messages {
        let s = m.to_json_string();
        assert_eq!(&Message::parse_str(&s).expect("message re-parse"), m);
    }

    // Pending detection on the serialized form is the tail rule on the parsed thread.
    let expected = Suspension::from_thread(&thread);
    assert_eq!(pending_approvals_str(&out).expect("pending"), expected);
    assert_eq!(expected.suspended, !expected.pending.is_empty());
});
