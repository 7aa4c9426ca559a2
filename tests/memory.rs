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
/// The most bytes live at once since [`reset_peak`].
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew() {
    PEAK.fetch_max(LIVE.load(Relaxed), Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Relaxed);
        grew();
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Relaxed);
        grew();
        LIVE.fetch_sub(layout.size(), Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> usize {
    LIVE.load(Relaxed)
}

fn reset_peak() {
    PEAK.store(live(), Relaxed);
}

fn peak() -> usize {
    PEAK.load(Relaxed)
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

/// Tests of this file count one global allocator: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A large result, as a log excerpt: escaped quotes, tabs, backslashes, newlines, non-ASCII.
fn log_excerpt(k: usize) -> String {
    format!("line {k}: \"quoted\" value\t\\path\\to\\file — café 東京 🚀\n").repeat(40)
}

/// A client of `config` loaded with `body` (and, with `replay`, Sidenet's replay answered with
/// nothing paused): the most bytes live at once while it handled the body, and what it kept,
/// both above what was live before the body was made.
fn load_peak(config: Config, body: String, replay: bool) -> (usize, usize, Client) {
    let before = live() - body.len();
    let mut client = Client::new(config).expect("valid config");
    client.load(0).expect("load");
    let get = std::iter::from_fn(|| client.poll_output())
        .find_map(|o| match o {
            Output::Http(r) => Some(r),
            _ => None,
        })
        .expect("a GET");
    while client.poll_output().is_some() {}
    reset_peak();
    client.handle_response(0, get.id, HttpResponse::new(200, body));
    let peak = peak() - before;
    let next = std::iter::from_fn(|| client.poll_output()).find_map(|o| match o {
        Output::Http(r) => Some(r),
        _ => None,
    });
    if replay {
        // Sidenet: nothing paused to replay.
        let r = next.expect("the replay's GET");
        client.handle_response(0, r.id, HttpResponse::new(204, ""));
        while client.poll_output().is_some() {}
    }
    (peak, live() - before, client)
}

#[test]
fn a_loaded_neuron_client_keeps_little_more_than_the_parsed_thread() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let text = long_thread(300);

    let before = live();
    let thread = parse_thread_str(&text).expect("a valid thread");
    let parsed = live() - before;
    drop(thread);

    let (_, kept, client) = load_peak(Config::new("https://api.test", "t"), text.clone(), false);
    assert_eq!(client.snapshot().messages.as_slice().len(), 1200);

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

/// A load's peak held the body and the parsed thread, or the thread and the views (what is kept),
/// not all three: with a little room for the snapshot, under the larger of the two.
fn assert_peak(dialect: &str, body: usize, parsed: usize, peak: usize, kept: usize) {
    println!("{dialect}: body {body} B, parsed {parsed} B, peak {peak} B, kept {kept} B");
    let bound = (body + parsed).max(kept) + kept / 10;
    assert!(peak < bound, "{dialect}: peak {peak} B, over {bound} B");
}

/// A load's peak is the body and the parsed thread, or the thread and the views of its
/// messages, never all three at once: the body is dropped once parsed. And the parsed thread
/// holds its strings with escapes and its objects in exactly the room they need, not what
/// growing them one push at a time left (up to twice that).
#[test]
fn a_load_holds_the_body_or_the_views_not_both() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut messages = Vec::new();
    for k in 0..1500 {
        let id = format!("call_{k}");
        messages.push(json!({"role": "user", "content": format!("please run step {k}")}));
        messages.push(
            json!({"role": "assistant", "type": "tool_call", "content": null, "tools": [
            {"callId": id, "name": "write_file", "inputs": {"path": format!("/tmp/{k}")},
             "result": null, "approval": "approved"}]}),
        );
        messages.push(
            json!({"role": "user", "type": "tool_call_result", "content": null, "tools": [
            {"callId": id, "name": "write_file", "inputs": {}, "result": log_excerpt(k)}]}),
        );
        messages.push(json!({"role": "assistant", "content": format!("done: \"{k}\"")}));
    }
    let text = json!({"id": "t", "messages": messages}).to_string();

    let before = live();
    let thread = parse_thread_str(&text).expect("a valid thread");
    let parsed = live() - before;
    // The strings' unescaped text alone is most of the document.
    assert!(
        (parsed as f64) < 1.5 * text.len() as f64,
        "a {} B thread parsed into {parsed} B",
        text.len()
    );
    drop(thread);

    let (peak, kept, client) = load_peak(Config::new("https://api.test", "t"), text.clone(), false);
    assert_eq!(client.snapshot().messages.as_slice().len(), 6000);
    assert_peak("Neuron", text.len(), parsed, peak, kept);
    drop(client);

    // Sidenet: an AI SDK history of tool parts with large outputs.
    let mut history = Vec::new();
    for k in 0..1500 {
        history.push(json!({"id": format!("u{k}"), "role": "user",
            "parts": [{"type": "text", "text": format!("please run step {k}")}]}));
        history.push(json!({"id": format!("a{k}"), "role": "assistant", "parts": [
            {"type": "tool-read_log", "toolCallId": format!("call_{k}"), "state": "output-available",
             "input": {"path": format!("/var/log/{k}.log")}, "output": log_excerpt(k)},
            {"type": "text", "text": "done", "state": "done"}]}));
    }
    let text = json!({"id": "t", "messages": history}).to_string();
    let before = live();
    let tree = toolgate::json::Value::parse(&text).expect("valid JSON");
    let parsed = live() - before;
    drop(tree);
    let (peak, kept, client) =
        load_peak(Config::sidenet("https://api.test", "t"), text.clone(), true);
    assert_eq!(client.snapshot().messages.as_slice().len(), 3000);
    assert_peak("Sidenet", text.len(), parsed, peak, kept);
}
