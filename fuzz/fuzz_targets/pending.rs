//! `pending_approvals_bytes` / `_windows` / `_str` / `_value` agree with each other and, whenever
//! `parse_thread` accepts the document, with `Suspension::from_thread(parse_thread(..))` (and then
//! none of them errs). Pending detection is deliberately laxer than `parse_thread` about non-tail
//! messages, so where only one side accepts nothing is compared. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate::approval::{
    pending_approvals_bytes, pending_approvals_str, pending_approvals_value,
    pending_approvals_windows, Approval, Suspension,
};
use toolgate::thread::parse_thread_str;

#[path = "serde_oracle.rs"]
mod serde_oracle;
use serde_oracle::{serde_parse, tg};

fn check_shape(s: &Suspension) {
    assert_eq!(s.suspended, !s.pending.is_empty());
    assert!(s.pending.iter().all(|t| t.approval == Approval::Pending));
    assert!(s.decided.iter().all(|t| t.approval != Approval::Pending));
    assert!(s.pending.windows(2).all(|w| w[0].position < w[1].position));
    assert!(s.decided.windows(2).all(|w| w[0].position < w[1].position));
    for t in s.pending.iter().chain(&s.decided) {
        assert!(t.inputs.is_object(), "inputs must always be an object");
    }
}

/// A suspension with every tool's inputs as serde_json reads them (numbers as f64).
fn norm(s: &Suspension) -> Suspension {
    let mut s = s.clone();
    for t in s.pending.iter_mut().chain(s.decided.iter_mut()) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&t.inputs.to_json_string()) {
            t.inputs = tg(&v);
        }
    }
    s
}

fuzz_target!(|data: &[u8]| {
    let from_bytes = pending_approvals_bytes(data);
    // Read a window at a time (as `pendingApprovals` reads a `Uint8Array`), with a window taken
    // from the input (its last byte): the same result or error, and on a valid document each
    // byte read once.
    let window = 1 + usize::from(data.last().copied().unwrap_or(0) % 64);
    let mut read = 0;
    let windowed = pending_approvals_windows(data.len(), window, |at, dest| {
        dest.copy_from_slice(&data[at..at + dest.len()]);
        read += dest.len();
    });
    assert_eq!(
        windowed, from_bytes,
        "windowed and whole disagree (window {window})"
    );
    if from_bytes.is_ok() {
        assert_eq!(read, data.len(), "a valid document read more than once");
    }
    let Ok(text) = std::str::from_utf8(data) else {
        assert!(from_bytes.is_err());
        return;
    };
    let from_str = pending_approvals_str(text);
    assert_eq!(from_bytes, from_str, "bytes and str disagree");
    if let Ok(s) = &from_str {
        check_shape(s);
    }

    // serde_json (the oracle) reads numbers as f64 where toolgate keeps their source text, and
    // refuses a number beyond f64 (`1e400`) that toolgate keeps: compare through serde_json.
    let parsed = serde_parse(text);
    if let Some(Err(e)) = &parsed {
        let e = e.to_string();
        // toolgate reads a lone surrogate escape as U+FFFD, where serde_json refuses it.
        let lone = e.contains("surrogate") || e.contains("hex escape");
        if from_str.is_ok() && !e.starts_with("number out of range") && !lone {
            assert!(
                parse_thread_str(text).is_err(),
                "pending and parse accept what serde refuses: {e}"
            );
        }
    }
    let value = parsed.and_then(Result::ok);
    let from_value = value.as_ref().map(|v| pending_approvals_value(&tg(v)));
    if let (Ok(a), Some(Ok(b))) = (&from_str, &from_value) {
        assert_eq!(norm(a), norm(b), "str and value disagree");
    }
    // A lone surrogate escape (`"\udddd"`) reads as U+FFFD in toolgate, where
    // `serde_json::Value` refuses it: nothing to compare with serde then.

    if let Ok(thread) = parse_thread_str(text) {
        let expected = Suspension::from_thread(&thread);
        assert_eq!(
            from_str
                .as_ref()
                .expect("pending errs where parse_thread succeeds"),
            &expected
        );
        if let Some(v) = from_value {
            let v = v.expect("pending_value errs where parse_thread succeeds");
            assert_eq!(norm(&v), norm(&expected));
        }
    }
});
