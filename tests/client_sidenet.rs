//! Scenario tests of the sans-IO client, Sidenet dialect: recorded streams fed in small pieces, a
//! simulated clock, every request asserted, `check_invariants()` after every step.

use serde_json::{json, Value};
use toolgate::approval::Approval;
use toolgate::client::{
    Client, Config, HttpRequest, HttpResponse, MessageView, Method, OpId, Output, Phase, RequestId,
    ToolStatus, Transport, TransportError,
};
use toolgate::decisions::Decision;
use toolgate::error::ErrorCode;
#[path = "support/client.rs"]
mod support;
use support::*;
// In wasm the same tests run under wasm-bindgen-test (scripts/test-browser.sh, headless Chromium).
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const BASE: &str = "https://api.test";
const TID: &str = "thread_42";
const CHAT_URL: &str = "https://api.test/v1/chat";
const THREAD_URL: &str = "https://api.test/v1/threads/thread_42";
const REPLAY_URL: &str = "https://api.test/v1/chat/stream?threadId=thread_42";
const RUN_URL: &str = "https://api.test/v1/agents/agent_1/run";
const KEY: &str = "toolgate:drafts:sidenet:https://api.test:thread_42";
const AGV: &str = "agv_ref_1";

// ----------------------------------------------------------------------------------------------
// Recorded chunks (the shapes www/server/sidenet.mjs sends)

fn start(id: &str) -> Value {
    json!({"type": "start", "messageId": id})
}

fn text(id: &str, deltas: &[&str]) -> Vec<Value> {
    let mut out = vec![json!({"type": "text-start", "id": id})];
    for d in deltas {
        out.push(json!({"type": "text-delta", "id": id, "delta": d}));
    }
    out.push(json!({"type": "text-end", "id": id}));
    out
}

fn tool_in(call: &str, name: &str, input: Value) -> Vec<Value> {
    vec![
        json!({"type": "tool-input-start", "toolCallId": call, "toolName": name}),
        json!({"type": "tool-input-available", "toolCallId": call, "toolName": name, "input": input}),
    ]
}

fn approval(call: &str, name: &str, reason: &str, args: Value) -> Value {
    json!({
        "type": "data-tool-call-approval",
        "id": call,
        "data": {
            "runId": "run_1", "toolCallId": call, "toolName": name, "reason": reason,
            "args": args, "agentVersionId": AGV, "threadId": TID
        }
    })
}

fn approval_a() -> Value {
    approval(
        "call_A",
        "delete_file",
        "Delete the file /tmp/x; this cannot be undone",
        json!({"path": "/tmp/x"}),
    )
}

fn approval_b() -> Value {
    approval(
        "call_B",
        "send_email",
        "Send an email to a@b.c about \"hi\"",
        json!({"to": "a@b.c", "subject": "hi"}),
    )
}

fn finish() -> Vec<Value> {
    vec![
        json!({"type": "finish-step"}),
        json!({"type": "finish", "finishReason": "stop"}),
    ]
}

/// Server-sent events: a keep-alive comment, one `data:` per chunk, then `[DONE]` when `done`.
fn sse(chunks: &[Value], done: bool) -> Vec<u8> {
    let mut out = String::from(": keep-alive\n\n");
    for (i, c) in chunks.iter().enumerate() {
        if i == 3 {
            out.push_str(": keep-alive\n\n");
        }
        out.push_str(&format!("data: {c}\n\n"));
    }
    if done {
        out.push_str("data: [DONE]\n\n");
    }
    out.into_bytes()
}

/// The raw part of a message (its wire form) for a call.
fn raw_part(msg: &MessageView, call: &str) -> Value {
    let raw = sj(&msg.raw);
    let parts = raw["parts"].as_array().expect("parts");
    let part = parts.iter().find(|p| p["toolCallId"] == call);
    part.cloned().expect(call)
}

/// A continuation's answer that settles the paused call (`outcome`) and starts the run's next step.
fn next_step_after(outcome: Value) -> Vec<Value> {
    vec![
        start("msg_a1"),
        outcome,
        json!({"type": "finish-step"}),
        json!({"type": "start-step"}),
    ]
}

fn plain_reply() -> Vec<Value> {
    let mut c = vec![start("msg_a1"), json!({"type": "start-step"})];
    c.extend(text("txt_1", &["Hello", " there", ", how can I help?"]));
    c.extend(finish());
    c
}

/// A new message that pauses on `call_A` (and `call_B` when `two`).
fn pause_stream(two: bool) -> Vec<Value> {
    let mut c = vec![start("msg_a1"), json!({"type": "start-step"})];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    if two {
        c.extend(tool_in(
            "call_B",
            "send_email",
            json!({"to": "a@b.c", "subject": "hi"}),
        ));
    }
    c.push(approval_a());
    if two {
        c.push(approval_b());
    }
    c
}

fn final_text(t: &str) -> Vec<Value> {
    let mut c = vec![
        json!({"type": "finish-step"}),
        json!({"type": "start-step"}),
    ];
    let half = t.len() / 2;
    let (a, b) = t.split_at(half);
    c.extend(text("txt_9", &[a, b]));
    c.extend(finish());
    c
}

fn user_ui(id: &str, t: &str) -> Value {
    json!({"id": id, "role": "user", "parts": [{"type": "text", "text": t}]})
}

fn history(messages: Vec<Value>) -> HttpResponse {
    HttpResponse::new(200, json!({"id": TID, "messages": messages}).to_string())
}

fn paused_history(two: bool) -> Vec<Value> {
    let mut parts = vec![
        json!({"type": "tool-delete_file", "toolCallId": "call_A", "state": "approval-requested", "input": {"path": "/tmp/x"}, "approval": {"id": "call_A"}}),
    ];
    if two {
        parts.push(json!({"type": "tool-send_email", "toolCallId": "call_B", "state": "approval-requested", "input": {"to": "a@b.c", "subject": "hi"}, "approval": {"id": "call_B"}}));
    }
    vec![
        user_ui("msg_u1", "delete /tmp/x"),
        json!({"id": "msg_a1", "role": "assistant", "parts": parts}),
    ]
}

fn replay_stream(two: bool) -> Vec<u8> {
    let mut c = vec![start("msg_a1")];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    if two {
        c.extend(tool_in(
            "call_B",
            "send_email",
            json!({"to": "a@b.c", "subject": "hi"}),
        ));
    }
    c.push(approval_a());
    if two {
        c.push(approval_b());
    }
    sse(&c, true)
}

/// A stream (a replay, or A's continuation's answer) that shows the run waiting on call_B alone.
fn waiting_on_b() -> Vec<u8> {
    let mut c = vec![start("msg_a1")];
    c.extend(tool_in(
        "call_B",
        "send_email",
        json!({"to": "a@b.c", "subject": "hi"}),
    ));
    c.push(approval_b());
    sse(&c, true)
}

/// B's continuation's answer: B ran, and the run finished.
fn b_done_and_finished() -> Vec<u8> {
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_B", "output": "sent"}),
    ];
    c.extend(final_text("all done"));
    sse(&c, true)
}

fn continuation_body(call: &str, approved: bool) -> String {
    format!(
        r#"{{"messages":[],"threadId":"thread_42","agentVersionId":"agv_ref_1","approval":{{"runId":"run_1","toolCallId":"{call}","approved":{approved}}}}}"#
    )
}

fn message_body(t: &str) -> String {
    format!(
        r#"{{"messages":[{{"role":"user","parts":[{{"type":"text","text":"{t}"}}]}}],"threadId":"thread_42"}}"#
    )
}

/// This tab's stored record for run_1: call_A approved.
fn stored_a_approved() -> String {
    json!({"v": 1, "runId": "run_1", "callIds": ["call_A"], "sigs": [1_519_642_284u64], "drafts": {"call_A": "approve"}})
        .to_string()
}

// ----------------------------------------------------------------------------------------------
// Harness

struct H {
    c: Client,
    now: u64,
}

fn config() -> Config {
    let mut c = Config::sidenet(BASE, TID);
    c.token = Some("t0k".to_owned());
    c
}

impl H {
    fn new() -> H {
        H::with(config())
    }

    fn with(config: Config) -> H {
        let c = Client::new(config).expect("valid config");
        c.invariants().expect("invariants");
        H { c, now: 1_000 }
    }

    fn drain(&mut self) -> Vec<Output> {
        self.c.invariants().expect("invariants");
        support::take_unchanged(&mut self.c);
        let mut outs = Vec::new();
        while let Some(o) = self.c.poll_output() {
            outs.push(o);
        }
        let changed = outs.iter().filter(|o| **o == Output::Changed).count();
        assert!(changed <= 1, "more than one Changed in a step: {outs:?}");
        if changed == 1 {
            assert_eq!(
                outs.last(),
                Some(&Output::Changed),
                "Changed must come last"
            );
        }
        check_head_json(&mut self.c);
        outs
    }

    fn load(&mut self) -> (OpId, Vec<Output>) {
        let op = self.c.load(self.now).expect("load");
        (op, self.drain())
    }

    fn send(&mut self, t: &str) -> (OpId, HttpRequest) {
        let op = self.c.send(self.now, t).expect("send");
        let outs = self.drain();
        (op, one_http(&outs))
    }

    fn submit(&mut self) -> (OpId, HttpRequest) {
        let op = self.c.submit(self.now).expect("submit");
        let outs = self.drain();
        (op, one_http(&outs))
    }

    fn respond(&mut self, id: RequestId, resp: HttpResponse) -> Vec<Output> {
        self.c.handle_response(self.now, id, resp);
        self.drain()
    }

    fn fail(&mut self, id: RequestId, err: TransportError) -> Vec<Output> {
        self.c.handle_failure(self.now, id, err);
        self.drain()
    }

    fn open(&mut self, id: RequestId, status: u16) -> Vec<Output> {
        self.c.handle_stream_start(self.now, id, status);
        self.drain()
    }

    /// Feeds `bytes` in pieces of `piece` bytes; returns every output.
    fn feed(&mut self, id: RequestId, bytes: &[u8], piece: usize) -> Vec<Output> {
        let mut all = Vec::new();
        for part in bytes.chunks(piece) {
            self.c.handle_stream_chunk(self.now, id, part);
            all.extend(self.drain());
        }
        all
    }

    fn end(&mut self, id: RequestId) -> Vec<Output> {
        self.c.handle_stream_end(self.now, id);
        self.drain()
    }

    /// A whole stream: 200, the bytes in pieces of 7, the end.
    fn stream(&mut self, id: RequestId, bytes: &[u8]) -> Vec<Output> {
        let mut all = self.open(id, 200);
        all.extend(self.feed(id, bytes, 7));
        all.extend(self.end(id));
        all
    }

    fn at(&mut self, now: u64) -> Vec<Output> {
        self.now = now;
        self.c.handle_timeout(now);
        self.drain()
    }

    fn phase(&self) -> Phase {
        self.c.snapshot().phase
    }

    fn error_code(&self) -> Option<&'static str> {
        self.c.snapshot().error.as_ref().map(|e| e.code)
    }

    fn card_ids(&self) -> Vec<String> {
        self.c
            .snapshot()
            .suspension
            .as_ref()
            .map(|s| s.tools.iter().map(|t| t.call_id.clone()).collect())
            .unwrap_or_default()
    }

    /// A client loaded with a history of `len` user messages (no run to resume). For the tests
    /// that count message views, which exist where the invariant bookkeeping does.
    #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
    fn with_history(len: usize) -> H {
        H::with_messages((0..len).map(|i| user_ui(&format!("m{i}"), "old")).collect())
    }

    /// Loaded with a history of `msgs` and nothing to replay.
    fn with_messages(msgs: Vec<Value>) -> H {
        let mut h = H::new();
        let (_, get) = h.load();
        let get = one_http(&get);
        let outs = h.respond(get.id, history(msgs));
        let replay = one_http(&outs);
        h.respond(replay.id, HttpResponse::new(204, ""));
        h
    }

    /// Paused on call_A alone, approved and submitted: the client, the submission's op and its
    /// continuation.
    fn a_approved_and_submitted() -> (H, OpId, HttpRequest) {
        let mut h = H::paused(false);
        h.c.approve("call_A").expect("approve");
        h.drain();
        let (op, post) = h.submit();
        assert_continuation(&post, "call_A", true);
        (h, op, post)
    }

    /// Paused on call_A and call_B, call_A approved, or rejected with `reason`.
    fn a_decided(approve: bool, reason: &str) -> H {
        let mut h = H::paused(true);
        if approve {
            h.c.approve("call_A").expect("approve");
        } else {
            h.c.reject("call_A", Some(reason)).expect("reject");
        }
        h.drain();
        h
    }

    /// Approves call_A and call_B.
    fn approve_both(&mut self) {
        for id in ["call_A", "call_B"] {
            self.c.approve(id).expect("approve");
            self.drain();
        }
    }

    /// Paused on call_A and call_B, both approved and submitted: the client, the submission's
    /// op and its first continuation (call_A's).
    fn both_approved_and_submitted() -> (H, OpId, HttpRequest) {
        let mut h = H::paused(true);
        h.approve_both();
        let (op, first) = h.submit();
        (h, op, first)
    }

    /// A client that sent "delete /tmp/x" and is paused on call_A (and call_B).
    fn paused(two: bool) -> H {
        let mut h = H::new();
        let (op, post) = h.send("delete /tmp/x");
        assert_send_post(&post, "delete /tmp/x");
        let outs = h.stream(post.id, &sse(&pause_stream(two), true));
        assert_eq!(done(&outs, op), Ok(()));
        assert_eq!(h.phase(), Phase::AwaitingApproval);
        h
    }
}

fn header(r: &HttpRequest, name: &str) -> Option<String> {
    r.headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
}

fn assert_auth(r: &HttpRequest) {
    assert_eq!(header(r, "Authorization").as_deref(), Some("Bearer t0k"));
    assert_eq!(r.timeout_ms, 30_000);
}

fn assert_send_post(r: &HttpRequest, t: &str) {
    assert_eq!(r.method, Method::Post);
    assert_eq!(r.url, CHAT_URL);
    assert!(r.streaming);
    assert_eq!(r.body.as_deref(), Some(message_body(t).as_str()));
    assert_eq!(header(r, "Accept").as_deref(), Some("text/event-stream"));
    assert_eq!(
        header(r, "Content-Type").as_deref(),
        Some("application/json")
    );
    assert_auth(r);
}

fn assert_continuation(r: &HttpRequest, call: &str, approved: bool) {
    assert_eq!(r.method, Method::Post);
    assert_eq!(r.url, CHAT_URL);
    assert!(r.streaming);
    assert_eq!(
        r.body.as_deref(),
        Some(continuation_body(call, approved).as_str())
    );
    assert_eq!(header(r, "Accept").as_deref(), Some("text/event-stream"));
    assert_auth(r);
}

fn assert_history_get(r: &HttpRequest) {
    assert_eq!(r.method, Method::Get);
    assert_eq!(r.url, THREAD_URL);
    assert!(!r.streaming);
    assert_eq!(r.body, None);
    assert_eq!(header(r, "Accept").as_deref(), Some("application/json"));
    assert_eq!(header(r, "Content-Type"), None);
    assert_auth(r);
}

fn assert_replay_get(r: &HttpRequest) {
    assert_eq!(r.method, Method::Get);
    assert_eq!(r.url, REPLAY_URL);
    assert!(r.streaming);
    assert_eq!(r.body, None);
    assert_eq!(header(r, "Accept").as_deref(), Some("text/event-stream"));
    assert_auth(r);
}

// ----------------------------------------------------------------------------------------------
// Streaming a plain reply

#[test]
fn plain_reply_streams_into_the_snapshot() {
    let mut h = H::new();
    assert_eq!(h.phase(), Phase::Idle);
    let (op, post) = h.send("hi");
    assert_send_post(&post, "hi");
    assert_eq!(h.phase(), Phase::Sending);
    assert!(h.c.snapshot().busy);
    assert!(!h.c.snapshot().can_send);
    assert!(h.c.snapshot().streaming.is_none());

    let outs = h.open(post.id, 200);
    no_done(&outs);
    assert_eq!(h.phase(), Phase::Streaming);
    let s = h.c.snapshot();
    assert_eq!(
        s.messages.as_slice().len(),
        1,
        "the user message is appended"
    );
    assert_eq!(s.messages.as_slice()[0].text, "hi");
    assert_eq!(s.messages.as_slice()[0].role.as_deref(), Some("user"));
    assert!(s.streaming.is_some());
    let mv = s.messages_version;

    // (No `[DONE]`: the answer ends when the connection closes.)
    let bytes = sse(&plain_reply(), false);
    let mut seen = Vec::new();
    for part in bytes.chunks(5) {
        h.c.handle_stream_chunk(h.now, post.id, part);
        let outs = h.drain();
        no_done(&outs);
        let s = h.c.snapshot();
        assert_eq!(s.messages_version, mv, "a delta never touches messages");
        assert_eq!(s.phase, Phase::Streaming);
        let t = s.streaming.as_ref().expect("streaming").text.clone();
        if seen.last() != Some(&t) {
            seen.push(t);
        }
    }
    assert!(seen.contains(&"Hello".to_owned()));
    assert!(seen.contains(&"Hello there".to_owned()));
    let s = h.c.snapshot();
    assert_eq!(
        s.streaming.as_ref().expect("streaming").id.as_deref(),
        Some("msg_a1")
    );

    let outs = h.end(post.id);
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert!(s.streaming.is_none());
    assert_eq!(
        s.messages_version,
        mv + 1,
        "the finished message lands once"
    );
    let msgs = s.messages.as_slice();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[1].text, "Hello there, how can I help?");
    assert_eq!(msgs[1].id.as_deref(), Some("msg_a1"));
    assert_eq!(msgs[1].index, 1);
    let raw = sj(&msgs[1].raw);
    assert_eq!(
        raw,
        json!({"id": "msg_a1", "role": "assistant", "parts": [{"type": "text", "text": "Hello there, how can I help?"}]})
    );
    assert!(s.can_send);
    assert!(!s.busy);
    assert!(persists(&outs).is_empty());
}

#[test]
fn a_delta_cut_inside_a_surrogate_pair_keeps_its_text() {
    // A JS server that slices its text by UTF-16 units sends half an emoji per delta, each half
    // escaped alone by JSON.stringify: each reads as U+FFFD, and the reply is kept whole.
    let mut h = H::new();
    let (op, post) = h.send("hi");
    let mut chunks = vec![start("msg_a1")];
    chunks.extend(text("t1", &["Hi ", "!"]));
    chunks.extend(finish());
    let mut body = String::from_utf8(sse(&chunks, true)).expect("utf8");
    // One delta ends with a leading surrogate, the next starts with the trailing one.
    let halves = concat!(
        "data: {\"type\":\"text-delta\",\"id\":\"t1\",\"delta\":\"\\ud83d\"}\n\n",
        "data: {\"type\":\"text-delta\",\"id\":\"t1\",\"delta\":\"\\ude00\"}\n\n",
    );
    let at = body.find(r#"{"delta":"!""#).expect("the last delta") - "data: ".len();
    body.insert_str(at, halves);
    let outs = h.stream(post.id, body.as_bytes());
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert_eq!(s.messages.as_slice()[1].text, "Hi \u{FFFD}\u{FFFD}!");
}

#[test]
fn the_streaming_text_only_grows_while_the_stream_epoch_stays() {
    let mut h = H::new();
    let (_, post) = h.send("hi");
    h.open(post.id, 200);
    let epoch = h.c.stream_epoch();
    let mut last = String::new();
    for part in sse(&plain_reply(), false).chunks(3) {
        h.c.handle_stream_chunk(h.now, post.id, part);
        h.drain();
        assert_eq!(h.c.stream_epoch(), epoch, "one streaming message");
        let s = h.c.snapshot();
        let text = s.streaming.as_ref().expect("streaming").text.clone();
        assert!(text.starts_with(&last), "{text:?} grows from {last:?}");
        last = text;
        // The light head is the head with `streaming.text` left empty.
        let mut head = sj(&s.head());
        head["streaming"]["text"] = json!("");
        assert_eq!(sj(&s.head_without_stream_text()), head);
    }
    assert_eq!(last, "Hello there, how can I help?");
    h.end(post.id);
    assert_eq!(
        sj(&h.c.snapshot().head_without_stream_text())["streaming"],
        Value::Null
    );
    let (_, post) = h.send("again");
    h.open(post.id, 200);
    assert_ne!(
        h.c.stream_epoch(),
        epoch,
        "a new streaming message, a new epoch"
    );
}

// The count of message views built is bookkeeping of the builds that keep invariants.
#[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
#[test]
fn per_delta_work_does_not_depend_on_thread_length() {
    fn run(history_len: usize) -> (u64, u64) {
        let mut h = H::with_history(history_len);
        let (_, post) = h.send("hi");
        h.open(post.id, 200);
        h.feed(
            post.id,
            &sse(
                &[start("msg_x"), json!({"type": "text-start", "id": "t"})],
                false,
            ),
            1000,
        );
        let touched = h.c.messages_touched();
        let mv = h.c.snapshot().messages_version;
        for i in 0..50 {
            let delta = json!({"type": "text-delta", "id": "t", "delta": format!("w{i} ")});
            let v = h.c.version();
            h.feed(post.id, &sse(&[delta], false)[14..], 1000);
            assert!(h.c.version() > v, "each delta is a change");
            assert_eq!(h.c.snapshot().messages_version, mv);
        }
        (h.c.messages_touched() - touched, mv)
    }
    let (short, _) = run(1);
    let (long, _) = run(300);
    assert_eq!(short, 0, "no message view is built or copied per delta");
    assert_eq!(long, 0, "no message view is built or copied per delta");
}

impl H {
    /// A turn: "hi", answered with a streamed "hello" that completes the run.
    fn hello_turn(&mut self) {
        let (_, post) = self.send("hi");
        let mut chunks = vec![
            start("msg_x"),
            json!({"type": "text-start", "id": "t"}),
            json!({"type": "text-delta", "id": "t", "delta": "hello"}),
            json!({"type": "text-end", "id": "t"}),
        ];
        chunks.extend(finish());
        self.stream(post.id, &sse(&chunks, true));
    }
}

// A turn (the user's message, then the streamed reply committed) builds its own views only: the
// settled history is edited in place, not copied, however long it is.
#[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
#[test]
fn a_turn_does_not_copy_the_history() {
    fn run(history_len: usize) -> u64 {
        let mut h = H::with_history(history_len);
        let touched = h.c.messages_touched();
        let mv = h.c.snapshot().messages_version;
        h.hello_turn();
        let s = h.c.snapshot();
        assert_eq!(s.messages.as_slice().len(), history_len + 2);
        assert!(s.messages_version > mv, "the new messages show");
        assert_eq!(s.phase, Phase::Completed);
        h.c.messages_touched() - touched
    }
    let short = run(1);
    let long = run(300);
    assert!(short <= 4, "a turn builds a few views ({short})");
    assert_eq!(long, short, "and none more for a longer history");
}

#[test]
fn a_turn_converts_its_own_messages_alone() {
    // What a driver converting the views for its UI converts over a turn: the same after a
    // long history as after a short one.
    fn run(history_len: usize) -> usize {
        let mut h = H::with_history(history_len);
        convert(&mut h.c);
        let before = converted();
        h.hello_turn();
        assert_eq!(h.c.snapshot().messages.as_slice().len(), history_len + 2);
        convert(&mut h.c);
        converted() - before
    }
    let short = run(1);
    let long = run(300);
    assert!(
        (2..=4).contains(&short),
        "a turn converts its messages ({short})"
    );
    assert_eq!(long, short, "and none more after a longer history");
}

// ----------------------------------------------------------------------------------------------
// The approval card

#[test]
fn a_pause_shows_the_card_in_the_neuron_shape_plus_run_and_version() {
    let h = H::paused(false);
    let s = h.c.snapshot();
    assert!(!s.can_send);
    assert!(!s.can_submit);
    assert!(s.streaming.is_none());
    let susp = s.suspension.as_ref().expect("suspension");
    assert_eq!(susp.run_id.as_deref(), Some("run_1"));
    assert_eq!(susp.agent_version_id.as_deref(), Some(AGV));
    assert_eq!(susp.message_id.as_deref(), Some("msg_a1"));
    assert_eq!(susp.undecided, vec!["call_A"]);
    assert!(!susp.complete);
    let card = &susp.tools[0];
    let j = sj(&card);
    assert_eq!(
        j,
        json!({
            "callId": "call_A", "name": "delete_file", "description": null,
            "inputs": {"path": "/tmp/x"}, "approval": "pending",
            "approvalReason": "Delete the file /tmp/x; this cannot be undone",
            "rejectReason": null, "draft": false, "serverApproval": "pending",
            "serverRejectReason": null, "runId": "run_1", "agentVersionId": AGV
        })
    );
    // The assistant message shows the tool pending.
    let msgs = s.messages.as_slice();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[1].tools[0].status, ToolStatus::Pending);
    assert_eq!(msgs[1].tools[0].name, "delete_file");
    let raw = sj(&msgs[1].raw);
    assert_eq!(raw["parts"][0]["state"], "approval-requested");
    assert_eq!(raw["parts"][0]["type"], "tool-delete_file");
}

#[test]
fn approve_sends_the_exact_continuation_and_the_reply_streams_on() {
    let mut h = H::paused(false);
    let op0 = h.c.approve("call_A").expect("approve");
    assert_eq!(op0, None);
    let outs = h.drain();
    let stored = persists(&outs);
    assert_eq!(stored.len(), 1);
    let stored: Value = serde_json::from_str(stored[0].as_deref().expect("stored")).expect("json");
    assert_eq!(
        stored,
        json!({"v": 1, "runId": "run_1", "callIds": ["call_A"], "sigs": [1_519_642_284u64], "drafts": {"call_A": "approve"}})
    );
    assert!(h.c.snapshot().can_submit);
    let (op, post) = h.submit();
    assert_continuation(&post, "call_A", true);
    assert_eq!(h.phase(), Phase::Submitting);

    h.open(post.id, 200);
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
    ];
    c.extend(final_text("delete_file /tmp/x: done."));
    let bytes = sse(&c, false);
    let outs = h.feed(post.id, &bytes, 9);
    no_done(&outs);
    assert_eq!(h.phase(), Phase::Streaming);
    let s = h.c.snapshot();
    // The paused message went back to streaming; it goes on from there.
    assert_eq!(s.messages.as_slice().len(), 1);
    let st = s.streaming.as_ref().expect("streaming");
    assert_eq!(st.id.as_deref(), Some("msg_a1"));
    assert_eq!(st.tools[0].status, ToolStatus::Done);

    let outs = h.end(post.id);
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(persists(&outs), vec![None]);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert!(s.suspension.is_none());
    assert!(s.can_send);
    let msgs = s.messages.as_slice();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[1].text, "delete_file /tmp/x: done.");
    assert_eq!(msgs[1].tools[0].status, ToolStatus::Done);
    assert_eq!(
        msgs[1].tools[0].approval,
        Some(toolgate::approval::Approval::Approved)
    );
    assert_eq!(
        msgs[1].tools[0].result.as_ref().map(sj),
        Some(json!("Deleted /tmp/x"))
    );
    let last = s.last_submission.as_ref().expect("last submission");
    assert_eq!(last.call_ids, vec!["call_A"]);
    assert_eq!(last.status, Phase::Completed);
}

#[test]
fn decline_is_sent_as_approved_false_the_reason_is_kept_and_the_reply_continues() {
    let mut h = H::paused(false);
    h.c.reject("call_A", Some("Keep that file"))
        .expect("reject");
    h.drain();
    let card = &h.c.snapshot().suspension.as_ref().expect("s").tools[0];
    assert_eq!(card.reject_reason.as_deref(), Some("Keep that file"));
    let (op, post) = h.submit();
    assert_continuation(&post, "call_A", false);
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-denied", "toolCallId": "call_A"}),
    ];
    c.extend(final_text("delete_file /tmp/x: declined."));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed, "a decline never stalls the run");
    let tool = &s.messages.as_slice()[1].tools[0];
    assert_eq!(tool.status, ToolStatus::Denied);
    assert_eq!(tool.approval, Some(toolgate::approval::Approval::Rejected));
    assert_eq!(tool.reject_reason.as_deref(), Some("Keep that file"));
    assert_eq!(
        s.messages.as_slice()[1].text,
        "delete_file /tmp/x: declined."
    );
    let raw = sj(&s.messages.as_slice()[1].raw);
    assert_eq!(raw["parts"][0]["state"], "output-denied");
    assert_eq!(raw["parts"][0]["approval"]["approved"], false);

    // The reason survives a reload of the history (the protocol carries none).
    let recorded = vec![
        user_ui("msg_u1", "delete /tmp/x"),
        json!({"id": "msg_a1", "role": "assistant", "parts": [
            {"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-denied", "input": {"path": "/tmp/x"},
             "approval": {"id": "call_A", "approved": false, "reason": "Delete the file /tmp/x; this cannot be undone"}},
            {"type": "text", "text": "delete_file /tmp/x: declined."}
        ]}),
    ];
    let reload = |h: &mut H| {
        let (_, outs) = h.load();
        let get = one_http(&outs);
        assert_history_get(&get);
        let outs = h.respond(get.id, history(recorded.clone()));
        let replay = one_http(&outs);
        assert_replay_get(&replay);
        h.respond(replay.id, HttpResponse::new(204, ""));
    };
    reload(&mut h);
    let s = h.c.snapshot();
    let tool = &s.messages.as_slice()[1].tools[0];
    assert_eq!(tool.status, ToolStatus::Denied);
    assert_eq!(tool.reject_reason.as_deref(), Some("Keep that file"));
    assert_eq!(
        tool.approval_reason.as_deref(),
        Some("Delete the file /tmp/x; this cannot be undone")
    );
    assert_eq!(s.phase, Phase::Completed);
    // The load found the finished run the submission completed: it stays in the snapshot.
    assert_eq!(
        s.last_submission
            .as_ref()
            .map(|l| (l.call_ids.clone(), l.status)),
        Some((vec!["call_A".to_owned()], Phase::Completed))
    );

    // The same history read again: every view is kept (the tool's reason included), so a
    // driver converts none of them.
    convert(&mut h.c);
    let before = converted();
    reload(&mut h);
    convert(&mut h.c);
    assert_eq!(
        converted() - before,
        0,
        "a reload of the same history converts nothing"
    );
    let tool = &h.c.snapshot().messages.as_slice()[1].tools[0];
    assert_eq!(tool.reject_reason.as_deref(), Some("Keep that file"));
}

#[test]
fn two_gated_calls_are_answered_one_continuation_at_a_time_in_order() {
    let mut h = H::paused(true);
    assert_eq!(h.card_ids(), vec!["call_A", "call_B"]);
    h.c.approve("call_A").expect("approve");
    h.drain();
    h.c.reject("call_B", None).expect("reject");
    h.drain();
    let (op, first) = h.submit();
    assert_continuation(&first, "call_A", true);

    // The first continuation's stream: A's output, then B announced again.
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        approval_b(),
    ];
    let bytes = sse(&c, false);
    let mut outs = h.open(first.id, 200);
    outs.extend(h.feed(first.id, &bytes, 11));
    no_http(&outs);
    no_done(&outs);
    // Only once the first stream ended does the second go out.
    let outs = h.end(first.id);
    no_done(&outs);
    let second = one_http(&outs);
    assert_continuation(&second, "call_B", false);
    assert_eq!(h.phase(), Phase::Submitting);
    assert_eq!(h.card_ids(), vec!["call_B"], "B's card stays");
    assert!(h.c.snapshot().decisions.get("call_B").is_some());

    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-denied", "toolCallId": "call_B"}),
    ];
    c.extend(final_text("done and declined"));
    let outs = h.stream(second.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    let tools = &s.messages.as_slice()[1].tools;
    assert_eq!(tools[0].status, ToolStatus::Done);
    assert_eq!(tools[1].status, ToolStatus::Denied);
    assert_eq!(
        s.last_submission.as_ref().expect("last").call_ids,
        vec!["call_A", "call_B"]
    );
}

/// Once the server took a continuation (its 2xx reply streams), the stored record lists that call
/// as settled, out of its signature: a reload or `free()` while the reply streams (the tool
/// running, the model talking) finds the pause showing the others alone, and restores their
/// drafts. The record's signature covered the answered call until the stream ended, so it no
/// longer fit, and the other decisions were lost (the cards pending again, undecided). Another
/// tab, which still shows that call, reads the same pause: it takes the drafts in and does not
/// load the run mid-reply.
#[test]
fn the_record_settles_a_call_the_server_took_as_its_reply_opens() {
    let mut h = H::paused(true);
    h.c.approve("call_A").expect("approve");
    h.drain();
    h.c.reject("call_B", Some("no")).expect("reject");
    h.drain();
    let (_, first) = h.submit();
    assert_continuation(&first, "call_A", true);
    let outs = h.open(first.id, 200);
    let record = written(&outs).expect("the record, call_A settled");
    let v: Value = serde_json::from_str(&record).expect("json");
    assert_eq!(v["callIds"], json!(["call_A", "call_B"]), "{record}");
    assert_eq!(v["settled"], json!(["call_A"]), "{record}");

    // Another tab on the pause takes it in, and loads nothing while the reply streams.
    let mut other = H::loaded_paused();
    let outs = other.tab_wrote(&record);
    no_http(&outs);
    assert_eq!(persists(&outs), vec![]);
    assert_eq!(
        other.c.snapshot().decisions.get("call_B"),
        Some(&Decision::Reject(Some("no".into())))
    );

    // The page reloads mid-reply: the new client shows the pause with call_B alone.
    let mut r = H::new();
    r.c.restore_drafts(&record);
    r.drain();
    let (_, get) = r.load();
    let get = one_http(&get);
    let mut parts = paused_history(true);
    parts[1]["parts"][0]["state"] = json!("approval-responded");
    parts[1]["parts"][0]["approval"] = json!({"id": "call_A", "approved": true});
    let outs = r.respond(get.id, history(parts));
    let replay = one_http(&outs);
    let mut c = vec![start("msg_a1")];
    c.extend(tool_in(
        "call_B",
        "send_email",
        json!({"to": "a@b.c", "subject": "hi"}),
    ));
    c.push(approval_b());
    r.stream(replay.id, &sse(&c, true));
    assert_eq!(r.card_ids(), vec!["call_B"]);
    assert_eq!(
        r.c.snapshot().decisions.get("call_B"),
        Some(&Decision::Reject(Some("no".into())))
    );
}

#[test]
fn deciding_one_of_two_leaves_the_other_card() {
    let mut h = H::paused(true);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op, post) = h.submit();
    assert_continuation(&post, "call_A", true);
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        approval_b(),
    ];
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    no_http(&outs);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(h.card_ids(), vec!["call_B"]);
    let last = s.last_submission.as_ref().expect("last");
    assert_eq!(last.status, Phase::AwaitingApproval);
    assert_eq!(last.still_pending[0].call_id, "call_B");
    assert!(last.not_applied.is_empty());
    assert_eq!(err_code(h.c.send(h.now, "next")), ErrorCode::InputLocked);
}

#[test]
fn replayed_duplicate_chunks_are_deduplicated_by_tool_call_id() {
    let mut h = H::new();
    let (op, post) = h.send("delete /tmp/x");
    let mut c = pause_stream(false);
    c.push(approval_a());
    c.push(
        json!({"type": "tool-approval-request", "approvalId": "call_A", "toolCallId": "call_A"}),
    );
    // Mastra's extra fields are tolerated.
    c.push(json!({"type": "data-tool-call-approval", "id": "part_1", "data": {
        "runId": "run_1", "toolCallId": "call_A", "toolName": "delete_file", "args": {"path": "/tmp/x"},
        "state": "suspended", "resumeSchema": "{\"type\":\"object\"}"}}));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.card_ids(), vec!["call_A"]);
    let card = &h.c.snapshot().suspension.as_ref().expect("s").tools[0];
    assert_eq!(
        card.approval_reason.as_deref(),
        Some("Delete the file /tmp/x; this cannot be undone")
    );
    assert_eq!(h.c.snapshot().messages.as_slice()[1].tools.len(), 1);
}

#[test]
fn the_ai_sdk_form_gives_the_same_card() {
    let mut h = H::new();
    let (op, post) = h.send("delete /tmp/x");
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "data-run", "data": {"runId": "run_1", "agentVersionId": AGV, "threadId": TID}}),
        json!({"type": "start-step"}),
    ];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    c.push(
        json!({"type": "tool-approval-request", "approvalId": "call_A", "toolCallId": "call_A"}),
    );
    c.push(json!({"type": "finish-step"}));
    c.push(json!({"type": "finish", "finishReason": "tool-calls"}));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    let card = &s.suspension.as_ref().expect("s").tools[0];
    assert_eq!(card.call_id, "call_A");
    assert_eq!(card.name, "delete_file");
    assert_eq!(sj(&card.inputs), json!({"path": "/tmp/x"}));
    assert_eq!(card.run_id.as_deref(), Some("run_1"));
    assert_eq!(card.agent_version_id.as_deref(), Some(AGV));
    assert_eq!(card.approval_reason, None);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (_, post) = h.submit();
    assert_continuation(&post, "call_A", true);
}

// ----------------------------------------------------------------------------------------------
// Reconnect

#[test]
fn a_stream_dropped_mid_pause_is_recovered_by_replay() {
    let mut h = H::new();
    let (op, post) = h.send("delete /tmp/x");
    h.open(post.id, 200);
    // The approval chunk arrives, then the connection drops before [DONE].
    h.feed(post.id, &sse(&pause_stream(false), false), 13);
    let outs = h.fail(post.id, TransportError::Network("reset".into()));
    no_done(&outs);
    let get = one_http(&outs);
    assert_history_get(&get);
    // (The send is not over: the reload tells whether the message landed.)
    assert_eq!(h.phase(), Phase::Sending);
    let outs = h.respond(get.id, history(paused_history(false)));
    let replay = one_http(&outs);
    assert_replay_get(&replay);
    let outs = h.stream(replay.id, &replay_stream(false));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    assert_eq!(h.card_ids(), vec!["call_A"]);
    assert_eq!(h.c.snapshot().messages.as_slice().len(), 2);
}

/// The `sigs` of the calls of `pause_stream(true)`.
const SIGS_AB: [u64; 2] = [1_519_642_284, 623_876_208];

#[test]
fn a_new_client_loads_history_and_gets_the_cards_and_drafts_back() {
    let stored = json!({"v": 1, "runId": "run_1", "callIds": ["call_A", "call_B"], "sigs": SIGS_AB, "drafts": {"call_B": ["reject", "no mail"]}}).to_string();
    let mut h = H::new();
    h.c.restore_drafts(&stored);
    h.drain();
    let (op, outs) = h.load();
    let get = one_http(&outs);
    assert_history_get(&get);
    assert_eq!(h.phase(), Phase::Loading);
    let outs = h.respond(get.id, history(paused_history(true)));
    let replay = one_http(&outs);
    assert_replay_get(&replay);
    let outs = h.stream(replay.id, &replay_stream(true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(h.card_ids(), vec!["call_A", "call_B"]);
    assert_eq!(s.suspension.as_ref().expect("s").undecided, vec!["call_A"]);
    assert_eq!(
        s.decisions.get("call_B"),
        Some(&toolgate::decisions::Decision::Reject(Some(
            "no mail".into()
        )))
    );
    assert!(s.loaded);
    assert_eq!(
        s.messages.as_slice()[1].tools[1].status,
        ToolStatus::Pending
    );
}

#[test]
fn stored_drafts_of_other_calls_under_the_same_ids_are_not_restored() {
    // The stored signature is of the calls the drafts were made on (tool names and inputs): a
    // pause whose calls differ under the same run and callIds gets none of them.
    let run = |stored: &str| {
        let mut h = H::new();
        h.c.restore_drafts(stored);
        h.drain();
        let (_, outs) = h.load();
        let get = one_http(&outs);
        let outs = h.respond(get.id, history(paused_history(true)));
        let replay = one_http(&outs);
        let outs = h.stream(replay.id, &replay_stream(true));
        (h.c.snapshot().decisions.len(), persists(&outs))
    };
    let good = json!({"v": 1, "runId": "run_1", "callIds": ["call_A", "call_B"], "sigs": SIGS_AB, "drafts": {"call_B": "approve"}});
    assert_eq!(run(&good.to_string()).0, 1);
    // call_B's signature another call's: its draft is not restored, nor call_A's (the record is
    // of another pause).
    let mut other = good.clone();
    other["sigs"][1] = json!(1);
    other["drafts"]["call_A"] = json!("approve");
    assert_eq!(run(&other.to_string()).0, 0);
    // Records of earlier formats: no signature, or one of the whole pause.
    let mut legacy = good.clone();
    legacy.as_object_mut().expect("object").remove("sigs");
    assert_eq!(run(&legacy.to_string()).0, 0);
    legacy["sig"] = json!(2_143_518_492u64);
    assert_eq!(run(&legacy.to_string()).0, 0);
}

#[test]
fn stored_drafts_come_back_when_the_pause_lists_its_calls_in_another_order() {
    // The signature is of the calls, not of their order: a replay (and the history) listing B
    // before A gives the drafts back all the same.
    let run = |stored: &str, reversed: bool| {
        let mut h = H::new();
        h.c.restore_drafts(stored);
        h.drain();
        let (_, outs) = h.load();
        let get = one_http(&outs);
        let mut messages = paused_history(true);
        let mut stream = vec![start("msg_a1")];
        let mut calls = vec![
            (
                tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})),
                approval_a(),
            ),
            (
                tool_in(
                    "call_B",
                    "send_email",
                    json!({"to": "a@b.c", "subject": "hi"}),
                ),
                approval_b(),
            ),
        ];
        if reversed {
            let parts = messages[1]["parts"].as_array_mut().expect("parts");
            parts.reverse();
            calls.reverse();
        }
        for (input, _) in &calls {
            stream.extend(input.iter().cloned());
        }
        stream.extend(calls.into_iter().map(|(_, a)| a));
        let outs = h.respond(get.id, history(messages));
        let replay = one_http(&outs);
        let outs = h.stream(replay.id, &sse(&stream, true));
        (
            h.card_ids(),
            h.c.snapshot().decisions.len(),
            persists(&outs),
        )
    };
    let record = json!({"v": 1, "runId": "run_1", "callIds": ["call_A", "call_B"], "sigs": SIGS_AB,
        "drafts": {"call_A": "approve", "call_B": ["reject", "no mail"]}});
    let (cards, n, _) = run(&record.to_string(), false);
    assert_eq!(cards, vec!["call_A", "call_B"]);
    assert_eq!(n, 2);
    let (cards, n, _) = run(&record.to_string(), true);
    assert_eq!(cards, vec!["call_B", "call_A"]);
    assert_eq!(n, 2, "both drafts restored");
}

#[test]
fn a_204_after_the_grace_window_is_expired_and_the_composer_unlocked() {
    let (mut h, op, get) = H::restored_loading(&stored_a_approved());
    let abandoned = vec![
        user_ui("msg_u1", "delete /tmp/x"),
        json!({"id": "msg_a1", "role": "assistant", "parts": [
            {"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-error", "input": {"path": "/tmp/x"},
             "errorText": "Run abandoned: no approval decision arrived within the grace window", "approval": {"id": "call_A"}}
        ]}),
    ];
    let outs = h.respond(get.id, history(abandoned.clone()));
    let replay = one_http(&outs);
    h.c.handle_stream_start(h.now, replay.id, 204);
    h.drain();
    let outs = h.end(replay.id);
    no_done(&outs);
    assert_ne!(h.phase(), Phase::Expired, "not before the second reading");
    let outs = read_again(&mut h, &outs, abandoned);
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(persists(&outs), vec![None], "the stale drafts are cleared");
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Expired);
    assert!(s.can_send);
    assert!(s.suspension.is_none());
    assert_eq!(s.messages.as_slice().len(), 2, "the thread is intact");
    assert_eq!(s.messages.as_slice()[1].tools[0].status, ToolStatus::Error);
    assert_eq!(h.error_code(), Some("expired"));
    // The user simply asks again.
    let (_, post) = h.send("delete /tmp/x");
    assert_send_post(&post, "delete /tmp/x");
}

#[test]
fn a_204_with_nothing_expected_is_idle() {
    let mut h = H::new();
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let outs = h.respond(get.id, HttpResponse::new(404, r#"{"error":"no thread"}"#));
    let replay = one_http(&outs);
    assert_replay_get(&replay);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Idle);
    assert!(s.messages.as_slice().is_empty());
    assert!(s.error.is_none());
}

#[test]
fn a_dropped_stream_of_a_finished_run_is_completed_not_expired() {
    let mut h = H::new();
    let (op, post) = h.send("hi");
    h.open(post.id, 200);
    h.feed(post.id, &sse(&plain_reply()[..4], false), 7);
    let outs = h.fail(post.id, TransportError::Network("reset".into()));
    let get = one_http(&outs);
    let outs = h.respond(
        get.id,
        history(vec![
            user_ui("msg_u1", "hi"),
            json!({"id": "msg_a1", "role": "assistant", "parts": [{"type": "text", "text": "Hello there"}]}),
        ]),
    );
    let replay = one_http(&outs);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::Completed);
    assert_eq!(h.c.snapshot().messages.as_slice()[1].text, "Hello there");
}

#[test]
fn replay_retries_with_backoff() {
    let mut h = H::new();
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let outs = h.fail(get.id, TransportError::Timeout);
    no_http(&outs);
    assert_eq!(h.c.poll_timeout(), Some(1_300));
    let outs = h.at(1_300);
    let get = one_http(&outs);
    assert_history_get(&get);
    let outs = h.respond(get.id, history(paused_history(false)));
    let replay = one_http(&outs);
    let outs = h.respond(replay.id, HttpResponse::new(503, ""));
    no_http(&outs);
    let outs = h.at(1_600);
    let replay = one_http(&outs);
    assert_replay_get(&replay);
    let outs = h.stream(replay.id, &replay_stream(false));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::AwaitingApproval);
}

// ----------------------------------------------------------------------------------------------
// Auth and errors

#[test]
fn a_401_is_unauthorized() {
    let mut h = H::new();
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let outs = h.respond(
        get.id,
        HttpResponse::new(401, r#"{"error":"Missing or invalid bearer token"}"#),
    );
    assert_eq!(done(&outs, op), Err(ErrorCode::Unauthorized));
    assert_eq!(h.phase(), Phase::Error);
    assert_eq!(h.error_code(), Some("unauthorized"));

    // On a stream: the body is buffered and handled at the end.
    let (op, post) = h.send("hi");
    h.open(post.id, 401);
    h.feed(
        post.id,
        br#"{"error":"Missing or invalid bearer token"}"#,
        4,
    );
    let outs = h.end(post.id);
    assert_eq!(done(&outs, op), Err(ErrorCode::Unauthorized));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Error);
    assert_eq!(s.unsent_text.as_deref(), Some("hi"));
    assert_eq!(
        s.error.as_ref().expect("e").message,
        "Missing or invalid bearer token"
    );
    assert!(s.messages.as_slice().is_empty(), "nothing appended");
}

#[test]
fn an_error_chunk_is_a_stream_error() {
    let mut h = H::new();
    let (op, post) = h.send("hi");
    let c = vec![
        start("msg_a1"),
        json!({"type": "text-start", "id": "t"}),
        json!({"type": "text-delta", "id": "t", "delta": "Hel"}),
        json!({"type": "error", "errorText": "model overloaded"}),
    ];
    let outs = h.stream(post.id, &sse(&c, false));
    assert_eq!(done(&outs, op), Err(ErrorCode::StreamError));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Error);
    assert_eq!(s.messages.as_slice()[1].text, "Hel");
    assert!(s.can_send);
}

/// An `error` chunk after the approval chunks: the pause stands (its cards can be answered) and
/// the error is shown beside them, not dropped.
#[test]
fn an_error_chunk_after_a_pause_is_shown_with_its_cards() {
    let mut h = H::new();
    let (op, post) = h.send("delete it");
    let mut c = pause_stream(true);
    c.push(json!({"type": "error", "errorText": "trace upload failed"}));
    let outs = h.stream(post.id, &sse(&c, false));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    let e = s.error.as_ref().expect("the error chunk is shown");
    assert_eq!(
        (e.code, e.message.as_str()),
        ("stream_error", "trace upload failed")
    );
    assert_eq!(h.card_ids(), vec!["call_A", "call_B"]);
    assert!(!s.can_send);
}

#[test]
fn a_409_on_a_new_message_reloads_and_keeps_the_text() {
    let mut h = H::new();
    let (op, post) = h.send("hello");
    h.open(post.id, 409);
    h.feed(
        post.id,
        br#"{"error":"run awaiting approval","code":"run_paused"}"#,
        10,
    );
    let outs = h.end(post.id);
    no_done(&outs);
    assert_eq!(h.phase(), Phase::Conflict);
    let get = one_http(&outs);
    assert_history_get(&get);
    let outs = h.respond(get.id, history(paused_history(false)));
    let replay = one_http(&outs);
    let outs = h.stream(replay.id, &replay_stream(false));
    assert_eq!(done(&outs, op), Err(ErrorCode::Conflict));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(s.unsent_text.as_deref(), Some("hello"));
    assert_eq!(h.error_code(), Some("conflict"));
}

/// A 409 on a message that landed all the same (a browser's silent re-send of a POST the server
/// had applied): the reload shows the text, and the send is done without an error.
#[test]
fn a_409_on_a_message_that_landed_is_the_send_done() {
    let mut h = H::new();
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let outs = h.respond(get.id, history(vec![]));
    let replay = one_http(&outs);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    assert_eq!(done(&outs, op), Ok(()));

    let (op, post) = h.send("delete /tmp/x");
    h.open(post.id, 409);
    h.feed(
        post.id,
        br#"{"error":"run awaiting approval","code":"run_paused"}"#,
        10,
    );
    let outs = h.end(post.id);
    assert_eq!(h.phase(), Phase::Conflict);
    let get = one_http(&outs);
    // The history ends with the message, and its run paused.
    let outs = h.respond(get.id, history(paused_history(false)));
    let replay = one_http(&outs);
    let outs = h.stream(replay.id, &replay_stream(false));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(s.unsent_text, None);
    assert_eq!(h.error_code(), None);
}

#[test]
fn a_failed_message_post_is_not_retried_but_checked_against_history() {
    let mut h = H::new();
    let (op, post) = h.send("hello");
    let outs = h.fail(post.id, TransportError::Network("offline".into()));
    let get = one_http(&outs);
    assert_history_get(&get);
    assert_eq!(h.phase(), Phase::Sending);
    let outs = h.respond(get.id, history(vec![]));
    let replay = one_http(&outs);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    assert_eq!(done(&outs, op), Err(ErrorCode::Network));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Error);
    assert_eq!(s.unsent_text.as_deref(), Some("hello"));

    // Landed this time: the history shows it.
    let (op, post) = h.send("hello");
    let outs = h.respond(post.id, HttpResponse::new(502, ""));
    let get = one_http(&outs);
    let outs = h.respond(
        get.id,
        history(vec![
            user_ui("u1", "hello"),
            json!({"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "Hi!"}]}),
        ]),
    );
    let replay = one_http(&outs);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::Completed);
    assert_eq!(h.c.snapshot().unsent_text, None);
}

// ----------------------------------------------------------------------------------------------
// Conflicts and lost answers

#[test]
fn a_409_on_a_continuation_reconciles_still_pending_keeps_the_draft() {
    let mut h = H::paused(false);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op, post) = h.submit();
    h.open(post.id, 409);
    h.feed(
        post.id,
        br#"{"error":"agentVersionId mismatch","code":"agent_version_mismatch"}"#,
        8,
    );
    let outs = h.end(post.id);
    no_done(&outs);
    assert_eq!(h.phase(), Phase::Conflict);
    let get = one_http(&outs);
    assert_history_get(&get);
    let outs = h.respond(get.id, history(paused_history(false)));
    let replay = one_http(&outs);
    let outs = h.stream(replay.id, &replay_stream(false));
    assert_eq!(done(&outs, op), Err(ErrorCode::Conflict));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Error);
    assert_eq!(
        s.decisions.get("call_A"),
        Some(&toolgate::decisions::Decision::Approve)
    );
    assert_eq!(h.card_ids(), vec!["call_A"]);
}

#[test]
fn a_409_on_a_continuation_decided_otherwise_drops_the_draft() {
    let mut h = H::paused(false);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op, post) = h.submit();
    let outs = h.respond(
        post.id,
        HttpResponse::new(409, r#"{"error":"not pending"}"#),
    );
    let get = one_http(&outs);
    let outs = h.respond(
        get.id,
        history(vec![
            user_ui("msg_u1", "delete /tmp/x"),
            json!({"id": "msg_a1", "role": "assistant", "parts": [
                {"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-denied", "input": {"path": "/tmp/x"},
                 "approval": {"id": "call_A", "approved": false}},
                {"type": "text", "text": "declined elsewhere"}
            ]}),
        ]),
    );
    let replay = one_http(&outs);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    assert_eq!(done(&outs, op), Err(ErrorCode::Conflict));
    let s = h.c.snapshot();
    assert_eq!(s.dropped_drafts, vec!["call_A"]);
    assert_eq!(s.phase, Phase::Completed);
    assert!(s.suspension.is_none());
}

#[test]
fn a_lost_continuation_answer_is_retried_once_and_reconciled_never_duplicated() {
    let mut h = H::paused(false);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op, post) = h.submit();
    // The server applied it, but the answer was lost.
    let outs = h.fail(post.id, TransportError::Timeout);
    no_http(&outs);
    assert_eq!(h.phase(), Phase::Submitting);
    let due = h.c.poll_timeout().expect("retry timer");
    let outs = h.at(due);
    let retry = one_http(&outs);
    assert_continuation(&retry, "call_A", true);
    assert_ne!(retry.id, post.id);
    // The identical re-send: already answered.
    let outs = h.respond(
        retry.id,
        HttpResponse::new(409, r#"{"error":"Tool call call_A is not awaiting approval","code":"tool_call_not_pending"}"#),
    );
    let get = one_http(&outs);
    assert_history_get(&get);
    let outs = h.respond(
        get.id,
        history(vec![
            user_ui("msg_u1", "delete /tmp/x"),
            json!({"id": "msg_a1", "role": "assistant", "parts": [
                {"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available", "input": {"path": "/tmp/x"},
                 "output": "Deleted /tmp/x", "approval": {"id": "call_A", "approved": true}},
                {"type": "text", "text": "delete_file /tmp/x: done."}
            ]}),
        ]),
    );
    let replay = one_http(&outs);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    no_http(&outs);
    assert_eq!(done(&outs, op), Ok(()), "acknowledged");
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert!(s.dropped_drafts.is_empty());
    assert!(s.error.is_none());
}

#[test]
fn a_continuation_stream_dropped_after_2xx_is_never_resent() {
    let (mut h, op, first) = H::both_approved_and_submitted();
    assert_continuation(&first, "call_A", true);
    h.open(first.id, 200);
    h.feed(first.id, &sse(&[start("msg_a1")], false), 5);
    let outs = h.fail(first.id, TransportError::Network("reset".into()));
    // Not re-sent: recover instead.
    let get = one_http(&outs);
    assert_history_get(&get);
    let mut hist = paused_history(true);
    hist[1]["parts"][0] = json!({"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available",
        "input": {"path": "/tmp/x"}, "output": "Deleted /tmp/x", "approval": {"id": "call_A", "approved": true}});
    let outs = h.respond(get.id, history(hist));
    let replay = one_http(&outs);
    let outs = h.stream(replay.id, &waiting_on_b());
    // Then B, which is still pending.
    let second = one_http(&outs);
    assert_continuation(&second, "call_B", true);
    let outs = h.stream(second.id, &b_done_and_finished());
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::Completed);
}

// ----------------------------------------------------------------------------------------------
// rejectAllAndSend, autoSubmit, abort

#[test]
fn reject_all_and_send_rejects_one_at_a_time_then_sends() {
    let mut h = H::paused(true);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let op =
        h.c.reject_all_and_send(h.now, "never mind", Some("changed my mind"))
            .expect("rejectAllAndSend");
    let outs = h.drain();
    let first = one_http(&outs);
    assert_continuation(&first, "call_A", true);
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        approval_b(),
    ];
    let outs = h.stream(first.id, &sse(&c, true));
    let second = one_http(&outs);
    assert_continuation(&second, "call_B", false);
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-denied", "toolCallId": "call_B"}),
    ];
    c.extend(final_text("ok"));
    let outs = h.stream(second.id, &sse(&c, true));
    no_done(&outs);
    let post = one_http(&outs);
    assert_send_post(&post, "never mind");
    let outs = h.stream(post.id, &sse(&plain_reply(), true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    let tools = &s.messages.as_slice()[1].tools;
    assert_eq!(tools[1].reject_reason.as_deref(), Some("changed my mind"));
    assert_eq!(s.messages.as_slice()[2].text, "never mind");
}

#[test]
fn reject_all_and_send_stops_at_a_new_pause() {
    // The rejection's continuation ends on a new approval (the model asked for another tool):
    // the message is not sent over the new pause; it waits in unsentText, the new card shows.
    let mut h = H::paused(false);
    let op =
        h.c.reject_all_and_send(h.now, "never mind", None)
            .expect("rejectAllAndSend");
    let first = one_http(&h.drain());
    assert_continuation(&first, "call_A", false);
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-denied", "toolCallId": "call_A"}),
    ];
    c.extend(tool_in(
        "call_B",
        "send_email",
        json!({"to": "a@b.c", "subject": "hi"}),
    ));
    c.push(approval_b());
    let outs = h.stream(first.id, &sse(&c, true));
    no_http(&outs);
    assert_eq!(done(&outs, op), Err(ErrorCode::InputLocked));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(s.unsent_text.as_deref(), Some("never mind"));
    assert_eq!(h.card_ids(), vec!["call_B"]);
    assert!(s.decisions.is_empty(), "nothing decided on the new card");
}

#[test]
fn auto_submit_fires_when_every_card_is_decided() {
    let mut cfg = config();
    cfg.auto_submit = true;
    let mut h = H::with(cfg);
    let (_, post) = h.send("delete /tmp/x");
    h.stream(post.id, &sse(&pause_stream(true), true));
    assert_eq!(h.c.approve("call_A").expect("approve"), None);
    no_http(&h.drain());
    let op =
        h.c.reject("call_B", None)
            .expect("reject")
            .expect("auto op");
    let outs = h.drain();
    let first = one_http(&outs);
    assert_continuation(&first, "call_A", true);
    assert_eq!(h.phase(), Phase::Submitting);
    h.c.abort();
    let outs = h.drain();
    assert!(outs.contains(&Output::Cancel(first.id)));
    assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
    // Drafts kept.
    assert_eq!(h.c.snapshot().decisions.len(), 2);
    assert_eq!(h.phase(), Phase::AwaitingApproval);
}

#[test]
fn abort_mid_stream_keeps_what_was_shown() {
    let mut h = H::new();
    let (op, post) = h.send("hi");
    h.open(post.id, 200);
    h.feed(post.id, &sse(&plain_reply()[..4], false), 6);
    h.c.abort();
    let outs = h.drain();
    assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
    let s = h.c.snapshot();
    assert!(s.streaming.is_none());
    assert_eq!(s.messages.as_slice()[1].text, "Hello");
    assert_eq!(s.unsent_text, None, "the message landed");
    // A late chunk for the aborted request is ignored.
    let v = h.c.version();
    h.c.handle_stream_chunk(
        h.now,
        post.id,
        b"data: {\"type\":\"text-delta\",\"id\":\"txt_1\",\"delta\":\"x\"}\n\n",
    );
    h.c.handle_stream_end(h.now, post.id);
    no_http(&h.drain());
    assert_eq!(h.c.version(), v);
}

#[test]
fn abort_after_an_approval_chunk_keeps_its_card_answerable() {
    // The run is paused on call_A once its approval chunk is out (its snapshot outlives the
    // request): stopping the reply before the stream ends leaves the card, not a pending tool
    // with nothing to answer it until the next load.
    let mut h = H::new();
    let (op, post) = h.send("hi");
    h.open(post.id, 200);
    let chunks = pause_stream(true);
    let cut = chunks.len() - 1; // approval_b not yet read
    h.feed(post.id, &sse(&chunks[..cut], false), 11);
    h.c.abort();
    let outs = h.drain();
    assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
    no_http(&outs);
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    assert_eq!(h.card_ids(), vec!["call_A"]);
    let s = h.c.snapshot();
    assert!(s.streaming.is_none());
    assert_eq!(s.unsent_text, None, "the message landed");
    let susp = s.suspension.as_ref().expect("suspension");
    assert_eq!(susp.run_id.as_deref(), Some("run_1"));
    assert_eq!(susp.agent_version_id.as_deref(), Some(AGV));
    // Answered as any card: the continuation names the run and the call; the server announces
    // the calls still waiting (call_B) on it.
    assert_eq!(h.c.approve("call_A").expect("approve"), None);
    h.drain();
    let (_, post) = h.submit();
    assert_continuation(&post, "call_A", true);
    h.stream(post.id, &waiting_on_b());
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    assert_eq!(h.card_ids(), vec!["call_B"]);
}

#[test]
fn abort_of_a_continuation_after_a_new_approval_chunk_keeps_the_drafts() {
    // A continuation stopped after it announced a call, call_B still open: the pause the drafts
    // were made on stays (its other decisions are not dropped for a partial one); the server
    // announces call_C again with call_B on call_B's continuation.
    let (mut h, op, post) = H::both_approved_and_submitted();
    assert_continuation(&post, "call_A", true);
    h.open(post.id, 200);
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        approval("call_C", "charge", "Charge 5", json!({"amount": 5})),
    ];
    h.feed(post.id, &sse(&c, false), 13);
    h.c.abort();
    let outs = h.drain();
    assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    assert_eq!(h.card_ids(), vec!["call_A", "call_B"]);
    let s = h.c.snapshot();
    assert_eq!(s.decisions.get("call_B"), Some(&Decision::Approve));
    assert_eq!(s.decisions.get("call_A"), None, "call_A's was accepted");
    assert_eq!(
        err_code(h.c.approve("call_A")),
        ErrorCode::InvalidState,
        "call_A's card is settled"
    );
}

// ----------------------------------------------------------------------------------------------
// Collected output

#[test]
fn the_collect_transport_applies_chunks_like_a_stream() {
    let mut cfg = config();
    cfg.transport = Transport::Collect;
    cfg.agent_id = Some("agent_1".into());
    cfg.agent_version_id = Some(AGV.into());
    let mut h = H::with(cfg);
    let op = h.c.send(h.now, "delete /tmp/x").expect("send");
    let outs = h.drain();
    let post = one_http(&outs);
    assert_eq!(post.url, RUN_URL);
    assert!(!post.streaming);
    assert_eq!(header(&post, "Accept").as_deref(), Some("application/json"));
    assert_eq!(
        post.body.as_deref(),
        Some(
            r#"{"messages":[{"role":"user","parts":[{"type":"text","text":"delete /tmp/x"}]}],"threadId":"thread_42","agentVersionId":"agv_ref_1"}"#
        )
    );
    let outs = h.respond(
        post.id,
        HttpResponse::new(
            200,
            json!({"chunks": pause_stream(false), "finishReason": null}).to_string(),
        ),
    );
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    assert_eq!(h.card_ids(), vec!["call_A"]);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op, post) = h.submit();
    assert_eq!(post.url, RUN_URL);
    assert_eq!(
        post.body.as_deref(),
        Some(continuation_body("call_A", true).as_str())
    );
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted"}),
    ];
    c.extend(final_text("done"));
    let outs = h.respond(
        post.id,
        HttpResponse::new(
            200,
            json!({"chunks": c, "finishReason": "stop"}).to_string(),
        ),
    );
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::Completed);
    assert_eq!(h.c.snapshot().messages.as_slice()[1].text, "done");
}

// ----------------------------------------------------------------------------------------------
// Illegal commands and config

#[test]
fn every_illegal_command_has_its_code() {
    let mut h = H::new();
    assert_eq!(err_code(h.c.send(h.now, "  ")), ErrorCode::InvalidArgument);
    assert_eq!(err_code(h.c.approve("call_A")), ErrorCode::NotSuspended);
    assert_eq!(
        err_code(h.c.reject("call_A", None)),
        ErrorCode::NotSuspended
    );
    assert_eq!(err_code(h.c.clear("call_A")), ErrorCode::NotSuspended);
    assert_eq!(err_code(h.c.submit(h.now)), ErrorCode::NotSuspended);
    assert_eq!(
        err_code(h.c.reject_all_and_send(h.now, "", None)),
        ErrorCode::InvalidArgument
    );
    h.c.invariants().expect("invariants");

    let (_, post) = h.send("delete /tmp/x");
    assert_eq!(err_code(h.c.load(h.now)), ErrorCode::Busy);
    assert_eq!(err_code(h.c.send(h.now, "again")), ErrorCode::Busy);
    h.open(post.id, 200);
    assert_eq!(err_code(h.c.send(h.now, "again")), ErrorCode::Busy);
    h.feed(post.id, &sse(&pause_stream(true), false), 50);
    assert_eq!(err_code(h.c.approve("call_A")), ErrorCode::Busy);
    h.end(post.id);

    assert_eq!(err_code(h.c.send(h.now, "next")), ErrorCode::InputLocked);
    assert_eq!(err_code(h.c.approve("call_Z")), ErrorCode::UnknownCallId);
    assert_eq!(err_code(h.c.clear("call_Z")), ErrorCode::UnknownCallId);
    assert_eq!(err_code(h.c.submit(h.now)), ErrorCode::EmptyDecisions);
    h.c.approve("call_A").expect("approve");
    h.drain();
    h.c.clear("call_A").expect("clear");
    h.drain();
    assert_eq!(err_code(h.c.submit(h.now)), ErrorCode::EmptyDecisions);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (_, cont) = h.submit();
    assert_eq!(err_code(h.c.submit(h.now)), ErrorCode::Busy);
    assert_eq!(err_code(h.c.reject("call_B", None)), ErrorCode::Busy);
    assert_eq!(err_code(h.c.clear("call_A")), ErrorCode::Busy);
    assert_eq!(
        err_code(h.c.reject_all_and_send(h.now, "x", None)),
        ErrorCode::Busy
    );
    // A reply to a stale id is ignored.
    let v = h.c.version();
    h.c.handle_response(h.now, post.id, HttpResponse::new(200, ""));
    h.c.handle_stream_start(h.now, RequestId(999), 200);
    h.c.handle_failure(h.now, RequestId(999), TransportError::Timeout);
    h.drain();
    assert_eq!(h.c.version(), v);
    assert_eq!(h.phase(), Phase::Submitting);
    let _ = cont;
}

#[test]
fn config_from_json_for_sidenet() {
    let c = Config::from_json(
        r#"{"dialect":"sidenet","baseUrl":"https://api.test/","threadId":"thread_42","token":"t0k","agentVersionId":"agv_ref_1"}"#,
    )
    .expect("config");
    assert_eq!(c.routes.chat, "/v1/chat");
    assert_eq!(c.routes.thread, "/v1/threads/{threadId}");
    assert_eq!(c.routes.stream, "/v1/chat/stream?threadId={threadId}");
    assert_eq!(c.transport, Transport::Stream);
    assert_eq!(c.token.as_deref(), Some("t0k"));
    assert_eq!(c.agent_version_id.as_deref(), Some("agv_ref_1"));
    let h = H::with(c);
    assert_eq!(sj(&h.c.snapshot())["dialect"], "sidenet");
    let bad = Config::from_json(r#"{"dialect":"sidenet","threadId":"t","transport":"collect"}"#)
        .expect("parses");
    let e = Client::new(bad).expect_err("agentId required");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert_eq!(e.path.as_deref(), Some("agentId"));
    // Neuron defaults are unchanged.
    let n = Config::from_json(r#"{"threadId":"t","routes":{"chat":"/c"}}"#).expect("neuron");
    assert_eq!(n.routes.chat, "/c");
    assert_eq!(n.routes.thread, "/threads/{threadId}");
}

#[test]
fn config_from_json_reads_every_route_and_null_as_the_default() {
    let c = Config::from_json(
        r#"{"dialect":"sidenet","threadId":"t","routes":{"stream":"/s?t={threadId}","run":"/r/{agentId}","thread":null},"token":null,"agentVersionId":"","baseUrl":null}"#,
    )
    .expect("config");
    assert_eq!(c.routes.stream, "/s?t={threadId}");
    assert_eq!(c.routes.run, "/r/{agentId}");
    assert_eq!(
        c.routes.thread, "/v1/threads/{threadId}",
        "null: the default"
    );
    assert_eq!(c.token, None);
    assert_eq!(c.agent_version_id, None, "an empty id is none");
    assert_eq!(c.base_url, "");
    // `null` is the default for every option but `threadId`, whatever its type: booleans,
    // numbers, the groups and their keys, the dialect and transport.
    let all_null = r#"{"threadId":"t","dialect":null,"transport":null,"headers":null,
        "autoSubmit":null,"persist":null,"reloadAfterPost":null,"timeoutMs":null,"agentId":null,
        "routes":null,"retry":null}"#;
    let c = Config::from_json(all_null).expect("null options");
    assert_eq!(c, Config::new("", "t"));
    let c = Config::from_json(
        r#"{"threadId":"t","persist":null,"retry":{"attempts":null,"backoffMs":null,"maxBackoffMs":7}}"#,
    )
    .expect("null retry keys");
    assert!(c.persist, "persist defaults to true");
    let d = Config::new("", "t").retry;
    assert_eq!(c.retry.attempts, d.attempts);
    assert_eq!(c.retry.backoff_ms, d.backoff_ms);
    assert_eq!(c.retry.max_backoff_ms, 7);
    let e = Config::from_json(r#"{"threadId":null}"#).expect_err("threadId");
    assert_eq!(
        e.message,
        "invalid client options: threadId must be a string"
    );
    // The collected-output transport needs an agent id without spaces or control characters.
    for (agent, ok) in [("agent_1", true), ("agent 1", false), ("a\\u0007", false)] {
        let doc = format!(
            r#"{{"dialect":"sidenet","threadId":"t","transport":"collect","agentId":"{agent}"}}"#
        );
        let c = Config::from_json(&doc).expect("parses");
        match Client::new(c) {
            Ok(_) => assert!(ok, "{agent}"),
            Err(e) => {
                assert!(!ok, "{agent}: {}", e.message);
                assert_eq!(e.path.as_deref(), Some("agentId"));
            }
        }
    }
    // Options that are no object: the message says so, with no path.
    let e = Config::from_json("[]").expect_err("not an object");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert_eq!(
        e.message,
        "invalid client options: the options must be an object"
    );
    assert_eq!(e.path, None);
    let e = Config::from_json(r#"{"threadId":"t","token":5}"#).expect_err("token");
    assert_eq!(e.message, "invalid client options: token must be a string");
    assert_eq!(e.path.as_deref(), Some("token"));
}

#[test]
fn neuron_accepts_the_stream_inputs_as_a_buffered_answer() {
    let mut c = Client::new(Config::new(BASE, TID)).expect("client");
    let op = c.load(0).expect("load");
    let mut req = None;
    while let Some(o) = c.poll_output() {
        if let Output::Http(r) = o {
            assert!(!r.streaming);
            req = Some(r);
        }
    }
    let req = req.expect("GET");
    c.handle_stream_start(1, req.id, 200);
    c.handle_stream_chunk(1, req.id, br#"{"id":"thread_42","messa"#);
    c.handle_stream_chunk(1, req.id, br#"ges":[]}"#);
    c.handle_stream_end(1, req.id);
    let mut ok = false;
    while let Some(o) = c.poll_output() {
        if let Output::Done { op: o, result } = o {
            ok = o == op && result.is_ok();
        }
    }
    assert!(ok);
    assert!(c.snapshot().loaded);
    c.invariants().expect("invariants");
}

#[test]
fn the_snapshot_serializes_with_the_new_phases() {
    let mut h = H::new();
    let (_, post) = h.send("hi");
    h.open(post.id, 200);
    h.feed(post.id, &sse(&plain_reply()[..4], false), 100);
    let j = sj(&h.c.snapshot());
    assert_eq!(j["phase"], "streaming");
    assert_eq!(j["streaming"]["text"], "Hello");
    assert_eq!(j["streaming"]["id"], "msg_a1");
    assert_eq!(
        j["streaming"]["raw"],
        json!({"id": "msg_a1", "role": "assistant"})
    );
    assert_eq!(Phase::Expired.as_str(), "expired");
    assert_eq!(sj(&ToolStatus::Denied), json!("denied"));
}

// ----------------------------------------------------------------------------------------------
// Allowed tools (allow for this session)

#[test]
fn allowed_tools_are_approved_once_the_stream_ends_and_go_without_asking() {
    let mut h = H::new();
    for tool in ["delete_file", "send_email"] {
        h.c.allow_tool(h.now, tool, true).expect("allow");
        h.drain();
    }
    let (op, post) = h.send("delete /tmp/x");
    let bytes = sse(&pause_stream(true), false);
    let mut outs = h.open(post.id, 200);
    outs.extend(h.feed(post.id, &bytes, 13));
    // While the answer streams, nothing is decided nor sent.
    no_http(&outs);
    assert!(h.c.snapshot().decisions.is_empty());
    let outs = h.end(post.id);
    assert_eq!(done(&outs, op), Ok(()));
    let first = one_http(&outs);
    assert_continuation(&first, "call_A", true);
    assert_eq!(h.phase(), Phase::Submitting);

    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        approval_b(),
    ];
    let outs = h.stream(first.id, &sse(&c, true));
    let second = one_http(&outs);
    assert_continuation(&second, "call_B", true);
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_B", "output": "sent"}),
    ];
    c.extend(final_text("done"));
    let outs = h.stream(second.id, &sse(&c, true));
    no_http(&outs);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert_eq!(
        s.last_submission.as_ref().expect("last").call_ids,
        vec!["call_A", "call_B"]
    );
}

#[test]
fn an_allowed_tool_beside_another_waits_for_the_person() {
    let mut h = H::new();
    h.c.allow_tool(h.now, "send_email", true).expect("allow");
    h.drain();
    let (_, post) = h.send("delete /tmp/x");
    let outs = h.stream(post.id, &sse(&pause_stream(true), true));
    no_http(&outs);
    let s = h.c.snapshot();
    assert_eq!(s.allowed_tools, vec!["send_email"]);
    assert_eq!(s.decisions.get("call_B"), Some(&Decision::Approve));
    assert_eq!(s.decisions.get("call_A"), None);
    h.c.reject("call_A", Some("keep it")).expect("reject");
    no_http(&h.drain());
    let (_, first) = h.submit();
    assert_continuation(&first, "call_A", false);
}

#[test]
fn an_aborted_automatic_submission_is_not_started_again() {
    let mut h = H::paused(false);
    h.c.allow_tool(h.now, "delete_file", true).expect("allow");
    let outs = h.drain();
    let first = one_http(&outs);
    assert_continuation(&first, "call_A", true);
    h.c.abort();
    let outs = h.drain();
    assert!(outs.contains(&Output::Cancel(first.id)));
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    assert_eq!(
        h.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Approve)
    );
    // Later steps leave it to the person.
    no_http(&h.at(h.now + 60_000));
    let (_, again) = h.submit();
    assert_continuation(&again, "call_A", true);
}

/// Mastra's bridge (PROTOCOLS.md §3): a continuation stream may start without a `start` chunk,
/// and a stream may end with `[DONE]` and no `finish`. The continuation still goes on from the
/// paused message: its tool output lands on the paused call, the text follows, and the run
/// completes.
#[test]
fn a_continuation_without_a_start_chunk_goes_on_from_the_paused_message() {
    let mut h = H::paused(false);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op, post) = h.submit();
    let mut c = vec![
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        json!({"type": "start-step"}),
    ];
    c.extend(text("txt_9", &["delete_file /tmp/x: ", "done."]));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed, "{:?}", s.error);
    assert!(s.suspension.is_none());
    let msgs = s.messages.as_slice();
    let tools: Vec<_> = msgs.iter().flat_map(|m| m.tools.iter()).collect();
    assert_eq!(tools.len(), 1, "the paused call, once: {msgs:?}");
    assert_eq!(tools[0].status, ToolStatus::Done);
    assert_eq!(
        tools[0].result.as_ref().map(sj),
        Some(json!("Deleted /tmp/x"))
    );
    assert_eq!(
        msgs.last().map(|m| m.text.as_str()),
        Some("delete_file /tmp/x: done.")
    );
}

// ----------------------------------------------------------------------------------------------
// A hostile or sloppy server

/// A call approved by the person is answered elsewhere meanwhile, and the run pauses again on a
/// new call that reuses its toolCallId (ids counted per step, as some providers do): the draft
/// must not carry over to a call the person never saw.
#[test]
fn a_reused_tool_call_id_for_a_new_call_never_inherits_the_draft() {
    let (mut h, op, first) = H::both_approved_and_submitted();
    assert_continuation(&first, "call_A", true);
    // A ran; B was answered in another tab; the next step asks for another call named call_B.
    let mut c = next_step_after(
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
    );
    c.extend(tool_in("call_B", "transfer_money", json!({"amount": 9000})));
    c.push(approval(
        "call_B",
        "transfer_money",
        "Send 9000 EUR to an unknown account",
        json!({"amount": 9000}),
    ));
    let outs = h.stream(first.id, &sse(&c, true));
    no_http(&outs);
    assert_eq!(done(&outs, op), Err(ErrorCode::Conflict));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(h.card_ids(), vec!["call_B"]);
    assert_eq!(
        s.suspension.as_ref().expect("s").tools[0].name,
        "transfer_money"
    );
    assert!(
        s.decisions.get("call_B").is_none(),
        "the new card is undecided"
    );
    assert_eq!(s.dropped_drafts, vec!["call_B"]);
}

/// The person stops the reply to their only decision: the server accepted it (2xx), so the call
/// is no longer pending. Its card must not stay behind locking the composer with nothing to send
/// (submit and "reject all and send" both answered `empty_decisions`, send `input_locked`).
#[test]
fn stopping_the_reply_to_the_last_decision_leaves_no_dead_end() {
    let mut h = H::paused(true);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op, post) = h.submit();
    h.open(post.id, 200);
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
    ];
    h.feed(post.id, &sse(&c, false), 9);
    h.c.abort();
    let outs = h.drain();
    assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
    // B still waits.
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    h.c.approve("call_B").expect("approve");
    h.drain();
    let (op, post) = h.submit();
    assert_continuation(&post, "call_B", true);
    h.open(post.id, 200);
    h.c.abort();
    let outs = h.drain();
    assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
    let s = h.c.snapshot();
    assert!(s.suspension.is_none(), "{:?}", s.suspension);
    assert!(s.decisions.is_empty());
    assert!(s.dropped_drafts.is_empty(), "both were accepted");
    assert!(s.can_send);
    let (_, post) = h.send("next");
    assert_send_post(&post, "next");
}

/// The AI SDK form names the run and its agent version once, in `data-run`; a continuation that
/// pauses again on a new call goes on in the same run without repeating it. The next
/// continuation is still pinned to the version that paused, not routed afresh.
#[test]
fn a_run_that_pauses_again_in_the_ai_sdk_form_keeps_its_agent_version() {
    let mut h = H::new();
    let (_, post) = h.send("delete /tmp/x");
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "data-run", "data": {"runId": "run_1", "agentVersionId": AGV, "threadId": TID}}),
    ];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    c.push(
        json!({"type": "tool-approval-request", "approvalId": "call_A", "toolCallId": "call_A"}),
    );
    h.stream(post.id, &sse(&c, true));
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op, post) = h.submit();
    assert_continuation(&post, "call_A", true);
    let mut c = next_step_after(
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
    );
    c.extend(tool_in(
        "call_B",
        "send_email",
        json!({"to": "a@b.c", "subject": "hi"}),
    ));
    c.push(
        json!({"type": "tool-approval-request", "approvalId": "call_B", "toolCallId": "call_B"}),
    );
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.card_ids(), vec!["call_B"]);
    let card = &h.c.snapshot().suspension.as_ref().expect("s").tools[0];
    assert_eq!(card.run_id.as_deref(), Some("run_1"));
    assert_eq!(card.agent_version_id.as_deref(), Some(AGV));
    h.c.approve("call_B").expect("approve");
    h.drain();
    let (_, post) = h.submit();
    assert_continuation(&post, "call_B", true);
}

/// A reload whose replay reports another agent version for the same paused run (the agent was
/// republished meanwhile): the continuation still goes to the version that paused.
#[test]
fn a_replay_reporting_another_version_does_not_move_the_pin() {
    let mut h = H::paused(false);
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let outs = h.respond(get.id, history(paused_history(false)));
    let replay = one_http(&outs);
    let mut c = vec![start("msg_a1")];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    let mut a = approval_a();
    a["data"]["agentVersionId"] = json!("agv_ref_2");
    c.push(a);
    let outs = h.stream(replay.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.card_ids(), vec!["call_A"]);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (_, post) = h.submit();
    assert_continuation(&post, "call_A", true);
}

/// The person stops the reply to the first of two decisions: the server accepted it (2xx), the
/// second was never sent. The accepted card stays with its draft until the run moves on, but a
/// change of mind on it would never be sent: it is refused, not taken and silently lost. The next
/// submission sends the second decision only, and the first ends acknowledged, not dropped.
#[test]
fn stopping_the_reply_after_some_continuations_never_takes_a_change_it_cannot_send() {
    let mut h = H::paused(true);
    h.c.approve("call_A").expect("approve");
    h.drain();
    h.c.reject("call_B", Some("not now")).expect("reject");
    h.drain();
    let (op, post) = h.submit();
    assert_continuation(&post, "call_A", true);
    h.open(post.id, 200);
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
    ];
    h.feed(post.id, &sse(&c, false), 9);
    h.c.abort();
    let outs = h.drain();
    assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    assert!(h.c.snapshot().can_submit);
    for r in [
        h.c.reject("call_A", Some("wait, no")).map(|_| ()),
        h.c.approve("call_A").map(|_| ()),
        h.c.clear("call_A"),
    ] {
        assert_eq!(r.map_err(|e| e.code), Err(ErrorCode::InvalidState));
    }
    no_http(&h.drain());
    let s = h.c.snapshot();
    // Accepted: the server's decision now, no draft left.
    assert_eq!(s.decisions.get("call_A"), None);
    assert!(
        s.error.is_none(),
        "a refused command leaves the snapshot alone"
    );
    let (op, post) = h.submit();
    assert_continuation(&post, "call_B", false);
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-denied", "toolCallId": "call_B"}),
    ];
    c.extend(final_text("ok"));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert!(s.dropped_drafts.is_empty(), "both were accepted");
}

/// The model calls the same tool with the same arguments again in the next step, and the provider
/// counts toolCallIds per step, so the new call reuses the id of the one just approved. The
/// continuation that answered the first call was accepted and its stream ended normally: the card
/// that comes back is a new call, which the person has not decided (it must not show the old
/// approval) and must be able to answer.
#[test]
fn a_call_asked_again_under_the_accepted_id_can_be_answered() {
    let (mut h, op, post) = H::a_approved_and_submitted();
    let mut c = next_step_after(
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
    );
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    c.push(approval_a());
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(h.card_ids(), vec!["call_A"]);
    assert_eq!(s.decisions.get("call_A"), None, "the new call is undecided");
    // The message shows the call asking, as its card does: not approved by the decision on the
    // call before it (whose acknowledgement came at the end of the reply that asked again).
    let m = s.messages.as_slice().last().expect("message");
    let t = m.tools.last().expect("tool");
    assert_eq!(
        (t.status, t.approval),
        (ToolStatus::Pending, Some(Approval::Pending))
    );
    let raw = sj(&m.raw);
    let part = raw["parts"]
        .as_array()
        .and_then(|p| p.last())
        .expect("part");
    assert_eq!(part["state"], "approval-requested", "{raw}");
    h.c.reject("call_A", Some("once is enough"))
        .expect("reject");
    h.drain();
    let (_, post) = h.submit();
    assert_continuation(&post, "call_A", false);
}

/// A continuation whose `start` names a new messageId (a server that makes one per response):
/// as in the AI SDK's own client, the continuation goes on with the paused message. Made a new
/// message instead, the paused call stayed "approval requested" in the transcript after the run
/// completed, and its output landed on a second, nameless tool.
#[test]
fn a_continuation_under_a_new_message_id_goes_on_with_the_paused_message() {
    let mut h = H::paused(false);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op, post) = h.submit();
    let mut c = vec![
        start("msg_a2"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
    ];
    c.extend(final_text("done"));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    let msgs = s.messages.as_slice();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    let tools = &msgs[1].tools;
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "delete_file");
    assert_eq!(tools[0].status, ToolStatus::Done);
    assert_eq!(msgs[1].text, "done");
}

/// The person stops the reply to the first of two decisions, then reloads after the grace window:
/// the replay has nothing (204) and the history still shows the second call awaiting approval,
/// with text after it. The run was abandoned with a card the client knew of: expired, as when no
/// reply was stopped, not a run that completed.
#[test]
fn a_pause_left_by_a_stopped_reply_and_then_abandoned_is_expired() {
    let mut h = H::paused(true);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (_, post) = h.submit();
    h.open(post.id, 200);
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
    ];
    h.feed(post.id, &sse(&c, false), 9);
    h.c.abort();
    h.drain();
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let mut hist = paused_history(true);
    hist[1]["parts"][0] = json!({"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available",
        "input": {"path": "/tmp/x"}, "output": "Deleted /tmp/x", "approval": {"id": "call_A", "approved": true}});
    hist[1]["parts"]
        .as_array_mut()
        .expect("parts")
        .push(json!({"type": "text", "text": "Waiting for your approval."}));
    let outs = h.respond(get.id, history(hist.clone()));
    let replay = one_http(&outs);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    let outs = read_again(&mut h, &outs, hist);
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::Expired);
    assert_eq!(h.error_code(), Some("expired"));
    assert!(h.c.snapshot().can_send);
}

/// After an empty replay (204) that the history read before it shows as abandoned: the client
/// reads the history (`messages`) and the replay (204) again, once. The outputs of the second
/// replay's answer.
fn read_again(h: &mut H, outs: &[Output], messages: Vec<Value>) -> Vec<Output> {
    let get = one_http(outs);
    assert_history_get(&get);
    let outs = h.respond(get.id, history(messages));
    let replay = one_http(&outs);
    assert_replay_get(&replay);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    no_http(&outs);
    outs
}

/// Three tabs on a pause of call_A and call_B; another tab's continuations answer both. This tab
/// submits call_A, which the server refuses (another tab answered it first), and reads the thread
/// to reconcile: the history still shows call_B waiting, and then the replay is empty, because
/// between the two reads the other tab's continuation of call_B ended the run. Read again, the
/// history shows both calls answered: the run is over, not abandoned (it read `expired`, the
/// submission rejected with `expired`, while the run had completed).
#[test]
fn a_call_answered_elsewhere_between_the_history_and_the_replay_is_not_expired() {
    let mut h = H::loaded_paused();
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op, post) = h.submit();
    assert_continuation(&post, "call_A", true);
    let outs = h.respond(
        post.id,
        HttpResponse::new(
            409,
            r#"{"error":"Tool call call_A is not awaiting approval (already answered)"}"#,
        ),
    );
    let get = one_http(&outs);
    assert_history_get(&get);
    let mut half = paused_history(true);
    half[1]["parts"][0] = json!({"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available",
        "input": {"path": "/tmp/x"}, "output": "Deleted /tmp/x", "approval": {"id": "call_A", "approved": true}});
    let outs = h.respond(get.id, history(half.clone()));
    let replay = one_http(&outs);
    assert_replay_get(&replay);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    no_done(&outs);
    let mut whole = half;
    whole[1]["parts"][1] = json!({"type": "tool-send_email", "toolCallId": "call_B", "state": "output-denied",
        "input": {"to": "a@b.c", "subject": "hi"}, "approval": {"id": "call_B", "approved": false}});
    whole[1]["parts"]
        .as_array_mut()
        .expect("parts")
        .push(json!({"type": "text", "text": "Done."}));
    let outs = read_again(&mut h, &outs, whole);
    assert_ne!(h.phase(), Phase::Expired);
    assert_ne!(h.error_code(), Some("expired"));
    assert_eq!(h.phase(), Phase::Completed);
    assert!(h.c.snapshot().suspension.is_none());
    // The submission ends as the server had it: call_A decided (as this tab wanted) elsewhere.
    assert_eq!(
        done(&outs, op),
        Ok(()),
        "call_A recorded as this tab decided it: acknowledged"
    );
}

/// The continuation that answers the only card is accepted (2xx), but its stream drops before
/// it tells anything, and the replay still shows the call pending (the server had not recorded
/// the decision yet). The accepted decision is never sent again by itself, and the person is
/// not left with a card they cannot act on and a locked composer: the card is undecided and
/// answerable again, and "reject all and send" works.
#[test]
fn a_call_still_pending_after_its_accepted_continuation_dropped_can_be_answered() {
    for reject_all in [false, true] {
        let mut h = H::paused(false);
        h.c.approve("call_A").expect("approve");
        h.drain();
        let (op, post) = h.submit();
        assert_continuation(&post, "call_A", true);
        h.open(post.id, 200);
        h.feed(post.id, &sse(&[start("msg_a1")], false), 5);
        let outs = h.fail(post.id, TransportError::Network("reset".into()));
        let get = one_http(&outs);
        assert_history_get(&get);
        let outs = h.respond(get.id, history(paused_history(false)));
        let replay = one_http(&outs);
        assert_replay_get(&replay);
        let outs = h.stream(replay.id, &replay_stream(false));
        // Not sent again by itself.
        no_http(&outs);
        assert_eq!(done(&outs, op), Ok(()));
        let s = h.c.snapshot();
        assert_eq!(s.phase, Phase::AwaitingApproval);
        assert_eq!(h.card_ids(), vec!["call_A"]);
        let card = &s.suspension.as_ref().expect("paused").tools[0];
        assert!(!card.draft, "{card:?}");
        assert_eq!(s.decisions.get("call_A"), None);
        assert_eq!(
            s.last_submission.as_ref().map(|l| l.not_applied.clone()),
            Some(vec!["call_A".to_owned()])
        );
        if reject_all {
            h.c.reject_all_and_send(h.now, "never mind", None)
                .expect("reject all and send");
            let post = one_http(&h.drain());
            assert_continuation(&post, "call_A", false);
        } else {
            h.c.reject("call_A", Some("on second thought"))
                .expect("reject");
            h.drain();
            let (_, post) = h.submit();
            assert_continuation(&post, "call_A", false);
        }
    }
}

/// Two cards decided one by one: the person stops the reply to the first decision after the
/// server accepted it (the call has not left the pause yet). That card shows the server's
/// decision, no draft: settled, as a Neuron card the server decided, not an open card whose
/// buttons would throw `invalid_state`; the other card stays open.
#[test]
fn a_card_whose_decision_the_server_accepted_shows_as_settled() {
    for approve in [true, false] {
        let mut h = H::a_decided(approve, "not that file");
        let (op, post) = h.submit();
        assert_continuation(&post, "call_A", approve);
        h.open(post.id, 200);
        h.feed(post.id, &sse(&[start("msg_a1")], false), 9);
        h.c.abort();
        let outs = h.drain();
        assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
        let s = h.c.snapshot();
        assert_eq!(s.phase, Phase::AwaitingApproval);
        let sus = s.suspension.as_ref().expect("paused");
        let a = &sus.tools[0];
        let (state, reason) = if approve {
            (toolgate::approval::Approval::Approved, None)
        } else {
            (
                toolgate::approval::Approval::Rejected,
                Some("not that file".to_owned()),
            )
        };
        assert_eq!(a.call_id, "call_A");
        assert!(!a.draft, "{a:?}");
        assert_eq!(a.server_approval, state, "{a:?}");
        assert_eq!(a.approval, state);
        assert_eq!(a.server_reject_reason, reason);
        assert_eq!(a.reject_reason, reason);
        assert_eq!(sus.decided.len(), 1);
        assert_eq!(sus.decided[0], *a);
        assert_eq!(sus.undecided, vec!["call_B"]);
        assert_eq!(s.decisions.get("call_A"), None);
        assert!(!s.can_submit, "nothing left to send");
        // The open card is answered and goes alone.
        h.c.approve("call_B").expect("approve");
        h.drain();
        let (_, post) = h.submit();
        assert_continuation(&post, "call_B", true);
    }
}

/// A continuation refused (409), and the reload shows another call under the same callId (ids
/// counted per step): the person's draft was for the old call, so it is dropped (listed), and the
/// error says so: the decision was not applied. It must not read as if the decision were still
/// pending with its draft kept.
#[test]
fn a_409_then_a_new_call_under_the_same_id_says_the_draft_was_dropped() {
    let mut h = H::paused(false);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op, post) = h.submit();
    let outs = h.respond(
        post.id,
        HttpResponse::new(409, r#"{"error":"agentVersionId mismatch"}"#),
    );
    let get = one_http(&outs);
    let mut hist = paused_history(false);
    hist[1]["parts"][0]["input"] = json!({"path": "/tmp/y"});
    let outs = h.respond(get.id, history(hist));
    let replay = one_http(&outs);
    let mut c = vec![start("msg_a1")];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/y"})));
    c.push(approval(
        "call_A",
        "delete_file",
        "Delete the file /tmp/y; this cannot be undone",
        json!({"path": "/tmp/y"}),
    ));
    let outs = h.stream(replay.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Err(ErrorCode::Conflict));
    let s = h.c.snapshot();
    assert_eq!(s.dropped_drafts, vec!["call_A"]);
    assert!(s.decisions.is_empty());
    let error = s.error.as_ref().expect("an error");
    assert_eq!(error.code, "conflict");
    assert!(
        error.message.contains("changed") && error.message.contains("not applied"),
        "{error:?}"
    );
    // The new call waits for the person, who answers it.
    assert_eq!(s.phase, Phase::AwaitingApproval);
    h.c.reject("call_A", None).expect("reject");
    h.drain();
    let (_, post) = h.submit();
    assert_continuation(&post, "call_A", false);
}

/// As above with two cards decided at once: the continuation for the first is accepted and its
/// stream drops, the replay shows both pending. The second decision, the person's and not yet
/// sent, goes; the first is not sent again, and once the run pauses on it again it is a card the
/// person can answer.
#[test]
fn after_a_dropped_accepted_continuation_the_rest_go_and_the_first_can_be_answered() {
    let (mut h, op, first) = H::both_approved_and_submitted();
    assert_continuation(&first, "call_A", true);
    h.open(first.id, 200);
    let outs = h.fail(first.id, TransportError::Network("reset".into()));
    let get = one_http(&outs);
    let outs = h.respond(get.id, history(paused_history(true)));
    let replay = one_http(&outs);
    let outs = h.stream(replay.id, &replay_stream(true));
    let second = one_http(&outs);
    assert_continuation(&second, "call_B", true);
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_B", "output": "sent"}),
        approval_a(),
    ];
    let outs = h.stream(second.id, &sse(&c, true));
    no_http(&outs);
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(h.card_ids(), vec!["call_A"]);
    assert_eq!(s.decisions.get("call_A"), None);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (_, post) = h.submit();
    assert_continuation(&post, "call_A", true);
}

/// The only card's continuation is accepted (2xx) and its stream drops; the person stops the
/// reload that follows, or that reload fails for good. Every card of the pause was accepted: no
/// card is left to answer, nothing to submit or reject, so the composer must not stay locked.
#[test]
fn every_card_accepted_then_the_recovery_stopped_or_failed_leaves_no_dead_end() {
    for stop in [true, false] {
        let mut h = H::paused(false);
        h.c.approve("call_A").expect("approve");
        h.drain();
        let (op, post) = h.submit();
        assert_continuation(&post, "call_A", true);
        h.open(post.id, 200);
        h.feed(post.id, &sse(&[start("msg_a1")], false), 5);
        let outs = h.fail(post.id, TransportError::Network("reset".into()));
        let get = one_http(&outs);
        assert_history_get(&get);
        if stop {
            h.c.abort();
            let outs = h.drain();
            assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
        } else {
            let mut id = get.id;
            for _ in 0..10 {
                let outs = h.fail(id, TransportError::Network("down".into()));
                if outs.iter().any(|o| matches!(o, Output::Done { .. })) {
                    assert_eq!(done(&outs, op), Err(ErrorCode::Network));
                    break;
                }
                let t = h.c.poll_timeout().expect("a retry");
                let outs = h.at(t);
                id = one_http(&outs).id;
            }
        }
        let s = h.c.snapshot();
        assert!(!s.busy);
        // Some way on: a card to answer, something to submit, or the composer.
        let answerable = s
            .suspension
            .as_ref()
            .is_some_and(|v| !v.undecided.is_empty());
        assert!(
            s.can_send || s.can_submit || answerable,
            "stop={stop}: a dead end: {:?} can_send={} suspension={:?}",
            s.phase,
            s.can_send,
            s.suspension
        );
        let r = h.c.reject_all_and_send(h.now, "never mind", None);
        assert!(r.is_ok(), "stop={stop}: {r:?}");
    }
}

/// The person stops the reply to the first of two decisions after the server accepted it, then
/// allows the other card's tool for the session. The accepted card needs nobody, the other is
/// approved by the allowance: no person needs asking, so it goes by itself, as it would have
/// beside a card the person decided.
#[test]
fn an_allowed_tool_beside_an_accepted_card_goes_without_asking() {
    let mut h = H::paused(true);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op, post) = h.submit();
    assert_continuation(&post, "call_A", true);
    h.open(post.id, 200);
    h.feed(post.id, &sse(&[start("msg_a1")], false), 9);
    h.c.abort();
    let outs = h.drain();
    assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
    assert_eq!(
        h.c.snapshot()
            .suspension
            .as_ref()
            .map(|s| s.undecided.clone()),
        Some(vec!["call_B".to_owned()])
    );
    h.c.allow_tool(h.now, "send_email", true).expect("allow");
    let outs = h.drain();
    let post = one_http(&outs);
    assert_continuation(&post, "call_B", true);
}

/// Two cards decided, the reply to the first stopped after the server accepted it, then the
/// page is reloaded (a new client, the stored drafts, a load). Whether the server has recorded
/// the first call by then (the replay shows only the second) or not yet (it shows both), the
/// second decision, never sent, comes back as a draft (or is reported dropped), and the first,
/// accepted, is never restored to be sent again.
#[test]
fn a_reload_after_an_accepted_card_keeps_the_other_draft_and_not_the_accepted_one() {
    for recorded in [true, false] {
        let mut h = H::paused(true);
        h.c.approve("call_A").expect("approve");
        h.drain();
        h.c.reject("call_B", Some("no mail")).expect("reject");
        h.drain();
        let (_, post) = h.submit();
        assert_continuation(&post, "call_A", true);
        let mut stored = None;
        let mut outs = h.open(post.id, 200);
        outs.extend(h.feed(post.id, &sse(&[start("msg_a1")], false), 9));
        h.c.abort();
        outs.extend(h.drain());
        for p in persists(&outs) {
            stored = p;
        }
        let stored = stored.expect("the drafts stored again without the accepted one");
        assert!(!stored.contains("call_A\":"), "{stored}");

        let mut h = H::new();
        h.c.restore_drafts(&stored);
        h.drain();
        let (op, outs) = h.load();
        let get = one_http(&outs);
        let mut hist = paused_history(true);
        let mut c = vec![start("msg_a1")];
        if recorded {
            hist[1]["parts"][0] = json!({"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available",
                "input": {"path": "/tmp/x"}, "output": "Deleted /tmp/x", "approval": {"id": "call_A", "approved": true}});
        } else {
            c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
            c.push(approval_a());
        }
        c.extend(tool_in(
            "call_B",
            "send_email",
            json!({"to": "a@b.c", "subject": "hi"}),
        ));
        c.push(approval_b());
        let outs = h.respond(get.id, history(hist));
        let replay = one_http(&outs);
        let outs = h.stream(replay.id, &sse(&c, true));
        assert_eq!(done(&outs, op), Ok(()));
        let s = h.c.snapshot();
        assert_eq!(s.phase, Phase::AwaitingApproval);
        assert_eq!(s.decisions.get("call_A"), None, "recorded={recorded}");
        let kept = s.decisions.get("call_B") == Some(&Decision::Reject(Some("no mail".into())));
        assert!(
            kept || s.dropped_drafts.contains(&"call_B".to_owned()),
            "recorded={recorded}: the decision on call_B vanished: {:?} {:?}",
            s.decisions,
            s.dropped_drafts
        );
    }
}

/// Stored drafts handed over while a card whose decision the server accepted is still shown
/// (a reply stopped): the accepted card takes none (its decision is the server's, and a draft on
/// it could be neither changed nor cleared, and would go again once the call shows up again).
#[test]
fn stored_drafts_never_land_on_an_accepted_card() {
    // Loaded (stored drafts are applied at once, not held for the first load), and paused.
    let mut h = H::new();
    let (_, outs) = h.load();
    let get = one_http(&outs);
    let outs = h.respond(get.id, history(paused_history(true)));
    let replay = one_http(&outs);
    h.stream(replay.id, &replay_stream(true));
    assert_eq!(h.card_ids(), vec!["call_A", "call_B"]);
    h.c.approve("call_A").expect("approve");
    let mut stored = persists(&h.drain());
    h.c.approve("call_B").expect("approve");
    stored.extend(persists(&h.drain()));
    let stored = stored.pop().flatten().expect("stored");
    let (_, post) = h.submit();
    assert_continuation(&post, "call_A", true);
    h.open(post.id, 200);
    h.feed(post.id, &sse(&[start("msg_a1")], false), 9);
    h.c.abort();
    h.drain();
    h.c.clear("call_B").expect("clear");
    h.drain();
    h.c.restore_drafts(&stored);
    h.drain();
    let s = h.c.snapshot();
    assert_eq!(s.decisions.get("call_A"), None, "{:?}", s.decisions);
    assert_eq!(s.decisions.get("call_B"), Some(&Decision::Approve));
}

// ----------------------------------------------------------------------------------------------
// Two tabs on one thread: each takes in what the other stores (the `storage` event)

impl H {
    /// A client loaded on the paused run (history, then replay), both cards shown.
    fn loaded_paused() -> H {
        let mut h = H::new();
        let (_, outs) = h.load();
        let get = one_http(&outs);
        let outs = h.respond(get.id, history(paused_history(true)));
        let replay = one_http(&outs);
        h.stream(replay.id, &replay_stream(true));
        assert_eq!(h.card_ids(), vec!["call_A", "call_B"]);
        h
    }

    /// A page opened on `stored` drafts, its first load out: the client, the load's op and its
    /// history GET.
    fn restored_loading(stored: &str) -> (H, OpId, HttpRequest) {
        let mut h = H::new();
        h.c.restore_drafts(stored);
        h.drain();
        let (op, outs) = h.load();
        let get = one_http(&outs);
        (h, op, get)
    }

    /// Another tab stored `value` (`""`: removed it): the outputs of this client's step.
    fn tab_wrote(&mut self, value: &str) -> Vec<Output> {
        self.c.restore_drafts(value);
        self.drain()
    }
}

#[test]
fn two_tabs_share_their_drafts_and_settle_after_one_exchange() {
    let (mut a, mut b) = (H::loaded_paused(), H::loaded_paused());
    a.c.approve("call_A").expect("approve");
    let from_a = written(&a.drain()).expect("A stores its draft");
    let outs = b.tab_wrote(&from_a);
    assert!(
        outs.contains(&Output::Changed),
        "B's subscribers see A's draft"
    );
    assert_eq!(persists(&outs), vec![], "taking drafts in writes nothing");
    b.c.reject("call_B", Some("no mail")).expect("reject");
    let from_b = written(&b.drain()).expect("B stores both");
    let outs = a.tab_wrote(&from_b);
    assert_eq!(persists(&outs), vec![]);
    for h in [&a, &b] {
        let s = h.c.snapshot();
        assert_eq!(s.decisions.get("call_A"), Some(&Decision::Approve));
        assert_eq!(
            s.decisions.get("call_B"),
            Some(&Decision::Reject(Some("no mail".into())))
        );
    }
    // The last save wins: B changes call_A, then clears everything.
    b.c.reject("call_A", None).expect("reject");
    a.tab_wrote(&written(&b.drain()).expect("stored"));
    assert_eq!(
        a.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Reject(None))
    );
    b.c.clear("call_A").expect("clear");
    b.drain();
    b.c.clear("call_B").expect("clear");
    let outs = b.drain();
    assert!(
        cleared(&persists(&outs)),
        "the run's record, with no drafts"
    );
    let outs = a.tab_wrote(&written(&outs).expect("stored"));
    assert_eq!(persists(&outs), vec![]);
    assert!(a.c.snapshot().decisions.is_empty());
    // Drafts of another run (a tab behind wrote them) leave this pause's drafts as they are, and
    // nothing is written.
    a.c.approve("call_A").expect("approve");
    a.drain();
    let other =
        json!({"v": 1, "runId": "run_0", "callIds": ["call_B"], "drafts": {"call_B": "approve"}});
    let outs = a.tab_wrote(&other.to_string());
    assert_eq!(persists(&outs), vec![]);
    let s = a.c.snapshot();
    assert_eq!(s.decisions.get("call_A"), Some(&Decision::Approve));
    assert_eq!(s.decisions.len(), 1);
}

#[test]
fn another_tabs_drafts_during_a_command_are_read_again_after_it() {
    let mut a = H::loaded_paused();
    a.c.approve("call_A").expect("approve");
    a.drain();
    let (_op, _post) = a.submit();
    let other = json!({"v": 1, "runId": "run_1", "callIds": ["call_A", "call_B"],
        "drafts": {"call_A": ["reject", "stop"]}});
    let outs = a.tab_wrote(&other.to_string());
    assert_eq!(persists(&outs), vec![]);
    assert!(!a.c.take_missed_restore(), "still in flight");
    a.c.abort();
    a.drain();
    assert!(a.c.take_missed_restore(), "the driver reads storage again");
    assert!(!a.c.take_missed_restore(), "once");
}

#[test]
fn a_later_load_that_finds_a_new_pause_takes_in_another_tabs_drafts_for_it() {
    // B loaded before the run paused; A shows the pause and decided a call. B's next load finds
    // it: B writes nothing over A's drafts, and reading storage again gives it A's drafts.
    let mut a = H::loaded_paused();
    a.c.approve("call_A").expect("approve");
    let from_a = written(&a.drain()).expect("A stores its draft");
    let mut b = H::new();
    let (_, outs) = b.load();
    let get = one_http(&outs);
    let outs = b.respond(get.id, history(vec![user_ui("msg_u1", "delete /tmp/x")]));
    b.respond(one_http(&outs).id, HttpResponse::new(204, ""));
    assert!(b.card_ids().is_empty());
    assert!(
        !b.c.take_missed_restore(),
        "the first load reads nothing again"
    );
    let (op, outs) = b.load();
    let get = one_http(&outs);
    let outs = b.respond(get.id, history(paused_history(true)));
    let replay = one_http(&outs);
    let outs = b.stream(replay.id, &replay_stream(true));
    assert!(done(&outs, op).is_ok());
    assert_eq!(b.card_ids(), vec!["call_A", "call_B"]);
    assert_eq!(persists(&outs), vec![], "B writes nothing over A's drafts");
    assert!(b.c.take_missed_restore(), "B reads storage again");
    assert!(!b.c.take_missed_restore(), "once");
    let outs = b.tab_wrote(&from_a);
    assert_eq!(persists(&outs), vec![], "taken in, not written back");
    assert_eq!(
        b.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Approve)
    );
    // Nothing for this pause in storage: B's own record is written after that read.
    let mut c = H::new();
    let (_, outs) = c.load();
    let get = one_http(&outs);
    let outs = c.respond(get.id, history(vec![user_ui("msg_u1", "delete /tmp/x")]));
    c.respond(one_http(&outs).id, HttpResponse::new(204, ""));
    let (_, outs) = c.load();
    let get = one_http(&outs);
    let outs = c.respond(get.id, history(paused_history(true)));
    let replay = one_http(&outs);
    c.stream(replay.id, &replay_stream(true));
    assert!(c.c.take_missed_restore());
    let outs = c.tab_wrote("");
    assert!(cleared(&persists(&outs)), "{outs:?}");
    // A load that finds the pause already shown reads nothing again.
    let (_, outs) = a.load();
    let get = one_http(&outs);
    let outs = a.respond(get.id, history(paused_history(true)));
    let replay = one_http(&outs);
    a.stream(replay.id, &replay_stream(true));
    assert!(!a.c.take_missed_restore());
}

#[test]
fn a_tab_catches_up_when_another_tab_moves_past_its_pause() {
    // B shows the pause; A answered it, the run went on, and A's pause is over: A removed the key.
    // B loads the thread again and shows where it is.
    let mut b = H::loaded_paused();
    b.c.approve("call_A").expect("approve");
    let stored = written(&b.drain()).expect("stored");
    let outs = b.tab_wrote("");
    let get = one_http(&outs);
    assert_history_get(&get);
    let outs = b.respond(
        get.id,
        history(vec![
            user_ui("msg_u1", "delete /tmp/x"),
            json!({"id": "msg_a1", "role": "assistant", "parts": [
                {"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available", "input": {"path": "/tmp/x"},
                 "approval": {"id": "call_A", "approved": true}, "output": "Deleted /tmp/x"},
                {"type": "tool-send_email", "toolCallId": "call_B", "state": "output-denied", "input": {"to": "a@b.c", "subject": "hi"},
                 "approval": {"id": "call_B", "approved": false}},
                {"type": "text", "text": "Done."}
            ]}),
        ]),
    );
    let replay = one_http(&outs);
    assert_replay_get(&replay);
    let outs = b.respond(replay.id, HttpResponse::new(204, ""));
    let s = b.c.snapshot();
    assert_eq!(s.phase, Phase::Completed, "{:?}", s.error);
    assert!(s.suspension.is_none());
    assert!(
        s.dropped_drafts.is_empty(),
        "the draft the other tab sent is acknowledged, not dropped"
    );
    assert!(persists(&outs).contains(&None), "no pause: the key removed");
    // A record for the pause shown is taken in and loads nothing; one for another run loads.
    let mut b = H::loaded_paused();
    no_http(&b.tab_wrote(&stored));
    assert_eq!(
        b.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Approve)
    );
    let other =
        json!({"v": 1, "runId": "run_9", "callIds": ["call_C"], "drafts": {"call_C": "approve"}});
    let outs = b.tab_wrote(&other.to_string());
    let get = one_http(&outs);
    assert_history_get(&get);
    assert_eq!(persists(&outs), vec![], "nothing written before the load");
    // Still on its pause after the load: its own record is written again.
    let mut outs = b.respond(get.id, history(paused_history(true)));
    let replay = one_http(&outs);
    outs.extend(b.stream(replay.id, &replay_stream(true)));
    assert_eq!(b.card_ids(), vec!["call_A", "call_B"]);
    assert!(!b.c.take_missed_restore(), "the same pause");
    let again = written(&outs).expect("its record written again");
    assert!(again.contains(r#""call_A":"approve""#), "{again}");
}

/// A tab that cannot read the thread (its token expired) and is told of another tab's record for
/// another run, or of its removal, writes nothing back: the load that would catch it up failed.
/// Writing made the other tab load and write again, without end (a thousand loads in ten
/// seconds, the working tab's commands refused as `busy`).
#[test]
fn a_tab_whose_catch_up_load_fails_writes_nothing_back() {
    let other =
        json!({"v": 1, "runId": "run_9", "callIds": ["call_C"], "drafts": {"call_C": "approve"}})
            .to_string();
    for stored in [other.as_str(), ""] {
        let mut b = H::loaded_paused();
        b.c.approve("call_A").expect("approve");
        assert!(written(&b.drain()).is_some());
        for round in 0..3 {
            let outs = b.tab_wrote(stored);
            assert_eq!(persists(&outs), vec![], "{stored:?} round {round}");
            let get = one_http(&outs);
            assert_history_get(&get);
            let outs = b.respond(get.id, HttpResponse::new(401, "{}"));
            assert_eq!(
                persists(&outs),
                vec![],
                "{stored:?} round {round}: {outs:?}"
            );
            assert_eq!(
                b.c.snapshot().error.as_ref().map(|e| e.code),
                Some("unauthorized")
            );
            assert_eq!(persists(&b.drain()), vec![]);
        }
        // Its own decisions are written as ever.
        b.c.reject("call_B", None).expect("reject");
        assert!(written(&b.drain()).is_some_and(|w| w.contains("call_B")));
    }
}

/// Drafts that storage could not hold are not replaced by another tab's record for the pause
/// (see the Neuron test of the same name).
#[test]
fn drafts_storage_could_not_hold_are_not_replaced_by_another_tabs_record() {
    let mut a = H::loaded_paused();
    a.c.approve("call_A").expect("approve");
    let from_a = written(&a.drain()).expect("stored");
    a.c.reject("call_B", Some("no")).expect("reject");
    assert!(written(&a.drain()).is_some());
    a.c.persist_failed();
    let outs = a.tab_wrote(&from_a);
    assert_eq!(persists(&outs), vec![]);
    no_http(&outs);
    assert_eq!(
        a.c.snapshot().decisions.get("call_B"),
        Some(&Decision::Reject(Some("no".into())))
    );
    a.c.approve("call_B").expect("approve");
    assert!(written(&a.drain()).is_some());
    a.tab_wrote(&from_a);
    assert_eq!(a.c.snapshot().decisions.get("call_B"), None);
}

#[test]
fn a_tab_catches_up_when_another_tab_answers_part_of_the_pause() {
    // A and B show one pause. A approves call_A and sends that continuation alone; the server runs
    // it and the run waits on call_B. A's record now lists call_B alone.
    let (mut a, mut b) = (H::loaded_paused(), H::loaded_paused());
    a.c.approve("call_A").expect("approve");
    let from_a = written(&a.drain()).expect("A stores its draft");
    no_http(&b.tab_wrote(&from_a));
    let op = a.c.submit(a.now).expect("submit");
    let mut outs = a.drain();
    let post = one_http(&outs);
    assert_continuation(&post, "call_A", true);
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        approval_b(),
    ];
    outs.extend(a.stream(post.id, &sse(&c, true)));
    // (The driver reads storage again after a new pause: it holds A's own record.)
    if a.c.take_missed_restore() {
        outs.extend(a.tab_wrote(&from_a));
    }
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(a.card_ids(), vec!["call_B"]);
    let from_a = written(&outs).expect("A's record changes");
    let record: Value = serde_json::from_str(&from_a).expect("json");
    assert_eq!(record["callIds"], json!(["call_B"]), "{from_a}");

    // B still shows call_A open, which the record leaves out: B is behind and loads the thread,
    // writing nothing.
    let outs = b.tab_wrote(&from_a);
    assert_eq!(persists(&outs), vec![]);
    let get = one_http(&outs);
    assert_history_get(&get);
    let outs = b.respond(
        get.id,
        history(vec![
            user_ui("msg_u1", "delete /tmp/x"),
            json!({"id": "msg_a1", "role": "assistant", "parts": [
                {"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available", "input": {"path": "/tmp/x"},
                 "approval": {"id": "call_A", "approved": true}, "output": "Deleted /tmp/x"},
                {"type": "tool-send_email", "toolCallId": "call_B", "state": "approval-requested", "input": {"to": "a@b.c", "subject": "hi"},
                 "approval": {"id": "call_B"}}
            ]}),
        ]),
    );
    let replay = one_http(&outs);
    assert_replay_get(&replay);
    let mut outs = b.stream(replay.id, &waiting_on_b());
    if b.c.take_missed_restore() {
        outs.extend(b.tab_wrote(&from_a));
    }
    no_http(&outs);
    assert_eq!(b.card_ids(), vec!["call_B"]);
    let s = b.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval, "{:?}", s.error);
    assert!(s.dropped_drafts.is_empty(), "{:?}", s.dropped_drafts);
    for record in persists(&outs) {
        let record: Value = serde_json::from_str(&record.expect("a record")).expect("json");
        assert_eq!(
            record,
            serde_json::from_str::<Value>(&from_a).expect("json")
        );
    }
    // Caught up: the same record again loads nothing, and B's next draft writes a record that A
    // takes in without loading.
    no_http(&b.tab_wrote(&from_a));
    b.c.reject("call_B", Some("not now")).expect("reject");
    let from_b = written(&b.drain()).expect("B writes");
    let outs = a.tab_wrote(&from_b);
    assert_eq!(persists(&outs), vec![]);
    no_http(&outs);
    assert_eq!(
        a.c.snapshot().decisions.get("call_B"),
        Some(&Decision::Reject(Some("not now".into())))
    );
}

#[test]
fn stored_drafts_come_back_when_a_replay_lists_the_arguments_in_another_order() {
    // The stream gave send_email's args as {"subject", "to"}; the server keeps the run's snapshot
    // where its keys come back in another order (a jsonb column): the same call, the same drafts.
    drafts_come_back_when_a_replay_writes_the_arguments(r#""to":"a@b.c","subject":"hi""#);
}

#[test]
fn stored_drafts_come_back_when_a_replay_repeats_an_argument() {
    // Args with a repeated key are the args of its last entry (as `JSON.parse` reads them, and as
    // a jsonb column keeps them): the same call, whichever of the two forms the drafts were
    // stored with.
    drafts_come_back_when_a_replay_writes_the_arguments(
        r#""subject":"draft","to":"x@y.z","subject":"hi","to":"a@b.c""#,
    );
}

/// Drafts stored on the pause of `H::loaded_paused`, restored in a new client whose load and
/// replay write send_email's args `{"subject":"hi","to":"a@b.c"}` as `args` (an equal object).
fn drafts_come_back_when_a_replay_writes_the_arguments(args: &str) {
    let mut h = H::loaded_paused();
    h.c.approve("call_A").expect("approve");
    h.drain();
    h.c.reject("call_B", Some("no mail")).expect("reject");
    let stored = written(&h.drain()).expect("stored");
    let swap = |text: String| {
        let swapped = text.replace(r#""subject":"hi","to":"a@b.c""#, args);
        assert_ne!(swapped, text, "the args are in the text");
        swapped
    };
    let mut h = H::new();
    h.c.restore_drafts(&stored);
    h.drain();
    let (_, outs) = h.load();
    let get = one_http(&outs);
    let body = json!({"id": TID, "messages": paused_history(true)}).to_string();
    let outs = h.respond(get.id, HttpResponse::new(200, swap(body)));
    let replay = one_http(&outs);
    let stream = String::from_utf8(replay_stream(true)).expect("utf-8");
    let outs = h.stream(replay.id, swap(stream).as_bytes());
    assert_eq!(h.card_ids(), vec!["call_A", "call_B"]);
    let s = h.c.snapshot();
    assert_eq!(s.decisions.len(), 2, "both drafts restored");
    assert_eq!(
        s.decisions.get("call_B"),
        Some(&Decision::Reject(Some("no mail".into())))
    );
    assert!(s.dropped_drafts.is_empty());
    assert!(persists(&outs).iter().all(|p| p.is_some()));
}

/// After call_A's continuation ended without announcing call_B (`outs`: that step's outputs):
/// the client reads where the run stands, the history (call_A done, call_B still asking), then
/// the replay (call_B waiting). Returns call_B's continuation.
fn read_where_the_run_stands(h: &mut H, outs: &[Output]) -> HttpRequest {
    no_done(outs);
    let get = one_http(outs);
    assert_history_get(&get);
    let mut hist = paused_history(true);
    hist[1]["parts"][0] = json!({"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available",
        "input": {"path": "/tmp/x"}, "output": "Deleted /tmp/x", "approval": {"id": "call_A", "approved": true}});
    let outs = h.respond(get.id, history(hist));
    let replay = one_http(&outs);
    assert_replay_get(&replay);
    let outs = h.stream(replay.id, &waiting_on_b());
    one_http(&outs)
}

#[test]
fn a_continuation_that_does_not_announce_the_calls_still_waiting_is_followed_up() {
    // A server that ends A's continuation as a paused stream does (`[DONE]`, no `finish`) without
    // announcing call_B again: the client does not take that for the end of the run (which would
    // drop B's decision); it reads where the run stands, finds B waiting, and sends B's.
    let (mut h, op, first) = H::both_approved_and_submitted();
    assert_continuation(&first, "call_A", true);
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
    ];
    let outs = h.stream(first.id, &sse(&c, true));
    let second = read_where_the_run_stands(&mut h, &outs);
    assert_continuation(&second, "call_B", true);
    let outs = h.stream(second.id, &b_done_and_finished());
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert!(s.dropped_drafts.is_empty(), "{:?}", s.dropped_drafts);
    assert!(s.error.is_none(), "{:?}", s.error);

    // A continuation that ends with `finish` ends the run: nothing is read again, and B's
    // decision, not sent, is reported.
    let (mut h, op, first) = H::both_approved_and_submitted();
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
    ];
    c.extend(final_text("stopped there"));
    let outs = h.stream(first.id, &sse(&c, true));
    no_http(&outs);
    assert_eq!(done(&outs, op), Err(ErrorCode::Conflict));
    assert_eq!(h.phase(), Phase::Completed);
}

#[test]
fn a_native_approval_request_in_mastras_form_names_its_run() {
    // No `data-run` chunk and no `data-tool-call-approval`: the run id is in the approval id,
    // `<runId>::<toolCallId>`.
    let mut h = H::new();
    let (op, post) = h.send("delete /tmp/x");
    let mut c = vec![start("msg_a1")];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    c.push(json!({"type": "tool-approval-request", "approvalId": "run_1::call_A", "toolCallId": "call_A"}));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval, "{:?}", s.error);
    let card = &s.suspension.as_ref().expect("paused").tools[0];
    assert_eq!(card.run_id.as_deref(), Some("run_1"));
    assert_eq!(card.name, "delete_file");
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op2, post) = h.submit();
    // (No version known: none pinned.)
    assert_eq!(
        post.body.as_deref(),
        Some(
            r#"{"messages":[],"threadId":"thread_42","approval":{"runId":"run_1","toolCallId":"call_A","approved":true}}"#
        )
    );
    // The call runs: its part keeps the server's approval id and records the answer.
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
    ];
    c.extend(final_text("done"));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op2), Ok(()));
    let s = h.c.snapshot();
    let raw = sj(&s.messages.as_slice()[1].raw);
    assert_eq!(
        raw["parts"][0]["approval"],
        json!({"id": "run_1::call_A", "approved": true})
    );
    // An approval id of another form (or of another call) names no run: still an error.
    let mut h = H::new();
    let (_, post) = h.send("delete /tmp/x");
    let mut c = vec![start("msg_a1")];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    c.push(json!({"type": "tool-approval-request", "approvalId": "run_1::call_Z", "toolCallId": "call_A"}));
    h.stream(post.id, &sse(&c, true));
    assert_eq!(h.error_code(), Some("stream_error"));
    assert!(h.c.snapshot().suspension.is_none());
}

#[test]
fn done_ends_the_answer_though_the_server_holds_the_connection_open() {
    // A pause ends with `[DONE]`, and the server keeps the connection open after it: the cards
    // are ready at once (the request is let go), not after the idle timeout.
    let mut h = H::new();
    let (op, post) = h.send("delete /tmp/x");
    let mut outs = h.open(post.id, 200);
    outs.extend(h.feed(post.id, &sse(&pause_stream(true), true), 13));
    assert!(outs.contains(&Output::Cancel(post.id)), "{outs:?}");
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    assert_eq!(h.card_ids(), vec!["call_A", "call_B"]);
    // What the driver reports of that request afterwards (its end, or the abort) is ignored.
    assert!(h.end(post.id).is_empty());
    assert!(h.fail(post.id, TransportError::Aborted).is_empty());
    // A continuation's reply likewise.
    h.approve_both();
    let (op, first) = h.submit();
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        approval_b(),
    ];
    let mut outs = h.open(first.id, 200);
    // Nothing goes before the `[DONE]`.
    outs.extend(h.feed(first.id, &sse(&c, false), 11));
    no_http(&outs);
    outs.extend(h.feed(first.id, b"data: [DONE]\n\n", 100));
    assert!(outs.contains(&Output::Cancel(first.id)), "{outs:?}");
    let second = one_http(&outs);
    assert_continuation(&second, "call_B", true);
    let mut outs = h.open(second.id, 200);
    outs.extend(h.feed(second.id, &b_done_and_finished(), 11));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::Completed);
}

#[test]
fn a_reply_cut_short_on_a_message_the_thread_does_not_show_keeps_the_text() {
    // The server took the message (200) and the stream broke off; the thread does not show the
    // message (the server lost it): the text waits in `unsentText`, with the error (`timeout`
    // where the reply went silent for `timeoutMs`).
    for (cut, code) in [
        (
            Some(TransportError::Network("reset".into())),
            ErrorCode::Network,
        ),
        (Some(TransportError::Timeout), ErrorCode::Timeout),
        (None, ErrorCode::Network),
    ] {
        let mut h = H::with_history(1);
        let (op, post) = h.send("delete /tmp/x");
        h.open(post.id, 200);
        h.feed(post.id, &sse(&[start("msg_a1")], false), 13);
        let outs = match cut.clone() {
            Some(error) => h.fail(post.id, error),
            None => h.end(post.id),
        };
        no_done(&outs);
        let get = one_http(&outs);
        assert_history_get(&get);
        let outs = h.respond(get.id, history(vec![user_ui("m0", "old")]));
        let replay = one_http(&outs);
        assert_replay_get(&replay);
        let outs = h.respond(replay.id, HttpResponse::new(204, ""));
        assert_eq!(done(&outs, op), Err(code), "cut: {cut:?}");
        let s = h.c.snapshot();
        assert_eq!(s.phase, Phase::Error);
        assert_eq!(s.unsent_text.as_deref(), Some("delete /tmp/x"));
        assert!(s.can_send);
    }
}

#[test]
fn what_follows_done_is_not_read_and_a_data_run_names_the_run() {
    // Trailing bytes after `[DONE]` in the same read (a proxy's): not read, no error.
    let mut h = H::new();
    let (op, post) = h.send("delete /tmp/x");
    let mut bytes = sse(&pause_stream(false), true);
    bytes.extend_from_slice(b"data: {\"type\":\"text-del");
    let mut outs = h.open(post.id, 200);
    outs.extend(h.feed(post.id, &bytes, bytes.len()));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.error_code(), None);
    assert_eq!(h.card_ids(), vec!["call_A"]);
    // An approval id of the form `<x>::<toolCallId>` names the run only where no `data-run` does.
    let mut h = H::new();
    let (_, post) = h.send("delete /tmp/x");
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "data-run", "data": {"runId": "run_1", "agentVersionId": AGV, "threadId": TID}}),
    ];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    c.push(json!({"type": "tool-approval-request", "approvalId": "step_3::call_A", "toolCallId": "call_A"}));
    h.stream(post.id, &sse(&c, true));
    let s = h.c.snapshot();
    let card = &s.suspension.as_ref().expect("paused").tools[0];
    assert_eq!(card.run_id.as_deref(), Some("run_1"));
}

#[test]
fn a_reply_cut_short_whose_run_paused_counts_as_landed() {
    // The stream broke off after the 200; the history does not show the message yet (a server
    // that writes it when the run ends), but the replay brings back the pause the run came to:
    // the message landed, the cards show, nothing waits in `unsentText`.
    let mut h = H::with_history(1);
    let (op, post) = h.send("delete /tmp/x");
    h.open(post.id, 200);
    h.feed(post.id, &sse(&[start("msg_a1")], false), 13);
    let outs = h.fail(post.id, TransportError::Network("reset".into()));
    let get = one_http(&outs);
    let outs = h.respond(get.id, history(vec![user_ui("m0", "old")]));
    let replay = one_http(&outs);
    let outs = h.stream(replay.id, &replay_stream(false));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(s.unsent_text, None);
    assert_eq!(h.card_ids(), vec!["call_A"]);
}

#[test]
fn ai_sdk_chunks_a_server_sends_around_tools_are_read() {
    // The AI SDK's own chunks around tools (ai 7): a call the model made that could not be read
    // (`tool-input-error`), a tool that returned nothing (`output` left out), an approval its
    // policy decided by itself (`isAutomatic`: no card), and one that asks a person with a
    // `reason` (the card's headline).
    let mut h = H::new();
    let (op, post) = h.send("go");
    let c = vec![
        start("msg_a1"),
        json!({"type": "data-run", "data": {"runId": "run_1", "agentVersionId": AGV, "threadId": TID}}),
        json!({"type": "tool-input-start", "toolCallId": "c_bad", "toolName": "search"}),
        json!({"type": "tool-input-error", "toolCallId": "c_bad", "toolName": "search",
               "input": "{\"q\":", "errorText": "Invalid input for tool search"}),
        json!({"type": "tool-input-available", "toolCallId": "c_void", "toolName": "ping", "input": {}}),
        json!({"type": "tool-output-available", "toolCallId": "c_void"}),
        json!({"type": "tool-input-available", "toolCallId": "c_auto", "toolName": "read_file", "input": {"path": "a"}}),
        json!({"type": "tool-approval-request", "approvalId": "ap1", "toolCallId": "c_auto", "isAutomatic": true}),
        json!({"type": "tool-approval-response", "approvalId": "ap1", "approved": true}),
        json!({"type": "tool-output-available", "toolCallId": "c_auto", "output": "contents"}),
        json!({"type": "tool-input-available", "toolCallId": "c_no", "toolName": "rm", "input": {"path": "b"}}),
        json!({"type": "tool-approval-request", "approvalId": "ap3", "toolCallId": "c_no", "isAutomatic": true}),
        json!({"type": "tool-approval-response", "approvalId": "ap3", "approved": false}),
        json!({"type": "tool-output-denied", "toolCallId": "c_no"}),
        json!({"type": "tool-input-available", "toolCallId": "c_ask", "toolName": "delete_file", "input": {"path": "/etc"}}),
        json!({"type": "tool-approval-request", "approvalId": "ap2", "toolCallId": "c_ask", "reason": "Deletes /etc"}),
    ];
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.error, None, "no stream_error");
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(
        h.card_ids(),
        vec!["c_ask"],
        "the automatic approval is no card"
    );
    let card = &s.suspension.as_ref().expect("paused").tools[0];
    assert_eq!(card.approval_reason.as_deref(), Some("Deletes /etc"));
    let tools = &s.messages.as_slice().last().expect("the reply").tools;
    let by_id = |id: &str| tools.iter().find(|t| t.call_id == id).expect(id);
    assert_eq!(by_id("c_bad").status, ToolStatus::Error);
    assert_eq!(
        by_id("c_bad").result.as_ref().map(sj),
        Some(json!("Invalid input for tool search"))
    );
    assert_eq!(by_id("c_void").status, ToolStatus::Done);
    assert_eq!(by_id("c_auto").status, ToolStatus::Done);
    // Decided by the server's policy, as the AI SDK's history records them: approved, and the
    // automatic denial rejected; the parts carry the request's id and `isAutomatic`.
    use toolgate::approval::Approval;
    assert_eq!(by_id("c_auto").approval, Some(Approval::Approved));
    assert_eq!(by_id("c_no").approval, Some(Approval::Rejected));
    assert_eq!(by_id("c_no").status, ToolStatus::Denied);
    assert_eq!(by_id("c_void").approval, None);
    let reply = s.messages.as_slice().last().expect("the reply");
    let approval = |id: &str| raw_part(reply, id)["approval"].clone();
    assert_eq!(
        approval("c_auto"),
        json!({"id": "ap1", "approved": true, "isAutomatic": true})
    );
    assert_eq!(
        approval("c_no"),
        json!({"id": "ap3", "approved": false, "isAutomatic": true})
    );
}

#[test]
fn an_accepted_call_shows_decided_in_the_newest_message_that_holds_it_alone() {
    // An older message that shows the same callId pending (a run abandoned there) is another
    // call's: when the server accepts the new call's decision and its outcome has streamed, the
    // older message stays as the history has it, and the search for the call's message stops at
    // the newest message that holds it.
    let old = json!({"id": "msg_a0", "role": "assistant", "parts": [
        {"type": "tool-delete_file", "toolCallId": "call_A", "state": "approval-requested", "input": {"path": "/tmp/old"}, "approval": {"id": "call_A"}},
    ]});
    let mut h = H::with_messages(vec![
        user_ui("msg_u0", "delete /tmp/old"),
        old,
        user_ui("msg_u00", "never mind"),
        json!({"id": "msg_a00", "role": "assistant", "parts": [{"type": "text", "text": "ok"}]}),
    ]);
    let (_, post) = h.send("delete /tmp/x");
    h.stream(post.id, &sse(&pause_stream(false), true));
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (sub, cont) = h.submit();
    assert_continuation(&cont, "call_A", true);
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
    ];
    c.extend(final_text("all done"));
    let outs = h.stream(cont.id, &sse(&c, true));
    assert_eq!(done(&outs, sub), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    let status = |id: &str| {
        let m = s
            .messages
            .as_slice()
            .iter()
            .find(|m| m.id.as_deref() == Some(id))
            .expect(id);
        let t = m
            .tools
            .iter()
            .find(|t| t.call_id == "call_A")
            .expect("call_A");
        (t.status, raw_part(m, "call_A")["state"].clone())
    };
    assert_eq!(
        status("msg_a0"),
        (ToolStatus::Pending, json!("approval-requested"))
    );
    assert_eq!(
        status("msg_a1"),
        (ToolStatus::Done, json!("output-available"))
    );
}

#[test]
fn a_decision_the_server_accepted_shows_before_the_call_runs() {
    // A server that runs the calls once every one is answered (Mastra, an AI SDK server) answers
    // A's continuation by announcing B again, with no outcome for A: A shows as decided in its
    // message (status and approval, the part `approval-responded`), as the history records it,
    // not as pending; its outcome, when it comes, settles it.
    for approve in [true, false] {
        let mut h = H::a_decided(approve, "not that one");
        h.c.approve("call_B").expect("approve");
        h.drain();
        let (op, first) = h.submit();
        assert_continuation(&first, "call_A", approve);
        let outs = h.stream(first.id, &waiting_on_b());
        let second = one_http(&outs);
        assert_continuation(&second, "call_B", true);
        let s = h.c.snapshot();
        let msg = s.messages.as_slice().last().expect("the paused message");
        let a = msg.tools.iter().find(|t| t.call_id == "call_A").expect("A");
        let b = msg.tools.iter().find(|t| t.call_id == "call_B").expect("B");
        use toolgate::approval::Approval;
        if approve {
            assert_eq!(
                (a.status, a.approval),
                (ToolStatus::Approved, Some(Approval::Approved))
            );
            assert_eq!(a.reject_reason, None);
        } else {
            assert_eq!(
                (a.status, a.approval),
                (ToolStatus::Rejected, Some(Approval::Rejected))
            );
            assert_eq!(a.reject_reason.as_deref(), Some("not that one"));
        }
        assert_eq!(
            (b.status, b.approval),
            (ToolStatus::Pending, Some(Approval::Pending))
        );
        let part = raw_part(msg, "call_A");
        assert_eq!(part["state"], "approval-responded");
        assert_eq!(part["approval"]["approved"], approve);
        // Both outcomes with B's answer.
        let a_outcome = if approve {
            json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"})
        } else {
            json!({"type": "tool-output-denied", "toolCallId": "call_A"})
        };
        let mut c = vec![
            start("msg_a1"),
            a_outcome,
            json!({"type": "tool-output-available", "toolCallId": "call_B", "output": "sent"}),
        ];
        c.extend(final_text("all done"));
        let outs = h.stream(second.id, &sse(&c, true));
        assert_eq!(done(&outs, op), Ok(()));
        let s = h.c.snapshot();
        let msg = s.messages.as_slice().last().expect("the reply");
        let status: Vec<ToolStatus> = msg.tools.iter().map(|t| t.status).collect();
        let a_status = if approve {
            ToolStatus::Done
        } else {
            ToolStatus::Denied
        };
        assert_eq!(status, vec![a_status, ToolStatus::Done]);
    }
}

#[test]
fn an_approved_call_that_fails_shows_as_approved() {
    // The continuation of an approved call that ran and failed (`tool-output-error`): the call
    // was approved, in the message's view and in its wire form, as the AI SDK's history records
    // it (`approval.approved: true` on the `output-error` part); it is no longer pending.
    let (mut h, op, post) = H::a_approved_and_submitted();
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-error", "toolCallId": "call_A", "errorText": "EBUSY"}),
    ];
    c.extend(final_text("It failed."));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    let msg = s.messages.as_slice().last().expect("the reply");
    let tool = msg
        .tools
        .iter()
        .find(|t| t.call_id == "call_A")
        .expect("call_A");
    assert_eq!(tool.status, ToolStatus::Error);
    assert_eq!(tool.approval, Some(toolgate::approval::Approval::Approved));
    let part = raw_part(msg, "call_A");
    assert_eq!(part["state"], "output-error");
    assert_eq!(part["approval"]["approved"], true);
}

#[test]
fn a_rejected_call_whose_outcome_is_a_result_stays_rejected() {
    // A server may record a declined call with a result of its own rather than `output-denied`:
    // LangChain's human-in-the-loop middleware answers it with an error tool message (the
    // rejection's text), which `@ai-sdk/langchain` streams as `tool-output-error`; another may
    // stream the decline as a plain output. Either way the person rejected it and the server took
    // that: the call shows rejected, in the view and in its wire form, not approved. Streamed and
    // collected.
    let collected = |chunks: &[Value]| {
        HttpResponse::new(
            200,
            json!({"chunks": chunks, "finishReason": null}).to_string(),
        )
    };
    for collect in [false, true] {
        for outcome in [
            json!({"type": "tool-output-error", "toolCallId": "call_A", "errorText": "The person declined."}),
            json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Not run: declined"}),
        ] {
            let mut h = if collect {
                let mut cfg = config();
                cfg.transport = Transport::Collect;
                cfg.agent_id = Some("agent_1".into());
                let mut h = H::with(cfg);
                let (op, post) = h.send("delete /tmp/x");
                let outs = h.respond(post.id, collected(&pause_stream(false)));
                assert_eq!(done(&outs, op), Ok(()));
                h
            } else {
                H::paused(false)
            };
            assert_eq!(h.card_ids(), vec!["call_A"]);
            h.c.reject("call_A", Some("not now")).expect("reject");
            h.drain();
            let (op, post) = h.submit();
            let body = post.body.as_deref().expect("a body");
            assert!(
                body.contains(r#""toolCallId":"call_A","approved":false"#),
                "{body}"
            );
            let mut c = vec![start("msg_a1"), outcome.clone()];
            c.extend(final_text("Left it."));
            let outs = if collect {
                h.respond(post.id, collected(&c))
            } else {
                h.stream(post.id, &sse(&c, true))
            };
            let what = format!("{outcome} (collected: {collect})");
            assert_eq!(done(&outs, op), Ok(()), "{what}");
            let s = h.c.snapshot();
            assert_eq!(s.phase, Phase::Completed, "{what}");
            let msg = s.messages.as_slice().last().expect("the reply");
            let tool = msg
                .tools
                .iter()
                .find(|t| t.call_id == "call_A")
                .expect("call_A");
            assert_eq!(
                tool.approval,
                Some(toolgate::approval::Approval::Rejected),
                "{what}"
            );
            assert_eq!(tool.reject_reason.as_deref(), Some("not now"), "{what}");
            let error = outcome["type"] == "tool-output-error";
            let status = if error {
                ToolStatus::Error
            } else {
                ToolStatus::Done
            };
            assert_eq!(tool.status, status, "{what}");
            let part = raw_part(msg, "call_A");
            assert_eq!(part["approval"]["approved"], false, "{what}");
        }
    }
}

#[test]
fn a_call_whose_outcome_follows_its_approval_in_the_stream_is_no_card() {
    // The approval request, then the call's outcome in the same stream (the server decided it, or
    // ran it, after all): the call is settled, no card asks for it and the composer is open.
    for outcome in [
        json!({"type": "tool-output-denied", "toolCallId": "call_A"}),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        json!({"type": "tool-output-error", "toolCallId": "call_A", "errorText": "no such file"}),
    ] {
        let mut h = H::new();
        let (op, post) = h.send("delete /tmp/x");
        let mut c = pause_stream(false);
        c.push(outcome.clone());
        c.extend(final_text("OK, that is settled."));
        let outs = h.stream(post.id, &sse(&c, true));
        assert_eq!(done(&outs, op), Ok(()), "{outcome}");
        let s = h.c.snapshot();
        assert_eq!(s.phase, Phase::Completed, "{outcome}");
        assert!(s.suspension.is_none(), "{outcome}");
        assert!(h.card_ids().is_empty(), "{outcome}");
        assert!(s.can_send);
    }
    // An outcome before the request (a call asked again) leaves the card.
    let mut h = H::new();
    let (op, post) = h.send("delete /tmp/x");
    let mut c = vec![start("msg_a1")];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    c.push(json!({"type": "tool-output-error", "toolCallId": "call_A", "errorText": "busy"}));
    c.push(approval_a());
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.card_ids(), vec!["call_A"]);
}

#[test]
fn an_abort_chunk_on_a_continuation_with_calls_waiting_is_followed_up() {
    // `abort` ends the stream, not the run: B still waits, so where the run stands is read (as
    // after a stream that ends paused without announcing it) and B's decision goes out.
    let (mut h, op, first) = H::both_approved_and_submitted();
    assert_continuation(&first, "call_A", true);
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        json!({"type": "abort", "reason": "stopped"}),
    ];
    let outs = h.stream(first.id, &sse(&c, true));
    no_done(&outs);
    let get = one_http(&outs);
    assert_history_get(&get);
    let outs = h.respond(get.id, history(paused_history(true)));
    let replay = one_http(&outs);
    assert_replay_get(&replay);
    let outs = h.stream(replay.id, &waiting_on_b());
    let second = one_http(&outs);
    assert_continuation(&second, "call_B", true);
    let outs = h.stream(second.id, &b_done_and_finished());
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert!(s.dropped_drafts.is_empty(), "{:?}", s.dropped_drafts);
}

#[test]
fn an_error_chunk_in_a_replay_is_shown_not_read_as_an_abandoned_run() {
    // A load whose replay reports that the paused run failed: the error is shown (it was
    // dropped, and after a dropped continuation the run was called abandoned).
    let mut h = H::new();
    let (op, get) = h.load();
    let get = one_http(&get);
    let outs = h.respond(get.id, history(paused_history(true)));
    let replay = one_http(&outs);
    let c = vec![
        start("msg_a1"),
        json!({"type": "error", "errorText": "the paused run failed: tool backend down"}),
    ];
    let outs = h.stream(replay.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    let e = s.error.as_ref().expect("the replay's error is shown");
    assert_eq!(
        (e.code, e.message.as_str()),
        ("stream_error", "the paused run failed: tool backend down")
    );
    assert_eq!(s.phase, Phase::Error);
    assert!(s.can_send);

    // After a continuation that broke off: the replay's error, not "abandoned".
    let mut h = H::paused(false);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op, first) = h.submit();
    h.open(first.id, 200);
    h.feed(first.id, &sse(&[start("msg_a1")], false), 7);
    let outs = h.fail(first.id, TransportError::Network("reset".into()));
    let get = one_http(&outs);
    let outs = h.respond(get.id, history(paused_history(false)));
    let replay = one_http(&outs);
    let outs = h.stream(replay.id, &sse(&c, true));
    let s = h.c.snapshot();
    let e = s.error.as_ref().expect("an error");
    assert_eq!(e.code, "stream_error", "{e:?}");
    assert_ne!(s.phase, Phase::Expired);
    let _ = (op, outs);
}

#[test]
fn an_approval_request_for_a_call_never_shown_is_no_card() {
    // The AI SDK's `tool-approval-request` names only the call; one the stream and the thread
    // never showed gives nothing to put before the person: no card, a stream_error.
    let mut h = H::new();
    let (op, post) = h.send("hi");
    let c = vec![
        start("msg_a1"),
        json!({"type": "data-run", "data": {"runId": "run_1", "agentVersionId": AGV}}),
        json!({"type": "tool-approval-request", "approvalId": "a1", "toolCallId": "ghost"}),
        json!({"type": "finish", "finishReason": "tool-calls"}),
    ];
    let outs = h.stream(post.id, &sse(&c, true));
    let _ = done(&outs, op);
    let s = h.c.snapshot();
    assert!(h.card_ids().is_empty());
    assert!(s.suspension.is_none());
    assert_eq!(s.error.as_ref().map(|e| e.code), Some("stream_error"));
}

#[test]
fn nothing_after_an_error_chunk_is_applied() {
    let mut h = H::new();
    let (op, post) = h.send("hi");
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "text-start", "id": "t"}),
        json!({"type": "text-delta", "id": "t", "delta": "Partial answer"}),
        json!({"type": "error", "errorText": "boom"}),
        json!({"type": "text-delta", "id": "t", "delta": " MORE"}),
    ];
    c.extend(pause_stream(false));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Err(ErrorCode::StreamError));
    let s = h.c.snapshot();
    assert_eq!(s.messages.as_slice()[1].text, "Partial answer");
    assert!(h.card_ids().is_empty());
    assert_eq!(s.phase, Phase::Error);
}

#[test]
fn the_finish_reason_of_the_last_answer_is_in_the_snapshot() {
    // An answer cut short by a length limit reads as one, not as a whole answer; a new command
    // clears it; Neuron never has one.
    let mut h = H::new();
    let (op, post) = h.send("tell me everything");
    let mut c = vec![start("msg_a1")];
    c.extend(text("t", &["A long answer that"]));
    c.push(json!({"type": "finish", "finishReason": "length"}));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert_eq!(s.finish_reason.as_deref(), Some("length"));
    assert_eq!(sj(&s.head())["finishReason"], json!("length"));
    let (op, post) = h.send("hi");
    assert_eq!(
        h.c.snapshot().finish_reason,
        None,
        "cleared by the new command"
    );
    let outs = h.stream(post.id, &sse(&plain_reply(), true));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.c.snapshot().finish_reason.as_deref(), Some("stop"));
    // A stream without a `finish` (a pause) has none.
    let mut h = H::paused(false);
    assert_eq!(h.c.snapshot().finish_reason, None);
    // The collect transport: the `finish` chunk among its chunks (the output's own top-level
    // `finishReason` is not read).
    let mut cfg = config();
    cfg.transport = Transport::Collect;
    cfg.agent_id = Some("agent_1".into());
    let mut h2 = H::with(cfg);
    let op = h2.c.send(h2.now, "hi").expect("send");
    let post = one_http(&h2.drain());
    let mut c = vec![start("msg_a1")];
    c.extend(text("t", &["Filtered"]));
    c.push(json!({"type": "finish", "finishReason": "content-filter"}));
    let outs = h2.respond(
        post.id,
        HttpResponse::new(
            200,
            json!({"chunks": c, "finishReason": "stop"}).to_string(),
        ),
    );
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(
        h2.c.snapshot().finish_reason.as_deref(),
        Some("content-filter")
    );
    h.drain();
}

#[test]
fn a_message_that_landed_on_a_run_that_failed_is_the_run_s_error() {
    // The POST gets a 502; the check finds the message in the thread, and the replay says its
    // run failed: the send rejects with that error, as on an unbroken stream.
    let mut h = H::new();
    let (op, post) = h.send("hi");
    let outs = h.respond(
        post.id,
        HttpResponse::new(502, r#"{"error":"bad gateway"}"#),
    );
    let get = one_http(&outs);
    assert_history_get(&get);
    let outs = h.respond(get.id, history(vec![user_ui("msg_u1", "hi")]));
    let replay = one_http(&outs);
    let c = vec![
        start("msg_a1"),
        json!({"type": "error", "errorText": "model overloaded"}),
    ];
    let outs = h.stream(replay.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Err(ErrorCode::StreamError));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Error);
    assert_eq!(s.unsent_text, None, "the message landed");
}

/// Mastra announces an approved call that resumes with its approval chunk again, marked
/// `resumed: true` (`@mastra/ai-sdk`'s `tool-call-resumed`): no request, the server took the call
/// up. Read as a request it opened the card again, and a stream that ended there sent the same
/// decision a second time.
#[test]
fn a_resumed_approval_chunk_is_no_new_request() {
    let mut resumed = approval_a();
    resumed["data"]["resumed"] = json!(true);
    resumed["data"]["state"] = json!("data-tool-call-approval");
    // The call's outcome follows in the same stream, or the stream stops right after the notice.
    for outcome in [true, false] {
        let mut h = H::paused(false);
        h.c.approve("call_A").expect("approve");
        h.drain();
        let (op, post) = h.submit();
        assert_continuation(&post, "call_A", true);
        let mut c = vec![start("msg_a1"), resumed.clone()];
        if outcome {
            c.push(json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}));
            c.extend(final_text("deleted"));
        } else {
            c.push(json!({"type": "abort"}));
        }
        let mut outs = h.stream(post.id, &sse(&c, true));
        // Whatever the client reads to find where the run stands, it never answers call_A again.
        for _ in 0..4 {
            let Some(r) = https(&outs).into_iter().next() else {
                break;
            };
            assert_ne!(r.method, Method::Post, "a second decision went out: {r:?}");
            outs = h.respond(r.id, HttpResponse::new(204, ""));
        }
        assert!(h.card_ids().is_empty(), "{outcome}: {:?}", h.card_ids());
        if outcome {
            assert_eq!(done(&outs, op), Ok(()));
            assert_eq!(h.phase(), Phase::Completed);
        }
    }
}

/// The AI SDK from 7.0.82 keeps a request's reason as `approval.requestReason` and the approver's
/// answer as `approval.reason`: the card's headline is the former, never the approver's answer
/// (which is not read: a rejection's note comes from the drafts' record).
/// (Sidenet's own history keeps the request's reason as `reason`: see the reload test above.)
#[test]
fn a_history_with_request_reasons_reads_both_reasons() {
    let h = H::with_messages(vec![
        user_ui("msg_u1", "email everyone"),
        json!({"id": "msg_a1", "role": "assistant", "parts": [
            {"type": "tool-send_email", "toolCallId": "c0", "state": "output-denied", "input": {"to": "all"},
             "approval": {"id": "ap0", "approved": false, "requestReason": "Email reaches 4,000 customers",
                          "reason": "Not to everyone!"}},
            {"type": "tool-send_email", "toolCallId": "c1", "state": "approval-requested", "input": {"to": "one"},
             "approval": {"id": "ap1", "requestReason": "Email reaches one customer"}}
        ]}),
    ]);
    let s = h.c.snapshot();
    let tools = &s.messages.as_slice()[1].tools;
    assert_eq!(
        tools[0].approval_reason.as_deref(),
        Some("Email reaches 4,000 customers")
    );
    assert_eq!(tools[0].reject_reason, None);
    assert_eq!(
        tools[1].approval_reason.as_deref(),
        Some("Email reaches one customer")
    );
    assert_eq!(tools[1].reject_reason, None);
}

/// A record read back that lists a call the pause no longer holds open (this tab's own, written
/// while the server took the call, read again after the pause that followed) is behind: this tab
/// writes its own over it. It took the record in quietly instead, so storage kept listing the
/// answered call and another tab never caught up (its card stayed open).
#[test]
fn a_record_that_lists_an_answered_call_is_written_over() {
    let mut h = H::loaded_paused();
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (_, first) = h.submit();
    let taken = written(&h.open(first.id, 200)).expect("the record, call_A settled");
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        approval_b(),
    ];
    h.feed(first.id, &sse(&c, true), 11);
    h.end(first.id);
    assert_eq!(h.card_ids(), vec!["call_B"]);
    let outs = h.tab_wrote(&taken);
    let own = written(&outs).expect("its own record written over the one behind");
    let v: Value = serde_json::from_str(&own).expect("json");
    assert_eq!(v["callIds"], json!(["call_B"]), "{own}");
    assert!(v.get("settled").is_none(), "{own}");
}

// ---------------------------------------------------------------------------------------------
// Drafts across tabs, call by call

/// Tab 1 approves call_A and submits it; its reply opens (the server took call_A) and the record
/// lists call_A as settled. Tab 2 takes the record in: it must not send call_A's continuation
/// again when the person there decides call_B and submits.
#[test]
fn a_call_settled_in_the_record_is_not_sent_again_by_another_tab() {
    let mut h = H::paused(true);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (_, first) = h.submit();
    assert_continuation(&first, "call_A", true);
    let record = written(&h.open(first.id, 200)).expect("the record, call_A settled");
    assert!(record.contains(r#""settled":["call_A"]"#), "{record}");

    let mut other = H::loaded_paused();
    let outs = other.tab_wrote(&record);
    no_http(&outs);
    other.c.reject("call_B", Some("no")).expect("reject");
    other.drain();
    let (_, post) = other.submit();
    assert!(
        !post
            .body
            .as_deref()
            .unwrap_or_default()
            .contains(r#""toolCallId":"call_A""#),
        "call_A's continuation sent a second time: {:?}",
        post.body
    );
}

/// Tab 1 submits both calls: two continuations, one after the other. Tab 2, on the same pause,
/// follows the records tab 1 writes. None that tab 1 writes while a reply streams makes tab 2
/// load the run mid-reply (on a server that writes the history at the run's end, it would find
/// the run neither paused nor over): it catches up once the reply has ended.
#[test]
fn other_tab_does_not_load_mid_reply_of_the_second_continuation() {
    let mut h = H::loaded_paused();
    let mut other = H::loaded_paused();
    h.c.approve("call_A").expect("approve");
    let r = written(&h.drain()).expect("record");
    no_http(&other.tab_wrote(&r));
    h.c.reject("call_B", None).expect("reject");
    let r = written(&h.drain()).expect("record");
    no_http(&other.tab_wrote(&r));
    let (_, first) = h.submit();
    let mut records = Vec::new();
    records.extend(persists(&h.open(first.id, 200)));
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        approval_b(),
    ];
    records.extend(persists(&h.feed(first.id, &sse(&c, false), 11)));
    let outs = h.end(first.id);
    records.extend(persists(&outs));
    let second = one_http(&outs);
    assert_continuation(&second, "call_B", false);
    records.extend(persists(&h.open(second.id, 200)));
    for (i, r) in records.iter().enumerate() {
        let outs = other.tab_wrote(r.as_deref().unwrap_or_default());
        assert!(
            https(&outs).is_empty(),
            "record {i} made the other tab load while tab 1's reply streams: {r:?}"
        );
    }
}

/// Three tabs on the pause of call_A and call_B: tab 1 approved call_A and submitted it, its reply
/// is open, and tabs 2 and 3 took in the record it wrote then (call_A settled). The tabs, and tab
/// 1's continuation.
fn three_tabs_tab_1_streaming_call_a() -> ([H; 3], HttpRequest) {
    let mut a = H::loaded_paused();
    let mut b = H::loaded_paused();
    let mut c = H::loaded_paused();
    a.c.approve("call_A").expect("approve");
    a.drain();
    let (_, first) = a.submit();
    assert_continuation(&first, "call_A", true);
    let record = written(&a.open(first.id, 200)).expect("the record, call_A settled");
    assert!(record.contains(r#""settled":["call_A"]"#), "{record}");
    no_http(&b.tab_wrote(&record));
    no_http(&c.tab_wrote(&record));
    ([a, b, c], first)
}

/// Tab 1 approves call_A and submits; its reply opens and its record lists call_A as settled.
/// Tabs 2 and 3 take that record in. While the reply streams, the person in tab 3 rejects call_B:
/// tab 3's record must still say that call_A's reply is streaming, or tab 2 reads it as the
/// reply's end and loads the run mid-reply (and drops call_A's settled state). Once tab 1 writes
/// the record of its reply's end, both catch up.
#[test]
fn a_third_tabs_record_mid_reply_does_not_make_the_other_tab_load() {
    let ([mut a, mut b, mut c], first) = three_tabs_tab_1_streaming_call_a();

    c.c.reject("call_B", Some("not now")).expect("reject");
    let from_c = written(&c.drain()).expect("tab 3 stores its rejection");
    let v: Value = serde_json::from_str(&from_c).expect("json");
    assert_eq!(v["settled"], json!(["call_A"]), "{from_c}");
    let outs = b.tab_wrote(&from_c);
    assert!(
        https(&outs).is_empty(),
        "tab 3's record made tab 2 load while tab 1's reply streams: {from_c}"
    );
    // Tab 2 still shows call_A as taken (no draft to change) and has tab 3's rejection.
    assert_eq!(
        err_code(b.c.approve("call_A")),
        ErrorCode::InvalidState,
        "call_A is taken elsewhere"
    );
    let snap = sj(b.c.snapshot());
    assert!(snap.to_string().contains("not now"), "{snap}");
    // Its record written back (if any) says the same.
    if let Some(back) = written(&outs) {
        assert!(back.contains(r#""settled":["call_A"]"#), "{back}");
    }

    // Tab 1's reply ends on a new pause: tabs 2 and 3 catch up by a load.
    let s = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        approval_b(),
    ];
    a.feed(first.id, &sse(&s, true), 11);
    let outs = a.end(first.id);
    assert!(
        written(&outs).is_none(),
        "a new pause: storage is read first"
    );
    assert!(
        a.c.take_missed_restore(),
        "storage read again at the new pause"
    );
    // It takes tab 3's rejection of call_B in, and writes its own record over the one that
    // lists call_A (no longer open there).
    let outs = a.tab_wrote(&from_c);
    let last = written(&outs).expect("the record of the reply's end");
    assert!(!last.contains("settled"), "{last}");
    assert!(last.contains("not now"), "{last}");
    for (name, t) in [("tab 2", &mut b), ("tab 3", &mut c)] {
        let outs = t.tab_wrote(&last);
        assert_eq!(
            https(&outs).len(),
            1,
            "{name} catches up once the reply ended"
        );
    }
}

/// As above, but tab 2 sends call_B's continuation itself while tab 1's reply of call_A streams:
/// its record, written as its own reply opens, lists both calls as settled. Tab 3 keeps call_A as
/// taken (it read call_B alone from that record before, and could send call_A a second time).
#[test]
fn a_tab_sending_its_own_continuation_keeps_another_tabs_call_listed_as_taken() {
    let ([_a, mut b, mut c], _) = three_tabs_tab_1_streaming_call_a();

    b.c.reject("call_B", None).expect("reject");
    b.drain();
    let (_, second) = b.submit();
    assert_continuation(&second, "call_B", false);
    let from_b = written(&b.open(second.id, 200)).expect("tab 2's record, its reply open");
    let v: Value = serde_json::from_str(&from_b).expect("json");
    assert_eq!(v["settled"], json!(["call_B", "call_A"]), "{from_b}");
    let outs = c.tab_wrote(&from_b);
    assert!(https(&outs).is_empty(), "tab 3 loaded mid-reply: {from_b}");
    assert_eq!(
        err_code(c.c.approve("call_A")),
        ErrorCode::InvalidState,
        "call_A is still taken in tab 1"
    );
    assert_eq!(
        err_code(c.c.approve("call_B")),
        ErrorCode::InvalidState,
        "call_B is taken in tab 2"
    );
}
/// One `localStorage` shared by three tabs, as a browser keeps it: a write that changes the value
/// (a removal of a key that is there) fires one `storage` event in each other tab, which reads the
/// value storage holds when it handles it; the writing tab gets none. Also the request each tab
/// has out, and the driver's read of storage after a step that asks for it (`take_missed_restore`).
#[derive(Default)]
struct Tabs {
    value: String,
    events: [usize; 3],
    out: [Option<HttpRequest>; 3],
}

impl Tabs {
    /// What tab `t`'s step did (`outs`): its writes, its request; then its reads of storage.
    fn after(&mut self, t: usize, h: &mut H, mut outs: Vec<Output>) -> Vec<Output> {
        let mut all = Vec::new();
        loop {
            for o in &outs {
                match o {
                    Output::Http(r) => self.out[t] = Some(r.clone()),
                    Output::Persist { value, .. } => {
                        let v = value.clone().unwrap_or_default();
                        if v != self.value {
                            self.value = v;
                            for (i, n) in self.events.iter_mut().enumerate() {
                                *n += usize::from(i != t);
                            }
                        }
                    }
                    _ => {}
                }
            }
            all.append(&mut outs);
            if !h.c.take_missed_restore() {
                return all;
            }
            let value = self.value.clone();
            outs = h.tab_wrote(&value);
        }
    }

    /// Tab `t` handles the storage events it has (each reads what storage holds then).
    fn events(&mut self, t: usize, h: &mut H) -> Vec<Output> {
        let mut all = Vec::new();
        while self.events[t] > 0 {
            self.events[t] -= 1;
            let value = self.value.clone();
            let outs = h.tab_wrote(&value);
            all.extend(self.after(t, h, outs));
        }
        all
    }

    /// The server answers tab `t`'s request out (a load: `history`, then `replay`, `None` for 204).
    fn answer_load(&mut self, t: usize, h: &mut H, history_: Vec<Value>, replay: Option<Vec<u8>>) {
        let get = self.out[t].take().expect("a load out");
        assert_history_get(&get);
        let outs = h.respond(get.id, history(history_));
        self.after(t, h, outs);
        let get = self.out[t].take().expect("the replay out");
        assert_replay_get(&get);
        let outs = match replay {
            Some(bytes) => h.stream(get.id, &bytes),
            None => h.respond(get.id, HttpResponse::new(204, "")),
        };
        self.after(t, h, outs);
    }
}

/// The thread once call_A ran, paused on call_B.
fn a_ran_paused_on_b() -> Vec<Value> {
    vec![
        user_ui("msg_u1", "delete /tmp/x"),
        json!({"id": "msg_a1", "role": "assistant", "parts": [
            {"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available", "input": {"path": "/tmp/x"},
             "approval": {"id": "call_A", "approved": true}, "output": "Deleted /tmp/x"},
            {"type": "tool-send_email", "toolCallId": "call_B", "state": "approval-requested", "input": {"to": "a@b.c", "subject": "hi"},
             "approval": {"id": "call_B"}}
        ]}),
    ]
}

/// The thread once both calls ran and the run finished.
fn both_ran_and_finished() -> Vec<Value> {
    vec![
        user_ui("msg_u1", "delete /tmp/x"),
        json!({"id": "msg_a1", "role": "assistant", "parts": [
            {"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available", "input": {"path": "/tmp/x"},
             "approval": {"id": "call_A", "approved": true}, "output": "Deleted /tmp/x"},
            {"type": "tool-send_email", "toolCallId": "call_B", "state": "output-available", "input": {"to": "a@b.c", "subject": "hi"},
             "approval": {"id": "call_B", "approved": true}, "output": "sent"},
            {"type": "text", "text": "all done"}
        ]}),
    ]
}

/// Found by the three-tab soak (two tabs left on a pause that was over). Tab 1 submits call_A and
/// call_B: call_A's reply ends on the pause of call_B alone, a new pause, for which storage is to
/// be read again once no command is in flight; but call_B's continuation goes out at once. Tabs 2
/// and 3 (open on the thread, nothing paused there yet) take tab 1's record in, catch up by a load
/// that finds the pause of call_B, and tab 2 writes its record for it: tab 1, busy, misses it.
/// call_B's reply opens: tab 1's record lists call_B as settled, and tabs 2 and 3 wait for the
/// record written once that reply ends. It ends the run; tab 1, told that another tab saved
/// meanwhile, writes nothing in that step, and reads storage again: its own record of the reply,
/// which it must not leave there (it read it as if at the new pause, long over, and wrote
/// nothing). Tabs 2 and 3 were left on call_B, shown as taken, with nothing to come.
#[test]
fn a_continuation_chain_ending_the_run_leaves_no_tab_on_its_settled_record() {
    let mut s = Tabs::default();
    let (mut a, mut b, mut c) = (H::new(), H::new(), H::new());
    // Tabs 2 and 3: open on the thread before the run paused.
    for (t, h) in [(1, &mut b), (2, &mut c)] {
        let (_, outs) = h.load();
        s.after(t, h, outs);
        s.answer_load(t, h, vec![], None);
        assert!(h.c.snapshot().suspension.is_none());
    }
    // Tab 1 shows the pause, approves both calls and submits them.
    let (_, outs) = a.load();
    s.after(0, &mut a, outs);
    s.answer_load(0, &mut a, paused_history(true), Some(replay_stream(true)));
    for id in ["call_A", "call_B"] {
        a.c.approve(id).expect("approve");
        let outs = a.drain();
        s.after(0, &mut a, outs);
    }
    a.c.submit(a.now).expect("submit");
    let outs = a.drain();
    s.after(0, &mut a, outs);
    let first = s.out[0].take().expect("call_A's continuation");
    assert_continuation(&first, "call_A", true);
    // (The server runs call_A and pauses on call_B.) The reply opens: call_A settled.
    let outs = a.open(first.id, 200);
    s.after(0, &mut a, outs);
    assert!(s.value.contains(r#""settled":["call_A"]"#), "{}", s.value);
    let c1 = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        approval_b(),
    ];
    let mut outs = a.feed(first.id, &sse(&c1, true), 11);
    outs.extend(a.end(first.id));
    s.after(0, &mut a, outs);
    let second = s.out[0].take().expect("call_B's continuation, at once");
    assert_continuation(&second, "call_B", true);
    assert_eq!(a.card_ids(), vec!["call_B"]);

    // Tabs 2 and 3 catch up (the record of a pause they do not show) and find call_B waiting.
    for (t, h) in [(1, &mut b), (2, &mut c)] {
        s.events(t, h);
        s.answer_load(t, h, a_ran_paused_on_b(), Some(waiting_on_b()));
        s.events(t, h);
        assert!(s.out[t].is_none());
        assert_eq!(h.card_ids(), vec!["call_B"]);
    }
    // Tab 1 hears of tab 2's record while call_B's continuation is out.
    assert!(s.events[0] > 0, "tab 2 wrote its record for call_B");
    s.events(0, &mut a);
    // (The server runs call_B; the run finishes.) The reply opens: call_B settled.
    let outs = a.open(second.id, 200);
    s.after(0, &mut a, outs);
    assert!(s.value.contains(r#""settled":["call_B"]"#), "{}", s.value);
    for (t, h) in [(1, &mut b), (2, &mut c)] {
        let outs = s.events(t, h);
        no_http(&outs);
        let snap = h.c.snapshot();
        let card = &snap.suspension.as_ref().expect("paused").tools[0];
        assert_eq!((card.approval, card.draft), (Approval::Approved, false));
    }
    // The reply ends the run.
    let mut outs = a.feed(second.id, &b_done_and_finished(), 11);
    outs.extend(a.end(second.id));
    s.after(0, &mut a, outs);
    assert!(a.c.snapshot().suspension.is_none());

    // Everything delivered and answered, as the server stands now (the run over).
    for _ in 0..10 {
        for (t, h) in [(0, &mut a), (1, &mut b), (2, &mut c)] {
            s.events(t, h);
            if s.out[t].is_some() {
                s.answer_load(t, h, both_ran_and_finished(), None);
            }
        }
    }
    assert_eq!(s.events, [0, 0, 0]);
    let mut left = Vec::new();
    for (name, h) in [("tab 1", &a), ("tab 2", &b), ("tab 3", &c)] {
        let snap = h.c.snapshot();
        if snap.suspension.is_some() || snap.phase != Phase::Completed {
            left.push(format!(
                "{name}: {:?}, busy {}, cards {:?}",
                snap.phase,
                snap.busy,
                h.card_ids()
            ));
        }
    }
    assert!(
        left.is_empty(),
        "left behind: {left:?}; storage holds {}",
        s.value
    );
}

/// The record a tab paused on call_A alone writes once it approved and submitted it and the reply
/// opened: call_A settled (the server took its continuation).
fn settled_record() -> String {
    let mut h = H::paused(false);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (_, first) = h.submit();
    let record = written(&h.open(first.id, 200)).expect("the record, call_A settled");
    assert!(record.contains(r#""settled":["call_A"]"#), "{record}");
    record
}

/// A new client (a reloaded page) with `record` in storage, its history load answered with
/// `messages`: the replay request it then makes.
fn reloaded(record: &str, messages: Vec<Value>) -> (H, HttpRequest) {
    let mut r = H::new();
    r.c.restore_drafts(record);
    r.drain();
    let (_, get) = r.load();
    let get = one_http(&get);
    let outs = r.respond(get.id, history(messages));
    let replay = one_http(&outs);
    (r, replay)
}

/// Tab 1 approves call_A (delete_file) and submits; its reply opens: the record lists call_A as
/// settled, its approval still in `drafts`. The page reloads while the reply streams; by then the
/// run has paused again on a new call that reuses the callId call_A (ids counted per step),
/// send_email. The approval of the deletion is not restored onto the email (it was, when a
/// settled call was left out of a signature of the whole pause: that of no call then matched).
#[test]
fn a_settled_calls_draft_is_not_restored_onto_a_new_call_under_its_id() {
    let record = settled_record();

    let (mut r, replay) = reloaded(&record, vec![user_ui("msg_u1", "delete /tmp/x")]);
    let mut c = vec![start("msg_a2")];
    c.extend(tool_in(
        "call_A",
        "send_email",
        json!({"to": "a@b.c", "subject": "hi"}),
    ));
    c.push(approval(
        "call_A",
        "send_email",
        "Send an email",
        json!({"to": "a@b.c", "subject": "hi"}),
    ));
    r.stream(replay.id, &sse(&c, true));
    assert_eq!(r.card_ids(), vec!["call_A"]);
    assert_eq!(
        r.c.snapshot().decisions.get("call_A"),
        None,
        "the deletion's approval restored onto the email"
    );
}

/// A reload while call_A's continuation reply streams (the record lists call_A, settled), on a
/// server that writes the history once the run ends: the history still shows call_A awaiting
/// approval, and the replay has nothing paused (204: the run is running). The page must not say
/// the run was abandoned: the record says the server took call_A.
#[test]
fn a_reload_mid_reply_is_not_expired_by_the_settled_call() {
    let record = settled_record();
    let (mut r, replay) = reloaded(&record, paused_history(false));
    r.respond(replay.id, HttpResponse::new(204, ""));
    assert_ne!(r.phase(), Phase::Expired, "error: {:?}", r.error_code());
}

/// Tab 1 submits call_A alone; while its reply streams, tab 2 (which took the settled record in
/// and stays interactive) rejects call_B. Tab 1 is busy and misses the record; once its reply
/// ends (pause: call_B alone) it reads storage again. Tab 2's rejection of call_B must survive.
#[test]
fn a_decision_made_in_the_other_tab_during_the_reply_survives() {
    let mut h = H::loaded_paused();
    let mut other = H::loaded_paused();
    h.c.approve("call_A").expect("approve");
    let r = written(&h.drain()).expect("record");
    no_http(&other.tab_wrote(&r));
    let (_, first) = h.submit();
    let record = written(&h.open(first.id, 200)).expect("settled record");
    no_http(&other.tab_wrote(&record));
    // In tab 2: reject call_B (tab 2 is not busy).
    other
        .c
        .reject("call_B", Some("no mail"))
        .expect("tab 2 can decide");
    let from_other = written(&other.drain()).expect("tab 2 stores it");
    // Tab 1 is streaming: the storage event comes during its command.
    let outs = h.tab_wrote(&from_other);
    assert_eq!(persists(&outs), vec![]);
    // Tab 1's reply ends on the pause with call_B alone.
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        approval_b(),
    ];
    h.feed(first.id, &sse(&c, true), 11);
    let mut outs = h.end(first.id);
    assert_eq!(h.card_ids(), vec!["call_B"]);
    assert!(h.c.take_missed_restore(), "tab 1 reads storage again");
    // Storage holds tab 2's record (tab 1 wrote nothing since).
    outs.extend(h.tab_wrote(&from_other));
    let tab1_b = h.c.snapshot().decisions.get("call_B").cloned();
    // Tab 1 writes its record over tab 2's (which lists call_A, answered), with the rejection.
    let r = written(&outs).expect("tab 1 writes its record");
    assert!(r.contains("no mail"), "{r}");
    // Tab 2 takes it in, and catches up (call_A is no longer paused) without losing it.
    let o = other.tab_wrote(&r);
    assert!(!https(&o).is_empty(), "tab 2 loads");
    assert_eq!(
        other.c.snapshot().decisions.get("call_B"),
        Some(&Decision::Reject(Some("no mail".into()))),
        "tab 2's own rejection was cleared by tab 1's record"
    );
    assert_eq!(
        tab1_b,
        Some(Decision::Reject(Some("no mail".into()))),
        "tab 1 did not take it either"
    );
}

// ---------------------------------------------------------------------------------------------
// Review: drafts across tabs (99eb9af)

/// As `a_reload_mid_reply_is_not_expired_by_the_settled_call`, on a pause of two calls: call_A's
/// continuation taken (its reply streaming, the record lists it settled), call_B still to be
/// answered. The page reloads mid-reply; the history (written at the run's end) shows both
/// awaiting approval and the replay has nothing (the run is running call_A's tool). The run was
/// not abandoned: the record says the server took call_A.
#[test]
fn a_reload_mid_reply_of_a_two_call_pause_is_not_expired() {
    let mut h = H::paused(true);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (_, first) = h.submit();
    assert_continuation(&first, "call_A", true);
    let record = written(&h.open(first.id, 200)).expect("the record, call_A settled");
    assert!(record.contains(r#""settled":["call_A"]"#), "{record}");
    let (mut r, replay) = reloaded(&record, paused_history(true));
    r.respond(replay.id, HttpResponse::new(204, ""));
    assert_ne!(r.phase(), Phase::Expired, "error: {:?}", r.error_code());
}

/// Tab A's rejection of call_B could not be stored (storage full: the key removed). In tab B the
/// person submits call_A (approved there before, a record A took in); B's reply opens and its
/// record (call_A settled, nothing for call_B: B never saw the rejection) reaches A. It is not
/// the record storage held before, so it replaces A's drafts: the rejection made in A alone is
/// gone, although B decided nothing on call_B.
#[test]
fn unsaved_rejection_survives_the_other_tabs_continuation() {
    let (mut a, mut b) = (H::loaded_paused(), H::loaded_paused());
    b.c.approve("call_A").expect("approve");
    let from_b = written(&b.drain()).expect("B stores its draft");
    no_http(&a.tab_wrote(&from_b));
    a.c.reject("call_B", Some("no mail")).expect("reject");
    assert!(written(&a.drain()).is_some());
    a.c.persist_failed();
    // B submits call_A; its reply opens.
    let (_, first) = b.submit();
    assert_continuation(&first, "call_A", true);
    let settled = written(&b.open(first.id, 200)).expect("B's record, call_A settled");
    assert!(settled.contains(r#""settled":["call_A"]"#), "{settled}");
    a.tab_wrote(&settled);
    assert_eq!(
        a.c.snapshot().decisions.get("call_B"),
        Some(&Decision::Reject(Some("no mail".into()))),
        "A's rejection of call_B, held in A alone, was cleared"
    );
}

/// Tab 1 approves call_A (tab 2 takes the draft in, and shows it), then submits it; its reply
/// opens and the record lists call_A as settled. Tab 2 does not keep the decision on call_A
/// (README: "A call whose decision the server already accepted, or whose continuation it took,
/// keeps it"): the draft is cleared, the card is undecided again, and a "reject the rest and send"
/// in tab 2 sends a rejection of call_A, whose continuation the server already took.
#[test]
fn a_settled_call_keeps_its_decision_in_the_other_tab() {
    let mut h = H::loaded_paused();
    let mut other = H::loaded_paused();
    h.c.approve("call_A").expect("approve");
    let r = written(&h.drain()).expect("record");
    no_http(&other.tab_wrote(&r));
    assert_eq!(
        other.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Approve)
    );
    let (_, first) = h.submit();
    let record = written(&h.open(first.id, 200)).expect("the record, call_A settled");
    assert!(record.contains(r#""settled":["call_A"]"#), "{record}");
    no_http(&other.tab_wrote(&record));
    let undecided = other
        .c
        .snapshot()
        .suspension
        .as_ref()
        .map(|s| s.undecided.clone())
        .unwrap_or_default();
    other
        .c
        .reject_all_and_send(other.now, "never mind", None)
        .expect("reject all and send");
    let post = one_http(&other.drain());
    assert!(
        !post
            .body
            .as_deref()
            .unwrap_or_default()
            .contains(r#""toolCallId":"call_A""#),
        "call_A's continuation sent a second time (undecided in tab 2: {undecided:?}): {:?}",
        post.body
    );
}

/// As `unsaved_rejection_survives_the_other_tabs_continuation`, followed to the end: B's
/// reply ends on call_B alone, B writes its record (call_B, no draft); A, behind, catches up by a
/// load that shows call_B alone, then reads storage again (a new pause): B's record still says
/// nothing B decided on call_B, and A's rejection must survive it.
#[test]
fn unsaved_rejection_survives_the_other_tabs_continuation_to_its_end() {
    let (mut a, mut b) = (H::loaded_paused(), H::loaded_paused());
    b.c.approve("call_A").expect("approve");
    let from_b = written(&b.drain()).expect("B stores its draft");
    no_http(&a.tab_wrote(&from_b));
    a.c.reject("call_B", Some("no mail")).expect("reject");
    assert!(written(&a.drain()).is_some());
    a.c.persist_failed();
    let (_, first) = b.submit();
    let settled = written(&b.open(first.id, 200)).expect("B's record, call_A settled");
    no_http(&a.tab_wrote(&settled));
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        approval_b(),
    ];
    let mut outs = b.feed(first.id, &sse(&c, true), 11);
    outs.extend(b.end(first.id));
    if b.c.take_missed_restore() {
        outs.extend(b.tab_wrote(&settled));
    }
    let last_b = written(&outs).expect("B writes its record for call_B");
    assert!(last_b.contains(r#""callIds":["call_B"]"#), "{last_b}");
    // A: call_A left out, it catches up.
    let outs = a.tab_wrote(&last_b);
    let get = one_http(&outs);
    let outs = a.respond(
        get.id,
        history(vec![
            user_ui("msg_u1", "delete /tmp/x"),
            json!({"id": "msg_a1", "role": "assistant", "parts": [
                {"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available", "input": {"path": "/tmp/x"},
                 "approval": {"id": "call_A", "approved": true}, "output": "Deleted /tmp/x"},
                {"type": "tool-send_email", "toolCallId": "call_B", "state": "approval-requested", "input": {"to": "a@b.c", "subject": "hi"},
                 "approval": {"id": "call_B"}}
            ]}),
        ]),
    );
    let replay = one_http(&outs);
    a.stream(replay.id, &waiting_on_b());
    if a.c.take_missed_restore() {
        a.tab_wrote(&last_b);
    }
    assert_eq!(a.card_ids(), vec!["call_B"]);
    assert_eq!(
        a.c.snapshot().decisions.get("call_B"),
        Some(&Decision::Reject(Some("no mail".into()))),
        "A's rejection of call_B, held in A alone, was cleared"
    );
}

/// Tab 1 approves call_A and submits it; tab 2 takes in the records. call_A's tool fails and the
/// model calls it again, identically, under the same callId (ids counted per step): the reply
/// ends paused on a new call_A of the same tool and inputs. Tab 2, told to wait for the record
/// written once the reply has ended, never loads: it still shows the old pause (no tool output,
/// the old card), a pause already answered (README: "once one tab submits, the other shows where
/// the run went instead of a pause already answered").
#[test]
fn other_tab_catches_up_when_the_run_pauses_again_on_the_same_call() {
    let loaded_on_a = || {
        let mut h = H::new();
        let (_, outs) = h.load();
        let get = one_http(&outs);
        let outs = h.respond(get.id, history(paused_history(false)));
        let replay = one_http(&outs);
        h.stream(replay.id, &replay_stream(false));
        assert_eq!(h.card_ids(), vec!["call_A"]);
        h
    };
    let (mut h, mut other) = (loaded_on_a(), loaded_on_a());
    h.c.approve("call_A").expect("approve");
    let r = written(&h.drain()).expect("record");
    no_http(&other.tab_wrote(&r));
    assert_eq!(
        other.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Approve)
    );
    let (_, first) = h.submit();
    let mut records = persists(&h.open(first.id, 200));
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-error", "toolCallId": "call_A", "errorText": "EBUSY"}),
        json!({"type": "finish-step"}),
        json!({"type": "start-step"}),
    ];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    c.push(approval_a());
    records.extend(persists(&h.feed(first.id, &sse(&c, true), 11)));
    records.extend(persists(&h.end(first.id)));
    assert_eq!(h.card_ids(), vec!["call_A"]);
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    if h.c.take_missed_restore() {
        let last = records.last().cloned().flatten().unwrap_or_default();
        records.extend(persists(&h.tab_wrote(&last)));
    }
    let mut loads = 0;
    for r in &records {
        loads += https(&other.tab_wrote(r.as_deref().unwrap_or_default())).len();
    }
    assert!(
        loads > 0,
        "tab 2 never catches up: records {records:#?}, its messages {}",
        other.c.snapshot().messages.as_slice().len()
    );
}

/// A reload mid-reply whose replay still shows the settled call waiting (the server did not
/// keep the continuation): the call is answerable there, and its new decision is sent. The
/// record read at the reload is the tab's own, of a reply no tab streams any more: it is not
/// taken for another tab's continuation in flight (which would leave the card with no way to
/// answer it).
#[test]
fn a_reload_mid_reply_leaves_the_settled_call_answerable_when_the_replay_shows_it() {
    let mut h = H::loaded_paused();
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (_, first) = h.submit();
    let record = written(&h.open(first.id, 200)).expect("the record, call_A settled");
    assert!(record.contains(r#""settled":["call_A"]"#), "{record}");
    let (mut r, replay) = reloaded(&record, paused_history(true));
    r.stream(replay.id, &replay_stream(true));
    // Storage read again at the new pause (it still holds the record).
    if r.c.take_missed_restore() {
        r.tab_wrote(&record);
    }
    assert_eq!(r.card_ids(), vec!["call_A", "call_B"]);
    r.c.reject("call_A", Some("not now"))
        .expect("call_A can be answered");
    r.drain();
    let (_, post) = r.submit();
    assert_continuation(&post, "call_A", false);
}

/// Tab 2 follows tab 1's continuation of call_A (the record lists it settled): call_A shows the
/// decision sent there and cannot be changed in tab 2, whose own submission leaves it out.
#[test]
fn a_call_taken_in_another_tab_cannot_be_changed_here() {
    let mut h = H::loaded_paused();
    let mut other = H::loaded_paused();
    h.c.approve("call_A").expect("approve");
    let r = written(&h.drain()).expect("record");
    no_http(&other.tab_wrote(&r));
    let (_, first) = h.submit();
    let record = written(&h.open(first.id, 200)).expect("the record, call_A settled");
    no_http(&other.tab_wrote(&record));
    assert_eq!(
        other.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Approve),
        "the decision sent in tab 1"
    );
    // Its card reads as settled: the server's decision, no draft to undo.
    let snap = other.c.snapshot();
    let s = snap.suspension.as_ref().expect("still paused in tab 2");
    for list in [&s.tools, &s.decided] {
        let a = list
            .iter()
            .find(|t| t.call_id == "call_A")
            .expect("call_A shown");
        assert!(!a.draft, "call_A shows no draft: {a:?}");
        assert_eq!(
            a.server_approval,
            toolgate::approval::Approval::Approved,
            "{a:?}"
        );
    }
    let b = s
        .tools
        .iter()
        .find(|t| t.call_id == "call_B")
        .expect("call_B");
    assert_eq!(b.server_approval, toolgate::approval::Approval::Pending);
    assert_eq!(
        other.c.reject("call_A", None).map_err(|e| e.code),
        Err(ErrorCode::InvalidState)
    );
    assert!(
        !other.c.snapshot().can_submit,
        "nothing of tab 2's own to send"
    );
    other
        .c
        .reject("call_B", Some("no mail"))
        .expect("call_B is open");
    other.drain();
    let (_, post) = other.submit();
    assert_continuation(&post, "call_B", false);
}

/// Tab 1's continuation of call_A ends on a new pause that lists call_A again (the same tool and
/// inputs: the tool failed and the model asks again) beside a new call. Storage, read again at
/// the new pause, still holds tab 1's own record with call_A settled: tab 1 must still be able
/// to answer call_A (its own record is not another tab's continuation in flight).
#[test]
fn the_writers_own_settled_record_read_back_at_a_new_pause_leaves_the_call_answerable() {
    let mut h = H::loaded_paused();
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (_, first) = h.submit();
    let record = written(&h.open(first.id, 200)).expect("the record, call_A settled");
    assert!(record.contains(r#""settled":["call_A"]"#), "{record}");
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-error", "toolCallId": "call_A", "errorText": "busy"}),
    ];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    c.extend(tool_in("call_C", "send_email", json!({"to": "c@d.e"})));
    c.push(approval_a());
    c.push(approval(
        "call_C",
        "send_email",
        "Send an email",
        json!({"to": "c@d.e"}),
    ));
    h.feed(first.id, &sse(&c, true), 11);
    h.end(first.id);
    if h.c.take_missed_restore() {
        h.tab_wrote(&record);
    }
    assert_eq!(h.card_ids(), vec!["call_A", "call_C"]);
    h.c.reject("call_A", Some("stop"))
        .expect("call_A can be answered");
}

// ----------------------------------------------------------------------------------------------
// Found by mutation testing: behaviour no other test held in place

#[test]
fn the_same_text_as_the_previous_turn_does_not_count_as_landed() {
    // The history ends with an earlier "hello": a failed send of "hello" again did not land
    // unless the history shows one more user message.
    let earlier = vec![
        user_ui("u1", "hello"),
        json!({"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "Hi!"}]}),
    ];
    let mut h = H::with_messages(earlier.clone());
    let (op, post) = h.send("hello");
    let outs = h.fail(post.id, TransportError::Network("offline".into()));
    let get = one_http(&outs);
    let outs = h.respond(get.id, history(earlier.clone()));
    let replay = one_http(&outs);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    assert_eq!(done(&outs, op), Err(ErrorCode::Network));
    assert_eq!(h.c.snapshot().unsent_text.as_deref(), Some("hello"));
    // With one more, it did.
    let (op, post) = h.send("hello");
    let outs = h.fail(post.id, TransportError::Network("offline".into()));
    let get = one_http(&outs);
    let mut more = earlier;
    more.push(user_ui("u2", "hello"));
    let outs = h.respond(get.id, history(more));
    let replay = one_http(&outs);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.c.snapshot().unsent_text, None);
}

#[test]
fn messages_version_only_grows_through_a_continuation() {
    let mut h = H::paused(false);
    let before = h.c.snapshot().messages_version;
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op, first) = h.submit();
    let mut versions = vec![before];
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted"}),
    ];
    c.extend(final_text("done"));
    let mut outs = h.open(first.id, 200);
    for part in sse(&c, true).chunks(9) {
        outs.extend(h.feed(first.id, part, 9));
        versions.push(h.c.snapshot().messages_version);
    }
    outs.extend(h.end(first.id));
    assert_eq!(done(&outs, op), Ok(()));
    versions.push(h.c.snapshot().messages_version);
    assert!(
        versions.windows(2).all(|w| w[0] <= w[1]),
        "never back: {versions:?}"
    );
    assert!(versions.last() > versions.first(), "{versions:?}");
    // The paused message went on: one assistant message, the call done.
    let s = h.c.snapshot();
    assert_eq!(s.messages.as_slice().len(), 2);
    assert_eq!(s.messages.as_slice()[1].tools[0].status, ToolStatus::Done);
}

#[test]
fn an_answer_to_a_request_no_longer_awaited_is_ignored() {
    let mut h = H::paused(true);
    let v = h.c.version();
    for id in [RequestId(999), RequestId(0)] {
        assert!(h.respond(id, HttpResponse::new(200, "{}")).is_empty());
        assert!(h.fail(id, TransportError::Timeout).is_empty());
    }
    // A stopped continuation's late answer, too.
    h.approve_both();
    let (_, first) = h.submit();
    h.c.abort();
    h.drain();
    let v2 = h.c.version();
    assert!(v2 > v);
    let outs = h.respond(first.id, HttpResponse::new(200, sse(&plain_reply(), true)));
    assert!(https(&outs).is_empty());
    assert_eq!(h.c.version(), v2, "nothing changed");
    assert_eq!(h.phase(), Phase::AwaitingApproval);
}

#[test]
fn an_approval_without_args_takes_the_inputs_its_tool_call_announced() {
    // The person must see what they approve: an approval chunk without `args` (or with null, as
    // a collected-output run can send) shows the input the tool call announced, not `{}`.
    for args in [None, Some(Value::Null)] {
        let mut h = H::new();
        let (op, post) = h.send("delete /tmp/x");
        let mut c = vec![start("msg_a1"), json!({"type": "start-step"})];
        c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
        let mut data = json!({"runId": "run_1", "toolCallId": "call_A",
            "toolName": "delete_file", "agentVersionId": AGV, "threadId": TID});
        if let Some(args) = &args {
            data["args"] = args.clone();
        }
        c.push(json!({"type": "data-tool-call-approval", "id": "call_A", "data": data}));
        let outs = h.stream(post.id, &sse(&c, true));
        assert_eq!(done(&outs, op), Ok(()));
        let s = h.c.snapshot();
        let card = &s.suspension.as_ref().expect("paused").tools[0];
        assert_eq!(card.name, "delete_file");
        assert_eq!(sj(&card.inputs), json!({"path": "/tmp/x"}), "{args:?}");
    }
    // Args the approval gives are what runs: they are shown, whatever the tool call said.
    let mut h = H::new();
    let (_, post) = h.send("delete /tmp/x");
    let mut c = vec![start("msg_a1")];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    c.push(approval(
        "call_A",
        "delete_file",
        "r",
        json!({"path": "/tmp/y"}),
    ));
    h.stream(post.id, &sse(&c, true));
    let s = h.c.snapshot();
    let card = &s.suspension.as_ref().expect("paused").tools[0];
    assert_eq!(sj(&card.inputs), json!({"path": "/tmp/y"}));
}

#[test]
fn a_streamed_message_keeps_each_tools_inputs_and_outcome_in_its_view_and_raw() {
    // An ungated read runs at once, the gated delete is approved and fails, the email is
    // approved and sent.
    let mut h = H::new();
    let (op, post) = h.send("tidy up");
    let mut c = vec![start("msg_a1"), json!({"type": "start-step"})];
    c.extend(tool_in("call_R", "read_file", json!({"path": "/tmp/x"})));
    c.push(json!({"type": "tool-output-available", "toolCallId": "call_R", "output": "contents"}));
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    c.extend(tool_in(
        "call_B",
        "send_email",
        json!({"to": "a@b.c", "subject": "hi"}),
    ));
    c.push(approval_a());
    c.push(approval_b());
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    let tools = &s.messages.as_slice()[1].tools;
    let inputs: Vec<Value> = tools.iter().map(|t| sj(&t.inputs)).collect();
    assert_eq!(
        inputs,
        vec![
            json!({"path": "/tmp/x"}),
            json!({"path": "/tmp/x"}),
            json!({"to": "a@b.c", "subject": "hi"})
        ]
    );
    assert_eq!(tools[0].status, ToolStatus::Done);
    assert_eq!(tools[0].approval, None, "an ungated call has no approval");
    h.approve_both();
    let (op, first) = h.submit();
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-error", "toolCallId": "call_A", "errorText": "EBUSY"}),
        // The server announces the call still waiting.
        approval_b(),
    ];
    let outs = h.stream(first.id, &sse(&c, true));
    let second = one_http(&outs);
    assert_continuation(&second, "call_B", true);
    let outs = h.stream(second.id, &b_done_and_finished());
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    let msg = &s.messages.as_slice()[1];
    let status: Vec<ToolStatus> = msg.tools.iter().map(|t| t.status).collect();
    assert_eq!(
        status,
        vec![ToolStatus::Done, ToolStatus::Error, ToolStatus::Done]
    );
    assert_eq!(msg.tools[0].approval, None);
    // The approved call that failed shows as approved, as the AI SDK's history records it.
    let approvals: Vec<_> = msg.tools.iter().map(|t| t.approval).collect();
    assert_eq!(
        approvals,
        vec![
            None,
            Some(toolgate::approval::Approval::Approved),
            Some(toolgate::approval::Approval::Approved)
        ]
    );
    let part = |id: &str| raw_part(msg, id);
    assert_eq!(part("call_R")["state"], "output-available");
    assert_eq!(part("call_R")["output"], "contents");
    assert_eq!(part("call_A")["state"], "output-error");
    assert_eq!(part("call_A")["errorText"], "EBUSY");
    assert_eq!(part("call_A")["approval"]["approved"], true);
    assert_eq!(part("call_B")["state"], "output-available");
    assert_eq!(part("call_B")["approval"]["approved"], true);
    assert_eq!(part("call_B")["output"], "sent");
    assert_eq!(
        part("call_B")["input"],
        json!({"to": "a@b.c", "subject": "hi"})
    );
}

#[test]
fn history_parts_read_every_state_the_ai_sdk_records() {
    let parts = json!([
        {"type": "text", "text": "Working on it."},
        {"type": "tool-delete_file", "toolCallId": "c_no", "state": "approval-responded",
         "input": {"path": "/"}, "approval": {"id": "c_no", "approved": false}},
        {"type": "tool-send_email", "toolCallId": "c_yes", "state": "approval-responded",
         "input": {"to": "a@b.c"}, "approval": {"id": "c_yes", "approved": true}},
        {"type": "dynamic-tool", "toolName": "lookup", "toolCallId": "c_dyn",
         "state": "output-available", "input": {"q": "x"}, "output": "found"},
        {"type": "tool-read_file", "toolCallId": "c_err", "state": "output-error",
         "input": {"path": "/nope"}, "errorText": "ENOENT"},
        {"type": "tool-wipe", "toolCallId": "c_denied", "state": "output-denied",
         "input": {}, "approval": {"id": "c_denied", "approved": false}},
        {"type": "tool-ping", "toolCallId": "c_called", "state": "input-available", "input": {}},
        {"type": "data-note", "data": {"x": 1}}
    ]);
    let h = H::with_messages(vec![
        user_ui("u1", "go"),
        json!({"id": 42, "role": "assistant", "parts": parts}),
        user_ui("u2", "thanks"),
        json!({"id": "a2", "role": "assistant", "parts": [{"type": "text", "text": "ok"}]}),
    ]);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Idle);
    assert!(
        s.messages_version > 0,
        "a loaded history is a change of messages"
    );
    assert!(h.c.decisions().is_none(), "nothing paused");
    let ids: Vec<Option<&str>> = s
        .messages
        .as_slice()
        .iter()
        .map(|m| m.id.as_deref())
        .collect();
    assert_eq!(ids, vec![Some("u1"), Some("42"), Some("u2"), Some("a2")]);
    let msg = &s.messages.as_slice()[1];
    assert_eq!(
        msg.id.as_deref(),
        Some("42"),
        "a numeric id reads as its digits"
    );
    assert_eq!(msg.text, "Working on it.");
    let got: Vec<(&str, &str, ToolStatus, Option<toolgate::approval::Approval>)> = msg
        .tools
        .iter()
        .map(|t| (t.call_id.as_str(), t.name.as_str(), t.status, t.approval))
        .collect();
    use toolgate::approval::Approval;
    assert_eq!(
        got,
        vec![
            (
                "c_no",
                "delete_file",
                ToolStatus::Rejected,
                Some(Approval::Rejected)
            ),
            (
                "c_yes",
                "send_email",
                ToolStatus::Approved,
                Some(Approval::Approved)
            ),
            ("c_dyn", "lookup", ToolStatus::Done, None),
            ("c_err", "read_file", ToolStatus::Error, None),
            (
                "c_denied",
                "wipe",
                ToolStatus::Denied,
                Some(Approval::Rejected)
            ),
            ("c_called", "ping", ToolStatus::Called, None),
        ]
    );
    assert_eq!(msg.tools[2].result.as_ref().map(sj), Some(json!("found")));
    assert_eq!(msg.tools[3].result.as_ref().map(sj), Some(json!("ENOENT")));
    assert_eq!(sj(&msg.tools[0].inputs), json!({"path": "/"}));
}

#[test]
fn a_page_reloaded_on_a_pause_that_finished_meanwhile_reads_completed() {
    // Storage holds this tab's drafts for run_1 (the page was reloaded); meanwhile the call was
    // answered and the run finished. The first load shows it done: completed, not idle, not
    // expired, and the stale drafts are removed.
    let (mut h, op, get) = H::restored_loading(&stored_a_approved());
    let finished = vec![
        user_ui("msg_u1", "delete /tmp/x"),
        json!({"id": "msg_a1", "role": "assistant", "parts": [
            {"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available",
             "input": {"path": "/tmp/x"}, "output": "deleted", "approval": {"id": "call_A", "approved": true}},
            {"type": "text", "text": "Deleted."}
        ]}),
    ];
    let outs = h.respond(get.id, history(finished));
    let replay = one_http(&outs);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert!(s.error.is_none());
    assert!(s.suspension.is_none());
    assert!(s.decisions.is_empty());
    assert_eq!(persists(&outs), vec![None]);
}

#[test]
fn a_continuation_dropped_before_the_other_call_was_sent_reads_that_call_abandoned() {
    // Both approved; call_A's continuation ran A, then the connection dropped before the server
    // re-announced B. The reload finds B still asking in the history and an empty replay, twice:
    // the run was abandoned on B, whose decision was never sent. The submission says `expired`.
    let (mut h, op, first) = H::both_approved_and_submitted();
    assert_continuation(&first, "call_A", true);
    h.open(first.id, 200);
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted"}),
    ];
    h.feed(first.id, &sse(&c, false), 7);
    let outs = h.fail(first.id, TransportError::Network("reset".into()));
    let waiting_b = vec![
        user_ui("msg_u1", "delete /tmp/x"),
        json!({"id": "msg_a1", "role": "assistant", "parts": [
            {"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available",
             "input": {"path": "/tmp/x"}, "output": "Deleted", "approval": {"id": "call_A", "approved": true}},
            {"type": "tool-send_email", "toolCallId": "call_B", "state": "approval-requested",
             "input": {"to": "a@b.c", "subject": "hi"}, "approval": {"id": "call_B"}}
        ]}),
    ];
    let get = one_http(&outs);
    assert_history_get(&get);
    let outs = h.respond(get.id, history(waiting_b.clone()));
    let replay = one_http(&outs);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    no_done(&outs);
    let outs = read_again(&mut h, &outs, waiting_b);
    assert_eq!(done(&outs, op), Err(ErrorCode::Expired));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Expired);
    assert!(s.suspension.is_none());
    assert!(s.can_send);
    let last = s.last_submission.as_ref().expect("last submission");
    assert_eq!(last.call_ids, vec!["call_A"], "B was never sent");
}

#[test]
fn a_replay_cut_short_is_read_again_not_taken_for_the_whole() {
    // The replay broke off after the tool's input, before its approval chunk: not the run's
    // state (it would read as a run that paused on nothing). It is read again.
    let mut h = H::new();
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let outs = h.respond(get.id, history(paused_history(false)));
    let replay = one_http(&outs);
    let mut c = vec![start("msg_a1")];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    let outs = h.stream(replay.id, &sse(&c, false));
    no_done(&outs);
    no_http(&outs);
    assert_eq!(h.phase(), Phase::Loading);
    let when = h.c.poll_timeout().expect("a retry is scheduled");
    let outs = h.at(when);
    // The replay alone: the history was read whole.
    let again = one_http(&outs);
    assert_replay_get(&again);
    let outs = h.stream(again.id, &replay_stream(false));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    assert_eq!(h.card_ids(), vec!["call_A"]);
}

#[test]
fn a_collected_continuation_refused_with_400_or_409_is_reconciled_and_401_is_not() {
    let paused_collect = || {
        let mut cfg = config();
        cfg.transport = Transport::Collect;
        cfg.agent_id = Some("agent_1".into());
        cfg.agent_version_id = Some(AGV.into());
        let mut h = H::with(cfg);
        let op = h.c.send(h.now, "delete /tmp/x").expect("send");
        let post = one_http(&h.drain());
        let body = json!({"chunks": pause_stream(false), "finishReason": null}).to_string();
        assert_eq!(
            done(&h.respond(post.id, HttpResponse::new(200, body)), op),
            Ok(())
        );
        h.c.approve("call_A").expect("approve");
        h.drain();
        h
    };
    // Refused (answered elsewhere, or the run moved on): the thread tells where it stands.
    for code in [400, 409] {
        let mut h = paused_collect();
        let (_, post) = h.submit();
        let outs = h.respond(
            post.id,
            HttpResponse::new(code, r#"{"error":"not paused"}"#),
        );
        let get = one_http(&outs);
        assert_history_get(&get);
    }
    // Not authorized: the error shows, nothing is read, the draft stays.
    let mut h = paused_collect();
    let (op, post) = h.submit();
    let outs = h.respond(post.id, HttpResponse::new(401, r#"{"error":"bad token"}"#));
    no_http(&outs);
    assert_eq!(done(&outs, op), Err(ErrorCode::Unauthorized));
    assert_eq!(
        h.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Approve)
    );
}

#[test]
fn a_repeated_approval_fills_what_the_first_lacked() {
    // The AI SDK's request comes first (no reason, no version), Sidenet's chunk for the same call
    // after it: one card, with the reason and the version the second gave.
    let mut h = H::new();
    let (op, post) = h.send("delete /tmp/x");
    let mut c = vec![start("msg_a1")];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    c.push(json!({"type": "tool-approval-request", "approvalId": "run_1::call_A", "toolCallId": "call_A"}));
    c.push(approval_a());
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.card_ids(), vec!["call_A"]);
    let s = h.c.snapshot();
    let card = &s.suspension.as_ref().expect("paused").tools[0];
    assert_eq!(
        card.approval_reason.as_deref(),
        Some("Delete the file /tmp/x; this cannot be undone")
    );
    assert_eq!(card.agent_version_id.as_deref(), Some(AGV));
    h.c.approve("call_A").expect("approve");
    h.drain();
    assert_eq!(
        h.c.decisions().map(|d| d.local().count()),
        Some(1),
        "the decision set holds the draft"
    );
    let (_, post) = h.submit();
    assert_continuation(&post, "call_A", true);
}

#[test]
fn a_replay_names_its_call_when_the_history_does_not_show_it_yet() {
    // The server writes the history at the run's end: the reloaded page sees only the user
    // message, and the replay gives the call's input, then the AI SDK's bare approval request.
    let mut h = H::new();
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let outs = h.respond(get.id, history(vec![user_ui("msg_u1", "delete /tmp/x")]));
    let replay = one_http(&outs);
    let mut c = vec![start("msg_a1")];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    c.push(json!({"type": "tool-approval-request", "approvalId": "run_1::call_A", "toolCallId": "call_A"}));
    let outs = h.stream(replay.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval, "{:?}", s.error);
    let card = &s.suspension.as_ref().expect("paused").tools[0];
    assert_eq!(card.name, "delete_file");
    assert_eq!(sj(&card.inputs), json!({"path": "/tmp/x"}));
}

#[test]
fn a_reply_cut_before_it_announced_anything_reads_its_run_from_the_history() {
    // The reply broke off before any chunk: nothing is known of the run. The history's last
    // assistant part tells: a call still asking, with an empty replay, is an abandoned run;
    // a call that ran (or text) is a run that finished.
    let ask = json!({"type": "tool-delete_file", "toolCallId": "call_A", "state": "approval-requested",
        "input": {"path": "/tmp/x"}, "approval": {"id": "call_A"}});
    let ran = json!({"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available",
        "input": {"path": "/tmp/x"}, "output": "deleted"});
    for (last, phase) in [(ask, Phase::Expired), (ran, Phase::Completed)] {
        let mut h = H::with_messages(vec![]);
        let (op, post) = h.send("delete /tmp/x");
        h.open(post.id, 200);
        let outs = h.fail(post.id, TransportError::Network("reset".into()));
        let msgs = vec![
            user_ui("msg_u1", "delete /tmp/x"),
            json!({"id": "msg_a1", "role": "assistant", "parts": [last]}),
        ];
        let get = one_http(&outs);
        assert_history_get(&get);
        let outs = h.respond(get.id, history(msgs.clone()));
        let replay = one_http(&outs);
        let mut outs = h.respond(replay.id, HttpResponse::new(204, ""));
        if !https(&outs).is_empty() {
            // A call shown waiting and an empty replay: both are read once more.
            outs = read_again(&mut h, &outs, msgs);
        }
        assert_eq!(done(&outs, op), Ok(()), "{phase:?}");
        let s = h.c.snapshot();
        assert_eq!(s.phase, phase);
        assert_eq!(s.unsent_text, None, "the message landed");
        assert!(s.suspension.is_none());
    }
}

#[test]
fn text_deltas_without_a_text_start_still_make_the_message() {
    let mut h = H::with_messages(vec![]);
    let (op, post) = h.send("hi");
    let c = vec![
        start("msg_a1"),
        json!({"type": "text-delta", "id": "t1", "delta": "Hello"}),
        json!({"type": "text-delta", "id": "t1", "delta": " there"}),
        json!({"type": "text-end", "id": "t1"}),
        json!({"type": "text-delta", "id": "t2", "delta": "Bye"}),
        json!({"type": "finish", "finishReason": "stop"}),
    ];
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    let msg = &s.messages.as_slice()[1];
    let raw = sj(&msg.raw);
    let texts: Vec<&str> = raw["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .filter(|p| p["type"] == "text")
        .map(|p| p["text"].as_str().expect("text"))
        .collect();
    assert_eq!(texts, vec!["Hello there", "Bye"], "two parts, as two ids");
    assert!(
        msg.text.contains("Hello there") && msg.text.contains("Bye"),
        "{}",
        msg.text
    );
}

#[test]
fn a_call_announced_in_a_dropped_continuation_is_expected_on_the_reload() {
    // call_A's continuation ran A and announced a new call, call_C, then dropped. Another tab
    // answered call_B meanwhile. The reload shows C still asking and the replay is empty, twice:
    // the run was abandoned on C (it is not a finished run because B is done).
    let (mut h, op, first) = H::both_approved_and_submitted();
    h.open(first.id, 200);
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted"}),
    ];
    c.extend(tool_in("call_C", "wipe_disk", json!({"disk": "sda"})));
    c.push(approval(
        "call_C",
        "wipe_disk",
        "Wipe sda",
        json!({"disk": "sda"}),
    ));
    h.feed(first.id, &sse(&c, false), 7);
    let outs = h.fail(first.id, TransportError::Network("reset".into()));
    let msgs = vec![
        user_ui("msg_u1", "delete /tmp/x"),
        json!({"id": "msg_a1", "role": "assistant", "parts": [
            {"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available",
             "input": {"path": "/tmp/x"}, "output": "Deleted", "approval": {"id": "call_A", "approved": true}},
            {"type": "tool-send_email", "toolCallId": "call_B", "state": "output-available",
             "input": {"to": "a@b.c", "subject": "hi"}, "output": "sent", "approval": {"id": "call_B", "approved": true}},
            {"type": "tool-wipe_disk", "toolCallId": "call_C", "state": "approval-requested",
             "input": {"disk": "sda"}, "approval": {"id": "call_C"}}
        ]}),
    ];
    let get = one_http(&outs);
    assert_history_get(&get);
    let outs = h.respond(get.id, history(msgs.clone()));
    let replay = one_http(&outs);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    let outs = read_again(&mut h, &outs, msgs);
    assert!(done(&outs, op).is_err());
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Expired, "{:?}", s.error);
    assert_eq!(h.error_code(), Some("expired"));
}

#[test]
fn a_resumed_message_leaves_the_settled_list_with_a_new_messages_version() {
    // At a continuation's first chunk the paused message goes on as the streaming one: it leaves
    // `messages`, and `messagesVersion` moves, so a UI that keys its list by the version does not
    // show it twice.
    let mut h = H::paused(false);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (_, first) = h.submit();
    let before = h.c.snapshot().messages_version;
    assert_eq!(h.c.snapshot().messages.as_slice().len(), 2);
    h.open(first.id, 200);
    h.feed(first.id, &sse(&[start("msg_a1")], false), 64);
    let s = h.c.snapshot();
    assert_eq!(
        s.messages.as_slice().len(),
        1,
        "only the user message is settled"
    );
    assert!(s.messages_version > before);
    let streaming = s.streaming.as_ref().expect("streaming");
    assert_eq!(streaming.id.as_deref(), Some("msg_a1"));
    assert_eq!(streaming.tools[0].call_id, "call_A");
}

/// Another tab stores its record for a run while this loaded page reloads: the record waits for
/// the reload to end (read again then), and is not taken as a run this page expects, which would
/// read the abandoned call in the history as this page's pause expiring and read the thread again.
#[test]
fn a_storage_event_during_a_reload_waits_and_sets_no_expectation() {
    let abandoned = vec![
        user_ui("msg_u1", "delete /tmp/x"),
        json!({"id": "msg_a1", "role": "assistant", "parts": [
            {"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-error", "input": {"path": "/tmp/x"},
             "errorText": "Run abandoned: no approval decision arrived within the grace window", "approval": {"id": "call_A"}}
        ]}),
    ];
    let mut h = H::with_messages(abandoned.clone());
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let outs = h.tab_wrote(&stored_a_approved());
    assert!(outs.is_empty(), "nothing while the reload is out: {outs:?}");
    let outs = h.respond(get.id, history(abandoned));
    let replay = one_http(&outs);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    assert_eq!(done(&outs, op), Ok(()));
    no_http(&outs);
    assert_eq!(h.phase(), Phase::Idle);
    assert_eq!(h.error_code(), None);
    assert!(h.c.take_missed_restore(), "storage is read again now");
}

/// A message stopped before its reply opened: nothing of a run was shown, so nothing is taken as
/// a run in progress. The next load reads the thread as it is (idle, the text kept), not a run
/// that ended meanwhile (`completed`).
#[test]
fn a_message_stopped_before_its_reply_opened_expects_no_run() {
    let mut h = H::with_messages(vec![]);
    let (op, _post) = h.send("hi");
    h.c.abort();
    let outs = h.drain();
    assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
    assert_eq!(h.c.snapshot().unsent_text.as_deref(), Some("hi"));
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let outs = h.respond(get.id, history(vec![user_ui("msg_u1", "hi")]));
    let replay = one_http(&outs);
    let outs = h.respond(replay.id, HttpResponse::new(204, ""));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::Idle);
    assert_eq!(h.error_code(), None);
}

/// A new message's reply opens with its own message id: it is a new assistant message after the
/// user's, whatever the last message is; only the paused message, or the message of that id, is
/// resumed.
#[test]
fn a_new_reply_is_a_message_of_its_own_after_the_users() {
    let mut h = H::with_messages(vec![
        user_ui("msg_u0", "hello"),
        json!({"id": "msg_a0", "role": "assistant", "parts": [{"type": "text", "text": "Hi"}]}),
    ]);
    let (op, post) = h.send("again");
    let outs = h.stream(post.id, &sse(&plain_reply(), true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    let got: Vec<_> = s
        .messages
        .as_slice()
        .iter()
        .map(|m| (m.id.as_deref(), m.role.as_deref(), m.text.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (Some("msg_u0"), Some("user"), "hello"),
            (Some("msg_a0"), Some("assistant"), "Hi"),
            (None, Some("user"), "again"),
            (
                Some("msg_a1"),
                Some("assistant"),
                "Hello there, how can I help?"
            ),
        ]
    );
}

/// A tool's inputs in a streamed message: `{}` while they stream (never null), the inputs once
/// available, and a later `tool-input-available` for the same call (a model that corrected its
/// call) replaces them. A call whose input could not be read shows `{}` beside its error.
#[test]
fn a_streamed_tool_shows_empty_then_the_latest_inputs() {
    let mut h = H::new();
    let (op, post) = h.send("tidy up");
    h.open(post.id, 200);
    let c = vec![
        start("msg_a1"),
        json!({"type": "start-step"}),
        json!({"type": "tool-input-start", "toolCallId": "call_R", "toolName": "read_file"}),
    ];
    h.feed(post.id, &sse(&c, false), 5);
    let inputs = |h: &H| -> Vec<Value> {
        let s = h.c.snapshot();
        let v = s.streaming.as_ref().expect("streaming");
        v.tools.iter().map(|t| sj(&t.inputs)).collect()
    };
    assert_eq!(inputs(&h), vec![json!({})]);
    let c = vec![
        json!({"type": "tool-input-available", "toolCallId": "call_R", "toolName": "read_file", "input": {"path": "/a"}}),
        json!({"type": "tool-input-available", "toolCallId": "call_R", "toolName": "read_file", "input": {"path": "/b"}}),
        json!({"type": "tool-input-error", "toolCallId": "call_E", "toolName": "read_file", "errorText": "bad json"}),
    ];
    h.feed(post.id, &sse(&c, false), 5);
    assert_eq!(inputs(&h), vec![json!({"path": "/b"}), json!({})]);
    let mut outs = h.feed(post.id, &sse(&finish(), true), 5);
    outs.extend(h.end(post.id));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    let tools = &s.messages.as_slice()[1].tools;
    assert_eq!(sj(&tools[0].inputs), json!({"path": "/b"}));
    assert_eq!(tools[1].status, ToolStatus::Error);
}

/// The AI SDK form names each approval (`approvalId`, its own id): the streamed message's part
/// records that id, as the server's history does, also when the other form announces the same
/// call after it; a part announced only in Mastra's form records the call's id.
#[test]
fn a_streamed_part_records_the_approval_id_the_server_gave() {
    let mut h = H::new();
    let (op, post) = h.send("delete /tmp/x");
    let mut c = vec![start("msg_a1")];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/x"})));
    c.extend(tool_in(
        "call_B",
        "send_email",
        json!({"to": "a@b.c", "subject": "hi"}),
    ));
    c.push(
        json!({"type": "tool-approval-request", "approvalId": "appr_7", "toolCallId": "call_A"}),
    );
    c.push(approval_a());
    c.push(approval_b());
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.card_ids(), vec!["call_A", "call_B"]);
    let s = h.c.snapshot();
    let raw = sj(&s.messages.as_slice()[1].raw);
    let ids: Vec<&Value> = (0..2).map(|i| &raw["parts"][i]["approval"]["id"]).collect();
    assert_eq!(ids, vec![&json!("appr_7"), &json!("call_B")]);
    assert_eq!(raw["parts"][0]["approval"].get("approved"), None);
}

/// A history message the thread model refuses as it is (a non-string `type` or `__id`, a
/// non-string role) keeps everything else in `raw`: only the refused keys go.
#[test]
fn a_history_message_keeps_its_raw_form_but_the_refused_keys() {
    let h = H::with_messages(vec![
        json!({"id": "m1", "role": "user", "type": 5, "__id": [1], "parts": [{"type": "text", "text": "hi"}]}),
        json!({"id": 2, "role": 7, "parts": [{"type": "text", "text": "yo"}]}),
    ]);
    let s = h.c.snapshot();
    let msgs = s.messages.as_slice();
    assert_eq!(
        sj(&msgs[0].raw),
        json!({"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]})
    );
    assert_eq!(msgs[0].role.as_deref(), Some("user"));
    assert_eq!(msgs[0].text, "hi");
    assert_eq!(
        sj(&msgs[1].raw),
        json!({"id": 2, "parts": [{"type": "text", "text": "yo"}]})
    );
    assert_eq!(msgs[1].id.as_deref(), Some("2"));
    assert_eq!(msgs[1].role, None);
}

/// Mastra's bridge (`@mastra/ai-sdk` 1.10.4) also streams `data-tool-call-suspended` for a tool
/// that suspends its run to ask for data of its own (a `suspendPayload` and a `resumeSchema`),
/// which is no approval: no card, nothing locked, and the reply ends at `[DONE]` as completed,
/// its call shown as called.
#[test]
fn a_mastra_suspension_that_is_no_approval_is_no_card() {
    let mut h = H::new();
    let (op, post) = h.send("book it");
    let mut c = vec![start("msg_a1"), json!({"type": "start-step"})];
    c.extend(tool_in("call_S", "ask_user", json!({"q": "which day?"})));
    c.push(
        json!({"type": "data-tool-call-suspended", "id": "call_S", "data": {
        "state": "data-tool-call-suspended", "runId": "run_9", "toolCallId": "call_S",
        "toolName": "ask_user", "suspendPayload": {"q": "which day?"}, "resumeSchema": "{}"}}),
    );
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed, "{:?}", s.error);
    assert!(s.suspension.is_none() && h.card_ids().is_empty());
    let tools = &s.messages.as_slice()[1].tools;
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].status, ToolStatus::Called);
    // Nothing is asked of the server later, and the next message goes.
    no_http(&h.at(h.now + 120_000));
    let (_, next) = h.send("Monday");
    assert_send_post(&next, "Monday");
}

/// What Mastra 1.71 with `@mastra/ai-sdk` 1.10.4 (`toAISdkStream(stream, { from: 'agent', version:
/// 'v7' })`) streams for two gated calls of one step, as run against it: both approval forms for
/// the first call, no `finish`; the first decision's continuation (no `start`) asks for the
/// second call and runs nothing; the second's runs both calls. The cards come one at a time, the
/// first call shows as approved meanwhile, and each call is sent once.
#[test]
fn mastra_asks_for_a_step_s_calls_in_turn_and_runs_them_once_all_are_answered() {
    let schema = r#"{"type":"object","properties":{"approved":{"type":"boolean"},"reason":{"type":"string"}},"required":["approved"]}"#;
    let asks = |call: &str, path: &str| {
        vec![
            json!({"type": "tool-approval-request", "approvalId": format!("r1::{call}"), "toolCallId": call}),
            json!({"type": "data-tool-call-approval", "id": call, "data": {
                "state": "data-tool-call-approval", "runId": "r1", "toolCallId": call,
                "toolName": "deleteFile", "args": {"path": path}, "resumeSchema": schema}}),
        ]
    };
    let mut h = H::new();
    let (op, post) = h.send("delete /tmp/c and delete /tmp/d");
    let mut c = vec![
        start("m1"),
        json!({"type": "start-step"}),
        json!({"type": "tool-input-available", "toolCallId": "call_1", "toolName": "deleteFile", "input": {"path": "/tmp/c"}}),
        json!({"type": "tool-input-available", "toolCallId": "call_2", "toolName": "deleteFile", "input": {"path": "/tmp/d"}}),
    ];
    c.extend(asks("call_1", "/tmp/c"));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.card_ids(), vec!["call_1"]);
    let s = h.c.snapshot();
    assert_eq!(
        s.suspension.as_ref().and_then(|p| p.run_id.as_deref()),
        Some("r1")
    );
    h.c.approve("call_1").expect("approve");
    h.drain();
    let (op, first) = h.submit();
    let body = first.body.as_deref().expect("a body");
    assert!(
        body.contains(r#""approval":{"runId":"r1","toolCallId":"call_1","approved":true}"#),
        "{body}"
    );
    let outs = h.stream(first.id, &sse(&asks("call_2", "/tmp/d"), true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(h.card_ids(), vec!["call_2"]);
    let tools = &s.messages.as_slice().last().expect("the reply").tools;
    let status: Vec<ToolStatus> = tools.iter().map(|t| t.status).collect();
    assert_eq!(status, vec![ToolStatus::Approved, ToolStatus::Pending]);
    h.c.approve("call_2").expect("approve");
    h.drain();
    let (op, second) = h.submit();
    let body = second.body.as_deref().expect("a body");
    assert!(
        body.contains(r#""approval":{"runId":"r1","toolCallId":"call_2","approved":true}"#),
        "{body}"
    );
    let mut c = vec![
        json!({"type": "tool-output-available", "toolCallId": "call_1", "output": {"deleted": "/tmp/c"}}),
        json!({"type": "tool-output-available", "toolCallId": "call_2", "output": {"deleted": "/tmp/d"}}),
    ];
    c.extend(final_text("Both deleted."));
    let outs = h.stream(second.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    no_http(&outs);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed, "{:?}", s.error);
    let msg = s.messages.as_slice().last().expect("the reply");
    let status: Vec<ToolStatus> = msg.tools.iter().map(|t| t.status).collect();
    assert_eq!(status, vec![ToolStatus::Done, ToolStatus::Done]);
    assert_eq!(msg.text, "Both deleted.");
}

/// A tool's inputs are always an object, as the types say (and as a Neuron tool's): a list keyed
/// `"0"`, `"1"`, ...; `{}` for anything else, such as the raw text of an input that did not parse,
/// which the AI SDK keeps as a string on the part (`raw` keeps it). In the history, in a stream,
/// and on a card whose `args` are no object.
#[test]
fn a_tool_s_inputs_are_always_an_object() {
    let h = H::with_messages(vec![
        user_ui("m1", "go"),
        json!({"id": "m2", "role": "assistant", "parts": [
            {"type": "dynamic-tool", "toolName": "send_email", "toolCallId": "c1", "state": "output-error",
             "input": "{\"to\": 5", "errorText": "Invalid input for tool send_email"},
            {"type": "tool-tag", "toolCallId": "c2", "state": "output-available", "input": ["a", "b"], "output": "ok"},
            {"type": "tool-ping", "toolCallId": "c3", "state": "output-available", "input": 7, "output": "pong"}
        ]}),
    ]);
    let s = h.c.snapshot();
    let msg = &s.messages.as_slice()[1];
    let inputs: Vec<Value> = msg.tools.iter().map(|t| sj(&t.inputs)).collect();
    assert_eq!(
        inputs,
        vec![json!({}), json!({"0": "a", "1": "b"}), json!({})]
    );
    assert_eq!(sj(&msg.raw)["parts"][0]["input"], json!("{\"to\": 5"));

    let mut h = H::new();
    let (op, post) = h.send("tag it");
    let mut c = vec![start("msg_a1")];
    c.extend(tool_in("call_T", "tag", json!(["x", {"y": 1}])));
    c.push(approval(
        "call_A",
        "delete_file",
        "Deletes it",
        json!("/tmp/x"),
    ));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    let tools = &s.messages.as_slice().last().expect("the reply").tools;
    assert_eq!(sj(&tools[0].inputs), json!({"0": "x", "1": {"y": 1}}));
    let card = &s.suspension.as_ref().expect("paused").pending[0];
    assert_eq!(card.call_id, "call_A");
    assert_eq!(sj(&card.inputs), json!({}));
}

/// What pydantic-ai 2.78 (`pydantic-ai-slim`, its `VercelAIAdapter` with `sdk_version=7`) streams
/// and persists, as run against it: a Sidenet endpoint in Python whose agent was pydantic-ai's
/// (two `requires_approval` tools and an ungated one in one step), the model scripted with its
/// `FunctionModel`; the run id in a `data-run` chunk and one decision per POST were the
/// endpoint's. Its forms: `start` without a message id; a call's input streamed as
/// `inputTextDelta`s, the ungated call's input and output before the gated calls' inputs; the
/// approval requests (the approval id is the call id) after a `message-metadata` chunk, and
/// `finish` without a `finishReason`; the continuation names the approved call's input again
/// before its output. Its history writes one UI message per model response, and an approved
/// call that ran as a plain `output-available` part (no record of the approval); a denied one
/// keeps an `approval` with an id of its own and pydantic-ai's reason.
#[test]
fn pydantic_ai_s_stream_and_history_read_as_it_writes_them() {
    let run =
        || json!({"type": "data-run", "data": {"runId": "run_p1", "agentVersionId": "agv_p"}});
    let input_deltas = |call: &str, name: &str, input: &str| {
        let mut c = vec![json!({"type": "tool-input-start", "toolCallId": call, "toolName": name})];
        for piece in input.as_bytes().chunks(7) {
            let piece = std::str::from_utf8(piece).expect("ASCII");
            c.push(
                json!({"type": "tool-input-delta", "toolCallId": call, "inputTextDelta": piece}),
            );
        }
        c
    };
    let meta = || json!({"type": "message-metadata", "messageMetadata": {"pydantic_ai": {"timestamp": "2026-12-06T21:30:10.467912Z"}}});
    let mut h = H::new();
    let (op, post) = h.send("email maya and bob, read the motd");
    let mut c = vec![
        json!({"type": "start"}),
        run(),
        json!({"type": "start-step"}),
    ];
    c.push(json!({"type": "text-start", "id": "bd28"}));
    c.push(json!({"type": "text-delta", "delta": "On it.", "id": "bd28"}));
    c.push(json!({"type": "text-end", "id": "bd28"}));
    c.extend(input_deltas(
        "call_e4",
        "send_email",
        r#"{"to": "maya@example.com", "body": "Hi"}"#,
    ));
    c.extend(input_deltas(
        "call_63",
        "send_email",
        r#"{"to": "bob@example.com", "body": "x"}"#,
    ));
    c.extend(input_deltas(
        "call_69",
        "read_file",
        r#"{"path": "/etc/motd"}"#,
    ));
    c.push(json!({"type": "tool-input-available", "toolCallId": "call_69", "toolName": "read_file", "input": {"path": "/etc/motd"}}));
    c.push(json!({"type": "tool-output-available", "toolCallId": "call_69", "output": "contents of /etc/motd"}));
    c.push(json!({"type": "tool-input-available", "toolCallId": "call_e4", "toolName": "send_email", "input": {"to": "maya@example.com", "body": "Hi"}}));
    c.push(json!({"type": "tool-input-available", "toolCallId": "call_63", "toolName": "send_email", "input": {"to": "bob@example.com", "body": "x"}}));
    c.push(meta());
    c.push(
        json!({"type": "tool-approval-request", "approvalId": "call_e4", "toolCallId": "call_e4"}),
    );
    c.push(
        json!({"type": "tool-approval-request", "approvalId": "call_63", "toolCallId": "call_63"}),
    );
    c.extend([json!({"type": "finish-step"}), json!({"type": "finish"})]);
    let paused = sse(&c, true);
    let outs = h.stream(post.id, &paused);
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    assert_eq!(h.card_ids(), vec!["call_e4", "call_63"]);
    let s = h.c.snapshot();
    let pause = s.suspension.as_ref().expect("paused");
    assert_eq!(pause.run_id.as_deref(), Some("run_p1"));
    assert_eq!(
        sj(&pause.pending[1].inputs),
        json!({"to": "bob@example.com", "body": "x"})
    );
    let msg = s.messages.as_slice().last().expect("the reply");
    assert_eq!(msg.text, "On it.");
    let status: Vec<ToolStatus> = msg.tools.iter().map(|t| t.status).collect();
    assert_eq!(
        status,
        vec![ToolStatus::Pending, ToolStatus::Pending, ToolStatus::Done]
    );
    assert_eq!(
        msg.tools[2].result.as_ref().map(sj),
        Some(json!("contents of /etc/motd"))
    );

    // One decision per POST: the endpoint announced the call still waiting.
    h.c.approve("call_e4").expect("approve");
    h.drain();
    h.c.reject("call_63", Some("not bob")).expect("reject");
    h.drain();
    let (op, first) = h.submit();
    let body = first.body.as_deref().expect("a body");
    assert!(
        body.contains(r#""approval":{"runId":"run_p1","toolCallId":"call_e4","approved":true}"#),
        "{body}"
    );
    let c = vec![
        json!({"type": "start"}),
        run(),
        json!({"type": "tool-input-available", "toolCallId": "call_63", "toolName": "send_email", "input": {"to": "bob@example.com", "body": "x"}}),
        json!({"type": "tool-approval-request", "approvalId": "call_63", "toolCallId": "call_63"}),
        json!({"type": "finish", "finishReason": "tool-calls"}),
    ];
    let outs = h.stream(first.id, &sse(&c, true));
    let second = one_http(&outs);
    let body = second.body.as_deref().expect("a body");
    assert!(
        body.contains(r#""approval":{"runId":"run_p1","toolCallId":"call_63","approved":false}"#),
        "{body}"
    );
    // pydantic-ai's continuation, once every call is answered.
    let answer = "send_email: {\"sent\":true,\"to\":\"maya@example.com\"}; send_email: The tool call was denied.; read_file: contents of /etc/motd";
    let (a, b) = answer.split_at(60);
    let c = vec![
        json!({"type": "start"}),
        run(),
        json!({"type": "tool-input-available", "toolCallId": "call_e4", "toolName": "send_email", "input": {"to": "maya@example.com", "body": "Hi"}}),
        json!({"type": "tool-output-denied", "toolCallId": "call_63"}),
        json!({"type": "tool-output-available", "toolCallId": "call_e4", "output": {"sent": true, "to": "maya@example.com"}}),
        json!({"type": "start-step"}),
        json!({"type": "text-start", "id": "5852"}),
        json!({"type": "text-delta", "delta": a, "id": "5852"}),
        json!({"type": "text-delta", "delta": b, "id": "5852"}),
        json!({"type": "text-end", "id": "5852"}),
        meta(),
        json!({"type": "finish-step"}),
        json!({"type": "finish"}),
    ];
    let outs = h.stream(second.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    no_http(&outs);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed, "{:?}", s.error);
    assert_eq!(s.finish_reason, None);
    let msg = s.messages.as_slice().last().expect("the reply");
    assert_eq!(msg.text, format!("On it.\n{answer}"));
    let got: Vec<(&str, ToolStatus, Option<Approval>)> = msg
        .tools
        .iter()
        .map(|t| (t.call_id.as_str(), t.status, t.approval))
        .collect();
    assert_eq!(
        got,
        vec![
            ("call_e4", ToolStatus::Done, Some(Approval::Approved)),
            ("call_63", ToolStatus::Denied, Some(Approval::Rejected)),
            ("call_69", ToolStatus::Done, None),
        ]
    );
    assert_eq!(
        msg.tools[0].result.as_ref().map(sj),
        Some(json!({"sent": true, "to": "maya@example.com"}))
    );
    assert_eq!(msg.tools[1].reject_reason.as_deref(), Some("not bob"));

    // Its history: paused, then as it ended.
    let ts = json!({"pydantic_ai": {"timestamp": "2026-12-06T21:30:10.440424Z"}});
    let user = json!({"id": "msg_c2", "role": "user", "metadata": ts, "parts": [{"type": "text", "text": "email maya and bob, read the motd", "state": "done"}]});
    let reply = |e4: Value, s63: Value| {
        json!({"id": "01a24d43-1", "role": "assistant", "metadata": ts, "parts": [
            {"type": "text", "text": "On it.", "state": "done"},
            e4, s63,
            {"type": "tool-read_file", "toolCallId": "call_69", "state": "output-available", "input": {"path": "/etc/motd"}, "output": "contents of /etc/motd", "providerExecuted": false}
        ]})
    };
    let asked = |call: &str, to: &str, body: &str| json!({"type": "tool-send_email", "toolCallId": call, "state": "approval-requested", "input": {"to": to, "body": body}, "providerExecuted": false, "approval": {"id": call}});
    let mut h = H::new();
    let (_, get) = h.load();
    let outs = h.respond(
        one_http(&get).id,
        history(vec![
            user.clone(),
            reply(
                asked("call_e4", "maya@example.com", "Hi"),
                asked("call_63", "bob@example.com", "x"),
            ),
        ]),
    );
    let replay = one_http(&outs);
    h.stream(replay.id, &paused);
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    assert_eq!(h.card_ids(), vec!["call_e4", "call_63"]);

    let h = H::with_messages(vec![
        user,
        reply(
            json!({"type": "tool-send_email", "toolCallId": "call_e4", "state": "output-available", "input": {"to": "maya@example.com", "body": "Hi"}, "output": {"sent": true, "to": "maya@example.com"}, "providerExecuted": false}),
            json!({"type": "tool-send_email", "toolCallId": "call_63", "state": "output-denied", "input": {"to": "bob@example.com", "body": "x"}, "providerExecuted": false, "approval": {"id": "dbb2dc08-d31b", "approved": false, "reason": "The tool call was denied."}}),
        ),
        json!({"id": "01a24d43-2", "role": "assistant", "metadata": ts, "parts": [{"type": "text", "text": answer, "state": "done"}]}),
    ]);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Idle);
    assert!(s.suspension.is_none());
    let texts: Vec<&str> = s
        .messages
        .as_slice()
        .iter()
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(
        texts,
        vec!["email maya and bob, read the motd", "On it.", answer]
    );
    let tools = &s.messages.as_slice()[1].tools;
    let got: Vec<(&str, ToolStatus, Option<Approval>)> = tools
        .iter()
        .map(|t| (t.call_id.as_str(), t.status, t.approval))
        .collect();
    assert_eq!(
        got,
        vec![
            ("call_e4", ToolStatus::Done, None),
            ("call_63", ToolStatus::Denied, Some(Approval::Rejected)),
            ("call_69", ToolStatus::Done, None),
        ]
    );
    // Its denial's text is where Sidenet's own history form keeps the request's reason (a denied
    // call is recorded "with the reason the model gave"), with nothing to tell the two apart: it
    // reads as the approval's reason. The rejection's reason is the drafts' record's alone.
    assert_eq!(
        tools[1].approval_reason.as_deref(),
        Some("The tool call was denied.")
    );
    assert_eq!(tools[1].reject_reason, None);
}

// ----------------------------------------------------------------------------------------------
// From a review of the engine: a new run's replayed card, a continuation that does not repeat
// the waiting call (collected, or ended "tool-calls"), a reused callId's reason, the pause's message

fn body_json(r: &HttpRequest) -> Value {
    serde_json::from_str(r.body.as_deref().expect("a body")).expect("json body")
}

/// A paused tab (run_1, call_A) loads; meanwhile the run ended elsewhere and a new run (run_2,
/// Mastra's native form, no `data-run`) paused on call_X. The card must name run_2.
#[test]
fn a_replayed_mastra_request_of_a_new_run_names_that_run_not_the_old_pause() {
    let mut h = H::paused(false);
    assert_eq!(
        h.c.snapshot()
            .suspension
            .as_ref()
            .and_then(|s| s.run_id.as_deref()),
        Some("run_1")
    );
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let outs = h.respond(
        get.id,
        history(vec![
            user_ui("msg_u1", "delete /tmp/x"),
            json!({"id": "msg_a1", "role": "assistant", "parts": [
                {"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available", "input": {"path": "/tmp/x"},
                 "output": "Deleted /tmp/x", "approval": {"id": "call_A", "approved": true}},
                {"type": "text", "text": "done"}
            ]}),
            user_ui("msg_u2", "delete /tmp/y"),
        ]),
    );
    let replay = one_http(&outs);
    let mut c = vec![start("msg_a2")];
    c.extend(tool_in("call_X", "delete_file", json!({"path": "/tmp/y"})));
    c.push(json!({"type": "tool-approval-request", "approvalId": "run_2::call_X", "toolCallId": "call_X"}));
    let outs = h.stream(replay.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.card_ids(), vec!["call_X"]);
    let s = h.c.snapshot();
    assert_eq!(
        s.suspension.as_ref().and_then(|s| s.run_id.as_deref()),
        Some("run_2"),
        "the new pause is run_2's"
    );
    h.c.approve("call_X").expect("approve");
    h.drain();
    let (_, post) = h.submit();
    assert_eq!(body_json(&post)["approval"]["runId"], "run_2");
}

/// The collected transport's twin of
/// `a_continuation_that_does_not_announce_the_calls_still_waiting_is_followed_up`: A's collected
/// answer reports the run still paused (no `finishReason`, no `finish` chunk) without repeating
/// call_B's approval chunk. B's decision must not be dropped as if the run had ended.
#[test]
fn a_collected_continuation_that_does_not_repeat_the_waiting_call_keeps_it() {
    // The paused answer with `finishReason: null`, or without the key (as the seed has it).
    for null_key in [true, false] {
        let answer = |chunks: Vec<Value>| {
            let mut body = json!({ "chunks": chunks });
            if null_key {
                body["finishReason"] = Value::Null;
            }
            HttpResponse::new(200, body.to_string())
        };
        let mut cfg = config();
        cfg.transport = Transport::Collect;
        cfg.agent_id = Some("agent_1".into());
        cfg.agent_version_id = Some(AGV.into());
        let mut h = H::with(cfg);
        let op = h.c.send(h.now, "delete /tmp/x").expect("send");
        let outs = h.drain();
        let post = one_http(&outs);
        let outs = h.respond(post.id, answer(pause_stream(true)));
        assert_eq!(done(&outs, op), Ok(()));
        assert_eq!(h.card_ids(), vec!["call_A", "call_B"]);
        h.approve_both();
        let (op, first) = h.submit();
        assert_eq!(
            first.body.as_deref(),
            Some(continuation_body("call_A", true).as_str())
        );
        // Paused still (no finish), B not announced again.
        let c = vec![
            start("msg_a1"),
            json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        ];
        let outs = h.respond(first.id, answer(c));
        let s = h.c.snapshot();
        assert!(
            s.dropped_drafts.is_empty(),
            "B's approval was dropped: {:?} (error {:?}, done {:?})",
            s.dropped_drafts,
            s.error,
            outs.iter().find(|o| matches!(o, Output::Done { .. }))
        );
        // Where the run stands is read (the history, the replay): B waits, B's decision goes.
        let second = read_where_the_run_stands(&mut h, &outs);
        assert_eq!(
            second.body.as_deref(),
            Some(continuation_body("call_B", true).as_str())
        );
        // The end of the run.
        let mut c = vec![
            start("msg_a1"),
            json!({"type": "tool-output-available", "toolCallId": "call_B", "output": "sent"}),
        ];
        c.extend(final_text("all done"));
        let body = json!({"chunks": c, "finishReason": "stop"}).to_string();
        let outs = h.respond(second.id, HttpResponse::new(200, body));
        no_http(&outs);
        assert_eq!(done(&outs, op), Ok(()));
        let s = h.c.snapshot();
        assert_eq!(s.phase, Phase::Completed);
        assert_eq!(s.finish_reason.as_deref(), Some("stop"));
        assert!(s.error.is_none(), "{:?}", s.error);
    }
}

fn done_or_none(outs: &[Output], op: OpId) -> Option<Result<(), ErrorCode>> {
    outs.iter().find_map(|o| match o {
        Output::Done { op: o, result } if *o == op => Some(result.clone().map_err(|e| e.code)),
        _ => None,
    })
}

/// Ids counted per step: a later run's call reuses call_A. Rejecting the first with a reason
/// must not show that reason on the second, rejected without one.
#[test]
fn a_reused_call_id_does_not_inherit_an_earlier_rejection_reason() {
    let mut h = H::paused(false);
    h.c.reject("call_A", Some("too risky")).expect("reject");
    h.drain();
    let (op, post) = h.submit();
    assert_continuation(&post, "call_A", false);
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-denied", "toolCallId": "call_A"}),
    ];
    c.extend(final_text("ok, not deleted"));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::Completed);

    // A new turn, a new run, its call under the same id.
    let (op, post) = h.send("delete /tmp/y");
    let mut c = vec![start("msg_a2")];
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/y"})));
    c.push(json!({"type": "data-tool-call-approval", "id": "call_A", "data": {
        "runId": "run_2", "toolCallId": "call_A", "toolName": "delete_file",
        "reason": "Delete /tmp/y", "args": {"path": "/tmp/y"}, "agentVersionId": AGV, "threadId": TID}}));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    h.c.reject("call_A", None).expect("reject");
    h.drain();
    let (op, post) = h.submit();
    let mut c = vec![
        start("msg_a2"),
        json!({"type": "tool-output-denied", "toolCallId": "call_A"}),
    ];
    c.extend(final_text("ok"));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    let msgs = s.messages.as_slice();
    let last = msgs.last().expect("reply");
    let tool = last
        .tools
        .iter()
        .find(|t| t.call_id == "call_A")
        .expect("call_A");
    assert_eq!(tool.approval, Some(Approval::Rejected));
    assert_eq!(
        tool.reject_reason, None,
        "the second call was rejected without a reason"
    );
}

/// An AI SDK-style server ends a paused step with `finish {finishReason: "tool-calls"}` (see
/// PROTOCOLS §3), not a bare `[DONE]`. A's continuation that ends so, call_B still waiting and
/// not announced again, is the paused run, not its end: B's approval must not be dropped.
#[test]
fn a_continuation_ending_with_finish_tool_calls_keeps_the_waiting_call() {
    let (mut h, op, first) = H::both_approved_and_submitted();
    assert_continuation(&first, "call_A", true);
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        json!({"type": "finish-step"}),
        json!({"type": "finish", "finishReason": "tool-calls"}),
    ];
    let outs = h.stream(first.id, &sse(&c, true));
    let s = h.c.snapshot();
    assert!(
        s.dropped_drafts.is_empty(),
        "B dropped: {:?}, phase {:?}, done {:?}",
        s.dropped_drafts,
        s.phase,
        done_or_none(&outs, op)
    );
    // Read where the run stands, as after a bare `[DONE]`: B waits, and B's decision goes.
    let second = read_where_the_run_stands(&mut h, &outs);
    assert_continuation(&second, "call_B", true);
    let outs = h.stream(second.id, &b_done_and_finished());
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert!(s.error.is_none(), "{:?}", s.error);
}

/// A continuation whose `start` names a new message id goes on with the paused message (which
/// keeps its id, msg_a1). When it pauses again on call_B, the suspension's messageId must name a
/// message the snapshot holds: the one showing call_B pending.
#[test]
fn a_repause_under_a_new_start_id_names_the_message_that_shows_the_card() {
    let mut h = H::paused(true);
    h.c.approve("call_A").expect("approve");
    h.drain();
    let (op, first) = h.submit();
    let c = vec![
        start("msg_a2"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
        approval_b(),
    ];
    let outs = h.stream(first.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.card_ids(), vec!["call_B"]);
    let s = h.c.snapshot();
    let ids: Vec<Option<String>> = s.messages.as_slice().iter().map(|m| m.id.clone()).collect();
    let holder = s
        .messages
        .as_slice()
        .iter()
        .rev()
        .find(|m| m.tools.iter().any(|t| t.call_id == "call_B"))
        .and_then(|m| m.id.clone());
    let mid = s.suspension.as_ref().and_then(|p| p.message_id.clone());
    assert_eq!(
        mid, holder,
        "suspension.messageId {mid:?} is not the message that shows call_B (ids {ids:?})"
    );
}

/// Stopping a continuation's reply after it announced a new gated call (the run paused again on
/// call_C): the run is paused on it, so its card stands and the composer stays locked, as after
/// a new message's reply stopped so (the composer unlocked with no card to answer, before). With
/// a call of the pause still open (call_B, its draft kept), that pause stays as it is: see
/// `abort_of_a_continuation_after_a_new_approval_chunk_keeps_the_drafts`.
#[test]
fn stopping_a_continuation_that_announced_a_new_call_keeps_its_card() {
    let (mut h, op, post) = H::a_approved_and_submitted();
    h.open(post.id, 200);
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
    ];
    c.extend(tool_in("call_C", "send_email", json!({"to": "x@y.z"})));
    c.push(approval(
        "call_C",
        "send_email",
        "Email x@y.z",
        json!({"to": "x@y.z"}),
    ));
    // call_C's approval chunk has arrived, the end of the stream has not.
    h.feed(post.id, &sse(&c, false), 9);
    assert_eq!(h.phase(), Phase::Streaming);
    h.c.abort();
    let outs = h.drain();
    assert!(outs.contains(&Output::Cancel(post.id)));
    assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
    let s = h.c.snapshot();
    assert_eq!(h.card_ids(), vec!["call_C"]);
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert!(!s.can_send);
    // call_C is answered as any card: its continuation names the run and the call.
    h.c.approve("call_C").expect("approve call_C");
    h.drain();
    let (_, post) = h.submit();
    assert_continuation(&post, "call_C", true);
}

/// Ids counted per step, in the AI SDK form (the approval request names the call alone): the
/// continuation's next step calls another tool under the callId just answered. The card shows
/// the new call, its tool and its inputs, which is what the continuation approves; it showed the
/// old tool's name over the new call's inputs (a "delete_file" card for an email), and the
/// message showed the new call as approved, with the old call's output.
#[test]
fn another_tool_asked_under_the_answered_call_id_is_a_card_of_its_own() {
    let (mut h, op, post) = H::a_approved_and_submitted();
    let mut c = next_step_after(
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
    );
    c.extend(tool_in(
        "call_A",
        "send_email",
        json!({"to": "a@b.c", "subject": "hi"}),
    ));
    c.push(json!({"type": "tool-approval-request", "approvalId": "apr_2", "toolCallId": "call_A"}));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    let cards = &s.suspension.as_ref().expect("paused").tools;
    assert_eq!(cards.len(), 1);
    assert_eq!(cards[0].call_id, "call_A");
    assert_eq!(cards[0].name, "send_email");
    assert_eq!(
        sj(&cards[0].inputs),
        json!({"to": "a@b.c", "subject": "hi"})
    );
    assert_eq!(cards[0].approval, Approval::Pending);
    // The message shows both calls: the first done with its output, the second asking.
    let m = s.messages.as_slice().last().expect("message");
    let tools: Vec<_> = m
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.status))
        .collect();
    assert_eq!(
        tools,
        vec![
            ("delete_file", ToolStatus::Done),
            ("send_email", ToolStatus::Pending)
        ]
    );
    assert_eq!(
        m.tools[0].result.as_ref().map(sj),
        Some(json!("Deleted /tmp/x"))
    );
    assert_eq!(m.tools[1].result, None);
    let raw = sj(&m.raw);
    let parts = raw["parts"].as_array().expect("parts");
    assert_eq!(parts.len(), 2, "{raw}");
    assert_eq!(parts[0]["type"], "tool-delete_file");
    assert_eq!(parts[0]["state"], "output-available");
    assert_eq!(parts[1]["type"], "tool-send_email");
    assert_eq!(parts[1]["state"], "approval-requested");
    assert_eq!(parts[1]["approval"], json!({"id": "apr_2"}));
    // Answered, and its outcome lands on the second call.
    h.c.reject("call_A", Some("no mail")).expect("reject");
    h.drain();
    let (op, post) = h.submit();
    assert_continuation(&post, "call_A", false);
    let mut c = vec![
        start("msg_a1"),
        json!({"type": "tool-output-denied", "toolCallId": "call_A"}),
    ];
    c.extend(final_text("ok"));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    let m = &s.messages.as_slice()[1];
    let tools: Vec<_> = m
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.status))
        .collect();
    assert_eq!(
        tools,
        vec![
            ("delete_file", ToolStatus::Done),
            ("send_email", ToolStatus::Denied)
        ]
    );
    assert_eq!(m.tools[1].reject_reason.as_deref(), Some("no mail"));
}

/// The same two calls under one callId read from the history on a load (the replay names the
/// call alone): the card is the later call's.
#[test]
fn a_load_shows_the_later_of_two_calls_under_one_call_id() {
    let mut h = H::new();
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let hist = vec![
        user_ui("msg_u1", "delete /tmp/x"),
        json!({"id": "msg_a1", "role": "assistant", "parts": [
            {"type": "tool-delete_file", "toolCallId": "call_A", "state": "output-available",
             "input": {"path": "/tmp/x"}, "output": "Deleted /tmp/x", "approval": {"id": "call_A", "approved": true}},
            {"type": "tool-send_email", "toolCallId": "call_A", "state": "approval-requested",
             "input": {"to": "a@b.c", "subject": "hi"}, "approval": {"id": "apr_2"}}
        ]}),
    ];
    let outs = h.respond(get.id, history(hist));
    let replay = one_http(&outs);
    let c = vec![
        start("msg_a1"),
        json!({"type": "data-run", "data": {"runId": "run_1", "agentVersionId": AGV, "threadId": TID}}),
        json!({"type": "tool-approval-request", "approvalId": "apr_2", "toolCallId": "call_A"}),
    ];
    let outs = h.stream(replay.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    let cards = &s.suspension.as_ref().expect("paused").tools;
    assert_eq!(cards.len(), 1);
    assert_eq!(cards[0].name, "send_email");
    assert_eq!(
        sj(&cards[0].inputs),
        json!({"to": "a@b.c", "subject": "hi"})
    );
}

/// A tool of a message as (name, inputs, status, approval, result).
type ToolRow = (String, Value, ToolStatus, Option<Approval>, Option<Value>);

/// The tools of a message, for comparing the streamed view with the history's.
fn tool_rows(m: &MessageView) -> Vec<ToolRow> {
    m.tools
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                sj(&t.inputs),
                t.status,
                t.approval,
                t.result.as_ref().map(sj),
            )
        })
        .collect()
}

/// One row of [`tool_rows`].
fn row(
    name: &str,
    inputs: Value,
    status: ToolStatus,
    approval: Option<Approval>,
    result: Option<Value>,
) -> ToolRow {
    (name.to_owned(), inputs, status, approval, result)
}

/// The streamed message, and the same message as the history gives it back (its raw form read
/// as a load reads it): both views of its tools.
fn streamed_and_reloaded(h: &H) -> (MessageView, MessageView) {
    let s = h.c.snapshot();
    let streamed = s.messages.as_slice().last().expect("message").clone();
    let reloaded = H::with_messages(vec![user_ui("msg_u1", "go"), sj(&streamed.raw)]);
    let r = reloaded.c.snapshot();
    let again = r.messages.as_slice().last().expect("message").clone();
    (streamed, again)
}

/// A provider whose callIds restart every step (OpenAI models on Bedrock: `call_0` in each):
/// the same id in a new step (after `start-step`) is a new call, as in the AI SDK's own client
/// (the input chunks look in the current step alone). Merged into the first call's view, the
/// first read vanished from the transcript and the second showed the first one's output until
/// its own came.
#[test]
fn a_call_id_reused_in_a_later_step_is_a_call_of_its_own() {
    let mut h = H::new();
    let (op, post) = h.send("go");
    let mut c = vec![start("msg_a1"), json!({"type": "start-step"})];
    c.extend(tool_in("call_0", "read_file", json!({"path": "/a"})));
    c.push(json!({"type": "tool-output-available", "toolCallId": "call_0", "output": "A"}));
    c.push(json!({"type": "finish-step"}));
    c.push(json!({"type": "start-step"}));
    c.extend(tool_in("call_0", "read_file", json!({"path": "/b"})));
    let (first, rest) = c.split_at(c.len() - 1);
    h.open(post.id, 200);
    h.feed(post.id, &sse(first, false), 7);
    // The second call announced: its own view, no result yet; the first one's kept.
    let m = h.c.snapshot().streaming.clone().expect("streaming");
    assert_eq!(
        tool_rows(&m),
        vec![
            row(
                "read_file",
                json!({"path": "/a"}),
                ToolStatus::Done,
                None,
                Some(json!("A"))
            ),
            row("read_file", json!({}), ToolStatus::Called, None, None),
        ]
    );
    let mut c = rest.to_vec();
    c.push(json!({"type": "tool-output-available", "toolCallId": "call_0", "output": "B"}));
    c.extend(final_text("done"));
    let mut outs = h.feed(post.id, &sse(&c, true), 7);
    outs.extend(h.end(post.id));
    assert_eq!(done(&outs, op), Ok(()));
    let (streamed, reloaded) = streamed_and_reloaded(&h);
    assert_eq!(
        tool_rows(&streamed),
        vec![
            row(
                "read_file",
                json!({"path": "/a"}),
                ToolStatus::Done,
                None,
                Some(json!("A"))
            ),
            row(
                "read_file",
                json!({"path": "/b"}),
                ToolStatus::Done,
                None,
                Some(json!("B"))
            ),
        ]
    );
    assert_eq!(tool_rows(&reloaded), tool_rows(&streamed));
    assert_eq!(streamed.text, "done");
}

/// The same tool asked again under the accepted callId in the continuation's next step: the
/// call before keeps its output, and the new call, asking, shows none (it showed the old one's).
#[test]
fn a_call_asked_again_in_a_new_step_keeps_the_first_calls_output_apart() {
    let (mut h, op, post) = H::a_approved_and_submitted();
    let mut c = next_step_after(
        json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "Deleted /tmp/x"}),
    );
    c.extend(tool_in("call_A", "delete_file", json!({"path": "/tmp/y"})));
    c.push(approval(
        "call_A",
        "delete_file",
        "Delete the file /tmp/y",
        json!({"path": "/tmp/y"}),
    ));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    let m = s.messages.as_slice().last().expect("message");
    assert_eq!(
        tool_rows(m),
        vec![
            row(
                "delete_file",
                json!({"path": "/tmp/x"}),
                ToolStatus::Done,
                Some(Approval::Approved),
                Some(json!("Deleted /tmp/x"))
            ),
            row(
                "delete_file",
                json!({"path": "/tmp/y"}),
                ToolStatus::Pending,
                Some(Approval::Pending),
                None
            ),
        ]
    );
    let raw = sj(&m.raw);
    let parts = raw["parts"].as_array().expect("parts");
    assert_eq!(parts.len(), 2, "{raw}");
    assert_eq!(parts[0]["output"], "Deleted /tmp/x");
    assert_eq!(parts[1].get("output"), None, "{raw}");
    assert_eq!(parts[1]["input"], json!({"path": "/tmp/y"}));
    let card = &s.suspension.as_ref().expect("paused").tools[0];
    assert_eq!(sj(&card.inputs), json!({"path": "/tmp/y"}));
}

/// The rejected call's id reused in the next step for a tool that asks nobody: that call ran, and
/// shows so, not rejected (the rejection in flight is the earlier call's).
#[test]
fn a_rejection_in_flight_does_not_mark_a_later_call_under_its_id() {
    let mut h = H::paused(false);
    h.c.reject("call_A", Some("keep it")).expect("reject");
    h.drain();
    let (op, post) = h.submit();
    assert_continuation(&post, "call_A", false);
    let mut c = next_step_after(json!({"type": "tool-output-denied", "toolCallId": "call_A"}));
    c.extend(tool_in("call_A", "read_file", json!({"path": "/tmp/x"})));
    c.push(json!({"type": "tool-output-available", "toolCallId": "call_A", "output": "contents"}));
    c.extend(final_text("kept"));
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let (streamed, reloaded) = streamed_and_reloaded(&h);
    let rows = tool_rows(&streamed);
    assert_eq!(
        rows,
        vec![
            row(
                "delete_file",
                json!({"path": "/tmp/x"}),
                ToolStatus::Denied,
                Some(Approval::Rejected),
                None
            ),
            row(
                "read_file",
                json!({"path": "/tmp/x"}),
                ToolStatus::Done,
                None,
                Some(json!("contents"))
            ),
        ]
    );
    assert_eq!(tool_rows(&reloaded), rows);
    assert_eq!(streamed.tools[0].reject_reason.as_deref(), Some("keep it"));
}

/// A text block left open across a tool's chunks (`@ai-sdk/langchain` ends its text blocks late)
/// goes on in its own part, as the AI SDK's client appends it: not a new part after a line break,
/// which the history then read differently.
#[test]
fn a_text_block_open_across_a_tool_goes_on_in_its_part() {
    let mut h = H::new();
    let (op, post) = h.send("go");
    let c = vec![
        start("msg_a1"),
        json!({"type": "start-step"}),
        json!({"type": "text-start", "id": "t"}),
        json!({"type": "text-delta", "id": "t", "delta": "Let me "}),
        json!({"type": "tool-input-start", "toolCallId": "c1", "toolName": "read_file"}),
        json!({"type": "text-delta", "id": "t", "delta": "check."}),
        json!({"type": "tool-input-available", "toolCallId": "c1", "toolName": "read_file", "input": {"path": "a"}}),
        json!({"type": "tool-output-available", "toolCallId": "c1", "output": "A"}),
        json!({"type": "text-delta", "id": "t", "delta": " Done."}),
        json!({"type": "text-end", "id": "t"}),
        json!({"type": "finish-step"}),
        json!({"type": "finish", "finishReason": "stop"}),
    ];
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let (streamed, reloaded) = streamed_and_reloaded(&h);
    assert_eq!(streamed.text, "Let me check. Done.");
    assert_eq!(reloaded.text, streamed.text);
    let raw = sj(&streamed.raw);
    assert_eq!(raw["parts"].as_array().map(Vec::len), Some(2), "{raw}");
}

/// `tool-input-error` with the input that failed the tool's schema (AI SDK 7 keeps it as the
/// part's `input`, AI SDK 6 as `rawInput`): shown as the call's inputs when streamed, and when read
/// back from either history.
#[test]
fn a_call_that_failed_its_schema_shows_its_input() {
    let mut h = H::new();
    let (op, post) = h.send("go");
    let c = vec![
        start("msg_a1"),
        json!({"type": "tool-input-start", "toolCallId": "c_bad", "toolName": "send_email"}),
        json!({"type": "tool-input-error", "toolCallId": "c_bad", "toolName": "send_email",
               "input": {"to": 5}, "errorText": "Invalid input for tool send_email"}),
        json!({"type": "finish", "finishReason": "stop"}),
    ];
    let outs = h.stream(post.id, &sse(&c, true));
    assert_eq!(done(&outs, op), Ok(()));
    let (streamed, reloaded) = streamed_and_reloaded(&h);
    let t = &streamed.tools[0];
    assert_eq!(
        (t.status, sj(&t.inputs)),
        (ToolStatus::Error, json!({"to": 5}))
    );
    assert_eq!(raw_part(&streamed, "c_bad")["input"], json!({"to": 5}));
    assert_eq!(tool_rows(&reloaded), tool_rows(&streamed));
    // AI SDK 6's part: `rawInput`, no `input`.
    let h6 = H::with_messages(vec![
        user_ui("msg_u1", "go"),
        json!({"id": "msg_a1", "role": "assistant", "parts": [
            {"type": "tool-send_email", "toolCallId": "c_bad", "state": "output-error",
             "rawInput": {"to": 5}, "errorText": "Invalid input for tool send_email"}]}),
    ]);
    let s = h6.c.snapshot();
    let t = &s.messages.as_slice()[1].tools[0];
    assert_eq!(
        (t.status, sj(&t.inputs)),
        (ToolStatus::Error, json!({"to": 5}))
    );
}

/// "Always allow" approved the call, its automatic submission was stopped, and the person cleared
/// the approval ("Undo"): after a reload (a new client, the tool allowed again) the call stays
/// undecided and nothing is sent: the record lists the calls the rule approved, and the rule
/// approves each call once. (It approved it again and sent it without the person.)
#[test]
fn a_cleared_approval_of_an_allowed_tool_stays_cleared_after_a_reload() {
    let mut h = H::paused(false);
    h.c.allow_tool(h.now, "delete_file", true).expect("allow");
    let first = one_http(&h.drain());
    assert_continuation(&first, "call_A", true);
    h.c.abort();
    h.drain();
    h.c.clear("call_A").expect("clear");
    let record = written(&h.drain()).expect("the record, the draft cleared");
    let mut r = H::new();
    r.c.restore_drafts(&record);
    r.drain();
    r.c.allow_tool(r.now, "delete_file", true).expect("allow");
    r.drain();
    let (op, get) = r.load();
    let get = one_http(&get);
    let outs = r.respond(get.id, history(paused_history(false)));
    let replay = one_http(&outs);
    let outs = r.stream(replay.id, &replay_stream(false));
    assert_eq!(done(&outs, op), Ok(()));
    no_http(&outs);
    let s = r.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(s.decisions.get("call_A"), None);
}
