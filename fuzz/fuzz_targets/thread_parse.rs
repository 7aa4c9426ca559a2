//! `parse_thread_bytes` / `parse_thread_str` / `parse_thread_value` agree; a parsed thread survives
//! serialize → parse unchanged, message by message too; pending detection on the serialized form
//! equals the tail rule applied to the parsed thread; a document read again after another (the
//! input cut at its first 0xFF byte, which UTF-8 never holds: the first document, then the second)
//! reads as a first read of it does. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate::approval::{pending_approvals_str, Suspension};
use toolgate::json::ToJson;
use toolgate::thread::{parse_thread_bytes, parse_thread_str, parse_thread_value, Message};

#[path = "serde_oracle.rs"]
mod serde_oracle;
use serde_oracle::{serde_parse, tg};

fuzz_target!(|data: &[u8]| {
    let (old, new) = match data.iter().position(|&b| b == 0xff) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, data),
    };
    assert_eq!(
        toolgate::thread::read_again(old, new),
        parse_thread_bytes(new),
        "read again"
    );

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

    // The value path accepts everything the streaming walk accepts, with the same result. A
    // document serde_json (the oracle) refuses where toolgate, which keeps a number's source text,
    // does not: a number beyond f64 (`1e400`, which `JSON.parse` reads as Infinity).
    match serde_parse(text) {
        None => {}
        Some(Ok(value)) => {
            let from_value =
                parse_thread_value(tg(&value)).expect("value path refuses what str accepted");
            // serde_json reads numbers as f64 (toolgate keeps their source text) and keeps the
            // last of a repeated key: compare both threads as serde_json reads them.
            let oracle = |t: &toolgate::thread::Thread| -> serde_json::Value {
                let mut v: serde_json::Value =
                    serde_json::from_str(&t.to_json_string()).expect("toolgate writes valid JSON");
                // The id is compared on its own (a numeric id is kept as its source text).
                if let Some(o) = v.as_object_mut() {
                    o.remove("id");
                }
                v
            };
            if !value.get("id").is_some_and(serde_json::Value::is_number) {
                assert_eq!(from_value.id, thread.id, "value and str disagree on the id");
            }
            assert_eq!(
                oracle(&from_value),
                oracle(&thread),
                "value and str disagree"
            );
        }
        // And lone surrogate escapes, which toolgate reads as U+FFFD (serde_json refuses them).
        Some(Err(e)) => {
            let e = e.to_string();
            assert!(
                e.starts_with("number out of range")
                    || e.contains("hex escape")
                    || e.contains("surrogate"),
                "toolgate parsed a thread serde_json refuses: {e}"
            )
        }
    }

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
