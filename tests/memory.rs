//! What a client keeps of a thread, in bytes: counted by the global allocator of this test binary
//! (native only). The Neuron client keeps the thread's messages and, for its snapshot, a view of
//! each; a view's `raw` is the very message, shared, not a copy, so a loaded client holds little
//! more than the parsed thread itself.
#![cfg(not(target_arch = "wasm32"))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use serde_json::json;
use toolgate::client::{Client, Config, HttpResponse, Output};
use toolgate::thread::parse_thread_str;

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Relaxed);
        LIVE.fetch_sub(layout.size(), Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> usize {
    LIVE.load(Relaxed)
}

/// A thread of `turns` turns, each a user message, a paused `tool_call` of two tools decided
/// since, their `tool_call_result` and an answer.
fn long_thread(turns: usize) -> String {
    let mut messages = Vec::new();
    for k in 0..turns {
        messages.push(json!({"__id": format!("u{k}"), "role": "user",
            "content": format!("delete /tmp/f{k}.log and email a{k}@example.com about report {k}")}));
        let tools = json!([
            {"callId": format!("c{k}a"), "name": "delete_file", "description": "Deletes a file",
             "inputs": {"path": format!("/tmp/f{k}.log")}, "result": null, "approval": "approved",
             "approvalReason": "Deleting a file is irreversible", "rejectReason": null},
            {"callId": format!("c{k}b"), "name": "send_email", "description": "Sends an email",
             "inputs": {"to": format!("a{k}@example.com"), "subject": "report", "body": "x".repeat(200)},
             "result": null, "approval": "rejected", "approvalReason": "Email leaves the company",
             "rejectReason": "not this one"},
        ]);
        messages.push(
            json!({"__id": format!("t{k}"), "role": "assistant", "type": "tool_call",
            "content": [], "tools": tools}),
        );
        let mut results = tools.clone();
        results[0]["result"] = json!("deleted ".repeat(40));
        messages.push(
            json!({"__id": format!("r{k}"), "role": "tool", "type": "tool_call_result",
            "content": [], "tools": results}),
        );
        messages.push(json!({"__id": format!("a{k}"), "role": "assistant",
            "content": format!("Done with turn {k}: the file is gone, the email was not sent.")}));
    }
    json!({"id": "t", "messages": messages}).to_string()
}

#[test]
fn a_loaded_neuron_client_keeps_little_more_than_the_parsed_thread() {
    let text = long_thread(300);

    let before = live();
    let thread = parse_thread_str(&text).expect("a valid thread");
    let parsed = live() - before;
    drop(thread);

    let before = live();
    let mut client = Client::new(Config::new("https://api.test", "t")).expect("valid config");
    client.load(0).expect("load");
    let get = std::iter::from_fn(|| client.poll_output())
        .find_map(|o| match o {
            Output::Http(r) => Some(r),
            _ => None,
        })
        .expect("a GET");
    while client.poll_output().is_some() {}
    client.handle_response(0, get.id, HttpResponse::new(200, text.clone()));
    while client.poll_output().is_some() {}
    assert_eq!(client.snapshot().messages.as_slice().len(), 1200);
    let kept = live() - before;

    // The messages once, and their views: the tools' inputs and results, the texts and the
    // views' own fields (about 0.6 of the parsed thread here), never the messages a second time
    // (2.45x when each view copied its message).
    println!(
        "thread {} B of JSON, parsed {parsed} B, kept by the client {kept} B ({:.2}x)",
        text.len(),
        kept as f64 / parsed as f64
    );
    assert!(
        (kept as f64) < 2.0 * parsed as f64,
        "the client keeps {kept} B for a thread parsed into {parsed} B"
    );
    drop(client);
}
