//! Scenario tests of the sans-IO client, Neuron dialect: canned server replies, a simulated clock,
//! every request asserted, `check_invariants()` after every step.

use serde_json::{json, Value};
use toolgate::client::{
    Client, Config, HttpRequest, HttpResponse, Method, OpId, Output, Phase, RequestId, ToolStatus,
    TransportError,
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
use toolgate::json::ToJson;

const BASE: &str = "https://api.test";
const TID: &str = "thread_42";
const THREAD_URL: &str = "https://api.test/threads/thread_42";
const CHAT_URL: &str = "https://api.test/threads/thread_42/chat";
const KEY: &str = "toolgate:drafts:neuron:https://api.test:thread_42";

// ----------------------------------------------------------------------------------------------
// Neuron JSON builders

fn user(id: &str, text: &str) -> Value {
    json!({"__id": id, "role": "user", "content": text})
}

fn assistant(id: &str, text: &str) -> Value {
    json!({"__id": id, "role": "assistant", "content": text})
}

fn tool(call_id: &str, name: &str, approval: Option<&str>, reason: Option<&str>) -> Value {
    json!({
        "callId": call_id,
        "name": name,
        "description": format!("the {name} tool"),
        "parameters": [],
        "inputs": {"path": "/tmp/x"},
        "result": null,
        "approval": approval,
        "approvalReason": reason,
        "rejectReason": null,
    })
}

fn rejected(call_id: &str, name: &str, reason: Option<&str>, why: Option<&str>) -> Value {
    let mut t = tool(call_id, name, Some("rejected"), reason);
    t["rejectReason"] = json!(why);
    t
}

fn tool_call(id: &str, tools: Vec<Value>) -> Value {
    json!({"__id": id, "resume_token": "workflow_1", "role": "assistant", "content": [], "type": "tool_call", "tools": tools})
}

fn tool_result(id: &str, tools: Vec<Value>) -> Value {
    json!({"__id": id, "role": "tool", "content": [], "type": "tool_call_result", "tools": tools})
}

fn thread(messages: Vec<Value>) -> HttpResponse {
    ok(json!({"id": TID, "messages": messages}))
}

fn reply(status: &str, message: Value) -> HttpResponse {
    ok(json!({"status": status, "message": message}))
}

fn ok(body: Value) -> HttpResponse {
    HttpResponse::new(200, body.to_string())
}

fn status(code: u16, body: Value) -> HttpResponse {
    HttpResponse::new(code, body.to_string())
}

/// The pause of the main scenario: two gated tools, both pending.
fn pause_two() -> Value {
    tool_call(
        "msg_2",
        vec![
            tool(
                "call_A",
                "delete_file",
                Some("pending"),
                Some("Deleting a file is irreversible"),
            ),
            tool(
                "call_B",
                "send_email",
                Some("pending"),
                Some("Outbound email reaches people"),
            ),
        ],
    )
}

// ----------------------------------------------------------------------------------------------
// Harness

struct H {
    c: Client,
    now: u64,
}

fn config() -> Config {
    let mut c = Config::new(BASE, TID);
    c.headers = vec![("Authorization".to_owned(), "Bearer t0k".to_owned())];
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

    /// Drains the outputs, checking the invariants and that at most one `Changed` comes, last.
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

    fn send(&mut self, text: &str) -> (OpId, Vec<Output>) {
        let op = self.c.send(self.now, text).expect("send");
        (op, self.drain())
    }

    fn submit(&mut self) -> (OpId, Vec<Output>) {
        let op = self.c.submit(self.now).expect("submit");
        (op, self.drain())
    }

    fn approve(&mut self, id: &str) -> Vec<Output> {
        self.c.approve(id).expect("approve");
        self.drain()
    }

    fn reject(&mut self, id: &str, reason: Option<&str>) -> Vec<Output> {
        self.c.reject(id, reason).expect("reject");
        self.drain()
    }

    fn respond(&mut self, id: RequestId, resp: HttpResponse) -> Vec<Output> {
        self.c.handle_response(self.now, id, resp);
        self.drain()
    }

    fn fail(&mut self, id: RequestId, err: TransportError) -> Vec<Output> {
        self.c.handle_failure(self.now, id, err);
        self.drain()
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

    /// Loads the given thread (one GET answered).
    fn loaded(thread_msgs: Vec<Value>) -> H {
        let mut h = H::new();
        let (op, outs) = h.load();
        let get = one_http(&outs);
        assert_get(&get);
        let outs = h.respond(get.id, thread(thread_msgs));
        assert!(done(&outs, op).is_ok());
        h
    }

    /// A loaded thread paused on `pause_two()`.
    fn paused() -> H {
        H::loaded(vec![user("msg_1", "Delete old logs"), pause_two()])
    }

    /// A client started with `stored` in storage, then loaded with the given thread: the outputs of
    /// the load's end.
    fn restored(stored: &str, thread_msgs: Vec<Value>) -> (H, Vec<Output>) {
        let mut h = H::new();
        h.c.restore_drafts(stored);
        h.drain();
        let (_, outs) = h.load();
        let get = one_http(&outs);
        let outs = h.respond(get.id, thread(thread_msgs));
        (h, outs)
    }
}

/// The thread of `H::paused()`.
fn paused_thread() -> Vec<Value> {
    vec![user("msg_1", "Delete old logs"), pause_two()]
}

#[test]
fn a_thread_with_a_lone_surrogate_escape_loads() {
    // JSON.stringify of a text cut inside a surrogate pair (a JS server truncating a message)
    // writes `\ud83d` alone: the message reads with U+FFFD and the thread still loads.
    let mut h = H::new();
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let body = format!(
        r#"{{"id":"{TID}","messages":[{{"role":"user","content":"cut \ud83d"}},{}]}}"#,
        pause_two()
    );
    let outs = h.respond(get.id, HttpResponse::new(200, body));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(s.messages.as_slice()[0].text, "cut \u{FFFD}");
}

fn changed(outs: &[Output]) -> bool {
    outs.contains(&Output::Changed)
}

fn assert_get(r: &HttpRequest) {
    assert_eq!(r.method, Method::Get);
    assert_eq!(r.method.as_str(), "GET");
    assert_eq!(r.url, THREAD_URL);
    assert_eq!(r.body, None);
    assert_eq!(r.timeout_ms, 30_000);
    assert!(r
        .headers
        .contains(&("Authorization".to_owned(), "Bearer t0k".to_owned())));
    assert!(r
        .headers
        .contains(&("Accept".to_owned(), "application/json".to_owned())));
}

/// Asserts a POST to the chat endpoint whose body is exactly `body` (as text: key order matters).
fn assert_post(r: &HttpRequest, body: &str) {
    assert_eq!(r.method, Method::Post);
    assert_eq!(r.method.as_str(), "POST");
    assert_eq!(r.url, CHAT_URL);
    assert_eq!(r.body.as_deref(), Some(body));
    assert!(r
        .headers
        .contains(&("Content-Type".to_owned(), "application/json".to_owned())));
    assert!(r
        .headers
        .contains(&("Authorization".to_owned(), "Bearer t0k".to_owned())));
}

// ----------------------------------------------------------------------------------------------
// Loading

#[test]
fn load_idle_thread() {
    let mut h = H::new();
    assert_eq!(h.phase(), Phase::Idle);
    let (op, outs) = h.load();
    let get = one_http(&outs);
    assert_get(&get);
    assert!(changed(&outs));
    assert_eq!(h.phase(), Phase::Loading);
    assert!(h.c.snapshot().busy);
    assert!(!h.c.snapshot().can_send);
    let v = h.c.version();
    let outs = h.respond(
        get.id,
        thread(vec![user("msg_1", "hi"), assistant("msg_2", "hello")]),
    );
    assert_eq!(done(&outs, op), Ok(()));
    assert!(changed(&outs));
    assert!(h.c.version() > v);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Idle);
    assert!(s.loaded);
    assert!(s.can_send);
    assert!(!s.can_submit);
    assert!(s.suspension.is_none());
    assert_eq!(s.messages.as_slice().len(), 2);
    assert_eq!(s.messages.as_slice()[1].text, "hello");
    assert!(persists(&outs).is_empty());
}

#[test]
fn load_suspended_thread() {
    let seed = tool_call(
        "msg_7488585683808067584",
        vec![
            tool(
                "toolu_01A2B3C4D5E6F7",
                "delete_file",
                Some("pending"),
                Some("Deleting a file is irreversible"),
            ),
            rejected(
                "toolu_08G9H0I1J2K3L4",
                "send_email",
                Some("Outbound email reaches people outside this workspace"),
                Some("Do not email the whole team"),
            ),
        ],
    );
    let h = H::loaded(vec![user("msg_1", "clean up"), seed]);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert!(!s.can_send);
    assert!(
        !s.can_submit,
        "the tail's own decision alone would be sent again for nothing"
    );
    let susp = s.suspension.as_ref().expect("suspension");
    assert_eq!(susp.message_id.as_deref(), Some("msg_7488585683808067584"));
    assert_eq!(susp.undecided, vec!["toolu_01A2B3C4D5E6F7"]);
    assert_eq!(susp.pending.len(), 1);
    assert_eq!(susp.decided.len(), 1);
    assert_eq!(
        susp.decided[0].reject_reason.as_deref(),
        Some("Do not email the whole team")
    );
    assert!(!susp.decided[0].draft);
    assert!(s.decisions.is_empty());
    let mut h = h;
    assert_eq!(err_code(h.c.submit(h.now)), ErrorCode::EmptyDecisions);
    no_http(&h.drain());
    // Once something is decided, the payload restates the tail's decision (cumulative).
    h.approve("toolu_01A2B3C4D5E6F7");
    assert!(h.c.snapshot().can_submit);
    let (_, outs) = h.submit();
    assert_post(
        &one_http(&outs),
        r#"{"decisions":{"toolu_01A2B3C4D5E6F7":"approve","toolu_08G9H0I1J2K3L4":["reject","Do not email the whole team"]}}"#,
    );
}

#[test]
fn load_5xx_is_retried_then_succeeds() {
    let mut h = H::new();
    let (op, outs) = h.load();
    let g1 = one_http(&outs);
    let outs = h.respond(g1.id, status(503, json!({"error": "down"})));
    no_http(&outs);
    no_done(&outs);
    assert_eq!(h.phase(), Phase::Loading);
    assert_eq!(h.c.poll_timeout(), Some(1_300));
    let outs = h.at(1_300);
    let g2 = one_http(&outs);
    assert_get(&g2);
    assert_ne!(g1.id, g2.id);
    let outs = h.respond(g2.id, thread(vec![]));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::Idle);
}

#[test]
fn load_malformed_body_is_parse_error() {
    for body in [
        "not json",
        "{\"id\":\"t\"}",
        "{\"messages\":[{\"type\":\"tool_call\",\"tools\":[{\"name\":\"x\",\"approval\":\"pending\"}]}]}",
        "{\"messages\":[1]}",
        "",
    ] {
        let mut h = H::new();
        let (op, outs) = h.load();
        let g = one_http(&outs);
        let outs = h.respond(g.id, HttpResponse::new(200, body));
        assert_eq!(done(&outs, op), Err(ErrorCode::ParseError), "{body}");
        assert_eq!(h.phase(), Phase::Error);
        assert_eq!(h.error_code(), Some("parse_error"));
        no_http(&outs);
        // A later load works.
        let (op, outs) = h.load();
        let g = one_http(&outs);
        let outs = h.respond(g.id, thread(vec![]));
        assert_eq!(done(&outs, op), Ok(()));
        assert_eq!(h.phase(), Phase::Idle);
        assert_eq!(h.error_code(), None);
    }
}

#[test]
fn unauthorized_on_load_and_submit() {
    let mut h = H::new();
    let (op, outs) = h.load();
    let g = one_http(&outs);
    let outs = h.respond(g.id, status(401, json!({"error": "bad token"})));
    assert_eq!(done(&outs, op), Err(ErrorCode::Unauthorized));
    assert_eq!(h.phase(), Phase::Error);
    assert_eq!(h.error_code(), Some("unauthorized"));
    no_http(&outs);

    let mut h = H::paused();
    h.approve("call_A");
    let (op, outs) = h.submit();
    let p = one_http(&outs);
    let outs = h.respond(p.id, status(401, json!({})));
    assert_eq!(done(&outs, op), Err(ErrorCode::Unauthorized));
    no_http(&outs);
    assert_eq!(h.phase(), Phase::Error);
    assert_eq!(h.c.snapshot().decisions.len(), 1, "drafts kept");
}

#[test]
fn other_status_is_http_status() {
    let mut h = H::new();
    let (op, outs) = h.load();
    let g = one_http(&outs);
    let outs = h.respond(g.id, HttpResponse::new(404, "<html>nope</html>"));
    assert_eq!(done(&outs, op), Err(ErrorCode::HttpStatus));
    assert_eq!(
        h.c.snapshot().error.as_ref().map(|e| e.message.as_str()),
        Some("the server answered HTTP 404")
    );
}

// ----------------------------------------------------------------------------------------------
// The main flow

#[test]
fn send_pause_partial_then_complete() {
    let mut h = H::loaded(vec![]);
    let (op, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    assert_post(&post, r#"{"message":"Delete old logs"}"#);
    assert_eq!(h.phase(), Phase::Sending);

    // The reply carries only the tail; the client applies it and reloads quietly.
    let outs = h.respond(post.id, reply("awaiting_approval", pause_two()));
    assert_eq!(done(&outs, op), Ok(()));
    let sync = one_http(&outs);
    assert_get(&sync);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert!(s.syncing);
    assert!(!s.busy);
    assert!(!s.can_send);
    assert_eq!(s.messages.as_slice().len(), 2);
    assert_eq!(s.messages.as_slice()[0].text, "Delete old logs");
    let susp = s.suspension.as_ref().expect("paused");
    assert_eq!(susp.undecided, vec!["call_A", "call_B"]);
    let outs = h.respond(
        sync.id,
        thread(vec![user("msg_1", "Delete old logs"), pause_two()]),
    );
    no_http(&outs);
    assert!(!h.c.snapshot().syncing);
    assert_eq!(
        h.c.snapshot().messages.as_slice()[0].id.as_deref(),
        Some("msg_1")
    );

    // Approve one and submit: still awaiting.
    let outs = h.approve("call_A");
    assert_eq!(
        persists(&outs),
        vec![Some(
            r#"{"v":1,"messageId":"msg_2","callIds":["call_A","call_B"],"sigs":[1519642284,2217274224],"drafts":{"call_A":"approve"}}"#
                .to_owned()
        )]
    );
    let susp = h.c.snapshot().suspension.clone().expect("paused");
    assert!(susp.tools[0].draft);
    assert_eq!(
        susp.tools[0].approval,
        toolgate::approval::Approval::Approved
    );
    assert_eq!(
        susp.tools[0].server_approval,
        toolgate::approval::Approval::Pending
    );
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    assert_post(&post, r#"{"decisions":{"call_A":"approve"}}"#);
    assert_eq!(h.phase(), Phase::Submitting);
    let mut tail = pause_two();
    tail["tools"][0]["approval"] = json!("approved");
    let outs = h.respond(post.id, reply("awaiting_approval", tail.clone()));
    assert_eq!(done(&outs, op), Ok(()));
    // The tail records the approval: the draft is acknowledged and storage holds none.
    assert!(cleared(&persists(&outs)));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert!(s.decisions.is_empty());
    let last = s.last_submission.as_ref().expect("last submission");
    assert_eq!(last.call_ids, vec!["call_A"]);
    assert_eq!(last.status, Phase::AwaitingApproval);
    assert_eq!(last.still_pending.len(), 1);
    assert_eq!(last.still_pending[0].call_id, "call_B");
    assert_eq!(
        last.still_pending[0].approval_reason.as_deref(),
        Some("Outbound email reaches people")
    );
    assert!(last.not_applied.is_empty());
    assert_eq!(
        s.messages.as_slice().len(),
        2,
        "the tail was replaced, not appended"
    );
    let sync = one_http(&outs);
    assert_get(&sync);
    h.respond(
        sync.id,
        thread(vec![user("msg_1", "Delete old logs"), tail]),
    );

    // Reject the other with a reason: cumulative payload, tail order.
    h.reject("call_B", Some("Do not email the whole team"));
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    assert_post(
        &post,
        r#"{"decisions":{"call_A":"approve","call_B":["reject","Do not email the whole team"]}}"#,
    );
    let outs = h.respond(post.id, reply("completed", assistant("msg_4", "Done.")));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(persists(&outs), vec![None]);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert!(s.can_send);
    assert!(s.suspension.is_none());
    assert!(s.decisions.is_empty());
    // A reply that is another message than the pause's is appended after it (the pause's message
    // stays until the quiet reload shows what the server kept).
    let ids: Vec<_> = s
        .messages
        .as_slice()
        .iter()
        .map(|m| m.id.as_deref())
        .collect();
    assert_eq!(ids, [Some("msg_1"), Some("msg_2"), Some("msg_4")]);
    let sync = one_http(&outs);
    assert_get(&sync);
}

#[test]
fn last_submission_survives_the_quiet_reload_after_completion() {
    // The submission that completed the run stays in the snapshot (as on Sidenet, which has no
    // reload): the quiet reload after the POST shows the same thread, nothing changed for the user.
    let mut h = H::paused();
    h.approve("call_A");
    h.reject("call_B", None);
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    let done_msg = assistant("msg_4", "Done.");
    let outs = h.respond(post.id, reply("completed", done_msg.clone()));
    assert_eq!(done(&outs, op), Ok(()));
    let before = h.c.snapshot().last_submission.clone();
    assert_eq!(
        before.as_ref().map(|l| l.status),
        Some(Phase::Completed),
        "set by the reply"
    );
    let sync = one_http(&outs);
    assert_get(&sync);
    let mut tail = pause_two();
    tail["tools"][0]["approval"] = json!("approved");
    tail["tools"][1]["approval"] = json!("rejected");
    h.respond(
        sync.id,
        thread(vec![user("msg_1", "Delete old logs"), tail, done_msg]),
    );
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert!(!s.syncing);
    assert_eq!(s.last_submission, before, "the quiet reload kept it");
}

#[test]
fn a_turn_converts_its_own_messages_alone() {
    // What a driver converting the views for its UI converts over a whole turn (the message, the
    // pause, the decisions, the quiet reload after each POST): the same after a long thread as
    // after a short one.
    fn run(n: usize) -> usize {
        let history: Vec<Value> = (0..n)
            .map(|i| match i % 2 {
                0 => user(&format!("msg_u{i}"), "hi"),
                _ => assistant(&format!("msg_a{i}"), "hello"),
            })
            .collect();
        let mut h = H::loaded(history.clone());
        convert(&mut h.c);
        let before = converted();
        let (_, outs) = h.send("Delete old logs");
        let post = one_http(&outs);
        let outs = h.respond(post.id, reply("awaiting_approval", pause_two()));
        let sync = one_http(&outs);
        let mut thread_now = history.clone();
        thread_now.push(user("msg_1", "Delete old logs"));
        thread_now.push(pause_two());
        h.respond(sync.id, thread(thread_now.clone()));
        assert_eq!(h.phase(), Phase::AwaitingApproval);
        h.approve("call_A");
        h.reject("call_B", Some("no"));
        let (_, outs) = h.submit();
        let post = one_http(&outs);
        let outs = h.respond(post.id, reply("completed", assistant("msg_4", "Done.")));
        let sync = one_http(&outs);
        let mut tail = pause_two();
        tail["tools"][0]["approval"] = json!("approved");
        tail["tools"][1]["approval"] = json!("rejected");
        thread_now.pop();
        thread_now.push(tail);
        thread_now.push(assistant("msg_4", "Done."));
        h.respond(sync.id, thread(thread_now));
        assert_eq!(h.phase(), Phase::Completed);
        assert_eq!(h.c.snapshot().messages.as_slice().len(), n + 3);
        convert(&mut h.c);
        converted() - before
    }
    let short = run(2);
    let long = run(300);
    assert!(
        (3..=6).contains(&short),
        "a turn converts its messages ({short})"
    );
    assert_eq!(long, short, "and none more after a longer thread");
}

#[test]
fn a_reload_converts_from_the_first_message_that_changed() {
    let msgs = |third: &str| {
        vec![
            user("msg_1", "a"),
            assistant("msg_2", "b"),
            user("msg_3", third),
            assistant("msg_4", "d"),
            user("msg_5", "e"),
        ]
    };
    let mut h = H::loaded(msgs("c"));
    convert(&mut h.c);
    let reload = |h: &mut H, msgs: Vec<Value>| {
        let before = converted();
        let (_, outs) = h.load();
        let get = one_http(&outs);
        h.respond(get.id, thread(msgs));
        convert(&mut h.c);
        converted() - before
    };
    assert_eq!(reload(&mut h, msgs("c")), 0, "the same thread again");
    assert_eq!(
        reload(&mut h, msgs("C")),
        3,
        "the third message and the ones after it"
    );
    let s = h.c.snapshot();
    assert_eq!(s.messages.as_slice()[2].text, "C");
    // Key order aside, the same message is the same: its view (and raw form) stay.
    let mut reordered = msgs("C");
    reordered[0] = json!({"content": "a", "role": "user", "__id": "msg_1"});
    assert_eq!(reload(&mut h, reordered), 0);
    // Shorter: nothing to convert but the list itself; longer: the new message alone.
    let mut shorter = msgs("C");
    shorter.pop();
    assert_eq!(reload(&mut h, shorter), 0);
    assert_eq!(h.c.snapshot().messages.as_slice().len(), 4);
    assert_eq!(reload(&mut h, msgs("C")), 1);
}

#[test]
fn a_reload_shows_what_a_first_load_of_the_same_document_shows() {
    // A reload parses only the messages after the text it shares with the last document read;
    // whatever came between (a message appended by a reply, a tail replaced in place by a
    // submission's reply), it shows the thread the server sent, message for message.
    let raws = |h: &H| -> Vec<String> {
        let s = h.c.snapshot();
        s.messages
            .as_slice()
            .iter()
            .map(|m| m.raw.to_json_string())
            .collect()
    };
    let fresh = |doc: &[Value]| raws(&H::loaded(doc.to_vec()));
    let reload = |h: &mut H, doc: &[Value]| {
        let (_, outs) = h.load();
        let get = one_http(&outs);
        h.respond(get.id, thread(doc.to_vec()));
        assert_eq!(raws(h), fresh(doc), "{doc:?}");
    };
    // Decides the paused tail, whose reply replaces it in place; the quiet reload after it finds
    // an append-only history: the tail as it was, then the results.
    let mut decided = pause_two();
    decided["tools"][0]["approval"] = json!("approved");
    decided["tools"][1]["approval"] = json!("rejected");
    let decide = |h: &mut H, doc: &mut Vec<Value>| {
        h.approve("call_A");
        h.reject("call_B", Some("no"));
        let (_, outs) = h.submit();
        let post = one_http(&outs);
        let outs = h.respond(post.id, reply("completed", decided.clone()));
        assert_eq!(raws(h).last(), Some(&decided.to_string()));
        let sync = one_http(&outs);
        let result = tool("call_A", "delete_file", None, None);
        doc.push(tool_result("msg_r", vec![result]));
        h.respond(sync.id, thread(doc.clone()));
        assert_eq!(raws(h), fresh(doc));
    };
    let mut doc = paused_thread();
    let mut h = H::loaded(doc.clone());
    reload(&mut h, &doc);
    decide(&mut h, &mut doc);
    // Grown, changed at the tail, changed before it, shorter, the same again.
    doc.push(assistant("msg_x", "done"));
    reload(&mut h, &doc);
    doc.push(user("msg_y", "more"));
    reload(&mut h, &doc);
    doc[1] = assistant("msg_b", "edited before the tail");
    reload(&mut h, &doc);
    let last = doc.len() - 1;
    doc[last] = user("msg_y", "edited tail");
    reload(&mut h, &doc);
    doc.truncate(2);
    reload(&mut h, &doc);
    reload(&mut h, &doc);
    doc.clear();
    reload(&mut h, &doc);

    // A reload that ends where the last one's shared text did (one message fewer), then the same.
    let mut doc = paused_thread();
    doc.push(assistant("msg_z", "after"));
    let mut h = H::loaded(doc.clone());
    doc.pop();
    reload(&mut h, &doc);
    decide(&mut h, &mut doc);
}

#[test]
fn a_partial_submission_is_forgotten_when_a_reload_finds_nothing_paused() {
    // A submission that left call_B pending; the quiet reload shows the run finished elsewhere
    // (another tab decided call_B): "still pending" would be stale.
    let mut h = H::paused();
    h.approve("call_A");
    let (_, outs) = h.submit();
    let post = one_http(&outs);
    let mut tail = pause_two();
    tail["tools"][0]["approval"] = json!("approved");
    let outs = h.respond(post.id, reply("awaiting_approval", tail.clone()));
    let last = h.c.snapshot().last_submission.clone().expect("set");
    assert_eq!(last.status, Phase::AwaitingApproval);
    let sync = one_http(&outs);
    tail["tools"][1]["approval"] = json!("approved");
    h.respond(
        sync.id,
        thread(vec![
            user("msg_1", "Delete old logs"),
            tail,
            assistant("msg_4", "Done."),
        ]),
    );
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert_eq!(s.last_submission, None);
}

#[test]
fn cumulative_when_the_tail_keeps_its_pending_snapshot() {
    // A server revision that treats payloads as cumulative answers with the tail unchanged.
    let mut c = config();
    c.reload_after_post = false;
    let mut h = H::with(c);
    let (_, outs) = h.load();
    let g = one_http(&outs);
    h.respond(g.id, thread(vec![user("msg_1", "x"), pause_two()]));
    h.approve("call_A");
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    let outs = h.respond(post.id, reply("awaiting_approval", pause_two()));
    assert_eq!(done(&outs, op), Ok(()));
    no_http(&outs);
    assert!(persists(&outs).is_empty(), "the draft is still held");
    let s = h.c.snapshot();
    let last = s.last_submission.as_ref().expect("last");
    assert_eq!(last.not_applied, vec!["call_A"]);
    assert_eq!(last.still_pending.len(), 2);
    assert_eq!(s.decisions.len(), 1);
    let susp = s.suspension.as_ref().expect("paused");
    assert_eq!(
        susp.undecided,
        vec!["call_B"],
        "progress shown from the overlay"
    );
    h.reject("call_B", None);
    let (_, outs) = h.submit();
    let post = one_http(&outs);
    assert_post(
        &post,
        r#"{"decisions":{"call_A":"approve","call_B":"reject"}}"#,
    );
}

#[test]
fn a_reply_of_the_agents_message_alone_shows_the_decisions_on_the_pause() {
    // The reply to the decisions is the agent's next message: the pause's message stays before
    // it, showing what the server took (as it records them), not "pending", with no read to come.
    let mut c = config();
    c.reload_after_post = false;
    let mut h = H::with(c);
    let (_, outs) = h.load();
    let g = one_http(&outs);
    let mut pause = pause_two();
    let mut lookup = tool("call_C", "lookup", None, None);
    lookup.as_object_mut().expect("tool").remove("approval");
    pause["tools"].as_array_mut().expect("tools").push(lookup);
    h.respond(g.id, thread(vec![user("msg_1", "x"), pause.clone()]));
    h.approve("call_A");
    h.reject("call_B", Some("Not the whole team"));
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    let outs = h.respond(post.id, reply("completed", assistant("msg_4", "Done.")));
    assert_eq!(done(&outs, op), Ok(()));
    no_http(&outs);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    let messages = s.messages.as_slice();
    assert_eq!(messages.len(), 3);
    let tools = &messages[1].tools;
    let statuses: Vec<_> = tools.iter().map(|t| t.status).collect();
    assert_eq!(
        statuses,
        [
            ToolStatus::Approved,
            ToolStatus::Rejected,
            ToolStatus::Called
        ]
    );
    assert_eq!(
        tools[1].reject_reason.as_deref(),
        Some("Not the whole team")
    );
    assert_eq!(tools[0].reject_reason, None);
    // The message as the server records it: only `approval` and `rejectReason` changed.
    let mut expected = pause;
    expected["tools"][0]["approval"] = json!("approved");
    expected["tools"][1]["approval"] = json!("rejected");
    expected["tools"][1]["rejectReason"] = json!("Not the whole team");
    let raw: Value = serde_json::from_str(&messages[1].raw.to_json_string()).expect("json");
    assert_eq!(raw, expected);

    // A partial submission answered so: the undecided tool stays pending.
    let mut h = H::paused();
    h.approve("call_A");
    let (_, outs) = h.submit();
    let post = one_http(&outs);
    h.respond(post.id, reply("completed", assistant("msg_4", "Done.")));
    let s = h.c.snapshot();
    let statuses: Vec<_> = s.messages.as_slice()[1]
        .tools
        .iter()
        .map(|t| t.status)
        .collect();
    assert_eq!(statuses, [ToolStatus::Approved, ToolStatus::Pending]);
}

#[test]
fn deploy_chain_pauses_twice() {
    let mut h = H::loaded(vec![]);
    let (_, outs) = h.send("delete a; deploy b");
    let post = one_http(&outs);
    let p1 = tool_call(
        "msg_2",
        vec![
            tool(
                "c_del",
                "delete_file",
                Some("pending"),
                Some("irreversible"),
            ),
            tool("c_test", "run_tests", None, None),
        ],
    );
    let outs = h.respond(post.id, reply("awaiting_approval", p1.clone()));
    let sync = one_http(&outs);
    h.respond(
        sync.id,
        thread(vec![user("msg_1", "delete a; deploy b"), p1.clone()]),
    );
    let susp = h.c.snapshot().suspension.clone().expect("paused");
    assert_eq!(susp.tools.len(), 1, "only gated tools get cards");

    let stored = written(&h.approve("c_del")).expect("stored");
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    assert_post(&post, r#"{"decisions":{"c_del":"approve"}}"#);
    let p2 = tool_call(
        "msg_4",
        vec![tool(
            "c_deploy",
            "deploy",
            Some("pending"),
            Some("affects live users"),
        )],
    );
    let outs = h.respond(post.id, reply("awaiting_approval", p2.clone()));
    assert_eq!(done(&outs, op), Ok(()));
    // A new pause: nothing written until storage is read again (another tab may have drafts for
    // it); what it holds is the first pause's record, so the new pause's is written.
    assert_eq!(persists(&outs), vec![]);
    let sync = one_http(&outs);
    assert!(h.c.take_missed_restore());
    assert!(
        cleared(&persists(&h.tab_wrote(&stored))),
        "the first pause's drafts are acknowledged"
    );
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(
        s.suspension.as_ref().map(|x| x.message_id.clone()),
        Some(Some("msg_4".to_owned()))
    );
    assert!(s.decisions.is_empty());
    assert!(s.dropped_drafts.is_empty());
    let last = s.last_submission.as_ref().expect("last");
    assert_eq!(last.still_pending[0].call_id, "c_deploy");
    assert!(last.not_applied.is_empty());
    let mut p1_done = p1.clone();
    p1_done["tools"][0]["approval"] = json!("approved");
    h.respond(
        sync.id,
        thread(vec![
            user("msg_1", "delete a; deploy b"),
            p1_done,
            tool_result("msg_3", vec![]),
            p2,
        ]),
    );
    assert_eq!(h.c.snapshot().messages.as_slice().len(), 4);
    assert_eq!(
        h.c.snapshot().messages.as_slice()[2].kind,
        toolgate::client::MessageKindView::ToolResult
    );

    h.approve("c_deploy");
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    assert_post(&post, r#"{"decisions":{"c_deploy":"approve"}}"#);
    let outs = h.respond(post.id, reply("completed", assistant("msg_6", "deployed")));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::Completed);
}

// ----------------------------------------------------------------------------------------------
// Illegal commands

#[test]
fn illegal_commands_have_stable_codes_and_send_nothing() {
    let mut h = H::new();
    // Before any load: nothing is paused.
    assert_eq!(err_code(h.c.approve("x")), ErrorCode::NotSuspended);
    assert_eq!(err_code(h.c.reject("x", None)), ErrorCode::NotSuspended);
    assert_eq!(err_code(h.c.clear("x")), ErrorCode::NotSuspended);
    assert_eq!(err_code(h.c.submit(0)), ErrorCode::NotSuspended);
    assert_eq!(err_code(h.c.send(0, "   ")), ErrorCode::InvalidArgument);
    assert_eq!(
        err_code(h.c.reject_all_and_send(0, "", None)),
        ErrorCode::InvalidArgument
    );
    assert!(h.drain().is_empty());

    let mut h = H::paused();
    assert_eq!(err_code(h.c.send(0, "hello")), ErrorCode::InputLocked);
    assert_eq!(err_code(h.c.approve("nope")), ErrorCode::UnknownCallId);
    assert_eq!(
        err_code(h.c.reject("nope", Some("r"))),
        ErrorCode::UnknownCallId
    );
    assert_eq!(err_code(h.c.clear("nope")), ErrorCode::UnknownCallId);
    assert_eq!(err_code(h.c.submit(0)), ErrorCode::EmptyDecisions);
    assert!(h.drain().is_empty());

    // Everything while a request is in flight: busy.
    h.approve("call_A");
    let (_, outs) = h.submit();
    let post = one_http(&outs);
    assert_eq!(err_code(h.c.submit(0)), ErrorCode::Busy);
    assert_eq!(err_code(h.c.load(0)), ErrorCode::Busy);
    assert_eq!(err_code(h.c.send(0, "x")), ErrorCode::Busy);
    assert_eq!(err_code(h.c.approve("call_B")), ErrorCode::Busy);
    assert_eq!(err_code(h.c.reject("call_B", None)), ErrorCode::Busy);
    assert_eq!(err_code(h.c.clear("call_A")), ErrorCode::Busy);
    assert_eq!(
        err_code(h.c.reject_all_and_send(0, "x", None)),
        ErrorCode::Busy
    );
    assert!(h.drain().is_empty());
    let outs = h.respond(post.id, reply("completed", assistant("m", "ok")));
    let sync = one_http(&outs);
    // Not suspended any more.
    assert_eq!(err_code(h.c.approve("call_A")), ErrorCode::NotSuspended);
    assert_eq!(err_code(h.c.submit(0)), ErrorCode::NotSuspended);
    h.respond(sync.id, thread(vec![assistant("m", "ok")]));
}

#[test]
fn double_submit_sends_once() {
    let mut h = H::paused();
    h.approve("call_A");
    h.approve("call_B");
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    assert_eq!(err_code(h.c.submit(h.now)), ErrorCode::Busy);
    assert!(h.drain().is_empty());
    let outs = h.respond(post.id, reply("completed", assistant("m", "ok")));
    assert_eq!(done(&outs, op), Ok(()));
    // Only the quiet reload follows; no second POST.
    let sync = one_http(&outs);
    assert_eq!(sync.method, Method::Get);
}

#[test]
fn config_validation_and_urls() {
    assert!(Client::new(Config::new(BASE, "")).is_err());
    assert!(Client::new(Config::new(BASE, "a\nb")).is_err());
    assert!(Client::new(Config::new("ftp://x", "t")).is_err());
    let mut bad = Config::new(BASE, "t");
    bad.headers = vec![("Bad Name".to_owned(), "v".to_owned())];
    assert_eq!(err_code(Client::new(bad)), ErrorCode::InvalidArgument);
    let mut bad = Config::new(BASE, "t");
    bad.retry.attempts = 0;
    assert!(Client::new(bad).is_err());

    // Thread ids are percent-encoded; routes can be overridden; a trailing slash is ignored.
    let cfg = Config::from_json(
        r#"{"baseUrl":"https://x.test/api/","threadId":"a b/ü","headers":{"X-K":"v"},
            "routes":{"thread":"/t/{threadId}/history"},"timeoutMs":500,
            "retry":{"attempts":5},"autoSubmit":true,"persist":false,"dialect":"neuron"}"#,
    )
    .expect("options");
    assert_eq!(cfg.retry.attempts, 5);
    assert_eq!(cfg.retry.backoff_ms, 300);
    assert!(cfg.auto_submit);
    let mut h = H::with(cfg);
    let (_, outs) = h.load();
    let g = one_http(&outs);
    assert_eq!(g.url, "https://x.test/api/t/a%20b%2F%C3%BC/history");
    assert_eq!(g.timeout_ms, 500);
    assert!(g.headers.contains(&("X-K".to_owned(), "v".to_owned())));
    h.respond(g.id, thread(vec![]));
    let (_, outs) = h.send("hi");
    assert_eq!(
        one_http(&outs).url,
        "https://x.test/api/threads/a%20b%2F%C3%BC/chat"
    );
    assert!(
        Config::from_json(r#"{"baseUrl":""}"#).is_err(),
        "threadId is required"
    );
    assert!(Config::from_json(r#"{"threadId":"t","dialect":"klingon"}"#).is_err());
}

// ----------------------------------------------------------------------------------------------
// Stale replies and abort

#[test]
fn abort_cancels_and_ignores_late_replies() {
    let mut h = H::paused();
    h.approve("call_A");
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    h.c.abort();
    let outs = h.drain();
    assert!(outs.contains(&Output::Cancel(post.id)));
    assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    assert_eq!(h.c.snapshot().decisions.len(), 1, "drafts kept");
    // The POST was out: it may have landed. The thread is read quietly.
    let sync = one_http(&outs);
    assert_get(&sync);
    // The late reply is ignored: nothing changes.
    let v = h.c.version();
    let outs = h.respond(post.id, reply("completed", assistant("m", "ok")));
    assert!(outs.is_empty());
    assert_eq!(h.c.version(), v);
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    // A later submit before that read reads the thread first, then re-sends the same cumulative
    // payload to the pause it was made on.
    let (_, outs) = h.submit();
    assert!(outs.contains(&Output::Cancel(sync.id)));
    let check = one_http(&outs);
    assert_get(&check);
    assert_eq!(h.phase(), Phase::Submitting);
    let outs = h.respond(check.id, thread(paused_thread()));
    assert_post(&one_http(&outs), r#"{"decisions":{"call_A":"approve"}}"#);
    // Abort with nothing in flight is a no-op.
    let mut idle = H::new();
    idle.c.abort();
    assert!(idle.drain().is_empty());
}

#[test]
fn a_submission_stopped_after_it_was_sent_is_not_sent_to_calls_the_person_never_saw() {
    // The person stops a decision POST that the server applies all the same, and the run moves
    // on to new calls that reuse the callIds (a provider counting ids per step). Submitting again
    // must not send the old decisions to them: the thread is read first.
    for read_first in [false, true] {
        let mut h = H::paused();
        h.approve("call_A");
        h.approve("call_B");
        let (_, outs) = h.submit();
        one_http(&outs);
        h.c.abort();
        let sync = one_http(&h.drain());
        assert_get(&sync);
        let moved_on = vec![
            user("msg_1", "Delete old logs"),
            pause_two_decided(),
            tool_result("msg_3", vec![]),
            tool_call(
                "msg_4",
                vec![
                    tool("call_A", "drop_database", Some("pending"), None),
                    tool("call_B", "email_everyone", Some("pending"), None),
                ],
            ),
        ];
        if read_first {
            // The quiet read answers first: the new calls show, with no draft.
            let outs = h.respond(sync.id, thread(moved_on));
            no_http(&outs);
            let s = h.c.snapshot();
            assert!(s.decisions.is_empty(), "{:?}", s.decisions);
            assert_eq!(s.suspension.as_ref().map(|x| x.undecided.len()), Some(2));
            let e = h.c.submit(h.now).expect_err("nothing decided");
            assert_eq!(e.code, ErrorCode::EmptyDecisions);
        } else {
            // Submit before it answers: the check replaces it, and sends nothing to the new calls.
            let (op, outs) = h.submit();
            let check = one_http(&outs);
            assert_get(&check);
            let outs = h.respond(check.id, thread(moved_on));
            no_http(&outs);
            assert_eq!(h.c.poll_timeout(), None, "nothing to send later");
            // The stopped POST had landed (the record shows its decisions): this one is done.
            assert_eq!(done(&outs, op), Ok(()));
            let s = h.c.snapshot();
            assert!(s.decisions.is_empty(), "{:?}", s.decisions);
            assert_eq!(s.phase, Phase::AwaitingApproval);
            assert_eq!(s.suspension.as_ref().map(|x| x.undecided.len()), Some(2));
        }
        // Caught up: the next submission goes straight out.
        h.approve("call_A");
        let (_, outs) = h.submit();
        assert_post(&one_http(&outs), r#"{"decisions":{"call_A":"approve"}}"#);
    }
}

#[test]
fn chat_replies_without_the_message_are_followed_by_a_read_of_the_thread() {
    // Laravel's JSON turn answers `{"status": "awaiting_approval", "approvals": [...]}` with no
    // message: accepted, and the thread tells where the run stands. No error, nothing lost.
    let approvals = json!({"status": "awaiting_approval", "approvals": [{"id": "call_B"}]});
    // A new message.
    let mut h = H::loaded(vec![]);
    let (op, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    let outs = h.respond(post.id, ok(approvals.clone()));
    let get = one_http(&outs);
    assert_get(&get);
    let outs = h.respond(get.id, thread(paused_thread()));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!((s.phase, s.error.as_ref()), (Phase::AwaitingApproval, None));
    assert_eq!(s.unsent_text, None);
    // A partial submission on a history that keeps its pending snapshot: the draft stays, shown
    // from the client's own overlay, and nothing is sent again.
    h.approve("call_A");
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    let outs = h.respond(post.id, ok(approvals));
    let get = one_http(&outs);
    assert_get(&get);
    let outs = h.respond(get.id, thread(paused_thread()));
    no_http(&outs);
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.c.poll_timeout(), None);
    let s = h.c.snapshot();
    assert_eq!((s.phase, s.error.as_ref()), (Phase::AwaitingApproval, None));
    assert_eq!(s.decisions.get("call_A"), Some(&Decision::Approve));
    // The last decision: `completed`, and the thread shows the answer.
    h.reject("call_B", None);
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    assert_post(
        &post,
        r#"{"decisions":{"call_A":"approve","call_B":"reject"}}"#,
    );
    let outs = h.respond(post.id, ok(json!({"status": "completed"})));
    let get = one_http(&outs);
    let outs = h.respond(
        get.id,
        thread(vec![
            user("msg_1", "Delete old logs"),
            pause_two(),
            tool_result(
                "msg_3",
                vec![
                    tool("call_A", "delete_file", Some("approved"), None),
                    rejected("call_B", "send_email", None, None),
                ],
            ),
            assistant("msg_4", "Deleted; no email sent."),
        ]),
    );
    no_http(&outs);
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!((s.phase, s.error.as_ref()), (Phase::Completed, None));
    assert!(s.dropped_drafts.is_empty());
    assert!(s.last_submission.is_some());
}

/// A decision POST stopped while out: its outcome is unknown. The quiet read that follows finds
/// the pause gone with nothing in the thread recording the decisions (a trimmed history): as after
/// a POST without a clear answer, the pause gone is the likelier sign that they were applied, so
/// they are acknowledged, not listed as dropped (a `submit()` made before that read landed judged
/// them so already; the quiet read did not).
#[test]
fn a_stopped_decision_post_whose_pause_was_trimmed_away_is_acknowledged() {
    let mut h = H::paused();
    h.approve("call_A");
    h.approve("call_B");
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    h.c.abort();
    let outs = h.drain();
    assert!(outs.contains(&Output::Cancel(post.id)));
    assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
    let g = one_http(&outs);
    assert_get(&g);
    let outs = h.respond(
        g.id,
        thread(vec![
            tool_result("msg_3", vec![]),
            assistant("msg_4", "done"),
        ]),
    );
    no_http(&outs);
    let s = h.c.snapshot();
    assert!(s.dropped_drafts.is_empty(), "{:?}", s.dropped_drafts);
    assert!(s.decisions.is_empty());
    assert!(s.suspension.is_none());
}

#[test]
fn abort_of_a_message_keeps_the_text() {
    let mut h = H::loaded(vec![]);
    let (op, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    h.c.abort();
    let outs = h.drain();
    assert!(outs.contains(&Output::Cancel(post.id)));
    assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
    assert_eq!(
        h.c.snapshot().unsent_text.as_deref(),
        Some("Delete old logs")
    );
    assert_eq!(h.phase(), Phase::Idle);
    // The text is back in the composer; nothing is read or sent by itself.
    no_http(&outs);
}

#[test]
fn reply_to_an_old_request_id_is_ignored() {
    let mut h = H::paused();
    h.approve("call_A");
    let (op, outs) = h.submit();
    let p1 = one_http(&outs);
    let outs = h.fail(p1.id, TransportError::Network("reset".into()));
    let outs = h.still_paused(&outs);
    no_http(&outs);
    assert_eq!(done(&outs, op), Err(ErrorCode::Network));
    let (op, outs) = h.submit();
    let check = one_http(&outs);
    let outs = h.respond(check.id, thread(paused_thread()));
    let p2 = one_http(&outs);
    assert_eq!(p1.body, p2.body);
    // The first attempt's reply shows up late: ignored.
    let outs = h.respond(p1.id, reply("completed", assistant("m", "ok")));
    assert!(outs.is_empty());
    assert_eq!(h.phase(), Phase::Submitting);
    // An id never issued: ignored too.
    assert!(h.respond(RequestId(999), thread(vec![])).is_empty());
    assert!(h.fail(RequestId(999), TransportError::Timeout).is_empty());
    let outs = h.respond(p2.id, reply("completed", assistant("m", "ok")));
    assert_eq!(done(&outs, op), Ok(()));
}

#[test]
fn driver_side_abort_is_handled_like_abort() {
    let mut h = H::new();
    let (op, outs) = h.load();
    let g = one_http(&outs);
    let outs = h.fail(g.id, TransportError::Aborted);
    assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
    assert!(!outs.iter().any(|o| matches!(o, Output::Cancel(_))));
    // A stopped load is not started again by itself.
    no_http(&outs);
    assert_eq!(h.phase(), Phase::Idle);
    // Nor a stopped load started from the client's side.
    let (op, outs) = h.load();
    let g = one_http(&outs);
    h.c.abort();
    let outs = h.drain();
    assert!(outs.contains(&Output::Cancel(g.id)));
    assert_eq!(done(&outs, op), Err(ErrorCode::Aborted));
    no_http(&outs);
}

// ----------------------------------------------------------------------------------------------
// Retries

#[test]
fn a_submission_without_a_clear_answer_is_checked_never_re_sent_by_itself() {
    // A network failure, a 500 (a tool may have run, or thrown: Neuron stages its approval again
    // and a second POST would run it again), a 502 or a 503: the thread is read; on the pause
    // unchanged, not applied, the submission fails with the drafts kept and nothing is sent by
    // itself. The person's next submission reads the thread first, then goes out.
    let body = r#"{"decisions":{"call_A":"approve","call_B":"approve"}}"#;
    for fail in 0..4 {
        let mut h = H::paused();
        h.approve("call_A");
        h.approve("call_B");
        let (op, outs) = h.submit();
        let p1 = one_http(&outs);
        assert_post(&p1, body);
        let outs = match fail {
            0 => h.fail(p1.id, TransportError::Network("connection reset".into())),
            n => h.respond(
                p1.id,
                status([500, 502, 503][n - 1], json!({"error": "server error"})),
            ),
        };
        no_done(&outs);
        let outs = h.still_paused(&outs);
        no_http(&outs);
        let code = if fail == 0 {
            ErrorCode::Network
        } else {
            ErrorCode::HttpStatus
        };
        assert_eq!(done(&outs, op), Err(code), "case {fail}");
        assert_eq!(h.c.poll_timeout(), None, "nothing sent by itself");
        let s = h.c.snapshot();
        assert_eq!(s.phase, Phase::Error);
        assert_eq!(s.decisions.len(), 2, "drafts kept");
        assert!(s.can_submit);
        // The person submits again: the thread first, then the same body.
        let (op, outs) = h.submit();
        assert_eq!(h.error_code(), None, "a new command clears the error");
        let check = one_http(&outs);
        assert_get(&check);
        let outs = h.respond(check.id, thread(paused_thread()));
        let post = one_http(&outs);
        assert_post(&post, body);
        let outs = h.respond(post.id, reply("completed", assistant("m", "ok")));
        assert_eq!(done(&outs, op), Ok(()));
        assert_eq!(h.phase(), Phase::Completed);
    }
}

#[test]
fn max_backoff_caps_the_wait() {
    let mut c = config();
    c.retry.attempts = 6;
    c.retry.backoff_ms = 1_000;
    c.retry.max_backoff_ms = 2_500;
    let mut h = H::with(c);
    let (_, outs) = h.load();
    let mut req = one_http(&outs);
    let mut waits = Vec::new();
    for _ in 0..4 {
        h.fail(req.id, TransportError::Network(String::new()));
        let due = h.c.poll_timeout().expect("timer");
        waits.push(due - h.now);
        let outs = h.at(due);
        req = one_http(&outs);
    }
    assert_eq!(waits, vec![1_000, 2_000, 2_500, 2_500]);
}

// ----------------------------------------------------------------------------------------------
// Sending failures

#[test]
fn conflict_on_send_reloads_and_shows_the_pause() {
    // A 409, or the seed's own controller, which answers the conflict with a 200.
    for code in [409, 200] {
        conflict_on_send(code);
    }
}

fn conflict_on_send(code: u16) {
    let mut h = H::loaded(vec![user("msg_1", "hi"), assistant("msg_2", "hello")]);
    let (op, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    let outs = h.respond(
        post.id,
        status(
            code,
            json!({"status": "conflict", "error": "Thread is awaiting approval"}),
        ),
    );
    no_done(&outs);
    let g = one_http(&outs);
    assert_get(&g);
    assert_eq!(h.phase(), Phase::Conflict);
    let outs = h.respond(g.id, thread(vec![user("msg_1", "other tab"), pause_two()]));
    assert_eq!(done(&outs, op), Err(ErrorCode::Conflict));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(
        s.error.as_ref().map(|e| (e.code, e.message.as_str())),
        Some(("conflict", "Thread is awaiting approval"))
    );
    assert_eq!(s.unsent_text.as_deref(), Some("Delete old logs"));
    assert!(!s.can_send);
}

/// A 409 on a message that landed all the same (the browser re-sent a POST whose connection died
/// after the server applied it; the re-send is refused): the reload shows the text, the send is
/// done, nothing waits in `unsentText` and no error shows.
#[test]
fn conflict_on_a_send_that_landed_is_the_send_done() {
    let mut h = H::loaded(vec![user("msg_1", "hi"), assistant("msg_2", "hello")]);
    let (op, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    let outs = h.respond(
        post.id,
        status(
            409,
            json!({"status": "conflict", "error": "Thread is awaiting approval"}),
        ),
    );
    let g = one_http(&outs);
    assert_eq!(h.phase(), Phase::Conflict);
    let outs = h.respond(
        g.id,
        thread(vec![
            user("msg_1", "hi"),
            assistant("msg_2", "hello"),
            user("msg_3", "Delete old logs"),
            pause_two(),
        ]),
    );
    assert_eq!(done(&outs, op), Ok(()));
    no_http(&outs);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert!(s.error.is_none());
    assert_eq!(s.unsent_text, None);

    // A client that never loaded has no count to compare: the same text as the last user
    // message is more likely an earlier send than this one, and the refusal stands.
    let mut h = H::new();
    let (op, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    let outs = h.respond(post.id, status(409, json!({"status": "conflict"})));
    let g = one_http(&outs);
    let outs = h.respond(
        g.id,
        thread(vec![user("msg_1", "Delete old logs"), pause_two()]),
    );
    assert_eq!(done(&outs, op), Err(ErrorCode::Conflict));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(s.unsent_text.as_deref(), Some("Delete old logs"));
}

#[test]
fn send_not_retried_verified_by_reload() {
    // Landed: the reload shows the message; continue from there. A snapshot the app holds
    // meanwhile keeps its messages (the client builds its views again instead of editing the
    // held list).
    let mut h = H::loaded(vec![
        user("msg_1", "Delete old logs"),
        assistant("msg_2", "ok"),
    ]);
    let held = h.c.snapshot().clone();
    let (op, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    let outs = h.fail(post.id, TransportError::Network("reset".into()));
    let g = one_http(&outs);
    assert_get(&g);
    assert_eq!(h.phase(), Phase::Sending);
    let outs = h.respond(
        g.id,
        thread(vec![
            user("msg_1", "Delete old logs"),
            assistant("msg_2", "ok"),
            user("msg_3", "Delete old logs"),
            pause_two(),
        ]),
    );
    assert_eq!(done(&outs, op), Ok(()));
    no_http(&outs);
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    assert_eq!(h.c.snapshot().unsent_text, None);
    assert_eq!(h.c.snapshot().messages.as_slice().len(), 4);
    let texts: Vec<&str> = held
        .messages
        .as_slice()
        .iter()
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(texts, ["Delete old logs", "ok"]);

    // Not landed (the same text as the previous turn does not count): error, text kept.
    let mut h = H::loaded(vec![
        user("msg_1", "Delete old logs"),
        assistant("msg_2", "ok"),
    ]);
    let held = h.c.snapshot().clone();
    let (op, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    let outs = h.respond(post.id, status(500, json!({"error": "boom"})));
    let g = one_http(&outs);
    let outs = h.respond(
        g.id,
        thread(vec![
            user("msg_1", "Delete old logs"),
            assistant("msg_2", "ok"),
        ]),
    );
    assert_eq!(done(&outs, op), Err(ErrorCode::HttpStatus));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Error);
    assert_eq!(s.unsent_text.as_deref(), Some("Delete old logs"));
    assert!(s.can_send);
    no_http(&outs);
    assert_eq!(held.messages.as_slice().len(), 2);
}

#[test]
fn send_verify_reload_failing_keeps_the_text() {
    let mut h = H::loaded(vec![]);
    let (op, outs) = h.send("hello");
    let post = one_http(&outs);
    let outs = h.fail(post.id, TransportError::Timeout);
    let mut g = one_http(&outs);
    for i in 0..3 {
        let outs = h.fail(g.id, TransportError::Network("down".into()));
        if i == 2 {
            assert_eq!(
                done(&outs, op),
                Err(ErrorCode::Timeout),
                "the send's own error"
            );
            break;
        }
        let due = h.c.poll_timeout().expect("retry");
        g = one_http(&h.at(due));
    }
    assert_eq!(h.phase(), Phase::Error);
    assert_eq!(h.c.snapshot().unsent_text.as_deref(), Some("hello"));
}

#[test]
fn send_400_shows_server_error_and_keeps_text() {
    let mut h = H::loaded(vec![]);
    let (op, outs) = h.send("hello");
    let post = one_http(&outs);
    let outs = h.respond(
        post.id,
        status(400, json!({"error": "\"message\" must not be empty"})),
    );
    assert_eq!(done(&outs, op), Err(ErrorCode::HttpStatus));
    no_http(&outs);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Error);
    assert_eq!(
        s.error.as_ref().map(|e| e.message.as_str()),
        Some("\"message\" must not be empty")
    );
    assert_eq!(s.unsent_text.as_deref(), Some("hello"));
}

#[test]
fn malformed_chat_replies_are_verified_not_trusted() {
    // A bad body on a message POST: check whether it landed.
    let mut h = H::loaded(vec![]);
    let (op, outs) = h.send("hello");
    let post = one_http(&outs);
    let outs = h.respond(post.id, HttpResponse::new(200, "{\"status\":\"completed\""));
    let g = one_http(&outs);
    let outs = h.respond(g.id, thread(vec![]));
    assert_eq!(done(&outs, op), Err(ErrorCode::ParseError));
    assert_eq!(h.error_code(), Some("parse_error"));
    assert_eq!(h.c.snapshot().unsent_text.as_deref(), Some("hello"));

    // A bad body on a decision POST the server accepted (2xx): no clear answer. Reconciled by
    // reloading (still submitting, not a refusal); the pause is unchanged ⇒ error, drafts kept,
    // and the next submission reads the thread first.
    let mut h = H::paused();
    h.approve("call_A");
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    let outs = h.respond(post.id, ok(json!({"status": "weird", "message": {}})));
    let g = one_http(&outs);
    assert_eq!(h.phase(), Phase::Submitting);
    let outs = h.respond(
        g.id,
        thread(vec![user("msg_1", "Delete old logs"), pause_two()]),
    );
    assert_eq!(done(&outs, op), Err(ErrorCode::ParseError));
    assert_eq!(h.phase(), Phase::Error);
    assert_eq!(h.c.snapshot().decisions.len(), 1);
    let (_, outs) = h.submit();
    assert_get(&one_http(&outs));
    // Various broken shapes never panic.
    for body in [
        "[]",
        "null",
        "{\"status\":\"completed\"}",
        "{\"status\":1,\"message\":{}}",
        "\u{0}",
    ] {
        let mut h = H::paused();
        h.approve("call_A");
        let (_, outs) = h.submit();
        let post = one_http(&outs);
        let outs = h.respond(post.id, HttpResponse::new(200, body));
        let g = one_http(&outs);
        assert_eq!(g.method, Method::Get, "{body}");
    }
}

// ----------------------------------------------------------------------------------------------
// Conflicts and lost answers

#[test]
fn a_lost_answer_is_checked_and_acknowledged_never_resent() {
    let mut h = H::paused();
    h.approve("call_A");
    h.reject("call_B", Some("no"));
    let (op, outs) = h.submit();
    let p1 = one_http(&outs);
    // The server applied it, but the answer was lost: the thread is read before anything is sent
    // again, and shows the decisions.
    let outs = h.fail(p1.id, TransportError::Network("dropped".into()));
    let g = one_http(&outs);
    assert_get(&g);
    assert_eq!(h.phase(), Phase::Submitting);
    let mut record = pause_two();
    record["tools"][0]["approval"] = json!("approved");
    record["tools"][1] = rejected("call_B", "send_email", None, Some("no"));
    let outs = h.respond(
        g.id,
        thread(vec![
            user("msg_1", "Delete old logs"),
            record,
            tool_result("msg_3", vec![]),
            assistant("msg_4", "done"),
        ]),
    );
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(persists(&outs), vec![None]);
    no_http(&outs);
    assert_eq!(h.c.poll_timeout(), None, "nothing to send again");
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert_eq!(s.error, None);
    assert!(s.dropped_drafts.is_empty());
}

#[test]
fn an_append_only_history_records_the_outcome_after_the_pause() {
    // Neuron's newest history is append-only: the paused `tool_call` keeps its pending snapshot
    // for ever and the outcome is written on the `tool_call_result` that follows it. A submission
    // whose answer was lost (here a timeout) and that did land is acknowledged from there, not
    // called "decided elsewhere"; one whose record shows other decisions is that conflict.
    for (theirs_a, ok) in [("approved", true), ("rejected", false)] {
        let mut h = H::paused();
        h.approve("call_A");
        h.reject("call_B", Some("no"));
        let (op, outs) = h.submit();
        let p1 = one_http(&outs);
        let outs = h.fail(p1.id, TransportError::Timeout);
        let g = one_http(&outs);
        assert_get(&g);
        let mut outcome = tool("call_A", "delete_file", Some(theirs_a), None);
        outcome["result"] = json!("deleted");
        let outs = h.respond(
            g.id,
            thread(vec![
                user("msg_1", "Delete old logs"),
                pause_two(),
                tool_result(
                    "msg_3",
                    vec![outcome, rejected("call_B", "send_email", None, Some("no"))],
                ),
                assistant("msg_4", "done"),
            ]),
        );
        no_http(&outs);
        assert_eq!(h.c.poll_timeout(), None, "nothing to send again");
        let s = h.c.snapshot();
        if ok {
            assert_eq!(done(&outs, op), Ok(()));
            assert_eq!(s.phase, Phase::Completed);
            assert_eq!(s.error, None);
            assert!(s.dropped_drafts.is_empty(), "{:?}", s.dropped_drafts);
        } else {
            assert_eq!(done(&outs, op), Err(ErrorCode::Conflict));
            assert_eq!(s.dropped_drafts, vec!["call_A".to_owned()]);
        }
    }
}

#[test]
fn a_lost_answer_on_a_run_that_moved_on_sends_nothing_to_the_new_pause() {
    // Two new pauses after the one decided: one with a new callId, and one whose call reuses a
    // callId of the decided pause (servers that count ids per step) for another tool. Sending the
    // same decisions again would approve that call, which the user never saw.
    let reused = tool_call(
        "msg_5",
        vec![tool(
            "call_A",
            "transfer_money",
            Some("pending"),
            Some("moves money"),
        )],
    );
    let fresh = tool_call(
        "msg_5",
        vec![tool("call_C", "deploy", Some("pending"), Some("live"))],
    );
    for (new_pause, failure) in [
        (reused.clone(), None),
        (fresh, Some(504)),
        (reused, Some(503)),
    ] {
        let mut h = H::paused();
        h.approve("call_A");
        h.approve("call_B");
        let (op, outs) = h.submit();
        let p1 = one_http(&outs);
        let outs = match failure {
            Some(code) => h.respond(p1.id, status(code, json!({}))),
            None => h.fail(p1.id, TransportError::Timeout),
        };
        let g = one_http(&outs);
        assert_get(&g);
        let outs = h.respond(
            g.id,
            thread(vec![
                user("msg_1", "Delete old logs"),
                pause_two_decided(),
                tool_result("msg_3", vec![]),
                new_pause,
            ]),
        );
        assert_eq!(done(&outs, op), Ok(()), "the record shows our decisions");
        no_http(&outs);
        assert_eq!(h.c.poll_timeout(), None, "nothing to send again");
        let s = h.c.snapshot();
        assert_eq!(s.phase, Phase::AwaitingApproval);
        assert!(s.decisions.is_empty());
        assert_eq!(s.suspension.as_ref().map(|x| x.tools.len()), Some(1));
        assert_eq!(err_code(h.c.submit(h.now)), ErrorCode::EmptyDecisions);
    }
}

#[test]
fn a_check_that_fails_keeps_the_drafts_and_sends_nothing() {
    let mut h = H::paused();
    h.approve("call_A");
    let (op, outs) = h.submit();
    let p1 = one_http(&outs);
    let outs = h.fail(p1.id, TransportError::Timeout);
    let mut g = one_http(&outs);
    // The reload is retried as any load is; when it gives up, so does the submission.
    for _ in 1..3 {
        h.fail(g.id, TransportError::Network("down".into()));
        let outs = h.at(h.c.poll_timeout().expect("retry"));
        g = one_http(&outs);
        assert_get(&g);
    }
    let outs = h.fail(g.id, TransportError::Network("down".into()));
    no_http(&outs);
    assert_eq!(
        done(&outs, op),
        Err(ErrorCode::Timeout),
        "the submission's own error"
    );
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Error);
    assert_eq!(s.decisions.len(), 1, "drafts kept");
    assert!(s.can_submit);
}

fn pause_two_decided() -> Value {
    let mut p = pause_two();
    p["tools"][0]["approval"] = json!("approved");
    p["tools"][1]["approval"] = json!("approved");
    p
}

#[test]
fn submit_conflict_when_decided_elsewhere_drops_drafts_and_shows_conflict() {
    // A 409, or the seed's own controller, which answers the conflict with a 200.
    for code in [409, 200] {
        submit_conflict(code);
    }
}

fn submit_conflict(code: u16) {
    let mut h = H::paused();
    h.approve("call_A");
    h.approve("call_B");
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    let outs = h.respond(
        post.id,
        status(
            code,
            json!({"status": "conflict", "error": "nothing paused"}),
        ),
    );
    let g = one_http(&outs);
    let mut record = pause_two();
    record["tools"][0] = rejected("call_A", "delete_file", None, Some("other tab said no"));
    record["tools"][1]["approval"] = json!("approved");
    let outs = h.respond(
        g.id,
        thread(vec![user("msg_1", "x"), record, assistant("msg_4", "done")]),
    );
    assert_eq!(done(&outs, op), Err(ErrorCode::Conflict));
    assert_eq!(persists(&outs), vec![None]);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert_eq!(s.error.as_ref().map(|e| e.code), Some("conflict"));
    assert_eq!(s.dropped_drafts, vec!["call_A"]);
}

/// The read that checks a refused or unclear POST is itself refused with a 401 (the session
/// expired meanwhile): the op fails with `unauthorized`, what the person must act on, not with
/// the POST's own error; the drafts and the unsent text stay.
#[test]
fn a_check_read_refused_with_401_reports_unauthorized() {
    for code in [409, 500] {
        let mut h = H::paused();
        h.approve("call_A");
        let (op, outs) = h.submit();
        let post = one_http(&outs);
        let outs = h.respond(post.id, status(code, json!({"error": "nope"})));
        let g = one_http(&outs);
        let outs = h.respond(g.id, status(401, json!({"error": "sign in again"})));
        no_http(&outs);
        assert_eq!(done(&outs, op), Err(ErrorCode::Unauthorized), "{code}");
        let s = h.c.snapshot();
        assert_eq!(s.phase, Phase::Error);
        assert_eq!(s.decisions.len(), 1, "{code}: drafts kept");
    }
    // A message POST without a clear answer, its check read refused the same way.
    let mut h = H::loaded(vec![]);
    let (op, outs) = h.send("hello");
    let post = one_http(&outs);
    let outs = h.fail(post.id, TransportError::Network("reset".into()));
    let g = one_http(&outs);
    let outs = h.respond(g.id, status(401, json!({"error": "sign in again"})));
    assert_eq!(done(&outs, op), Err(ErrorCode::Unauthorized));
    assert_eq!(h.c.snapshot().unsent_text.as_deref(), Some("hello"));
}

#[test]
fn submit_400_on_the_same_pause_is_an_error_with_drafts_kept() {
    let mut h = H::paused();
    h.approve("call_A");
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    let outs = h.respond(post.id, status(400, json!({"error": "Malformed decision"})));
    let g = one_http(&outs);
    let outs = h.respond(g.id, thread(vec![user("msg_1", "x"), pause_two()]));
    assert_eq!(done(&outs, op), Err(ErrorCode::HttpStatus));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Error);
    assert_eq!(
        s.error.as_ref().map(|e| e.message.as_str()),
        Some("Malformed decision")
    );
    assert_eq!(s.decisions.len(), 1);
    assert!(persists(&outs).is_empty());
}

#[test]
fn stale_target_guard_on_reload() {
    let mut h = H::paused();
    h.approve("call_A");
    let stored = written(&h.reject("call_B", Some("nope"))).expect("stored");
    // Another tab decided differently, and the run paused again on a new call.
    let (op, outs) = h.load();
    let g = one_http(&outs);
    let mut record = pause_two();
    record["tools"][0]["approval"] = json!("approved");
    record["tools"][1]["approval"] = json!("approved");
    let p_new = tool_call(
        "msg_9",
        vec![tool("call_Z", "send_email", Some("pending"), Some("again"))],
    );
    let outs = h.respond(
        g.id,
        thread(vec![
            user("msg_1", "x"),
            record,
            tool_result("msg_3", vec![]),
            p_new,
        ]),
    );
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(persists(&outs), vec![]);
    assert!(h.c.take_missed_restore());
    let outs = h.tab_wrote(&stored);
    assert!(cleared(&persists(&outs)));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert!(s.decisions.is_empty());
    assert_eq!(
        s.dropped_drafts,
        vec!["call_B"],
        "call_A matched the record: acknowledged"
    );
    assert_eq!(
        s.suspension.as_ref().map(|x| x.undecided.clone()),
        Some(vec!["call_Z".to_owned()])
    );
    // Nothing can be sent for the old calls.
    assert_eq!(err_code(h.c.approve("call_A")), ErrorCode::UnknownCallId);
    assert_eq!(err_code(h.c.submit(h.now)), ErrorCode::EmptyDecisions);
    assert!(h.drain().is_empty());
}

#[test]
fn reload_on_the_same_pause_keeps_drafts() {
    let mut h = H::paused();
    h.approve("call_A");
    let (_, outs) = h.load();
    let g = one_http(&outs);
    let outs = h.respond(g.id, thread(vec![user("msg_1", "x"), pause_two()]));
    assert!(persists(&outs).is_empty());
    assert_eq!(h.c.snapshot().decisions.len(), 1);
    let (_, outs) = h.submit();
    assert_post(&one_http(&outs), r#"{"decisions":{"call_A":"approve"}}"#);
}

// ----------------------------------------------------------------------------------------------
// Persistence

#[test]
fn persist_outputs_follow_the_drafts() {
    let mut h = H::paused();
    let outs = h.reject("call_B", Some("why not"));
    assert_eq!(
        persists(&outs),
        vec![Some(r#"{"v":1,"messageId":"msg_2","callIds":["call_A","call_B"],"sigs":[1519642284,2217274224],"drafts":{"call_B":["reject","why not"]}}"#.to_owned())]
    );
    let outs = h.approve("call_A");
    assert_eq!(
        persists(&outs),
        vec![Some(r#"{"v":1,"messageId":"msg_2","callIds":["call_A","call_B"],"sigs":[1519642284,2217274224],"drafts":{"call_A":"approve","call_B":["reject","why not"]}}"#.to_owned())]
    );
    // Same decision again: nothing to write, nothing changed.
    let outs = h.approve("call_A");
    assert!(persists(&outs).is_empty());
    assert!(!changed(&outs));
    h.c.clear("call_A").expect("clear");
    let outs = h.drain();
    assert_eq!(persists(&outs).len(), 1);
    h.c.clear("call_B").expect("clear");
    let outs = h.drain();
    assert!(cleared(&persists(&outs)));
    // Clearing an undecided tool changes nothing.
    h.c.clear("call_A").expect("clear");
    assert!(h.drain().is_empty());

    // persist: false ⇒ never a Persist output.
    let mut c = config();
    c.persist = false;
    let mut h = H::with(c);
    let (_, outs) = h.load();
    let g = one_http(&outs);
    h.respond(g.id, thread(vec![pause_two()]));
    assert!(persists(&h.approve("call_A")).is_empty());
}

/// The signature of `pause_two()`'s calls (tool names and inputs) in stored drafts.
/// The `sigs` of `pause_two()`'s calls.
const SIGS_TWO: [u64; 2] = [1_519_642_284, 2_217_274_224];

/// `pause_two()` with its two calls under each other's callIds.
fn pause_two_swapped() -> Value {
    let mut swapped = pause_two();
    let (a, b) = (swapped["tools"][0].clone(), swapped["tools"][1].clone());
    swapped["tools"][0] = b;
    swapped["tools"][1] = a;
    swapped["tools"][0]["callId"] = json!("call_A");
    swapped["tools"][1]["callId"] = json!("call_B");
    swapped
}

fn stored_for(message_id: &str, drafts: Value) -> String {
    json!({"v": 1, "messageId": message_id, "callIds": ["call_A", "call_B"], "sigs": SIGS_TWO, "drafts": drafts})
        .to_string()
}

#[test]
fn restore_drafts_matching_pause_before_load() {
    let mut h = H::new();
    let stored = stored_for(
        "msg_2",
        json!({"call_A": "approve", "call_B": ["reject", "r"]}),
    );
    h.c.restore_drafts(&stored);
    let outs = h.drain();
    assert!(persists(&outs).is_empty(), "held until the first load");
    let (op, outs) = h.load();
    let g = one_http(&outs);
    assert!(persists(&outs).is_empty());
    let outs = h.respond(g.id, thread(vec![user("msg_1", "x"), pause_two()]));
    assert_eq!(done(&outs, op), Ok(()));
    assert!(
        persists(&outs).is_empty(),
        "storage already holds exactly this"
    );
    let s = h.c.snapshot();
    assert_eq!(s.decisions.len(), 2);
    assert!(s.can_submit);
    let (_, outs) = h.submit();
    assert_post(
        &one_http(&outs),
        r#"{"decisions":{"call_A":"approve","call_B":["reject","r"]}}"#,
    );
}

/// Records of the earlier formats (no signature, or one for the whole pause) are not restored: a
/// signature without callIds matched two calls under each other's callIds, and the approval of
/// one landed on the other.
#[test]
fn records_of_earlier_formats_are_not_restored() {
    let none = json!({"v": 1, "messageId": "msg_2", "callIds": ["call_A", "call_B"], "drafts": {"call_A": "approve"}});
    let whole = json!({"v": 1, "messageId": "msg_2", "callIds": ["call_A", "call_B"], "sig": 182_770_845u64, "drafts": {"call_A": "approve"}});
    let swapped = pause_two_swapped();
    for (record, tail) in [
        (&none, pause_two()),
        (&whole, pause_two()),
        (&whole, swapped),
    ] {
        let (h, _) = H::restored(&record.to_string(), vec![user("msg_1", "x"), tail]);
        assert_eq!(h.c.snapshot().decisions.len(), 0, "{record}");
    }
}

#[test]
fn restore_drafts_after_a_failed_first_load_waits() {
    let mut h = H::new();
    let stored = stored_for("msg_2", json!({"call_A": "approve"}));
    h.c.restore_drafts(&stored);
    h.drain();
    let (_, outs) = h.load();
    let g = one_http(&outs);
    let outs = h.respond(g.id, status(401, json!({})));
    assert!(
        persists(&outs).is_empty(),
        "storage is not wiped by a failed load"
    );
    let (_, outs) = h.load();
    let g = one_http(&outs);
    h.respond(g.id, thread(vec![pause_two()]));
    assert_eq!(h.c.snapshot().decisions.len(), 1);
}

#[test]
fn restore_drafts_non_matching_pause_is_dropped() {
    // A different pause (message id) ⇒ nothing applied, storage holds this pause's record, empty.
    let (h, outs) = H::restored(
        &stored_for("msg_OLD", json!({"call_A": "approve"})),
        paused_thread(),
    );
    assert!(cleared(&persists(&outs)));
    assert!(h.c.snapshot().decisions.is_empty());

    // Same id but other calls: dropped too.
    let other = json!({"v": 1, "messageId": "msg_2", "callIds": ["call_A"], "drafts": {"call_A": "approve"}}).to_string();
    let (_, outs) = H::restored(&other, paused_thread());
    assert!(cleared(&persists(&outs)));

    // Same id and calls, but another call under a reused callId (other tool or inputs): the
    // signature differs, nothing applied.
    let mut reused = pause_two();
    reused["tools"][0]["name"] = json!("transfer_money");
    let stored = stored_for("msg_2", json!({"call_A": "approve"}));
    let (h, outs) = H::restored(&stored, vec![user("msg_1", "x"), reused]);
    assert!(cleared(&persists(&outs)));
    assert!(h.c.snapshot().decisions.is_empty());
    let mut moved = pause_two();
    moved["tools"][0]["inputs"]["path"] = json!("/etc");
    let (h, outs) = H::restored(&stored, vec![user("msg_1", "x"), moved]);
    assert!(cleared(&persists(&outs)));
    assert!(h.c.snapshot().decisions.is_empty());
    // The same two calls under each other's callIds: the approval was of call_A's call, which
    // call_B now is. Nothing applied (the signature binds each callId to its call).
    let swapped = pause_two_swapped();
    let (h, outs) = H::restored(&stored, vec![user("msg_1", "x"), swapped]);
    assert!(cleared(&persists(&outs)));
    assert!(h.c.snapshot().decisions.is_empty());

    // Not paused at all; and garbage.
    let (_, outs) = H::restored(&stored, vec![assistant("m", "hi")]);
    assert_eq!(persists(&outs), vec![None]);
    let (_, outs) = H::restored("{not json", paused_thread());
    assert!(cleared(&persists(&outs)));

    // A matching pause with one bad entry keeps the good one.
    let (h, outs) = H::restored(
        &stored_for(
            "msg_2",
            json!({"call_A": "approve", "call_B": ["maybe"], "call_X": "approve"}),
        ),
        paused_thread(),
    );
    assert_eq!(
        persists(&outs),
        vec![Some(r#"{"v":1,"messageId":"msg_2","callIds":["call_A","call_B"],"sigs":[1519642284,2217274224],"drafts":{"call_A":"approve"}}"#.to_owned())]
    );
    assert_eq!(h.c.snapshot().decisions.len(), 1);
}

// ----------------------------------------------------------------------------------------------
// Two tabs on one thread: each takes in what the other stores (the `storage` event)

impl H {
    /// Another tab stored `value` (`""`: removed it): the outputs of this client's step.
    fn tab_wrote(&mut self, value: &str) -> Vec<Output> {
        self.c.restore_drafts(value);
        self.drain()
    }

    /// A decision POST got no clear answer: `outs` hold the reload that checks it, answered here
    /// with the thread still on its pause, the decisions not applied; the outputs of that answer.
    fn still_paused(&mut self, outs: &[Output]) -> Vec<Output> {
        let check = one_http(outs);
        assert_get(&check);
        assert_eq!(self.phase(), Phase::Submitting);
        self.respond(check.id, thread(paused_thread()))
    }
}

#[test]
fn two_tabs_share_their_drafts_and_settle_after_one_exchange() {
    let (mut a, mut b) = (H::paused(), H::paused());
    let mut writes = 0;
    // A decides call_A: it writes; B takes it in, shows it, and writes nothing.
    let from_a = written(&a.approve("call_A")).expect("A stores its draft");
    writes += 1;
    let outs = b.tab_wrote(&from_a);
    assert!(changed(&outs), "B's subscribers see A's draft");
    assert_eq!(persists(&outs), vec![], "taking drafts in writes nothing");
    assert_eq!(
        b.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Approve)
    );
    // B decides call_B: it writes both; A takes them in and writes nothing.
    let from_b = written(&b.reject("call_B", Some("no mail"))).expect("B stores");
    writes += 1;
    let outs = a.tab_wrote(&from_b);
    assert_eq!(persists(&outs), vec![]);
    assert_eq!(writes, 2, "one write per decision, none in reply");
    for h in [&a, &b] {
        let s = h.c.snapshot();
        assert_eq!(s.decisions.get("call_A"), Some(&Decision::Approve));
        assert_eq!(
            s.decisions.get("call_B"),
            Some(&Decision::Reject(Some("no mail".into())))
        );
    }
    // A reload of either tab restores both drafts, and writes nothing.
    let (mut h, outs) = H::restored(&from_b, paused_thread());
    assert_eq!(h.c.snapshot().decisions.len(), 2);
    assert_eq!(persists(&outs), vec![]);
    let (_, post) = h.submit();
    assert_post(
        &one_http(&post),
        r#"{"decisions":{"call_A":"approve","call_B":["reject","no mail"]}}"#,
    );
}

#[test]
fn the_last_save_wins_for_a_changed_draft_and_a_cleared_one() {
    let (mut a, mut b) = (H::paused(), H::paused());
    a.approve("call_A");
    let from_a = written(&a.approve("call_B")).expect("stored");
    b.tab_wrote(&from_a);
    // B changes call_A: A takes B's rejection over its own approval.
    let from_b = written(&b.reject("call_A", None)).expect("stored");
    let outs = a.tab_wrote(&from_b);
    assert!(changed(&outs));
    assert_eq!(persists(&outs), vec![]);
    assert_eq!(
        a.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Reject(None))
    );
    // B clears call_B: cleared in A too.
    b.c.clear("call_B").expect("clear");
    let from_b = written(&b.drain()).expect("stored");
    a.tab_wrote(&from_b);
    assert_eq!(a.c.snapshot().decisions.get("call_B"), None);
    assert_eq!(a.c.snapshot().decisions.len(), 1);
    // B clears its last draft: storage holds the pause's record with no drafts, A has none left,
    // and writes nothing.
    b.c.clear("call_A").expect("clear");
    let outs = b.drain();
    assert!(cleared(&persists(&outs)));
    let outs = a.tab_wrote(&written(&outs).expect("stored"));
    assert!(changed(&outs));
    assert_eq!(persists(&outs), vec![]);
    assert!(a.c.snapshot().decisions.is_empty());
    // The key removed (by a tab that shows no pause, or storage cleared): nothing to say of this
    // pause, so A's drafts stay, and A writes them again (storage holds none of them now) once a
    // quiet reload shows the pause is still there (not before: see
    // a_tab_whose_catch_up_reload_fails_writes_nothing_back).
    let from_b = written(&b.approve("call_A")).expect("stored");
    a.tab_wrote(&from_b);
    let outs = a.tab_wrote("");
    assert_eq!(
        a.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Approve)
    );
    assert_eq!(persists(&outs), vec![]);
    let sync = one_http(&outs);
    assert_get(&sync);
    let outs = a.respond(sync.id, thread(paused_thread()));
    assert_eq!(written(&outs).as_deref(), Some(from_b.as_str()));
}

/// Drafts that storage could not hold (full: the driver removed the key) live in this tab alone:
/// the other tab, told of the removal, writes the record it holds, which lacks them, and that
/// record must not replace them (a rejection made here vanished a second later). Ignored, and
/// nothing loads; once a write is tried again, records are taken as ever.
#[test]
fn drafts_storage_could_not_hold_are_not_replaced_by_another_tabs_record() {
    let mut a = H::paused();
    let from_a = written(&a.approve("call_A")).expect("stored");
    assert!(written(&a.reject("call_B", Some("no"))).is_some());
    a.c.persist_failed();
    let outs = a.tab_wrote(&from_a);
    assert_eq!(persists(&outs), vec![]);
    no_http(&outs);
    let s = a.c.snapshot();
    assert_eq!(s.decisions.get("call_A"), Some(&Decision::Approve));
    assert_eq!(
        s.decisions.get("call_B"),
        Some(&Decision::Reject(Some("no".into())))
    );
    // A write goes out again (and is not reported failed): the next record is taken.
    assert!(written(&a.approve("call_B")).is_some());
    a.tab_wrote(&from_a);
    assert_eq!(a.c.snapshot().decisions.get("call_B"), None);
}

/// A failed write is of its pause: once the tab comes to a new pause, another tab's drafts for it
/// are taken in (they were ignored for good, until this tab wrote over them).
#[test]
fn a_failed_write_does_not_outlive_its_pause() {
    let mut a = H::loaded(vec![user("msg_1", "Delete old logs")]);
    a.c.persist_failed();
    let (_, outs) = a.load();
    let get = one_http(&outs);
    a.respond(get.id, thread(paused_thread()));
    assert!(a.c.take_missed_restore());
    let from_b = stored_for("msg_2", json!({"call_B": ["reject", "no"]}));
    let outs = a.tab_wrote(&from_b);
    assert_eq!(persists(&outs), vec![]);
    assert_eq!(
        a.c.snapshot().decisions.get("call_B"),
        Some(&Decision::Reject(Some("no".into())))
    );
}

/// A record of an earlier format that another tab writes leaves this tab's drafts as they are.
#[test]
fn a_record_of_an_earlier_format_leaves_the_drafts() {
    let mut a = H::paused();
    a.approve("call_A");
    let old = json!({"v": 1, "messageId": "msg_2", "callIds": ["call_A", "call_B"], "sig": 182_770_845u64, "drafts": {"call_B": "approve"}}).to_string();
    a.tab_wrote(&old);
    let s = a.c.snapshot();
    assert_eq!(s.decisions.get("call_A"), Some(&Decision::Approve));
    assert_eq!(s.decisions.get("call_B"), None);
}

#[test]
fn another_tabs_drafts_for_another_pause_leave_ours_and_nothing_is_written() {
    // Storage holds drafts of another pause: a tab behind (still showing a pause this one has
    // answered) wrote them. They say nothing of this pause: its drafts are kept (the person's
    // decisions, never lost to a stale tab), and nothing is written (no exchange between the two).
    let mut a = H::paused();
    a.approve("call_A");
    let outs = a.tab_wrote(&stored_for("msg_OLD", json!({"call_B": "approve"})));
    assert_eq!(persists(&outs), vec![]);
    assert_eq!(
        a.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Approve)
    );
    assert_eq!(a.c.snapshot().decisions.len(), 1);
    // Its next decision is stored as usual, with the one kept.
    let stored = written(&a.approve("call_B")).expect("stored");
    assert!(
        stored.contains("call_A") && stored.contains("call_B"),
        "{stored}"
    );
    // A thread not paused takes nothing either, and writes nothing (it reloads quietly to catch
    // up: see a_tab_catches_up_when_another_tab_moves_past_its_pause).
    let mut idle = H::loaded(vec![assistant("m", "hi")]);
    let outs = idle.tab_wrote(&stored_for("msg_2", json!({"call_A": "approve"})));
    assert_eq!(persists(&outs), vec![]);
    assert_get(&one_http(&outs));
}

/// Tab A submits one decision of two; while its POST is out, tab B decides the other and saves.
/// The step that ends A's submission writes nothing (storage holds B's record, which A reads
/// again first and takes in): A's own record written then replaced B's, B took it in, and B's
/// rejection was lost in both tabs.
#[test]
fn another_tabs_save_during_a_partial_submission_is_not_written_over() {
    let (mut a, mut b) = (H::paused(), H::paused());
    let from_a = written(&a.approve("call_A")).expect("A stores");
    b.tab_wrote(&from_a);
    let (op, outs) = a.submit();
    let post = one_http(&outs);
    assert_post(&post, r#"{"decisions":{"call_A":"approve"}}"#);
    let from_b = written(&b.reject("call_B", Some("no mail"))).expect("B stores");
    assert_eq!(
        persists(&a.tab_wrote(&from_b)),
        vec![],
        "in flight: not taken in yet"
    );
    // The server records call_A on the tail (a partial submission).
    let mut tail = pause_two();
    tail["tools"][0]["approval"] = json!("approved");
    let outs = a.respond(post.id, reply("awaiting_approval", tail));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(persists(&outs), vec![], "nothing written over B's record");
    // The driver reads storage again: B's record, taken in.
    assert!(a.c.take_missed_restore());
    a.tab_wrote(&from_b);
    let no_mail = Some(Decision::Reject(Some("no mail".into())));
    assert_eq!(a.c.snapshot().decisions.get("call_B").cloned(), no_mail);
    assert_eq!(b.c.snapshot().decisions.get("call_B").cloned(), no_mail);
}

#[test]
fn another_tabs_drafts_wait_for_no_submission() {
    // A submission in flight keeps the drafts it sends: another tab's are not taken in then.
    let mut a = H::paused();
    a.approve("call_A");
    a.approve("call_B");
    let (_, outs) = a.submit();
    let post = one_http(&outs);
    let stored = stored_for(
        "msg_2",
        json!({"call_A": ["reject", "stop"], "call_B": "approve"}),
    );
    let outs = a.tab_wrote(&stored);
    assert_eq!(persists(&outs), vec![]);
    assert_eq!(
        a.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Approve)
    );
    // Not lost: once the command is over (here it failed, on the same pause), the driver is told
    // to read storage again, once, and what the other tab saved then replaces these drafts.
    assert!(!a.c.take_missed_restore(), "still in flight");
    let outs = a.respond(post.id, status(400, json!({"error": "Malformed decision"})));
    let g = one_http(&outs);
    a.respond(g.id, thread(vec![user("msg_1", "x"), pause_two()]));
    assert_eq!(a.phase(), Phase::Error);
    assert!(a.c.take_missed_restore());
    assert!(!a.c.take_missed_restore(), "once");
    let outs = a.tab_wrote(&stored);
    assert_eq!(persists(&outs), vec![]);
    assert_eq!(
        a.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Reject(Some("stop".into())))
    );
}

// ----------------------------------------------------------------------------------------------
// autoSubmit and rejectAllAndSend

#[test]
fn auto_submit_when_the_set_is_complete() {
    let mut c = config();
    c.auto_submit = true;
    let mut h = H::with(c);
    let (_, outs) = h.load();
    let g = one_http(&outs);
    h.respond(g.id, thread(vec![pause_two()]));
    assert_eq!(h.c.approve("call_A").expect("approve"), None);
    no_http(&h.drain());
    let op =
        h.c.reject("call_B", None)
            .expect("reject")
            .expect("auto-submitted");
    let outs = h.drain();
    assert_post(
        &one_http(&outs),
        r#"{"decisions":{"call_A":"approve","call_B":"reject"}}"#,
    );
    assert_eq!(h.phase(), Phase::Submitting);
    // Single flight still holds.
    assert_eq!(err_code(h.c.approve("call_A")), ErrorCode::Busy);
    assert_eq!(err_code(h.c.submit(0)), ErrorCode::Busy);
    let post = one_http(&outs);
    let outs = h.respond(post.id, reply("completed", assistant("m", "ok")));
    assert_eq!(done(&outs, op), Ok(()));
}

#[test]
fn reject_all_and_send_when_idle_is_send() {
    let mut h = H::loaded(vec![]);
    let op =
        h.c.reject_all_and_send(h.now, "hello", Some("x"))
            .expect("ok");
    let outs = h.drain();
    assert_post(&one_http(&outs), r#"{"message":"hello"}"#);
    let post = one_http(&outs);
    let outs = h.respond(post.id, reply("completed", assistant("m", "hi")));
    assert_eq!(done(&outs, op), Ok(()));
}

#[test]
fn reject_all_and_send_when_suspended() {
    let mut h = H::paused();
    h.approve("call_A");
    let op =
        h.c.reject_all_and_send(h.now, "Do something else instead", Some("changed my mind"))
            .expect("ok");
    let outs = h.drain();
    let post = one_http(&outs);
    assert_post(
        &post,
        r#"{"decisions":{"call_A":"approve","call_B":["reject","changed my mind"]}}"#,
    );
    assert_eq!(h.phase(), Phase::Submitting);
    let outs = h.respond(post.id, reply("completed", assistant("msg_4", "ok")));
    no_done(&outs);
    let msg = one_http(&outs);
    assert_post(&msg, r#"{"message":"Do something else instead"}"#);
    assert_eq!(h.phase(), Phase::Sending);
    let outs = h.respond(msg.id, reply("completed", assistant("msg_6", "sure")));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::Completed);
    let s = h.c.snapshot();
    let texts: Vec<&str> = s
        .messages
        .as_slice()
        .iter()
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(texts.last(), Some(&"sure"));
}

#[test]
fn reject_all_and_send_stops_at_a_new_pause() {
    let mut h = H::paused();
    let op = h.c.reject_all_and_send(h.now, "next", None).expect("ok");
    let outs = h.drain();
    let post = one_http(&outs);
    assert_post(
        &post,
        r#"{"decisions":{"call_A":"reject","call_B":"reject"}}"#,
    );
    let p2 = tool_call(
        "msg_5",
        vec![tool("call_C", "deploy", Some("pending"), Some("live"))],
    );
    let outs = h.respond(post.id, reply("awaiting_approval", p2));
    assert_eq!(done(&outs, op), Err(ErrorCode::InputLocked));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(s.unsent_text.as_deref(), Some("next"));
    assert_eq!(
        s.suspension.as_ref().map(|x| x.undecided.clone()),
        Some(vec!["call_C".to_owned()])
    );
    assert!(
        s.decisions.is_empty(),
        "the new call is never rejected unseen"
    );
    // Only the quiet reload follows.
    assert_eq!(one_http(&outs).method, Method::Get);
}

#[test]
fn reject_all_and_send_on_an_orphaned_pause() {
    // The server says nothing is paused (409), and the reload no longer holds the pause message:
    // the rejections were not applied, and nothing in the thread says what became of the calls
    // (a trimmed history, another tab's decisions). Not a success: a conflict, the drafts listed
    // as dropped, the text given back unsent, and no message sent on an unknown outcome.
    let mut h = H::paused();
    let op =
        h.c.reject_all_and_send(h.now, "start over", Some("stale"))
            .expect("ok");
    let post = one_http(&h.drain());
    let outs = h.respond(
        post.id,
        status(
            409,
            json!({"status": "conflict", "error": "nothing paused"}),
        ),
    );
    let g = one_http(&outs);
    let outs = h.respond(
        g.id,
        thread(vec![user("msg_1", "x"), assistant("msg_2", "gave up")]),
    );
    no_http(&outs);
    assert_eq!(done(&outs, op), Err(ErrorCode::Conflict));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert_eq!(s.unsent_text.as_deref(), Some("start over"));
    assert_eq!(s.dropped_drafts, vec!["call_A", "call_B"]);
    // The composer is free: the person sends the text again knowingly.
    let (op, outs) = h.send("start over");
    assert_post(&one_http(&outs), r#"{"message":"start over"}"#);
    let outs = h.respond(
        one_http(&outs).id,
        reply("completed", assistant("msg_4", "ok")),
    );
    assert_eq!(done(&outs, op), Ok(()));
}

/// A refused submission (409, 400, a conflict body with a 200, a 429) whose reload shows the
/// run moved on with the pause message trimmed away (a windowed history keeps only the newest
/// messages): the refusal stands. Nothing in the thread records the drafts, so they are not
/// acknowledged: the submission fails with `conflict` and the drafts are listed as dropped.
#[test]
fn a_refused_submission_whose_pause_was_trimmed_away_is_a_conflict() {
    for (code, body) in [
        (
            409,
            json!({"status": "conflict", "error": "nothing paused"}),
        ),
        (
            200,
            json!({"status": "conflict", "error": "nothing paused"}),
        ),
        (400, json!({"error": "No pending approval"})),
        (429, json!({"error": "slow down"})),
    ] {
        let mut h = H::paused();
        h.approve("call_A");
        h.reject("call_B", Some("no mail"));
        let (op, outs) = h.submit();
        let post = one_http(&outs);
        let outs = h.respond(post.id, status(code, body));
        let g = one_http(&outs);
        assert_eq!(h.phase(), Phase::Conflict, "{code}");
        // Another tab's decisions ran; the history sent back starts after the pause.
        let outs = h.respond(
            g.id,
            thread(vec![
                tool_result("msg_3", vec![]),
                assistant("msg_4", "deleted it and sent the mail"),
            ]),
        );
        assert_eq!(done(&outs, op), Err(ErrorCode::Conflict), "{code}");
        assert_eq!(persists(&outs), vec![None], "{code}");
        let s = h.c.snapshot();
        assert_eq!(s.phase, Phase::Completed, "{code}");
        assert_eq!(s.error.as_ref().map(|e| e.code), Some("conflict"), "{code}");
        assert_eq!(s.dropped_drafts, vec!["call_A", "call_B"], "{code}");
        assert!(s.decisions.is_empty(), "{code}");
    }
}

/// The same reload after no clear answer (a 502, a 2xx body that does not parse): the pause gone
/// is the likelier sign that the decisions were applied, so they are acknowledged.
#[test]
fn an_unclear_submission_whose_pause_was_trimmed_away_is_acknowledged() {
    for response in [
        status(502, json!({"error": "bad gateway"})),
        HttpResponse::new(200, "{\"status\":\"completed\""),
    ] {
        let mut h = H::paused();
        h.approve("call_A");
        h.approve("call_B");
        let (op, outs) = h.submit();
        let post = one_http(&outs);
        let outs = h.respond(post.id, response);
        let g = one_http(&outs);
        assert_eq!(h.phase(), Phase::Submitting);
        let outs = h.respond(
            g.id,
            thread(vec![
                tool_result("msg_3", vec![]),
                assistant("msg_4", "done"),
            ]),
        );
        assert_eq!(done(&outs, op), Ok(()));
        assert_eq!(persists(&outs), vec![None]);
        let s = h.c.snapshot();
        assert_eq!(s.phase, Phase::Completed);
        assert!(s.error.is_none());
        assert!(s.dropped_drafts.is_empty());
    }
}

// ----------------------------------------------------------------------------------------------
// Snapshot shape and change coalescing

#[test]
fn snapshot_json_shape() {
    let mut h = H::paused();
    h.reject("call_B", Some("r"));
    let v = sj(&h.c.snapshot());
    let keys: Vec<&str> = v
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    for k in [
        "version",
        "phase",
        "dialect",
        "threadId",
        "loaded",
        "busy",
        "syncing",
        "messagesVersion",
        "messages",
        "streaming",
        "suspension",
        "decisions",
        "canSend",
        "canSubmit",
        "error",
        "unsentText",
        "lastSubmission",
        "droppedDrafts",
    ] {
        assert!(keys.contains(&k), "missing {k}");
    }
    assert_eq!(v["phase"], "awaiting_approval");
    assert_eq!(v["decisions"], json!({"call_B": ["reject", "r"]}));
    assert_eq!(v["error"], Value::Null);
    assert_eq!(v["streaming"], Value::Null);
    let tool_b = &v["suspension"]["tools"][1];
    assert_eq!(tool_b["callId"], "call_B");
    assert_eq!(tool_b["approval"], "rejected");
    assert_eq!(tool_b["rejectReason"], "r");
    assert_eq!(tool_b["draft"], true);
    assert_eq!(tool_b["serverApproval"], "pending");
    assert_eq!(v["suspension"]["undecided"], json!(["call_A"]));
    let m = &v["messages"][1];
    assert_eq!(m["kind"], "tool_call");
    assert_eq!(m["id"], "msg_2");
    assert_eq!(m["tools"][0]["status"], "pending");
    assert_eq!(
        m["tools"][0]["approvalReason"],
        "Deleting a file is irreversible"
    );
    assert_eq!(m["raw"], pause_two(), "raw is the wire message, lossless");
    // The head omits only the messages.
    let head = sj(&h.c.snapshot().head());
    assert!(head.get("messages").is_none());
    assert_eq!(head["messagesVersion"], v["messagesVersion"]);
    assert_eq!(head.as_object().map(|o| o.len()), Some(keys.len() - 1));
}

#[test]
fn messages_version_changes_only_with_messages() {
    let mut h = H::paused();
    let mv = h.c.snapshot().messages_version;
    let v = h.c.version();
    h.approve("call_A");
    assert_eq!(h.c.snapshot().messages_version, mv);
    assert_eq!(h.c.version(), v + 1);
    // A failed command changes nothing and emits nothing.
    let _ = h.c.approve("bogus");
    assert!(h.drain().is_empty());
    assert_eq!(h.c.version(), v + 1);
}

#[test]
fn send_before_load_reloads_after_the_reply() {
    let mut c = config();
    c.reload_after_post = false;
    let mut h = H::with(c);
    let (op, outs) = h.send("hello");
    let post = one_http(&outs);
    let outs = h.respond(post.id, reply("completed", assistant("msg_2", "hi")));
    assert_eq!(done(&outs, op), Ok(()));
    let g = one_http(&outs);
    assert_get(&g);
    h.respond(
        g.id,
        thread(vec![
            assistant("msg_0", "older"),
            user("msg_1", "hello"),
            assistant("msg_2", "hi"),
        ]),
    );
    assert!(h.c.snapshot().loaded);
    assert_eq!(h.c.snapshot().messages.as_slice().len(), 3);
}

#[test]
fn commands_preempt_the_quiet_reload() {
    let mut h = H::loaded(vec![]);
    let (_, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    let outs = h.respond(post.id, reply("awaiting_approval", pause_two()));
    let sync = one_http(&outs);
    h.approve("call_A");
    h.approve("call_B");
    let (op, outs) = h.submit();
    assert!(outs.contains(&Output::Cancel(sync.id)));
    let post = one_http(&outs);
    assert_post(
        &post,
        r#"{"decisions":{"call_A":"approve","call_B":"approve"}}"#,
    );
    // The cancelled reload's late reply is ignored.
    assert!(h.respond(sync.id, thread(vec![])).is_empty());
    let outs = h.respond(post.id, reply("completed", assistant("m", "ok")));
    assert_eq!(done(&outs, op), Ok(()));
}

#[test]
fn quiet_reload_failure_shows_the_error_but_keeps_the_phase() {
    let mut c = config();
    c.retry.attempts = 1;
    let mut h = H::with(c);
    let (_, outs) = h.load();
    let g = one_http(&outs);
    h.respond(g.id, thread(vec![]));
    let (_, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    let outs = h.respond(post.id, reply("awaiting_approval", pause_two()));
    let sync = one_http(&outs);
    let outs = h.fail(sync.id, TransportError::Network("offline".into()));
    no_http(&outs);
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    assert_eq!(h.error_code(), Some("network"));
    assert!(!h.c.snapshot().can_submit && !h.c.snapshot().busy);
}

// ----------------------------------------------------------------------------------------------
// Random walks: any sequence of commands and replies keeps the invariants and never panics.

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_reply(rng: &mut Rng, req: &HttpRequest) -> HttpResponse {
    let p1 = pause_two();
    let p2 = tool_call(
        "msg_5",
        vec![tool("call_C", "deploy", Some("pending"), Some("live"))],
    );
    let mut p1_half = pause_two();
    p1_half["tools"][0]["approval"] = json!("approved");
    let history = vec![
        user("msg_1", "Delete old logs"),
        pause_two_decided(),
        tool_result("msg_3", vec![]),
    ];
    match (req.method, rng.below(12)) {
        (_, 0) => status(500, json!({"error": "boom"})),
        (_, 1) => status(401, json!({})),
        (_, 2) => HttpResponse::new(200, "{garbage"),
        (_, 3) => status(409, json!({"status": "conflict", "error": "no"})),
        (_, 4) => status(400, json!({"error": "bad"})),
        (Method::Get, 5) => thread(vec![user("msg_1", "Delete old logs"), p1]),
        (Method::Get, 6) => thread(vec![user("msg_1", "Delete old logs"), p1_half]),
        (Method::Get, 7) => {
            let mut h = history;
            h.push(p2);
            thread(h)
        }
        (Method::Get, _) => {
            let mut h = history;
            h.push(assistant("msg_9", "done"));
            thread(h)
        }
        (Method::Post, 5 | 6) => reply("awaiting_approval", p1),
        (Method::Post, 7) => reply("awaiting_approval", p1_half),
        (Method::Post, 8) => reply("awaiting_approval", p2),
        (Method::Post, _) => reply("completed", assistant("msg_9", "done")),
    }
}

#[test]
fn random_walks_keep_the_invariants() {
    for seed in 1..=150u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut cfg = config();
        cfg.auto_submit = rng.below(2) == 0;
        cfg.reload_after_post = rng.below(2) == 0;
        let mut h = H::with(cfg);
        let mut out: Option<HttpRequest> = None;
        let ids = ["call_A", "call_B", "call_C", "bogus"];
        for _ in 0..80 {
            let outs = match rng.below(14) {
                0 => {
                    let _ = h.c.load(h.now);
                    h.drain()
                }
                1 => {
                    let _ = h.c.send(h.now, "Delete old logs");
                    h.drain()
                }
                2 => {
                    let _ = h.c.approve(ids[rng.below(4) as usize]);
                    h.drain()
                }
                3 => {
                    let _ = h.c.reject(ids[rng.below(4) as usize], Some("no"));
                    h.drain()
                }
                4 => {
                    let _ = h.c.clear(ids[rng.below(4) as usize]);
                    h.drain()
                }
                5 => {
                    let _ = h.c.submit(h.now);
                    h.drain()
                }
                6 => {
                    let _ = h.c.reject_all_and_send(h.now, "instead", None);
                    h.drain()
                }
                7 => {
                    h.c.abort();
                    h.drain()
                }
                8 => {
                    let m = if rng.below(2) == 0 { "msg_2" } else { "msg_5" };
                    h.c.restore_drafts(&stored_for(m, json!({"call_A": "approve"})));
                    h.drain()
                }
                9 => {
                    let t = h.c.poll_timeout().unwrap_or(h.now + 10);
                    h.at(t)
                }
                10 => match out.clone() {
                    Some(r) => h.fail(r.id, TransportError::Network("x".into())),
                    None => Vec::new(),
                },
                _ => match out.clone() {
                    Some(r) => {
                        let resp = random_reply(&mut rng, &r);
                        h.respond(r.id, resp)
                    }
                    None => Vec::new(),
                },
            };
            for o in &outs {
                match o {
                    Output::Http(r) => {
                        if let Some(body) = &r.body {
                            let v: Value = serde_json::from_str(body).expect("JSON body");
                            if let Some(d) = v.get("decisions") {
                                assert!(!d.as_object().expect("map").is_empty());
                            }
                        }
                        out = Some(r.clone());
                    }
                    Output::Cancel(id) if out.as_ref().map(|r| r.id) == Some(*id) => out = None,
                    _ => {}
                }
            }
            // A request that was answered is no longer out.
            if out.is_some()
                && !h.c.snapshot().busy
                && !h.c.snapshot().syncing
                && h.c.poll_timeout().is_none()
            {
                out = None;
            }
            h.now += 7;
            let _ = h.c.snapshot().to_json_string();
        }
    }
}

/// The sans-IO core is plain data: a native user can move a client (and its snapshots) to another
/// thread or task. (On wasm32, one thread, its shared messages are counted without atomics: not
/// `Send` there.)
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn client_and_snapshot_are_send() {
    fn send<T: Send>() {}
    send::<Client>();
    send::<toolgate::client::Snapshot>();
}

// ----------------------------------------------------------------------------------------------
// Allowed tools (allow for this session)

impl H {
    fn allow(&mut self, name: &str, allow: bool) -> Vec<Output> {
        self.c.allow_tool(self.now, name, allow).expect("allow");
        self.drain()
    }

    /// Paused on one gated call (`call_A`, `delete_file`), then its tool allowed: the automatic
    /// submission that goes.
    fn lone_call_allowed() -> (H, HttpRequest) {
        let mut h = H::loaded(vec![
            user("msg_1", "Delete old logs"),
            tool_call(
                "msg_2",
                vec![tool("call_A", "delete_file", Some("pending"), None)],
            ),
        ]);
        let outs = h.allow("delete_file", true);
        let sub = one_http(&outs);
        assert_post(&sub, r#"{"decisions":{"call_A":"approve"}}"#);
        (h, sub)
    }

    /// The automatic submission `sub` fails (422): no later step (a timer, another allow) sends
    /// it again; the person's `submit()` sends `body`.
    fn fails_and_waits_for_the_person(&mut self, sub: HttpRequest, body: &str) {
        no_http(&self.respond(sub.id, status(422, json!({"error": "nope"}))));
        assert_eq!(self.phase(), Phase::Error);
        no_http(&self.at(self.now + 60_000));
        no_http(&self.allow("other", true));
        assert_eq!(self.phase(), Phase::Error);
        let (_, outs) = self.submit();
        assert_post(&one_http(&outs), body);
    }
}

#[test]
fn an_allowed_tool_is_approved_and_the_person_decides_the_rest() {
    let mut h = H::loaded(vec![user("msg_1", "hi"), assistant("msg_2", "hello")]);
    let outs = h.allow("delete_file", true);
    no_http(&outs);
    assert!(changed(&outs));
    assert_eq!(h.c.snapshot().allowed_tools, vec!["delete_file"]);
    let (op, outs) = h.send("Delete old logs and email the team");
    let post = one_http(&outs);
    let outs = h.respond(post.id, reply("awaiting_approval", pause_two()));
    assert_eq!(done(&outs, op), Ok(()));
    // The quiet reload only: nothing submitted, a person must decide send_email.
    assert_get(&one_http(&outs));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(s.decisions.get("call_A"), Some(&Decision::Approve));
    assert_eq!(s.decisions.get("call_B"), None);
    // The person decides; the payload carries both.
    h.reject("call_B", Some("not now"));
    let (_, outs) = h.submit();
    let posts: Vec<HttpRequest> = https(&outs)
        .into_iter()
        .filter(|r| r.method == Method::Post)
        .collect();
    assert_eq!(posts.len(), 1);
    assert_post(
        &posts[0],
        r#"{"decisions":{"call_A":"approve","call_B":["reject","not now"]}}"#,
    );
}

#[test]
fn when_every_pending_tool_is_allowed_the_decisions_go_at_once() {
    let mut h = H::loaded(vec![]);
    h.allow("delete_file", true);
    h.allow("send_email", true);
    h.allow("delete_file", true); // listed once
    assert_eq!(
        h.c.snapshot().allowed_tools,
        vec!["send_email", "delete_file"]
    );
    let (op, outs) = h.send("Delete old logs and email the team");
    let post = one_http(&outs);
    let outs = h.respond(post.id, reply("awaiting_approval", pause_two()));
    assert_eq!(done(&outs, op), Ok(()));
    // The submission goes instead of the quiet reload (its answer brings one): the driver sees
    // no reload issued and cancelled in the same step.
    let sub = one_http(&outs);
    assert!(!outs.iter().any(|o| matches!(o, Output::Cancel(_))));
    assert_post(
        &sub,
        r#"{"decisions":{"call_A":"approve","call_B":"approve"}}"#,
    );
    assert_eq!(h.phase(), Phase::Submitting);
    let outs = h.respond(sub.id, reply("completed", assistant("msg_3", "Done.")));
    let get = one_http(&outs);
    assert_get(&get);
    assert_eq!(h.phase(), Phase::Completed);
    let s = h.c.snapshot();
    assert_eq!(
        s.last_submission.as_ref().map(|l| l.call_ids.clone()),
        Some(vec!["call_A".to_owned(), "call_B".to_owned()])
    );
}

#[test]
fn allowing_a_tool_while_paused_approves_its_calls_and_may_submit() {
    let mut h = H::paused();
    let outs = h.allow("send_email", true);
    no_http(&outs);
    assert_eq!(
        h.c.snapshot().decisions.get("call_B"),
        Some(&Decision::Approve)
    );
    // The last one needed: the set is complete and only the allow-list decided it.
    let outs = h.allow("delete_file", true);
    assert_post(
        &one_http(&outs),
        r#"{"decisions":{"call_A":"approve","call_B":"approve"}}"#,
    );
}

#[test]
fn a_person_s_decision_in_the_set_waits_for_submit() {
    let mut h = H::paused();
    h.reject("call_A", Some("no"));
    // Complete now, but with a person's draft in it: not sent without `submit`.
    let outs = h.allow("send_email", true);
    no_http(&outs);
    assert!(h.c.snapshot().can_submit);
    assert_eq!(
        h.c.snapshot().decisions.get("call_A"),
        Some(&Decision::reject(Some("no")))
    );
}

#[test]
fn a_person_s_approval_of_a_tool_not_allowed_waits_for_submit() {
    // The person approved call_A (delete_file, not allowed); allowing send_email approves call_B
    // and completes the set. An approval the person made is theirs to send: not sent by itself,
    // though another call in the pause is of an allowed tool.
    let mut h = H::paused();
    h.approve("call_A");
    let outs = h.allow("send_email", true);
    no_http(&outs);
    let s = h.c.snapshot();
    assert!(s.can_submit);
    assert_eq!(s.decisions.get("call_B"), Some(&Decision::Approve));
    let (_, outs) = h.submit();
    assert_post(
        &one_http(&outs),
        r#"{"decisions":{"call_A":"approve","call_B":"approve"}}"#,
    );
}

#[test]
fn a_cleared_allowed_approval_stays_cleared() {
    let mut h = H::paused();
    h.allow("send_email", true);
    h.c.clear("call_B").expect("clear");
    let outs = h.drain();
    no_http(&outs);
    assert_eq!(h.c.snapshot().decisions.get("call_B"), None);
    // Later steps do not approve it again, nor does allowing another tool.
    h.allow("other", true);
    assert_eq!(h.c.snapshot().decisions.get("call_B"), None);
}

#[test]
fn a_failed_automatic_submission_is_not_repeated() {
    let mut h = H::paused();
    h.allow("send_email", true);
    let outs = h.allow("delete_file", true);
    let sub = one_http(&outs);
    h.fails_and_waits_for_the_person(
        sub,
        r#"{"decisions":{"call_A":"approve","call_B":"approve"}}"#,
    );
}

#[test]
fn a_failed_automatic_submission_of_a_lone_call_is_not_repeated() {
    // One gated call, of a tool then allowed: sent by itself once; after its failure, no later
    // step sends it again.
    let (mut h, sub) = H::lone_call_allowed();
    h.fails_and_waits_for_the_person(sub, r#"{"decisions":{"call_A":"approve"}}"#);
}

#[test]
fn a_blank_tool_name_is_refused() {
    let mut h = H::paused();
    for blank in ["", "  "] {
        let e = h.c.allow_tool(h.now, blank, true).expect_err("blank");
        assert_eq!(e.code, ErrorCode::InvalidArgument);
    }
    assert!(h.drain().is_empty());
    assert!(h.c.snapshot().allowed_tools.is_empty());
}

#[test]
fn a_disallowed_tool_is_asked_for_again() {
    let mut h = H::loaded(vec![]);
    h.allow("delete_file", true);
    h.allow("delete_file", false);
    assert!(h.c.snapshot().allowed_tools.is_empty());
    let (_, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    h.respond(post.id, reply("awaiting_approval", pause_two()));
    assert!(h.c.snapshot().decisions.is_empty());
}

/// After a page reload: drafts the allowance made before (restored from storage) approve calls of
/// tools allowed again on the new client: no person needs asking, so they go once the thread has
/// loaded. Restored drafts with a person's rejection among them wait for `submit`.
#[test]
fn restored_approvals_of_allowed_tools_go_after_the_load() {
    for (drafts, goes) in [
        (json!({"call_A": "approve", "call_B": "approve"}), true),
        (json!({"call_A": "approve", "call_B": "reject"}), false),
    ] {
        let mut h = H::new();
        h.c.restore_drafts(&stored_for("msg_2", drafts.clone()));
        h.drain();
        h.allow("delete_file", true);
        h.allow("send_email", true);
        let (op, outs) = h.load();
        let g = one_http(&outs);
        let outs = h.respond(g.id, thread(vec![user("msg_1", "x"), pause_two()]));
        assert_eq!(done(&outs, op), Ok(()));
        let posts: Vec<HttpRequest> = https(&outs)
            .into_iter()
            .filter(|r| r.method == Method::Post)
            .collect();
        if goes {
            assert_eq!(posts.len(), 1, "{drafts}");
            assert_post(
                &posts[0],
                r#"{"decisions":{"call_A":"approve","call_B":"approve"}}"#,
            );
        } else {
            assert!(posts.is_empty(), "{drafts}");
            assert!(h.c.snapshot().can_submit);
        }
    }
}

// ----------------------------------------------------------------------------------------------
// A hostile or sloppy server

/// Messages without `__id`, tool callIds counted per step (as some providers do): a new pause
/// whose call reuses a decided call's id is another call, and must not inherit the draft.
#[test]
fn a_reused_call_id_on_a_new_pause_without_ids_never_inherits_the_draft() {
    let no_id = |mut m: Value| {
        m.as_object_mut().expect("object").remove("__id");
        m
    };
    let old = no_id(tool_call(
        "-",
        vec![tool(
            "call_1",
            "delete_file",
            Some("pending"),
            Some("irreversible"),
        )],
    ));
    let mut h = H::loaded(vec![user("msg_1", "clean up"), old.clone()]);
    h.approve("call_1");
    // Answered in another tab; the run paused again on a new call_1, another tool.
    let mut record = old;
    record["tools"][0]["approval"] = json!("approved");
    let mut transfer = tool(
        "call_1",
        "transfer_money",
        Some("pending"),
        Some("9000 EUR"),
    );
    transfer["inputs"] = json!({"amount": 9000});
    let mut new = no_id(tool_call("-", vec![transfer]));
    new["resume_token"] = json!("workflow_2");
    let (op, outs) = h.load();
    let g = one_http(&outs);
    let outs = h.respond(
        g.id,
        thread(vec![
            user("msg_1", "clean up"),
            record,
            tool_result("msg_3", vec![]),
            new,
        ]),
    );
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(
        s.suspension.as_ref().expect("s").tools[0].name,
        "transfer_money"
    );
    assert!(
        s.decisions.is_empty(),
        "the person never saw transfer_money: {:?}",
        s.decisions
    );
    assert!(!s.can_submit);
}

/// Two tools under one callId (providers that number calls per step, or give none): the first
/// was rejected in an earlier partial submission, the second waits. Loading the thread must not
/// submit anything on its own (no tool is allowed, autoSubmit is off): the decision set is
/// "complete" by the first tool's record alone, and an empty list of drafts all approves.
#[test]
fn a_repeated_call_id_never_submits_on_its_own() {
    let mut first = tool(
        "call_X",
        "delete_file",
        Some("rejected"),
        Some("irreversible"),
    );
    first["rejectReason"] = json!("no");
    let second = tool("call_X", "send_email", Some("pending"), Some("email"));
    let mut h = H::new();
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let outs = h.respond(
        get.id,
        thread(vec![
            user("msg_1", "x"),
            tool_call("msg_2", vec![first, second]),
        ]),
    );
    assert_eq!(done(&outs, op), Ok(()));
    no_http(&outs);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert!(!s.busy);
}

#[test]
fn a_later_load_that_finds_a_new_pause_takes_in_another_tabs_drafts_for_it() {
    // B loaded before the pause; A shows it and decided a call. B loads again (its own `load()`,
    // or a quiet reload) and finds the same pause: it must not write its own empty record over
    // A's drafts (A would take that in and lose its decision). B writes nothing in that step and
    // asks for storage to be read again, which gives it A's drafts.
    let mut a = H::paused();
    let from_a = written(&a.approve("call_A")).expect("A stores its draft");
    let mut b = H::loaded(vec![user("msg_1", "Delete old logs")]);
    let (op, outs) = b.load();
    let get = one_http(&outs);
    let outs = b.respond(get.id, thread(paused_thread()));
    assert!(done(&outs, op).is_ok());
    assert_eq!(persists(&outs), vec![], "B writes nothing over A's drafts");
    assert!(b.c.take_missed_restore(), "B reads storage again");
    assert!(!b.c.take_missed_restore(), "once");
    let outs = b.tab_wrote(&from_a);
    assert_eq!(persists(&outs), vec![]);
    assert_eq!(
        b.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Approve)
    );
    // Storage held nothing for this pause (another pause's record, not taken in; or no key): B's
    // own record is written then.
    let mut c = H::loaded(vec![user("msg_1", "Delete old logs")]);
    let (_, outs) = c.load();
    let get = one_http(&outs);
    c.respond(get.id, thread(paused_thread()));
    assert!(c.c.take_missed_restore());
    let outs = c.tab_wrote(&stored_for("msg_OLD", json!({"call_B": "approve"})));
    assert!(cleared(&persists(&outs)), "{outs:?}");
    assert!(c.c.snapshot().decisions.is_empty());
    let stored = written(&c.approve("call_B")).expect("stored");
    assert!(stored.contains(r#""messageId":"msg_2""#), "{stored}");
    let mut d = H::loaded(vec![user("msg_1", "Delete old logs")]);
    let (_, outs) = d.load();
    let get = one_http(&outs);
    d.respond(get.id, thread(paused_thread()));
    assert!(d.c.take_missed_restore());
    assert!(cleared(&persists(&d.tab_wrote(""))), "no key: written");
    // Only that read: a later record for another pause (a tab behind) writes nothing, as ever.
    let outs = d.tab_wrote(&stored_for("msg_OLD", json!({"call_B": "approve"})));
    assert_eq!(persists(&outs), vec![]);
    // Without `persist` there is no storage to read.
    let mut c = config();
    c.persist = false;
    let mut e = H::with(c);
    let (_, outs) = e.load();
    e.respond(one_http(&outs).id, thread(vec![user("msg_1", "x")]));
    let (_, outs) = e.load();
    e.respond(one_http(&outs).id, thread(paused_thread()));
    assert_eq!(e.phase(), Phase::AwaitingApproval);
    assert!(!e.c.take_missed_restore());
    // A reload that finds the pause it already showed writes as before (nothing read again).
    let (_, outs) = a.load();
    let get = one_http(&outs);
    a.respond(get.id, thread(paused_thread()));
    assert!(!a.c.take_missed_restore());
}

#[test]
fn a_tab_catches_up_when_another_tab_moves_past_its_pause() {
    // B shows the pause; A answered it, the run went on, and A's pause is over: A removed the key.
    // B reloads quietly (the pause stays on screen meanwhile) and shows where the thread is.
    let mut b = H::paused();
    b.approve("call_A");
    let outs = b.tab_wrote("");
    let sync = one_http(&outs);
    assert_get(&sync);
    let s = b.c.snapshot();
    assert!(s.syncing && !s.busy, "a quiet reload");
    assert_eq!(s.phase, Phase::AwaitingApproval);
    let mut answered = pause_two();
    answered["tools"][0]["approval"] = json!("approved");
    answered["tools"][1]["approval"] = json!("rejected");
    let outs = b.respond(
        sync.id,
        thread(vec![
            user("msg_1", "Delete old logs"),
            answered,
            tool_result("msg_3", vec![]),
            assistant("msg_4", "Done."),
        ]),
    );
    assert_eq!(b.phase(), Phase::Completed);
    assert!(b.c.snapshot().suspension.is_none());
    assert!(
        b.c.snapshot().dropped_drafts.is_empty(),
        "the draft the other tab sent is acknowledged, not dropped"
    );
    assert_eq!(persists(&outs), vec![None], "no pause: the key removed");
    assert!(!b.c.take_missed_restore());

    // A is at a newer pause and wrote drafts for it: B reloads, finds it, and takes them in
    // without writing.
    let mut b = H::paused();
    let mut newer = pause_two();
    newer["__id"] = json!("msg_9");
    let from_a = stored_for("msg_9", json!({"call_B": ["reject", "later"]}));
    let outs = b.tab_wrote(&from_a);
    assert_eq!(persists(&outs), vec![]);
    let sync = one_http(&outs);
    let outs = b.respond(
        sync.id,
        thread(vec![
            user("msg_1", "Delete old logs"),
            pause_two_decided(),
            tool_result("msg_3", vec![]),
            newer,
        ]),
    );
    assert_eq!(persists(&outs), vec![]);
    assert!(b.c.take_missed_restore());
    let outs = b.tab_wrote(&from_a);
    assert_eq!(persists(&outs), vec![]);
    no_http(&outs);
    assert_eq!(
        b.c.snapshot().decisions.get("call_B"),
        Some(&Decision::Reject(Some("later".into())))
    );

    // A tab behind wrote a record of a pause that is over: B reloads, still shows its pause, and
    // then writes its own record again (not before the reload: two tabs would write back and
    // forth), so its drafts are in storage once more.
    let mut b = H::paused();
    b.approve("call_A");
    let outs = b.tab_wrote(&stored_for("msg_OLD", json!({"call_B": "approve"})));
    assert_eq!(persists(&outs), vec![], "nothing written before the reload");
    let sync = one_http(&outs);
    let outs = b.respond(sync.id, thread(paused_thread()));
    let again = written(&outs).expect("its record written again");
    assert!(again.contains(r#""call_A":"approve""#), "{again}");
    assert!(!b.c.take_missed_restore());
    // A record for the pause shown is taken in and loads nothing; a command preempts the quiet
    // reload (never two requests in flight).
    let mut b = H::paused();
    no_http(&b.tab_wrote(&stored_for("msg_2", json!({"call_A": "approve"}))));
    let outs = b.tab_wrote(&stored_for("msg_OLD", json!({"call_A": "approve"})));
    let sync = one_http(&outs);
    let (_, outs) = b.submit();
    assert!(outs.contains(&Output::Cancel(sync.id)), "{outs:?}");
    assert_post(&one_http(&outs), r#"{"decisions":{"call_A":"approve"}}"#);
}

/// A tab that cannot read the thread (its token expired, it is offline) and is told of another
/// tab's record for a pause it does not show writes nothing back: its catch-up reload failed, so
/// its own record is of a pause that may be over. Writing it made the other tab reload and write
/// its record again, and so on without end (hundreds of reloads a second between two tabs, the
/// working tab's drafts overwritten by the stale ones).
#[test]
fn a_tab_whose_catch_up_reload_fails_writes_nothing_back() {
    let from_a = stored_for("msg_9", json!({"call_B": "approve"}));
    // A status that is not retried, and a transport failure retried until it gives up.
    for failure in ["401", "network"] {
        let mut b = H::paused();
        b.approve("call_A");
        for round in 0..3 {
            let outs = b.tab_wrote(&from_a);
            assert_eq!(persists(&outs), vec![], "{failure} round {round}");
            let mut sync = one_http(&outs);
            assert_get(&sync);
            loop {
                let outs = match failure {
                    "401" => b.respond(sync.id, status(401, json!({"error": "expired"}))),
                    _ => b.fail(sync.id, TransportError::Network("offline".into())),
                };
                assert_eq!(persists(&outs), vec![], "{failure} round {round}: {outs:?}");
                if !b.c.snapshot().syncing {
                    break;
                }
                // Retried after its backoff: nothing written while waiting either.
                let outs = b.at(b.now + 120_000);
                assert_eq!(persists(&outs), vec![], "{failure} round {round}");
                sync = one_http(&outs);
            }
            // Later steps (a decision of its own is written as ever) write no stale record.
            assert_eq!(persists(&b.drain()), vec![]);
        }
        let outs = b.reject("call_B", None);
        let own = written(&outs).expect("its own decision written");
        assert!(own.contains(r#""messageId":"msg_2""#), "{own}");
    }
}

#[test]
fn a_tab_catches_up_when_another_tab_submits_part_of_the_pause() {
    // A and B show one pause. A approves call_A and submits it alone; the server holds that
    // decision, call_B still waits. A's record (no drafts left) says the server holds call_A.
    let (mut a, mut b) = (H::paused(), H::paused());
    let from_a = written(&a.approve("call_A")).expect("A stores its draft");
    no_http(&b.tab_wrote(&from_a));
    let (op, outs) = a.submit();
    let post = one_http(&outs);
    assert_post(&post, r#"{"decisions":{"call_A":"approve"}}"#);
    let mut tail = pause_two();
    tail["tools"][0]["approval"] = json!("approved");
    let outs = a.respond(post.id, reply("awaiting_approval", tail.clone()));
    assert_eq!(done(&outs, op), Ok(()));
    let from_a = written(&outs).expect("A's record changes");
    let record: Value = serde_json::from_str(&from_a).expect("json");
    assert_eq!(record["settled"], json!(["call_A"]), "{from_a}");
    assert_eq!(record["drafts"], json!({}), "{from_a}");

    // B took in A's draft for call_A before; this record has none, and says the server holds
    // call_A, which B shows pending: B is behind and reloads quietly, writing nothing.
    let outs = b.tab_wrote(&from_a);
    assert_eq!(persists(&outs), vec![]);
    let sync = one_http(&outs);
    assert_get(&sync);
    assert!(b.c.snapshot().syncing && !b.c.snapshot().busy);
    let outs = b.respond(
        sync.id,
        thread(vec![user("msg_1", "Delete old logs"), tail.clone()]),
    );
    no_http(&outs);
    // B's record after the reload is A's (B writes it again, the same): storage loses nothing.
    for record in persists(&outs) {
        let record: Value = serde_json::from_str(&record.expect("a record")).expect("json");
        assert_eq!(
            record,
            serde_json::from_str::<Value>(&from_a).expect("json")
        );
    }
    let s = b.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert!(s.dropped_drafts.is_empty(), "{:?}", s.dropped_drafts);
    let susp = s.suspension.as_ref().expect("paused");
    assert_eq!(susp.undecided, vec!["call_B"]);
    assert_eq!(
        susp.tools[0].server_approval,
        toolgate::approval::Approval::Approved
    );
    // Caught up: the same record again loads nothing (no loop), and B's next draft writes a
    // record A takes in without loading either.
    no_http(&b.tab_wrote(&from_a));
    let from_b = written(&b.reject("call_B", Some("not now"))).expect("B writes");
    let outs = a.tab_wrote(&from_b);
    assert_eq!(persists(&outs), vec![]);
    no_http(&outs);
    assert_eq!(
        a.c.snapshot().decisions.get("call_B"),
        Some(&Decision::Reject(Some("not now".into())))
    );
}

#[test]
fn a_history_with_tool_calls_that_have_no_id_loads() {
    // A provider that gives calls no id: the ungated read in the history has `callId: null`.
    let read = json!({"__id": "msg_r", "role": "assistant", "type": "tool_call",
        "tools": [{"callId": null, "name": "read_file", "inputs": {"path": "a"}, "approval": null}]});
    let h = H::loaded(vec![
        user("msg_0", "Look first"),
        read,
        user("msg_1", "Delete old logs"),
        pause_two(),
    ]);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(s.messages.as_slice()[1].tools[0].call_id, "");
    assert_eq!(s.messages.as_slice()[1].tools[0].name, "read_file");
    assert_eq!(s.suspension.as_ref().map(|x| x.undecided.len()), Some(2));
}

#[test]
fn header_values_and_tokens_beyond_latin_1_are_refused() {
    // `fetch` sends a header value one byte per character: it throws on anything beyond U+00FF.
    for (doc, message) in [
        (
            r#"{"threadId":"t","headers":{"X-A":"€"}}"#,
            r#"the value of header "X-A" is not Latin-1 text"#,
        ),
        (
            r#"{"threadId":"t","token":"t€"}"#,
            "token must be Latin-1 text",
        ),
    ] {
        let e = Config::from_json(doc)
            .and_then(|c| c.validate().map(|()| c))
            .expect_err(doc);
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.message.ends_with(message), "{}", e.message);
    }
    let c = Config::from_json(r#"{"threadId":"t","headers":{"X-A":"café"},"token":"é"}"#)
        .expect("read");
    assert!(c.validate().is_ok(), "Latin-1 is fine");
}

#[test]
fn a_submission_without_an_answer_in_time_is_checked_and_not_sent_again() {
    // A timeout (or a gateway's 504): the server may still be running the tools. The thread is
    // read; when it shows the decisions applied, acknowledged; when not (yet), nothing is sent
    // again by the client: the submission fails with its error, the drafts stay for the person.
    for gateway in [false, true] {
        let mut h = H::paused();
        h.approve("call_A");
        let (op, outs) = h.submit();
        let p1 = one_http(&outs);
        let outs = if gateway {
            h.respond(p1.id, status(504, json!({"error": "gateway timeout"})))
        } else {
            h.fail(p1.id, TransportError::Timeout)
        };
        let outs = h.still_paused(&outs);
        no_http(&outs);
        let code = if gateway {
            ErrorCode::HttpStatus
        } else {
            ErrorCode::Timeout
        };
        assert_eq!(done(&outs, op), Err(code));
        assert_eq!(h.c.poll_timeout(), None, "no re-send scheduled");
        let s = h.c.snapshot();
        assert_eq!(s.phase, Phase::Error);
        assert_eq!(s.decisions.get("call_A"), Some(&Decision::Approve));
        assert!(s.can_submit);
        // The person submits again: the server may have moved on meanwhile, so the thread is
        // read first; on the same pause, not decided, the same body.
        let (_, outs) = h.submit();
        let check = one_http(&outs);
        assert_get(&check);
        let outs = h.respond(check.id, thread(paused_thread()));
        assert_eq!(one_http(&outs).body, p1.body);
    }
}

#[test]
fn an_accepted_submission_whose_read_is_stopped_or_fails_is_checked_before_the_next() {
    // A message-less reply accepted the decisions; the read that follows it is stopped, or fails
    // for good. The run may have moved on to calls that reuse the callIds: the next submission
    // reads the thread first, and a read that fails reports its own error.
    for stop in [true, false] {
        let mut h = H::paused();
        h.approve("call_A");
        h.approve("call_B");
        let (op, outs) = h.submit();
        let post = one_http(&outs);
        let outs = h.respond(post.id, ok(json!({"status": "awaiting_approval"})));
        let read = one_http(&outs);
        assert_get(&read);
        if stop {
            h.c.abort();
            h.drain();
            assert_eq!(h.c.snapshot().phase, Phase::AwaitingApproval);
        } else {
            let outs = h.respond(read.id, status(401, json!({"error": "expired token"})));
            assert_eq!(done(&outs, op), Err(ErrorCode::Unauthorized));
        }
        let (op, outs) = h.submit();
        let check = one_http(&outs);
        assert_get(&check);
        // That read fails too: its own error, not a placeholder.
        let outs = h.respond(check.id, status(401, json!({"error": "expired token"})));
        assert_eq!(done(&outs, op), Err(ErrorCode::Unauthorized));
        assert_eq!(h.error_code(), Some("unauthorized"));
        // The run moved on to calls reusing the callIds: nothing goes to them.
        let (op, outs) = h.submit();
        let check = one_http(&outs);
        assert_get(&check);
        let outs = h.respond(
            check.id,
            thread(vec![
                user("msg_1", "Delete old logs"),
                pause_two_decided(),
                tool_result("msg_3", vec![]),
                tool_call(
                    "msg_4",
                    vec![tool("call_A", "drop_database", Some("pending"), None)],
                ),
            ]),
        );
        no_http(&outs);
        assert_eq!(done(&outs, op), Ok(()));
        assert!(h.c.snapshot().decisions.is_empty());
    }
}

#[test]
fn a_lost_answer_on_a_tail_without_ids_whose_call_ids_are_reused_sends_nothing() {
    // No `__id` on the messages and callIds counted per step: the new pause has the same key as
    // the one decided (no id, the same callIds), with another tool under call_A.
    let old = json!({"role": "assistant", "type": "tool_call", "tools": [
        {"callId": "call_A", "name": "delete_file", "inputs": {"path": "/tmp/x"}, "approval": "pending"}]});
    let mut h = H::loaded(vec![user("msg_1", "clean up"), old.clone()]);
    h.approve("call_A");
    let (op, outs) = h.submit();
    let p1 = one_http(&outs);
    let outs = h.fail(p1.id, TransportError::Network("reset".into()));
    let g = one_http(&outs);
    let mut done_old = old;
    done_old["tools"][0]["approval"] = json!("approved");
    let new = json!({"role": "assistant", "type": "tool_call", "tools": [
        {"callId": "call_A", "name": "send_email", "inputs": {"to": "all@corp"}, "approval": "pending"}]});
    let outs = h.respond(
        g.id,
        thread(vec![
            user("msg_1", "clean up"),
            done_old,
            tool_result("msg_3", vec![]),
            new,
        ]),
    );
    no_http(&outs);
    assert_eq!(h.c.poll_timeout(), None, "nothing to send again");
    // (Without ids the client cannot tell its decision from another's: it says so.)
    assert_eq!(done(&outs, op), Err(ErrorCode::Conflict));
    let s = h.c.snapshot();
    assert!(s.decisions.is_empty(), "no draft carried to the new call");
    assert_eq!(
        s.suspension.as_ref().map(|x| x.undecided.clone()),
        Some(vec!["call_A".to_owned()])
    );
}

#[test]
fn a_record_does_not_call_settled_a_call_id_its_tail_also_has_pending() {
    // Two calls under one callId (providers that number calls per step), one decided, one
    // pending: the record does not list it as settled (a reader would always find it pending and
    // load again on every record).
    let tail = tool_call(
        "msg_2",
        vec![
            tool("call_A", "delete_file", Some("approved"), None),
            tool("call_A", "send_email", Some("pending"), None),
            tool("call_B", "read_file", Some("rejected"), None),
            tool("call_C", "deploy", Some("pending"), None),
        ],
    );
    let mut h = H::loaded(vec![user("msg_1", "x"), tail]);
    let record = written(&h.approve("call_C")).expect("written");
    let record: Value = serde_json::from_str(&record).expect("json");
    assert_eq!(record["settled"], json!(["call_B"]), "{record}");
}

#[test]
fn a_check_read_that_fails_for_good_leaves_the_next_submission_to_read_first() {
    // No clear answer (a 500, a timeout, a 2xx body that cannot be read), and the read that
    // checks it fails for good (401, network failures until the retries are spent): the POST may
    // have landed and moved the run on, so the person's next submission reads the thread first.
    for case in 0..3 {
        let mut h = H::paused();
        h.approve("call_A");
        h.approve("call_B");
        let (op, outs) = h.submit();
        let p1 = one_http(&outs);
        let outs = match case {
            0 => h.respond(p1.id, status(500, json!({"error": "tool threw"}))),
            1 => h.fail(p1.id, TransportError::Timeout),
            _ => h.respond(p1.id, HttpResponse::new(200, "<html>proxy page</html>")),
        };
        let mut check = one_http(&outs);
        assert_get(&check);
        if case == 1 {
            loop {
                let outs = h.fail(check.id, TransportError::Network("down".into()));
                match h.c.poll_timeout() {
                    Some(t) => check = one_http(&h.at(t)),
                    None => {
                        assert_eq!(done(&outs, op), Err(ErrorCode::Timeout));
                        break;
                    }
                }
            }
        } else {
            let outs = h.respond(check.id, status(401, json!({"error": "expired token"})));
            assert!(done(&outs, op).is_err());
        }
        let (_, outs) = h.submit();
        assert_get(&one_http(&outs));
    }
}

// ---------------------------------------------------------------------------------------------
// Drafts across tabs after a failed write

/// A tab whose write failed ignores only the record storage held before (the other tab's
/// write-back): a decision made in the other tab since replaces its drafts, as always (it kept an
/// approval the person had since turned into a rejection there, and a submission sent it).
#[test]
fn unsaved_tab_ignores_a_newer_decision_made_in_the_other_tab() {
    let (mut a, mut b) = (H::paused(), H::paused());
    let from_a = written(&a.approve("call_A")).expect("stored");
    no_http(&b.tab_wrote(&from_a));
    // A's next write fails (storage full): A rejects call_B, the driver removed the key.
    assert!(written(&a.reject("call_B", Some("no"))).is_some());
    a.c.persist_failed();
    // Later, in B, the person changes their mind on call_A: reject it.
    let from_b = written(&b.reject("call_A", Some("keep that file"))).expect("B stores it");
    let outs = a.tab_wrote(&from_b);
    no_http(&outs);
    assert_eq!(
        a.c.snapshot().decisions.get("call_A"),
        Some(&Decision::Reject(Some("keep that file".into()))),
        "the newer rejection made in B"
    );
}

/// A tab whose write failed still catches up: the other tab submitted call_A (the server holds
/// it), its record says so, and A reloads.
#[test]
fn unsaved_tab_still_catches_up_when_the_other_tab_submitted() {
    let (mut a, mut b) = (H::paused(), H::paused());
    written(&a.reject("call_B", Some("no"))).expect("stored");
    a.c.persist_failed();
    written(&b.approve("call_A")).expect("B stores its draft");
    let (_, outs) = b.submit();
    let post = one_http(&outs);
    let mut tail = pause_two();
    tail["tools"][0]["approval"] = json!("approved");
    let outs = b.respond(post.id, reply("awaiting_approval", tail));
    let from_b = written(&outs).expect("B's record, call_A settled");
    assert!(from_b.contains("settled"), "{from_b}");
    let outs = a.tab_wrote(&from_b);
    assert!(
        !https(&outs).is_empty(),
        "A shows call_A pending while the server holds it: it reloads"
    );
}

// ---------------------------------------------------------------------------------------------
// Review: drafts across tabs (99eb9af)

/// Storage stays full for two decisions in a row in tab A: both writes fail (the driver removes
/// the key each time). B, told of the removal, reloads and writes back the record it holds (the
/// one storage held before A's first failed write). That record is older than A's drafts and must
/// not replace them; but A's `before` is now its own first failed record (never stored), so B's
/// write-back is not recognised as stale and A's two decisions are lost.
#[test]
fn two_failed_writes_in_a_row_then_the_other_tabs_write_back() {
    let (mut a, mut b) = (H::paused(), H::paused());
    let from_a = written(&a.approve("call_A")).expect("stored");
    no_http(&b.tab_wrote(&from_a));
    // Storage is full from here on: both writes fail.
    assert!(written(&a.reject("call_B", Some("no mail"))).is_some());
    a.c.persist_failed();
    assert!(written(&a.reject("call_A", Some("keep it"))).is_some());
    a.c.persist_failed();
    // B is told of the removal: it reloads quietly and writes its record back.
    let outs = b.tab_wrote("");
    let sync = one_http(&outs);
    let outs = b.respond(sync.id, thread(paused_thread()));
    let back = written(&outs).expect("B writes its record again");
    let outs = a.tab_wrote(&back);
    no_http(&outs);
    let s = a.c.snapshot();
    assert_eq!(
        s.decisions.get("call_A"),
        Some(&Decision::Reject(Some("keep it".into()))),
        "A's rejection of call_A, made after B's record, replaced by it"
    );
    assert_eq!(
        s.decisions.get("call_B"),
        Some(&Decision::Reject(Some("no mail".into())))
    );
}

/// A's rejection of call_B could not be stored (storage full). In B, the person approves call_A
/// and submits it alone; the server holds it, and B's record (call_A settled, no draft for
/// call_B: B never saw the rejection) reaches A. A catches up, but its rejection of call_B, the
/// one thing it alone held, is cleared by a record that says nothing about call_B. (Before
/// 99eb9af such a record was ignored while the drafts were unsaved.)
#[test]
fn unsaved_rejection_survives_the_other_tabs_partial_submission() {
    let (mut a, mut b) = (H::paused(), H::paused());
    written(&a.reject("call_B", Some("no"))).expect("stored");
    a.c.persist_failed();
    written(&b.approve("call_A")).expect("B stores its draft");
    let (_, outs) = b.submit();
    let post = one_http(&outs);
    let mut tail = pause_two();
    tail["tools"][0]["approval"] = json!("approved");
    let outs = b.respond(post.id, reply("awaiting_approval", tail.clone()));
    let from_b = written(&outs).expect("B's record, call_A settled");
    let outs = a.tab_wrote(&from_b);
    let sync = one_http(&outs);
    a.respond(
        sync.id,
        thread(vec![user("msg_1", "Delete old logs"), tail]),
    );
    assert_eq!(
        a.c.snapshot().decisions.get("call_B"),
        Some(&Decision::Reject(Some("no".into()))),
        "A's rejection of call_B, made in A alone, was lost"
    );
}

// ----------------------------------------------------------------------------------------------
// The views of settled messages, and the server's words in errors

#[test]
fn message_views_give_each_tool_its_status_and_each_message_its_text() {
    use toolgate::client::ToolStatus;
    let with_result = |mut t: Value| {
        t["result"] = json!("42 lines");
        t
    };
    let h = H::loaded(vec![
        // Content blocks: strings and `text` blocks joined by newlines, anything else skipped.
        json!({"__id": "m0", "role": "user", "content": [
            {"type": "text", "text": "first"}, "second", {"type": "image", "url": "x"}, 7, null,
            {"type": "text", "text": "third"}
        ]}),
        // Content that is neither text nor blocks reads as no text.
        json!({"__id": "m1", "role": "assistant", "content": {"kind": "odd"}}),
        tool_call(
            "m2",
            vec![
                tool("c_pending", "a", Some("pending"), None),
                rejected("c_rejected", "b", None, Some("no")),
                tool("c_approved", "c", Some("approved"), None),
                with_result(tool("c_approved_done", "d", Some("approved"), None)),
                tool("c_called", "e", None, None),
                with_result(tool("c_done", "f", None, None)),
            ],
        ),
        tool_result(
            "m3",
            vec![
                tool("r_approved", "c", Some("approved"), None),
                tool("r_plain", "e", None, None),
                rejected("r_rejected", "b", None, Some("no")),
            ],
        ),
        assistant("m4", "All done."),
    ]);
    let s = h.c.snapshot();
    let msgs = s.messages.as_slice();
    assert_eq!(msgs[0].text, "first\nsecond\nthird");
    assert_eq!(msgs[1].text, "");
    assert_eq!(msgs[4].text, "All done.");
    let statuses = |i: usize| -> Vec<(String, ToolStatus)> {
        msgs[i]
            .tools
            .iter()
            .map(|t| (t.call_id.clone(), t.status))
            .collect()
    };
    let expect = |pairs: &[(&str, ToolStatus)]| -> Vec<(String, ToolStatus)> {
        pairs
            .iter()
            .map(|(id, st)| ((*id).to_owned(), *st))
            .collect()
    };
    assert_eq!(
        statuses(2),
        expect(&[
            ("c_pending", ToolStatus::Pending),
            ("c_rejected", ToolStatus::Rejected),
            ("c_approved", ToolStatus::Approved),
            ("c_approved_done", ToolStatus::Approved),
            ("c_called", ToolStatus::Called),
            ("c_done", ToolStatus::Done),
        ])
    );
    // On a result message a tool ran: done whatever its approval said, unless it was rejected.
    assert_eq!(
        statuses(3),
        expect(&[
            ("r_approved", ToolStatus::Done),
            ("r_plain", ToolStatus::Done),
            ("r_rejected", ToolStatus::Rejected),
        ])
    );
    // The JSON form carries the same words.
    let v = sj(&h.c.snapshot());
    assert_eq!(v["messages"][2]["tools"][2]["status"], "approved");
    assert_eq!(v["messages"][2]["tools"][4]["status"], "called");
    assert_eq!(v["messages"][3]["tools"][0]["status"], "done");
    assert_eq!(v["messages"][0]["text"], "first\nsecond\nthird");
}

#[test]
fn an_http_error_shows_the_servers_explanation_in_any_usual_shape() {
    let cases: &[(&str, &str)] = &[
        (r#"{"error":"quota exceeded"}"#, "quota exceeded"),
        // OpenAI-style: an object with a message.
        (
            r#"{"error":{"message":"rate limited","type":"requests"}}"#,
            "rate limited",
        ),
        // A blank `error` gives way to `message`.
        (r#"{"error":"  ","message":"try later"}"#, "try later"),
        (r#"{"message":"only a message"}"#, "only a message"),
        // Nothing readable: the status in words.
        (r#"{"error":42}"#, "the server answered HTTP 400"),
        (r#"{"error":{"code":7}}"#, "the server answered HTTP 400"),
        (r#"{"error":""}"#, "the server answered HTTP 400"),
        (r#"["error"]"#, "the server answered HTTP 400"),
        ("<html>Bad Request</html>", "the server answered HTTP 400"),
    ];
    for (body, message) in cases {
        let mut h = H::loaded(vec![]);
        let (op, outs) = h.send("hello");
        let post = one_http(&outs);
        let outs = h.respond(post.id, HttpResponse::new(400, (*body).to_owned()));
        assert_eq!(done(&outs, op), Err(ErrorCode::HttpStatus), "{body}");
        let s = h.c.snapshot();
        assert_eq!(
            s.error.as_ref().map(|e| e.message.as_str()),
            Some(*message),
            "{body}"
        );
        assert_eq!(
            sj(&h.c.snapshot())["error"],
            json!({"code": "http_status", "message": message}),
            "{body}"
        );
    }
}

#[test]
fn the_snapshot_json_of_a_submission_the_server_did_not_apply() {
    let mut c = config();
    c.reload_after_post = false;
    let mut h = H::with(c);
    let (_, outs) = h.load();
    let g = one_http(&outs);
    h.respond(g.id, thread(paused_thread()));
    h.approve("call_A");
    assert!(!h.c.snapshot().decisions.is_empty());
    assert_eq!(h.c.snapshot().decisions.len(), 1);
    let (_, outs) = h.submit();
    let post = one_http(&outs);
    h.respond(post.id, reply("awaiting_approval", pause_two()));
    let v = sj(&h.c.snapshot());
    assert_eq!(
        v["lastSubmission"],
        json!({
            "callIds": ["call_A"],
            "status": "awaiting_approval",
            "stillPending": [
                {"callId": "call_A", "name": "delete_file",
                 "approvalReason": "Deleting a file is irreversible"},
                {"callId": "call_B", "name": "send_email",
                 "approvalReason": "Outbound email reaches people"}
            ],
            "notApplied": ["call_A"]
        })
    );
    assert_eq!(v["decisions"], json!({"call_A": "approve"}));
}

#[test]
fn a_send_verified_by_reload_ends_as_a_send_answered_directly_would() {
    // Answered directly: the run completed.
    let mut direct = H::loaded(vec![]);
    let (_, outs) = direct.send("hello");
    let post = one_http(&outs);
    direct.respond(post.id, reply("completed", assistant("msg_2", "hi there")));
    let direct_phase = direct.phase();
    assert_eq!(direct_phase, Phase::Completed);
    // The answer lost, the reload shows the message and the reply: the same phase.
    let mut h = H::loaded(vec![]);
    let (op, outs) = h.send("hello");
    let post = one_http(&outs);
    let outs = h.fail(post.id, TransportError::Network("reset".into()));
    let g = one_http(&outs);
    let outs = h.respond(
        g.id,
        thread(vec![user("msg_1", "hello"), assistant("msg_2", "hi there")]),
    );
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), direct_phase);
    assert_eq!(h.c.snapshot().unsent_text, None);
    // The reload shows the run paused: awaiting approval, not completed.
    let mut h = H::loaded(vec![]);
    let (op, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    let outs = h.fail(post.id, TransportError::Network("reset".into()));
    let g = one_http(&outs);
    let outs = h.respond(g.id, thread(paused_thread()));
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.phase(), Phase::AwaitingApproval);
}

#[test]
fn decisions_accepted_without_a_message_are_acknowledged_whatever_the_reload_shows() {
    // Laravel's JSON turn answers a submission with `{status}` alone; the reload then shows a
    // thread whose paused message the server replaced by its outcome (no tool call left to read
    // the decisions from). The server accepted them: acknowledged, not dropped.
    let mut h = H::paused();
    h.approve("call_A");
    h.reject("call_B", Some("not today"));
    assert_eq!(
        h.c.decisions().map(|d| d.local().count()),
        Some(2),
        "the decision set holds both drafts"
    );
    let (op, outs) = h.submit();
    let post = one_http(&outs);
    let outs = h.respond(post.id, ok(json!({"status": "completed"})));
    let get = one_http(&outs);
    assert_get(&get);
    let outs = h.respond(
        get.id,
        thread(vec![
            user("msg_1", "Delete old logs"),
            assistant("msg_4", "Deleted; no email sent."),
        ]),
    );
    assert_eq!(done(&outs, op), Ok(()));
    no_http(&outs);
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Completed);
    assert!(s.dropped_drafts.is_empty(), "{:?}", s.dropped_drafts);
    assert!(s.decisions.is_empty());
    assert!(h.c.decisions().is_none(), "nothing is paused");
    assert_eq!(persists(&outs), vec![None], "the stored drafts are removed");
}

#[test]
fn without_reload_after_post_the_thread_is_read_only_when_a_reply_leaves_doubt() {
    let quiet = || {
        let mut c = config();
        c.reload_after_post = false;
        c
    };
    let loaded = || {
        let mut h = H::with(quiet());
        let (_, outs) = h.load();
        let g = one_http(&outs);
        h.respond(
            g.id,
            thread(vec![user("msg_1", "hi"), assistant("msg_2", "hello")]),
        );
        h
    };
    // The status agrees with the message: nothing more to read.
    let mut h = loaded();
    let (op, outs) = h.send("thanks");
    let post = one_http(&outs);
    let outs = h.respond(post.id, reply("completed", assistant("msg_4", "welcome")));
    assert_eq!(done(&outs, op), Ok(()));
    no_http(&outs);
    let mut h = loaded();
    let (_, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    no_http(&h.respond(post.id, reply("awaiting_approval", pause_two())));
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    // The status says paused, the message shows no pause (or the other way round): the thread
    // tells which.
    for (status, message) in [
        ("awaiting_approval", assistant("msg_4", "welcome")),
        ("completed", pause_two()),
    ] {
        let mut h = loaded();
        let (op, outs) = h.send("thanks");
        let post = one_http(&outs);
        let outs = h.respond(post.id, reply(status, message));
        assert_eq!(done(&outs, op), Ok(()), "{status}");
        assert_get(&one_http(&outs));
    }
    // A client that never loaded reads the thread after its first reply.
    let mut h = H::with(quiet());
    let (op, outs) = h.send("hello");
    let post = one_http(&outs);
    let outs = h.respond(post.id, reply("completed", assistant("msg_2", "hi")));
    assert_eq!(done(&outs, op), Ok(()));
    assert_get(&one_http(&outs));
}

#[test]
fn a_draft_whose_pause_another_tab_answered_differently_is_listed_as_dropped() {
    // Another tab (or client) decided the pause and the run went on; this tab's reload shows it.
    let elsewhere = |then: Vec<Value>| {
        let mut decided = pause_two();
        decided["tools"][0]["approval"] = json!("rejected");
        decided["tools"][1]["approval"] = json!("approved");
        let mut msgs = vec![
            user("msg_1", "Delete old logs"),
            decided,
            tool_result(
                "msg_3",
                vec![
                    rejected("call_A", "delete_file", None, None),
                    tool("call_B", "send_email", Some("approved"), None),
                ],
            ),
        ];
        msgs.extend(then);
        msgs
    };
    // The run completed: the draft differs from the record and is dropped, visibly.
    let mut h = H::paused();
    h.approve("call_A");
    h.reject("call_B", None);
    let mv = h.c.snapshot().messages_version;
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let outs = h.respond(get.id, thread(elsewhere(vec![assistant("msg_4", "done")])));
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert!(s.messages_version > mv, "the messages changed");
    assert_eq!(s.phase, Phase::Completed);
    assert_eq!(
        s.dropped_drafts,
        vec!["call_A".to_owned(), "call_B".to_owned()]
    );
    assert!(s.decisions.is_empty());
    assert_eq!(persists(&outs), vec![None]);
    // The run paused again, on another message: the drafts are dropped all the same, none lands
    // on the new pause, and this tab reads storage for it (another tab may hold drafts for it).
    let mut h = H::paused();
    h.approve("call_A");
    let (_, outs) = h.load();
    let get = one_http(&outs);
    let next = tool_call(
        "msg_6",
        vec![tool("call_C", "delete_file", Some("pending"), None)],
    );
    h.respond(
        get.id,
        thread(elsewhere(vec![
            assistant("msg_4", "done"),
            user("msg_5", "and the rest"),
            next,
        ])),
    );
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(s.dropped_drafts, vec!["call_A".to_owned()]);
    assert!(s.decisions.is_empty());
    let susp = s.suspension.as_ref().expect("paused");
    assert_eq!(susp.undecided, vec!["call_C"]);
    assert!(h.c.take_missed_restore(), "a new pause: storage is read");
}

/// As above, with only one of the two changed: the same tool asked again with other inputs (the
/// riskiest case: approving `delete_file /tmp/x` must never approve `delete_file /`), or other
/// tool with the same inputs.
#[test]
fn a_reused_call_id_with_other_inputs_or_another_tool_never_inherits_the_draft() {
    let no_id = |mut m: Value| {
        m.as_object_mut().expect("object").remove("__id");
        m
    };
    for (name, inputs) in [
        ("delete_file", json!({"path": "/"})),
        ("archive_file", json!({"path": "/tmp/x"})),
    ] {
        let old = no_id(tool_call(
            "-",
            vec![tool("call_1", "delete_file", Some("pending"), None)],
        ));
        let mut h = H::loaded(vec![user("msg_1", "clean up"), old.clone()]);
        h.approve("call_1");
        let mut again = tool("call_1", name, Some("pending"), None);
        again["inputs"] = inputs.clone();
        // The same message shape and position: only the call tells the pauses apart.
        let new = no_id(tool_call("-", vec![again]));
        let (op, outs) = h.load();
        let g = one_http(&outs);
        let outs = h.respond(g.id, thread(vec![user("msg_1", "clean up"), new]));
        assert_eq!(done(&outs, op), Ok(()));
        let s = h.c.snapshot();
        let card = &s.suspension.as_ref().expect("paused").tools[0];
        assert_eq!(card.name, name);
        assert_eq!(sj(&card.inputs), inputs);
        assert!(s.decisions.is_empty(), "{name} {inputs}: {:?}", s.decisions);
        assert!(!s.can_submit);
    }
}

#[test]
fn a_load_is_retried_after_408_and_429_and_not_after_another_4xx() {
    for (code, retried) in [
        (408, true),
        (429, true),
        (500, true),
        (599, true),
        (400, false),
        (404, false),
        (409, false),
        (499, false),
    ] {
        let mut h = H::new();
        let (op, outs) = h.load();
        let g1 = one_http(&outs);
        let outs = h.respond(g1.id, status(code, json!({"error": "x"})));
        no_http(&outs);
        if retried {
            no_done(&outs);
            assert_eq!(h.c.poll_timeout(), Some(1_300), "{code}");
            let g2 = one_http(&h.at(1_300));
            assert_get(&g2);
            assert_eq!(done(&h.respond(g2.id, thread(vec![])), op), Ok(()));
        } else {
            assert!(done(&outs, op).is_err(), "{code}");
            assert_eq!(h.c.poll_timeout(), None, "{code}");
            assert_eq!(h.phase(), Phase::Error, "{code}");
        }
    }
}

#[test]
fn a_network_failure_shows_the_drivers_words_or_a_plain_one() {
    for (words, shown) in [
        ("connection reset", "connection reset"),
        ("", "the request failed"),
    ] {
        let mut h = H::loaded(vec![]);
        let (op, outs) = h.send("hello");
        let post = one_http(&outs);
        let outs = h.fail(post.id, TransportError::Network(words.into()));
        // The message may have landed: the thread is read; it did not.
        let g = one_http(&outs);
        let outs = h.respond(g.id, thread(vec![]));
        assert_eq!(done(&outs, op), Err(ErrorCode::Network));
        let s = h.c.snapshot();
        assert_eq!(s.error.as_ref().map(|e| e.message.as_str()), Some(shown));
    }
}

#[test]
fn a_thread_id_may_be_1024_bytes_and_no_longer() {
    for (len, ok) in [(1023, true), (1024, true), (1025, false)] {
        let c = Config::new(BASE, "t".repeat(len));
        let r = c.validate();
        assert_eq!(r.is_ok(), ok, "{len}");
        if let Err(e) = r {
            assert_eq!(e.code, ErrorCode::InvalidArgument);
            assert_eq!(e.path.as_deref(), Some("threadId"));
        }
    }
}

#[test]
fn an_option_error_inside_a_group_names_the_group() {
    for (doc, path) in [
        (
            r#"{"threadId":"t","retry":{"attempts":"x"}}"#,
            "retry.attempts",
        ),
        (r#"{"threadId":"t","routes":{"chat":5}}"#, "routes.chat"),
        (r#"{"threadId":"t","timeoutMs":"x"}"#, "timeoutMs"),
    ] {
        let e = Config::from_json(doc).expect_err(doc);
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{doc}");
        assert_eq!(e.path.as_deref(), Some(path), "{doc}: {}", e.message);
    }
}

#[test]
fn another_tabs_draft_the_server_already_recorded_is_not_taken_in_as_a_draft() {
    // A decided both calls before B's partial submission of call_A landed; B's tail records
    // call_A approved. A's record reaches B: only call_B's draft is taken in.
    let mut a = H::paused();
    a.approve("call_A");
    let from_a = written(&a.reject("call_B", Some("no"))).expect("A stores its drafts");
    let mut accepted = pause_two();
    accepted["tools"][0]["approval"] = json!("approved");
    let mut b = H::loaded(vec![user("msg_1", "Delete old logs"), accepted]);
    assert_eq!(b.phase(), Phase::AwaitingApproval);
    b.tab_wrote(&from_a);
    let s = b.c.snapshot();
    assert_eq!(
        s.decisions.get("call_B"),
        Some(&Decision::Reject(Some("no".to_owned())))
    );
    assert_eq!(s.decisions.get("call_A"), None, "{:?}", s.decisions);
    assert_eq!(s.decisions.len(), 1);
}

#[test]
fn headers_read_as_an_object_an_array_of_pairs_or_null() {
    let pairs = |doc: &str| -> Result<Vec<(String, String)>, String> {
        Config::from_json(doc)
            .map(|c| c.headers)
            .map_err(|e| e.message)
    };
    assert_eq!(
        pairs(r#"{"threadId":"t","headers":{"X-A":"1","X-B":"2"}}"#),
        Ok(vec![("X-A".into(), "1".into()), ("X-B".into(), "2".into())])
    );
    // `Headers` and `Map` objects reach the core as pairs, in order, repeats kept.
    assert_eq!(
        pairs(r#"{"threadId":"t","headers":[["X-A","1"],["X-A","2"]]}"#),
        Ok(vec![("X-A".into(), "1".into()), ("X-A".into(), "2".into())])
    );
    assert_eq!(pairs(r#"{"threadId":"t","headers":null}"#), Ok(vec![]));
    for bad in [
        r#"{"threadId":"t","headers":[["X-A"]]}"#,
        r#"{"threadId":"t","headers":[["X-A",1]]}"#,
        r#"{"threadId":"t","headers":["X-A: 1"]}"#,
        r#"{"threadId":"t","headers":{"X-A":1}}"#,
        r#"{"threadId":"t","headers":"X-A: 1"}"#,
    ] {
        let e = pairs(bad).expect_err(bad);
        assert!(
            e.ends_with(
                "headers must be an object of header values or an array of [name, value] pairs"
            ),
            "{bad}: {e}"
        );
    }
}

#[test]
fn every_command_has_its_own_op() {
    // The driver settles each command's promise by its op: two commands never share one.
    let mut h = H::new();
    let (load, outs) = h.load();
    h.respond(one_http(&outs).id, thread(paused_thread()));
    h.approve("call_A");
    let (submit, outs) = h.submit();
    let post = one_http(&outs);
    h.c.abort();
    let outs = h.drain();
    assert_eq!(done(&outs, submit), Err(ErrorCode::Aborted));
    let (again, _) = h.load();
    let ops = [load, submit, again];
    for (i, a) in ops.iter().enumerate() {
        for b in &ops[i + 1..] {
            assert_ne!(a, b, "{ops:?}");
        }
    }
    assert!(outs.contains(&Output::Cancel(post.id)));
}

/// Neuron 4 gives each approval request a deadline (`expiresAt`): the card carries it as the
/// server wrote it, in the view and in the snapshot's JSON, and a card without one has no key.
#[test]
fn a_card_carries_the_request_s_deadline() {
    let mut a = tool(
        "call_A",
        "delete_file",
        Some("pending"),
        Some("irreversible"),
    );
    a["expiresAt"] = json!("2026-12-03T15:00:00Z");
    let b = tool("call_B", "send_email", Some("pending"), None);
    let mut h = H::loaded(vec![
        user("msg_1", "Delete old logs"),
        tool_call("msg_2", vec![a, b]),
    ]);
    h.approve("call_A");
    let s = h.c.snapshot();
    let tools = &s.suspension.as_ref().expect("paused").tools;
    assert_eq!(tools[0].expires_at.as_deref(), Some("2026-12-03T15:00:00Z"));
    assert_eq!(tools[1].expires_at, None);
    let v = sj(s);
    let cards = &v["suspension"]["tools"];
    assert_eq!(cards[0]["expiresAt"], json!("2026-12-03T15:00:00Z"));
    assert_eq!(cards[1].get("expiresAt"), None);
    assert_eq!(
        v["suspension"]["decided"][0]["expiresAt"],
        json!("2026-12-03T15:00:00Z")
    );
}

#[test]
fn a_failed_automatic_submission_after_an_earlier_one_is_not_repeated() {
    // The run pauses again on an allowed tool right after an automatic submission went. The
    // second automatic submission fails: no later step sends it again. (The first call's record
    // is still kept: it must not stand in for the second call's.)
    let (mut h, sub) = H::lone_call_allowed();
    let outs = h.respond(
        sub.id,
        reply(
            "awaiting_approval",
            tool_call(
                "msg_4",
                vec![tool("call_C", "delete_file", Some("pending"), None)],
            ),
        ),
    );
    let sub = one_http(&outs);
    assert_post(&sub, r#"{"decisions":{"call_C":"approve"}}"#);
    h.fails_and_waits_for_the_person(sub, r#"{"decisions":{"call_C":"approve"}}"#);
}

#[test]
fn a_body_read_chunk_by_chunk_keeps_its_bytes_through_a_repeated_start() {
    // The driver may hand a JSON answer over chunk by chunk. A start reported again for the same
    // request keeps the bytes already read; chunks and ends of other requests change nothing.
    let mut h = H::new();
    let (op, outs) = h.load();
    let get = one_http(&outs);
    let body = thread(vec![user("msg_1", "hi"), assistant("msg_2", "hello")]).body;
    let (a, b) = body.split_at(body.len() / 2);
    h.c.handle_stream_start(h.now, get.id, 200);
    h.c.handle_stream_chunk(h.now, get.id, a);
    h.c.handle_stream_start(h.now, get.id, 200);
    h.c.handle_stream_chunk(h.now, RequestId(999), b"}}}");
    h.c.handle_stream_end(h.now, RequestId(999));
    no_http(&h.drain());
    h.c.handle_stream_chunk(h.now, get.id, b);
    h.c.handle_stream_end(h.now, get.id);
    let outs = h.drain();
    assert_eq!(done(&outs, op), Ok(()));
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::Idle);
    assert_eq!(s.messages.as_slice().len(), 2);
    assert_eq!(s.messages.as_slice()[1].text, "hello");
}

/// A late head of a cancelled request (the driver reports what the network gives it) does not
/// take the buffer from the request awaited: the live load's chunks and end are read, and its op
/// resolves (it stayed `loading` and `busy` for good).
#[test]
fn a_late_stream_start_of_a_cancelled_request_does_not_take_the_live_ones_buffer() {
    let mut h = H::new();
    let (op1, outs) = h.load();
    let first = one_http(&outs);
    h.c.abort();
    let outs = h.drain();
    assert_eq!(done(&outs, op1), Err(ErrorCode::Aborted));
    let (op2, outs) = h.load();
    let second = one_http(&outs);
    h.c.handle_stream_start(h.now, second.id, 200);
    h.drain();
    h.c.handle_stream_start(h.now, first.id, 200);
    h.drain();
    let body = json!({"id": TID, "messages": [user("msg_1", "hi")]}).to_string();
    h.c.handle_stream_chunk(h.now, second.id, body.as_bytes());
    h.drain();
    h.c.handle_stream_end(h.now, second.id);
    let outs = h.drain();
    assert_eq!(done(&outs, op2), Ok(()), "the live load resolves");
    assert_eq!(h.phase(), Phase::Idle);
    assert!(!h.c.snapshot().busy);
}

/// A server that counts call ids per step gives the next pause's call of an allowed tool the id
/// of the last pause's: it is approved and submitted as any other. The id was remembered as
/// approved already, and the new call waited for a person.
#[test]
fn an_allowed_tools_call_on_a_later_pause_reusing_an_id_is_approved() {
    let one = |id: &str, path: &str| {
        let mut t = tool("call_0", "run_tests", Some("pending"), None);
        t["inputs"] = json!({ "path": path });
        tool_call(id, vec![t])
    };
    let mut h = H::loaded(vec![]);
    h.allow("run_tests", true);
    let (op, outs) = h.send("test a then b");
    let post = one_http(&outs);
    let outs = h.respond(post.id, reply("awaiting_approval", one("msg_2", "a")));
    assert_eq!(done(&outs, op), Ok(()));
    let first = one_http(&outs);
    assert_post(&first, r#"{"decisions":{"call_0":"approve"}}"#);
    let outs = h.respond(first.id, reply("awaiting_approval", one("msg_4", "b")));
    let again = one_http(&outs);
    assert_post(&again, r#"{"decisions":{"call_0":"approve"}}"#);
}

/// A decision POST the server accepts without a message (`{status, approvals}`) is followed by a
/// read of the thread, which is part of the submission: the phase stays `submitting` while
/// `submit()` is out. It read `loading`, as for a load the person asked for.
#[test]
fn the_read_after_a_submission_accepted_without_message_is_submitting() {
    let mut h = H::paused();
    h.approve("call_A");
    let (_, outs) = h.submit();
    let post = one_http(&outs);
    assert_eq!(h.phase(), Phase::Submitting);
    let outs = h.respond(
        post.id,
        ok(json!({"status": "awaiting_approval", "approvals": []})),
    );
    assert_get(&one_http(&outs));
    no_done(&outs);
    assert_eq!(h.phase(), Phase::Submitting);
}

// ---------------------------------------------------------------- sends that landed, and doubt

/// A user message as neuron-ai's history stores it now: content blocks, a text block being
/// `{"type": "text", "content": ...}`.
fn user_in_blocks(id: &str, text: &str) -> Value {
    json!({"__id": id, "role": "user", "content": [{"type": "text", "content": text}]})
}

#[test]
fn neuron_ai_text_blocks_read_as_their_text() {
    let h = H::loaded(vec![
        user_in_blocks("msg_1", "Delete old logs"),
        json!({"__id": "msg_2", "role": "assistant",
               "content": [{"type": "text", "content": "Done."}, {"type": "image", "content": "iVBORw0KGgo"}]}),
    ]);
    let texts: Vec<String> =
        h.c.snapshot()
            .messages
            .as_slice()
            .iter()
            .map(|m| m.text.clone())
            .collect();
    assert_eq!(
        texts,
        vec!["Delete old logs", "Done."],
        "an image's data is no text"
    );
}

/// No clear answer to a message POST, and the reload shows it landed, in neuron-ai's block form:
/// not offered for sending again (a second turn).
#[test]
fn a_send_that_landed_in_a_block_form_history_is_not_offered_again() {
    let mut h = H::loaded(vec![]);
    let (op, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    let outs = h.fail(post.id, TransportError::Timeout);
    let get = one_http(&outs);
    let outs = h.respond(
        get.id,
        thread(vec![
            user_in_blocks("msg_1", "Delete old logs"),
            pause_two(),
        ]),
    );
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.c.snapshot().unsent_text, None);
    assert_eq!(h.phase(), Phase::AwaitingApproval);
}

/// A server that stores the text trimmed (Laravel's `TrimStrings` middleware, on by default)
/// still shows the message landed.
#[test]
fn a_landed_message_stored_trimmed_is_not_offered_again() {
    let mut h = H::loaded(vec![]);
    let (op, outs) = h.send("Delete old logs\n");
    let post = one_http(&outs);
    let outs = h.fail(post.id, TransportError::Network("reset".into()));
    let get = one_http(&outs);
    let outs = h.respond(
        get.id,
        thread(vec![
            user("msg_1", "Delete old logs"),
            assistant("msg_2", "Done."),
        ]),
    );
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.c.snapshot().unsent_text, None);
}

/// A 2xx without `message` to a send (Laravel's `{status, approvals}`) is accepted, whatever the
/// read after it shows, and even when that read fails: the text is never kept for sending again.
#[test]
fn a_message_less_2xx_to_a_send_is_accepted_whatever_the_read() {
    // The read shows the text in another form than sent (trimmed, in blocks).
    let mut h = H::loaded(vec![]);
    let (op, outs) = h.send("  Delete old logs");
    let post = one_http(&outs);
    let outs = h.respond(
        post.id,
        ok(json!({"status": "awaiting_approval", "approvals": []})),
    );
    let get = one_http(&outs);
    assert_get(&get);
    let outs = h.respond(
        get.id,
        thread(vec![
            user_in_blocks("msg_1", "Delete old logs!"),
            pause_two(),
        ]),
    );
    assert_eq!(done(&outs, op), Ok(()));
    assert_eq!(h.c.snapshot().unsent_text, None);
    assert_eq!(h.phase(), Phase::AwaitingApproval);

    // The read fails: the command fails with the read's error, not a parse_error, and the
    // delivered text is not offered again.
    let mut cfg = config();
    cfg.retry.attempts = 1;
    let mut h = H::with(cfg);
    let (op, outs) = h.load();
    let g = one_http(&outs);
    let outs = h.respond(g.id, thread(vec![]));
    assert_eq!(done(&outs, op), Ok(()));
    let (op, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    let outs = h.respond(post.id, ok(json!({"status": "completed", "approvals": []})));
    let get = one_http(&outs);
    let outs = h.fail(get.id, TransportError::Network("offline".into()));
    assert_eq!(done(&outs, op), Err(ErrorCode::Network));
    assert_eq!(h.c.snapshot().unsent_text, None);
}

/// A decision POST stopped while out (its outcome unknown), and the quiet read after it shows the
/// pause unchanged (it landed before the server got to the POST, or the history is append-only):
/// that proves nothing. The stopped POST may still land and the run pause again on calls that
/// reuse the callIds, so the next submission reads the thread first, and goes out only to the
/// pause the drafts were made on.
#[test]
fn a_read_showing_the_pause_unchanged_does_not_end_the_doubt_of_a_stopped_post() {
    let mut h = H::paused();
    h.approve("call_A");
    h.approve("call_B");
    let (_, outs) = h.submit();
    assert!(one_http(&outs).body.is_some());
    h.c.abort();
    let sync = one_http(&h.drain());
    assert_get(&sync);
    no_http(&h.respond(sync.id, thread(paused_thread())));
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    // The person's own load, the same: still in doubt.
    let (_, outs) = h.load();
    let get = one_http(&outs);
    no_http(&h.respond(get.id, thread(paused_thread())));

    let (op, outs) = h.submit();
    let read = one_http(&outs);
    assert_get(&read);
    // Meanwhile the stopped POST landed: the pause is over, its decisions on record.
    let mut after = paused_thread();
    after.pop();
    after.push(pause_two_decided());
    after.push(assistant("msg_5", "Done."));
    let outs = h.respond(read.id, thread(after));
    no_http(&outs);
    assert_eq!(
        done(&outs, op),
        Ok(()),
        "acknowledged, not sent a second time"
    );
}

#[test]
fn a_read_first_submission_settled_without_a_post_keeps_an_earlier_stopped_posts_doubt() {
    // A decision POST is stopped after it went out ({A, B}: it may still land). The quiet read
    // shows the pause unchanged, so the doubt stays. The person takes B back and submits A: that
    // submission reads first, finds A recorded (another tab submitted A alone) and sends nothing.
    // B is still on the stopped POST's way, so the person's next submission must read first too:
    // had the stopped POST landed meanwhile, the run would be at a new pause whose calls reuse
    // the callIds, and a blind POST would decide them.
    let mut h = H::paused();
    h.approve("call_A");
    h.reject("call_B", Some("no"));
    let (_, outs) = h.submit();
    assert!(one_http(&outs).body.is_some());
    h.c.abort();
    let sync = one_http(&h.drain());
    assert_get(&sync);
    no_http(&h.respond(sync.id, thread(paused_thread())));

    h.c.clear("call_B").expect("clear");
    h.drain();
    let (op, outs) = h.submit();
    let read = one_http(&outs);
    assert_get(&read);
    let mut a_only = pause_two();
    a_only["tools"][0]["approval"] = json!("approved");
    let outs = h.respond(
        read.id,
        thread(vec![user("msg_1", "Delete old logs"), a_only]),
    );
    no_http(&outs);
    assert_eq!(done(&outs, op), Ok(()), "A is on record: nothing to send");

    // The stopped POST lands now: B rejected, the run moves on to calls that reuse the callIds.
    h.reject("call_B", Some("no"));
    let (op, outs) = h.submit();
    let check = one_http(&outs);
    assert_get(&check);
    let mut answered = pause_two_decided();
    answered["tools"][1]["approval"] = json!("rejected");
    answered["tools"][1]["rejectReason"] = json!("no");
    let outs = h.respond(
        check.id,
        thread(vec![
            user("msg_1", "Delete old logs"),
            answered,
            tool_result("msg_3", vec![]),
            tool_call(
                "msg_4",
                vec![
                    tool("call_A", "drop_database", Some("pending"), None),
                    tool("call_B", "email_everyone", Some("pending"), None),
                ],
            ),
        ]),
    );
    no_http(&outs);
    assert_eq!(h.c.poll_timeout(), None, "nothing to send later");
    assert_eq!(
        done(&outs, op),
        Ok(()),
        "the stopped POST had landed: acknowledged"
    );
    let s = h.c.snapshot();
    assert!(s.decisions.is_empty(), "{:?}", s.decisions);
    assert_eq!(s.suspension.as_ref().map(|x| x.undecided.len()), Some(2));
}

#[test]
fn a_submission_checked_first_sends_the_decisions_the_thread_now_records() {
    // The tail records A approved (an earlier partial submission); the person rejects B and
    // submits {A: approve (restated), B}, then stops it after it went out. Another tab then
    // revises A to rejected (decisions are revisable until the set is whole). The next
    // submission reads first and finds A rejected: what it sends restates A as the thread now
    // records it, not as it was before the read (which would run the tool the other tab's person
    // turned down).
    let mut a_approved = pause_two();
    a_approved["tools"][0]["approval"] = json!("approved");
    let mut h = H::loaded(vec![user("msg_1", "Delete old logs"), a_approved]);
    h.reject("call_B", Some("no"));
    let (_, outs) = h.submit();
    assert_post(
        &one_http(&outs),
        r#"{"decisions":{"call_A":"approve","call_B":["reject","no"]}}"#,
    );
    h.c.abort();
    let sync = one_http(&h.drain());
    assert_get(&sync);
    let mut a_approved = pause_two();
    a_approved["tools"][0]["approval"] = json!("approved");
    no_http(&h.respond(
        sync.id,
        thread(vec![user("msg_1", "Delete old logs"), a_approved]),
    ));

    let (_, outs) = h.submit();
    let read = one_http(&outs);
    assert_get(&read);
    let mut a_revised = pause_two();
    a_revised["tools"][0]["approval"] = json!("rejected");
    a_revised["tools"][0]["rejectReason"] = json!("changed my mind");
    let outs = h.respond(
        read.id,
        thread(vec![user("msg_1", "Delete old logs"), a_revised]),
    );
    assert_post(
        &one_http(&outs),
        r#"{"decisions":{"call_A":["reject","changed my mind"],"call_B":["reject","no"]}}"#,
    );
}

#[test]
fn a_tab_whose_catch_up_failed_answers_the_stale_record_once_a_load_succeeds() {
    // B shows the run completed. A tab still on the pause, which is over, writes its record: B
    // catches up with a quiet reload, which fails for good (offline), and writes nothing then (see
    // `a_tab_whose_catch_up_reload_fails_writes_nothing_back`). Back online, the person's load
    // shows the run completed: B removes the record, or the tabs that hold it stay on a pause
    // that is over, none of them ever told.
    let done_thread = || {
        vec![
            user("msg_1", "Delete old logs"),
            pause_two_decided(),
            tool_result("msg_3", vec![]),
            assistant("msg_4", "Done."),
        ]
    };
    let mut b = H::loaded(done_thread());
    let outs = b.tab_wrote(&stored_for("msg_2", json!({"call_A": "approve"})));
    assert_eq!(persists(&outs), vec![]);
    let mut sync = one_http(&outs);
    loop {
        let outs = b.fail(sync.id, TransportError::Network("offline".into()));
        assert_eq!(persists(&outs), vec![], "{outs:?}");
        if !b.c.snapshot().syncing {
            break;
        }
        let outs = b.at(b.now + 120_000);
        assert_eq!(persists(&outs), vec![]);
        sync = one_http(&outs);
    }
    assert_eq!(b.error_code(), Some("network"));

    let (op, outs) = b.load();
    let get = one_http(&outs);
    let outs = b.respond(get.id, thread(done_thread()));
    assert_eq!(done(&outs, op), Ok(()));
    assert!(b.c.snapshot().suspension.is_none());
    assert_eq!(persists(&outs), vec![None], "the stale record removed");
}

#[test]
fn a_tab_never_loaded_reads_the_thread_after_its_submission_and_removes_the_record() {
    // Its first load failed (offline): the person sends, the reply shows the pause, and the quiet
    // read that should follow is preempted by the person's submission. Storage events meanwhile
    // are held as before a first load (nothing written). The submission completes the run: the
    // tab must read the thread (it never has), take in what it held, and remove the record, or
    // the other tabs, whose record it is, stay on a pause that is over.
    let mut c = config();
    c.reload_after_post = false;
    let mut h = H::with(c);
    let (_, outs) = h.send("Delete old logs");
    let post = one_http(&outs);
    let outs = h.respond(post.id, reply("awaiting_approval", pause_two()));
    let sync = one_http(&outs);
    assert_get(&sync);
    assert_eq!(h.phase(), Phase::AwaitingApproval);
    h.approve("call_A");
    let outs = h.tab_wrote(&stored_for(
        "msg_2",
        json!({"call_A": "approve", "call_B": "approve"}),
    ));
    no_http(&outs);
    h.approve("call_B");
    let (op, outs) = h.submit();
    assert!(outs.contains(&Output::Cancel(sync.id)), "{outs:?}");
    let post = one_http(&outs);
    assert_post(
        &post,
        r#"{"decisions":{"call_A":"approve","call_B":"approve"}}"#,
    );
    let outs = h.respond(post.id, reply("completed", assistant("msg_4", "Done.")));
    assert_eq!(done(&outs, op), Ok(()));
    let read = one_http(&outs);
    assert_get(&read);
    let outs = h.respond(
        read.id,
        thread(vec![
            user("msg_1", "Delete old logs"),
            pause_two_decided(),
            tool_result("msg_3", vec![]),
            assistant("msg_4", "Done."),
        ]),
    );
    assert!(h.c.snapshot().loaded);
    assert_eq!(
        persists(&outs),
        vec![None],
        "the record of the pause that is over removed"
    );
}

/// Neuron's Gemini provider gives each call the tool's name as its callId, so two calls of one
/// tool in a step share it, and Neuron keys the decisions by callId: one decision answers both.
/// The cards are one per call, each with its own inputs; a decision shows on both (what the
/// server will do); the payload names the callId once; the stored drafts come back on both after
/// a reload.
#[test]
fn two_calls_under_one_call_id_are_two_cards_answered_by_one_decision() {
    let twin = |path: &str| {
        let mut t = tool(
            "delete_file",
            "delete_file",
            Some("pending"),
            Some("irreversible"),
        );
        t["inputs"] = json!({"path": path});
        t
    };
    let msgs = || {
        vec![
            user("msg_1", "delete /a and /b"),
            tool_call(
                "msg_2",
                vec![
                    twin("/a"),
                    twin("/b"),
                    tool("call_B", "send_email", Some("pending"), None),
                ],
            ),
        ]
    };
    let mut h = H::loaded(msgs());
    let s = h.c.snapshot();
    let sus = s.suspension.as_ref().expect("paused");
    let cards: Vec<_> = sus
        .tools
        .iter()
        .map(|t| (t.call_id.as_str(), t.inputs.to_json_string()))
        .collect();
    assert_eq!(
        cards,
        vec![
            ("delete_file", r#"{"path":"/a"}"#.to_owned()),
            ("delete_file", r#"{"path":"/b"}"#.to_owned()),
            ("call_B", r#"{"path":"/tmp/x"}"#.to_owned()),
        ]
    );
    let outs = h.approve("delete_file");
    let stored = persists(&outs).pop().flatten().expect("drafts stored");
    let s = h.c.snapshot();
    let sus = s.suspension.as_ref().expect("paused");
    let states: Vec<_> = sus.tools.iter().map(|t| (t.approval, t.draft)).collect();
    assert_eq!(
        states,
        vec![
            (toolgate::approval::Approval::Approved, true),
            (toolgate::approval::Approval::Approved, true),
            (toolgate::approval::Approval::Pending, false)
        ]
    );
    assert_eq!(sus.undecided, vec!["call_B".to_owned()]);
    assert!(!sus.complete);

    // A reload with the stored drafts: both twins approved again.
    let (r, _) = H::restored(&stored, msgs());
    let s = r.c.snapshot();
    let states: Vec<_> = s
        .suspension
        .as_ref()
        .expect("paused")
        .tools
        .iter()
        .map(|t| t.approval)
        .collect();
    assert_eq!(
        states,
        vec![
            toolgate::approval::Approval::Approved,
            toolgate::approval::Approval::Approved,
            toolgate::approval::Approval::Pending
        ]
    );

    h.reject("call_B", Some("no mail"));
    // Calls keyed by the tool's name: the thread is read first (the pause could be another one by
    // now, under the same callIds), then the decisions go.
    let (_, outs) = h.submit();
    let get = one_http(&outs);
    assert_eq!(get.method, Method::Get);
    let outs = h.respond(get.id, thread(msgs()));
    let post = one_http(&outs);
    assert_post(
        &post,
        r#"{"decisions":{"delete_file":"approve","call_B":["reject","no mail"]}}"#,
    );
}

/// "Always allow" approved the call, its automatic submission failed, and the person cleared the
/// approval ("Undo"): after a reload (a new client, the tool allowed again as the demo does from
/// `sessionStorage`) the call stays undecided and nothing is sent. The record lists the calls the
/// rule approved, and the rule approves each call once. (It approved it again and, alone on the
/// pause, submitted it without the person.)
#[test]
fn a_cleared_approval_of_an_allowed_tool_stays_cleared_after_a_reload() {
    let (mut h, sub) = H::lone_call_allowed();
    no_http(&h.respond(sub.id, status(422, json!({"error": "nope"}))));
    assert_eq!(h.phase(), Phase::Error);
    h.c.clear("call_A").expect("clear");
    let record = written(&h.drain()).expect("the record, the draft cleared");
    let lone = || {
        vec![
            user("msg_1", "Delete old logs"),
            tool_call(
                "msg_2",
                vec![tool("call_A", "delete_file", Some("pending"), None)],
            ),
        ]
    };
    let mut h = H::new();
    h.c.restore_drafts(&record);
    h.drain();
    h.allow("delete_file", true);
    let (op, outs) = h.load();
    let g = one_http(&outs);
    let outs = h.respond(g.id, thread(lone()));
    assert_eq!(done(&outs, op), Ok(()));
    assert!(
        !https(&outs).iter().any(|r| r.method == Method::Post),
        "nothing sent: {outs:?}"
    );
    let s = h.c.snapshot();
    assert_eq!(s.phase, Phase::AwaitingApproval);
    assert_eq!(s.decisions.get("call_A"), None);
    // A tab that never had the record approves the call by the rule, as before.
    let mut fresh = H::loaded(lone());
    let outs = fresh.allow("delete_file", true);
    assert_post(&one_http(&outs), r#"{"decisions":{"call_A":"approve"}}"#);
}

/// A server that keys calls by the tool's name (neuron-ai's Gemini provider: callId = the name)
/// gives the next pause on the same tool the same callId: decisions made on a stale view (another
/// device answered the pause, and the run paused again on another call of the tool) would land on
/// the new call, which nobody here saw. A submission to such a pause reads the thread first, and
/// goes only to the pause decided. (It went straight out, and deleted what the other device
/// asked about.)
#[test]
fn decisions_on_calls_keyed_by_tool_name_go_after_a_read_of_the_thread() {
    let pause = |id: &str, path: &str| {
        let mut t = tool("delete_file", "delete_file", Some("pending"), None);
        t["inputs"] = json!({"path": path});
        tool_call(id, vec![t])
    };
    let first = || vec![user("msg_1", "delete /tmp/a"), pause("msg_2", "/tmp/a")];
    // Paused again elsewhere, on another call of the tool.
    let mut h = H::loaded(first());
    h.approve("delete_file");
    let (op, outs) = h.submit();
    let get = one_http(&outs);
    assert_eq!(get.method, Method::Get, "the thread read first");
    let mut answered = pause("msg_2", "/tmp/a");
    answered["tools"][0]["approval"] = json!("rejected");
    let moved = vec![
        user("msg_1", "delete /tmp/a"),
        answered,
        user("msg_3", "delete /srv/db"),
        pause("msg_4", "/srv/db"),
    ];
    let outs = h.respond(get.id, thread(moved));
    assert!(
        !https(&outs).iter().any(|r| r.method == Method::Post),
        "nothing sent to the new call: {outs:?}"
    );
    assert_eq!(done(&outs, op), Err(ErrorCode::Conflict));
    let s = h.c.snapshot();
    assert_eq!(s.decisions.get("delete_file"), None);
    assert_eq!(
        s.suspension.as_ref().expect("paused").undecided,
        vec!["delete_file".to_owned()]
    );
    // The same pause still there: sent after the read.
    let mut h = H::loaded(first());
    h.approve("delete_file");
    let (_, outs) = h.submit();
    let get = one_http(&outs);
    let outs = h.respond(get.id, thread(first()));
    assert_post(
        &one_http(&outs),
        r#"{"decisions":{"delete_file":"approve"}}"#,
    );
}
