//! The sans-IO client, both dialects, driven by an arbitrary sequence of commands (load, send,
//! approve, reject, clear, submit, rejectAllAndSend, abort, restore, allowTool) and inputs (replies
//! with any status and a canned, garbled or random body, streams split anywhere or cut mid-way, network
//! failures, timeouts, stale replies, the clock). After every step:
//!
//! - `check_invariants()` is `Ok` (the machine's own ledger; among it, the message views
//!   `take_unchanged_messages()` counts as unchanged are the ones it saw);
//! - no request is issued while another is still in flight (not answered and not cancelled);
//! - a decision POST is never empty, carries only exact wire forms, only callIds that the UI showed
//!   as gated on the current tail, and only decisions the user made (or the tail already records);
//!   a Sidenet continuation only for a call shown pending on that run, with the user's decision;
//! - a decision the user just made is held as a draft (unless it fired autoSubmit);
//! - the snapshot serializes; nothing panics.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use toolgate::approval::Approval;
use toolgate::client::{
    Client, Config, HttpRequest, HttpResponse, Method, Output, RequestId, Snapshot, Transport,
    TransportError,
};
use toolgate::decisions::Decision;
use toolgate::json::ToJson;

const CALLS: [&str; 4] = ["call_A", "call_B", "call_C", "call_\"é\""];
const REASONS: [&str; 5] = [
    "",
    "   ",
    "not now",
    "No ✓ \"quoted\" \\ <b>x</b>",
    "\u{1F600}",
];
const TEXTS: [&str; 4] = ["hello", "  ", "日本語 \"q\"", "<script>alert(1)</script>"];

fn call(n: u8) -> &'static str {
    CALLS[usize::from(n) % CALLS.len()]
}

fn reason(n: Option<u8>) -> Option<&'static str> {
    n.map(|n| REASONS[usize::from(n) % REASONS.len()])
}

// ------------------------------------------------------------------------------------------------
// Canned bodies

#[derive(Debug, Arbitrary)]
enum ToolState {
    Absent,
    Pending,
    Approved,
    Rejected(Option<u8>),
}

#[derive(Debug, Arbitrary)]
enum Tail {
    Text,
    ToolCall {
        id: Option<u8>,
        tools: Vec<(u8, ToolState)>,
    },
    ToolResult(Vec<u8>),
}

#[derive(Debug, Arbitrary)]
enum ChunkSpec {
    Start(u8),
    Text,
    ToolInput(u8),
    Approval { call: u8, run: u8 },
    DataRun(u8),
    /// `tool-approval-request`; `true`: an automatic one (decided by the server's policy).
    ApprovalRequest(u8, bool),
    OutputAvailable(u8),
    OutputDenied(u8),
    OutputError(u8),
    Finish,
    Error,
    Garbage,
}

#[derive(Debug, Arbitrary)]
enum PartState {
    Requested,
    Responded(bool),
    Available,
    Denied,
    Called,
}

#[derive(Debug, Arbitrary)]
enum Canned {
    /// Neuron: `{id, messages}`.
    Thread {
        user: bool,
        tail: Tail,
    },
    /// Neuron: `{status, message}`.
    Chat {
        status: u8,
        tail: Tail,
    },
    /// Neuron: `{status: "conflict", error}`.
    ConflictBody,
    /// Sidenet: an event stream.
    Stream {
        chunks: Vec<ChunkSpec>,
        done: bool,
        crlf: bool,
    },
    /// Sidenet: `{id, messages}` of UI messages.
    History(Vec<(u8, PartState)>),
    /// Sidenet collect: `{chunks, finishReason}`.
    Collected {
        chunks: Vec<ChunkSpec>,
        finished: bool,
    },
    Empty,
}

fn tail_json(tail: &Tail) -> Value {
    match tail {
        Tail::Text => json!({"__id": "m_text", "role": "assistant", "content": "done"}),
        Tail::ToolCall { id, tools } => {
            let tools: Vec<Value> = tools
                .iter()
                .take(6)
                .map(|(c, st)| {
                    let mut t = json!({"callId": call(*c), "name": "tool", "inputs": {"k": 1}});
                    match st {
                        ToolState::Absent => {}
                        ToolState::Pending => t["approval"] = json!("pending"),
                        ToolState::Approved => t["approval"] = json!("approved"),
                        ToolState::Rejected(r) => {
                            t["approval"] = json!("rejected");
                            t["rejectReason"] = json!(reason(*r));
                        }
                    }
                    t
                })
                .collect();
            let mut m =
                json!({"role": "assistant", "content": [], "type": "tool_call", "tools": tools});
            if let Some(id) = id {
                m["__id"] = json!(format!("m{}", id % 4));
            }
            m
        }
        Tail::ToolResult(calls) => {
            let tools: Vec<Value> = calls
                .iter()
                .take(4)
                .map(|c| json!({"callId": call(*c), "name": "tool", "result": "ok"}))
                .collect();
            json!({"role": "tool", "type": "tool_call_result", "tools": tools})
        }
    }
}

fn chunk_json(c: &ChunkSpec) -> Vec<Value> {
    match c {
        ChunkSpec::Start(n) => vec![json!({"type": "start", "messageId": format!("a{}", n % 4)})],
        ChunkSpec::Text => vec![
            json!({"type": "text-start", "id": "t"}),
            json!({"type": "text-delta", "id": "t", "delta": "Hel\"lo"}),
            json!({"type": "text-end", "id": "t"}),
        ],
        ChunkSpec::ToolInput(n) => vec![
            json!({"type": "tool-input-available", "toolCallId": call(*n), "toolName": "tool", "input": {"k": 1}}),
        ],
        ChunkSpec::Approval { call: n, run } => vec![json!({
            "type": "data-tool-call-approval",
            "data": {"runId": format!("run_{}", run % 3), "toolCallId": call(*n), "toolName": "tool",
                     "reason": "why", "args": {"k": 1}, "agentVersionId": "agv", "threadId": "t1"}
        })],
        ChunkSpec::DataRun(run) => vec![
            json!({"type": "data-run", "data": {"runId": format!("run_{}", run % 3), "agentVersionId": "agv"}}),
        ],
        ChunkSpec::ApprovalRequest(n, auto) => vec![
            json!({"type": "tool-approval-request", "approvalId": format!("ap_{}", call(*n)), "toolCallId": call(*n), "isAutomatic": auto}),
        ],
        ChunkSpec::OutputAvailable(n) => {
            vec![json!({"type": "tool-output-available", "toolCallId": call(*n), "output": "ok"})]
        }
        ChunkSpec::OutputDenied(n) => {
            vec![json!({"type": "tool-output-denied", "toolCallId": call(*n)})]
        }
        ChunkSpec::OutputError(n) => {
            vec![json!({"type": "tool-output-error", "toolCallId": call(*n), "errorText": "x"})]
        }
        ChunkSpec::Finish => vec![
            json!({"type": "finish-step"}),
            json!({"type": "finish", "finishReason": "stop"}),
        ],
        ChunkSpec::Error => vec![json!({"type": "error", "errorText": "boom"})],
        ChunkSpec::Garbage => vec![json!("{not json")],
    }
}

fn canned_bytes(c: &Canned) -> Vec<u8> {
    let v = match c {
        Canned::Thread { user, tail } => {
            let mut messages = Vec::new();
            if *user {
                messages.push(json!({"__id": "u1", "role": "user", "content": "hi"}));
            }
            messages.push(tail_json(tail));
            json!({"id": "t1", "messages": messages})
        }
        Canned::Chat { status, tail } => {
            let s = ["awaiting_approval", "completed", "weird"][usize::from(*status) % 3];
            json!({"status": s, "message": tail_json(tail)})
        }
        Canned::ConflictBody => json!({"status": "conflict", "error": "a decision is pending"}),
        Canned::Stream { chunks, done, crlf } => {
            let nl = if *crlf { "\r\n" } else { "\n" };
            let mut out = format!(": keep-alive{nl}{nl}");
            for c in chunks.iter().take(24) {
                for v in chunk_json(c) {
                    let text = match &v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    out.push_str(&format!("data: {text}{nl}{nl}"));
                }
            }
            if *done {
                out.push_str(&format!("data: [DONE]{nl}{nl}"));
            }
            return out.into_bytes();
        }
        Canned::History(parts) => {
            let parts: Vec<Value> = parts
                .iter()
                .take(6)
                .map(|(n, st)| {
                    let mut p =
                        json!({"type": "tool-tool", "toolCallId": call(*n), "input": {"k": 1}});
                    match st {
                        PartState::Requested => p["state"] = json!("approval-requested"),
                        PartState::Responded(a) => {
                            p["state"] = json!("approval-responded");
                            p["approval"] = json!({"id": "ap", "approved": a});
                        }
                        PartState::Available => {
                            p["state"] = json!("output-available");
                            p["output"] = json!("ok");
                        }
                        PartState::Denied => p["state"] = json!("output-denied"),
                        PartState::Called => p["state"] = json!("input-available"),
                    }
                    p
                })
                .collect();
            json!({"id": "t1", "messages": [
                {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
                {"id": "a1", "role": "assistant", "parts": parts},
            ]})
        }
        Canned::Collected { chunks, finished } => {
            let chunks: Vec<Value> = chunks.iter().take(24).flat_map(chunk_json).collect();
            json!({"chunks": chunks, "finishReason": if *finished { json!("stop") } else { Value::Null }})
        }
        Canned::Empty => return Vec::new(),
    };
    v.to_string().into_bytes()
}

#[derive(Debug, Arbitrary)]
enum Body {
    Canned(Canned),
    Garbled {
        canned: Canned,
        cut: u16,
        flip: Option<(u16, u8)>,
    },
    Raw(Vec<u8>),
}

fn body_bytes(b: &Body) -> Vec<u8> {
    match b {
        Body::Canned(c) => canned_bytes(c),
        Body::Garbled { canned, cut, flip } => {
            let mut bytes = canned_bytes(canned);
            if let Some((at, byte)) = flip {
                if !bytes.is_empty() {
                    let i = usize::from(*at) % bytes.len();
                    bytes[i] = *byte;
                }
            }
            let keep = usize::from(*cut) % (bytes.len() + 1);
            bytes.truncate(keep);
            bytes
        }
        Body::Raw(bytes) => bytes.clone(),
    }
}

// ------------------------------------------------------------------------------------------------
// Steps

#[derive(Debug, Arbitrary)]
enum Status {
    Ok,
    Created,
    NoContent,
    BadRequest,
    Unauthorized,
    NotFound,
    Conflict,
    ServerError,
    Unavailable,
    Other(u16),
}

impl Status {
    fn code(&self) -> u16 {
        match self {
            Status::Ok => 200,
            Status::Created => 201,
            Status::NoContent => 204,
            Status::BadRequest => 400,
            Status::Unauthorized => 401,
            Status::NotFound => 404,
            Status::Conflict => 409,
            Status::ServerError => 500,
            Status::Unavailable => 503,
            Status::Other(n) => *n,
        }
    }
}

#[derive(Debug, Arbitrary)]
enum Which {
    Latest,
    Oldest,
    Stale(u8),
}

#[derive(Debug, Arbitrary)]
enum Delivery {
    Whole,
    Streamed { cuts: Vec<u16>, cut_off: bool },
}

#[derive(Debug, Arbitrary)]
enum Failure {
    Network,
    Timeout,
    Aborted,
}

#[derive(Debug, Arbitrary)]
enum Step {
    Load,
    Send(u8),
    Approve(u8),
    Reject(u8, Option<u8>),
    Clear(u8),
    Submit,
    RejectAllAndSend(u8, Option<u8>),
    Abort,
    RestoreLast,
    RestoreRaw(String),
    Reply {
        which: Which,
        status: Status,
        body: Body,
        delivery: Delivery,
    },
    Fail {
        which: Which,
        failure: Failure,
    },
    Tick(u16),
    FireTimer,
    /// A well-formed answer fitting the request (so that pauses and submissions are reached).
    Answer {
        which: Which,
        kind: AnswerKind,
        delivery: Delivery,
    },
    /// Approve (or reject) every call the UI shows pending.
    DecideAll {
        approve: bool,
        reason: Option<u8>,
    },
    /// `allowTool("tool")` (every gated call of the fuzz threads is named `tool`) or its undoing.
    Allow(bool),
}

#[derive(Debug, Arbitrary)]
enum AnswerKind {
    Paused {
        first: u8,
        more: Vec<(u8, ToolState)>,
        run: u8,
    },
    Completed,
    Conflict,
    ServerError,
}

#[derive(Debug, Arbitrary)]
struct Input {
    sidenet: bool,
    collect: bool,
    auto_submit: bool,
    reload_after_post: bool,
    pinned_version: bool,
    steps: Vec<Step>,
}

/// A well-formed answer for `req`: its status and body.
fn answer(req: &HttpRequest, kind: &AnswerKind) -> (u16, Canned) {
    let (first, more, run) = match kind {
        AnswerKind::Conflict => return (409, Canned::ConflictBody),
        AnswerKind::ServerError => return (500, Canned::Empty),
        AnswerKind::Completed => (None, &[][..], 0),
        AnswerKind::Paused { first, more, run } => (Some(*first), &more[..], *run),
    };
    let tools: Vec<(u8, ToolState)> = first
        .into_iter()
        .map(|f| (f, ToolState::Pending))
        .chain(more.iter().take(3).map(|(c, st)| {
            let st = match st {
                ToolState::Absent => ToolState::Absent,
                ToolState::Pending => ToolState::Pending,
                ToolState::Approved => ToolState::Approved,
                ToolState::Rejected(r) => ToolState::Rejected(*r),
            };
            (*c, st)
        }))
        .collect();
    let paused = first.is_some();
    let url = req.url.as_str();
    let body: Value = req
        .body
        .as_deref()
        .and_then(|b| serde_json::from_str(b).ok())
        .unwrap_or(Value::Null);
    if url.contains("/v1/") {
        let pending: Vec<u8> = tools
            .iter()
            .filter(|(_, st)| matches!(st, ToolState::Pending))
            .map(|(c, _)| *c)
            .collect();
        if url.contains("/v1/threads/") {
            let parts = tools
                .iter()
                .map(|(c, st)| {
                    let ps = match st {
                        ToolState::Pending if paused => PartState::Requested,
                        ToolState::Approved => PartState::Available,
                        ToolState::Rejected(_) => PartState::Denied,
                        _ => PartState::Called,
                    };
                    (*c, ps)
                })
                .collect();
            return (200, Canned::History(parts));
        }
        let mut chunks = Vec::new();
        if url.contains("/v1/chat/stream") {
            if !paused {
                return (204, Canned::Empty);
            }
        } else {
            if let Some(a) = body.get("approval") {
                let id = a.get("toolCallId").and_then(Value::as_str).unwrap_or("");
                let n = CALLS.iter().position(|c| *c == id).unwrap_or(0) as u8;
                if a.get("approved") == Some(&Value::Bool(true)) {
                    chunks.push(ChunkSpec::OutputAvailable(n));
                } else {
                    chunks.push(ChunkSpec::OutputDenied(n));
                }
            } else {
                chunks.push(ChunkSpec::Start(run));
            }
            if paused {
                for c in &pending {
                    chunks.push(ChunkSpec::ToolInput(*c));
                }
            } else {
                chunks.push(ChunkSpec::Text);
                chunks.push(ChunkSpec::Finish);
            }
        }
        for c in &pending {
            chunks.push(ChunkSpec::Approval { call: *c, run });
        }
        if url.contains("/run") {
            return (
                200,
                Canned::Collected {
                    chunks,
                    finished: !paused,
                },
            );
        }
        return (
            200,
            Canned::Stream {
                chunks,
                done: true,
                crlf: run % 2 == 1,
            },
        );
    }
    let tail = if paused {
        Tail::ToolCall {
            id: Some(run),
            tools,
        }
    } else {
        Tail::Text
    };
    if req.method == Method::Get {
        (200, Canned::Thread { user: true, tail })
    } else {
        (
            200,
            Canned::Chat {
                status: u8::from(!paused),
                tail,
            },
        )
    }
}

// ------------------------------------------------------------------------------------------------
// The harness

struct Harness {
    client: Client,
    now: u64,
    /// Issued and neither answered nor cancelled.
    open: Vec<HttpRequest>,
    /// Every id ever issued (for stale replies).
    issued: Vec<RequestId>,
    /// Every decision the user made (approve / reject / rejectAllAndSend's rejections).
    made: Vec<(String, Decision)>,
    persisted: Option<String>,
    sidenet: bool,
}

/// The gated calls the UI shows on the tail, with what the server records for each.
fn shown(s: &Snapshot) -> Vec<(String, Approval, Option<String>, Option<String>)> {
    s.suspension
        .iter()
        .flat_map(|v| {
            v.tools.iter().map(|t| {
                (
                    t.call_id.clone(),
                    t.server_approval,
                    t.server_reject_reason.clone(),
                    v.run_id.clone(),
                )
            })
        })
        .collect()
}

/// The calls the server shows pending on the pause (drafted or not: `pending` in the view lists
/// only the undecided ones), with their run.
fn pending_shown(s: &Snapshot) -> Vec<(String, Option<String>)> {
    s.suspension
        .iter()
        .flat_map(|v| {
            v.tools
                .iter()
                .filter(|t| t.server_approval == Approval::Pending)
                // A card's own run (a stream may mix runs), else the pause's.
                .map(|t| {
                    (
                        t.call_id.clone(),
                        t.run_id.clone().or_else(|| v.run_id.clone()),
                    )
                })
        })
        .collect()
}

impl Harness {
    fn step_checks(&mut self, before: &Snapshot) {
        let after = self.client.snapshot().clone();
        let mut outputs = Vec::new();
        while let Some(o) = self.client.poll_output() {
            outputs.push(o);
        }
        let changed = outputs
            .iter()
            .filter(|o| matches!(o, Output::Changed))
            .count();
        assert!(changed <= 1, "more than one Changed in a step");
        // Approvals of an allowed tool are the person's (given ahead by `allowTool`): the core's
        // audit checks they are made only for allowed tools, once per call.
        if after.allowed_tools.iter().any(|n| n == "tool") {
            for (id, d) in &after.decisions.0 {
                if *d == Decision::Approve && !self.user_made(id, d) {
                    self.made.push((id.clone(), d.clone()));
                }
            }
        }
        if changed == 1 {
            assert!(
                matches!(outputs.last(), Some(Output::Changed)),
                "Changed must be last"
            );
        }
        for o in outputs {
            match o {
                Output::Http(req) => {
                    assert!(
                        self.open.is_empty(),
                        "request {:?} issued while {:?} still in flight",
                        req.id,
                        self.open.iter().map(|r| r.id).collect::<Vec<_>>()
                    );
                    self.check_request(&req, before, &after);
                    self.issued.push(req.id);
                    self.open.push(req);
                }
                Output::Cancel(id) => self.open.retain(|r| r.id != id),
                Output::Persist { value, .. } => self.persisted = value,
                Output::Done { .. } | Output::Changed => {}
            }
        }
        if let Err(v) = self.client.check_invariants() {
            panic!("invariant violated: {v}");
        }
        // As the driver does when the messages change (here at two changes in three, so that
        // changes also add up over steps): the invariants hold the views it counts as unchanged
        // to the ones it saw.
        if self.client.snapshot().messages_version % 3 != 1 {
            self.client.take_unchanged_messages();
        }
        let full = self.client.snapshot().to_json_string();
        serde_json::from_str::<Value>(&full).expect("the snapshot serializes to valid JSON");
        let head = self.client.snapshot().head().to_json_string();
        serde_json::from_str::<Value>(&head).expect("the snapshot head serializes to valid JSON");
        if self.client.poll_timeout().is_some() {
            assert!(
                self.open.is_empty(),
                "a timer is armed while a request is in flight"
            );
        }
        // As the driver does: storage read again when the core asks (here storage holds what
        // this client wrote last, the single-tab case: its own record must never bring back
        // drafts the server has acknowledged), in a step of its own.
        if self.client.take_missed_restore() {
            let before = self.client.snapshot().clone();
            let stored = self.persisted.clone().unwrap_or_default();
            self.client.restore_drafts(&stored);
            self.step_checks(&before);
        }
    }

    fn user_made(&self, id: &str, d: &Decision) -> bool {
        self.made.iter().any(|(i, m)| i == id && m == d)
    }

    fn check_request(&self, req: &HttpRequest, before: &Snapshot, after: &Snapshot) {
        if std::env::var_os("FUZZ_TRACE").is_some() {
            eprintln!(
                "REQ {} {} {}",
                req.method.as_str(),
                req.url,
                req.body.as_deref().unwrap_or("")
            );
        }
        let Some(body) = &req.body else {
            assert_eq!(req.method, Method::Get);
            return;
        };
        assert_eq!(req.method, Method::Post);
        let v: Value = serde_json::from_str(body).expect("request bodies are JSON");
        let mut gated = shown(before);
        gated.extend(shown(after));
        if !self.sidenet {
            if let Some(decisions) = v.get("decisions") {
                assert!(v.get("message").is_none(), "message and decisions together");
                let map = decisions.as_object().expect("decisions is an object");
                assert!(!map.is_empty(), "an empty decision map was sent");
                for (id, wire) in map {
                    let ours = toolgate::json::Value::parse(&wire.to_string()).expect("valid JSON");
                    let d = Decision::from_wire(&ours).expect("exact wire form");
                    assert_eq!(d.to_wire(), ours, "wire form not canonical");
                    let on_tail: Vec<_> = gated.iter().filter(|g| g.0 == *id).collect();
                    assert!(!on_tail.is_empty(), "callId {id:?} not gated on the tail");
                    let recorded = on_tail.iter().any(|(_, a, r, _)| match (a, &d) {
                        (Approval::Approved, Decision::Approve) => true,
                        (Approval::Rejected, Decision::Reject(_)) => {
                            Decision::reject(r.as_deref()) == d
                        }
                        _ => false,
                    });
                    assert!(
                        recorded || self.user_made(id, &d),
                        "decision {d:?} for {id:?} that the user never made"
                    );
                }
            } else {
                let text = v.get("message").and_then(Value::as_str);
                assert!(
                    text.is_some_and(|t| !t.trim().is_empty()),
                    "a POST with neither"
                );
            }
        } else if let Some(approval) = v.get("approval") {
            let run = approval
                .get("runId")
                .and_then(Value::as_str)
                .expect("runId");
            let id = approval
                .get("toolCallId")
                .and_then(Value::as_str)
                .expect("toolCallId");
            let approved = approval
                .get("approved")
                .and_then(Value::as_bool)
                .expect("approved");
            assert_eq!(
                v.get("messages"),
                Some(&json!([])),
                "a continuation carries no message"
            );
            let mut pending = pending_shown(before);
            pending.extend(pending_shown(after));
            assert!(
                pending
                    .iter()
                    .any(|(c, r)| c == id && r.as_deref() == Some(run)),
                "continuation for {id:?} on {run:?}, not shown pending on that run"
            );
            let ok = self.made.iter().any(|(i, d)| {
                i == id
                    && matches!(
                        (d, approved),
                        (Decision::Approve, true) | (Decision::Reject(_), false)
                    )
            });
            assert!(
                ok,
                "continuation approved={approved} for {id:?} the user never decided"
            );
        } else {
            let messages = v
                .get("messages")
                .and_then(Value::as_array)
                .expect("messages");
            assert!(
                !messages.is_empty(),
                "a POST with no message and no approval"
            );
            assert!(
                pending_shown(after).is_empty(),
                "a message sent while a pause is shown"
            );
        }
    }

    fn pick(&self, which: &Which) -> Option<RequestId> {
        match which {
            Which::Latest => self.open.last().map(|r| r.id),
            Which::Oldest => self.open.first().map(|r| r.id),
            Which::Stale(n) => {
                if self.issued.is_empty() {
                    Some(RequestId(u64::from(*n)))
                } else {
                    self.issued
                        .get(usize::from(*n) % self.issued.len())
                        .copied()
                }
            }
        }
    }

    fn run(&mut self, step: &Step) {
        let before = self.client.snapshot().clone();
        if std::env::var_os("FUZZ_TRACE").is_some() {
            let susp = before.suspension.as_ref().map(|v| {
                (
                    v.run_id.clone(),
                    v.pending
                        .iter()
                        .map(|t| t.call_id.clone())
                        .collect::<Vec<_>>(),
                )
            });
            eprintln!(
                "STEP {step:?}\n  phase {:?} pause {susp:?} drafts {:?}",
                before.phase, before.decisions
            );
        }
        let now = self.now;
        match step {
            Step::Load => {
                let _ = self.client.load(now);
            }
            Step::Send(t) => {
                let _ = self.client.send(now, TEXTS[usize::from(*t) % TEXTS.len()]);
            }
            Step::Approve(c) => {
                let id = call(*c);
                let r = self.client.approve(id);
                if r.is_ok() {
                    self.made.push((id.to_owned(), Decision::Approve));
                }
                if let Ok(None) = r {
                    assert_eq!(
                        self.client.snapshot().decisions.get(id),
                        Some(&Decision::Approve),
                        "an approval is not held"
                    );
                }
            }
            Step::Reject(c, r) => {
                let id = call(*c);
                let d = Decision::reject(reason(*r));
                let res = self.client.reject(id, reason(*r));
                if res.is_ok() {
                    self.made.push((id.to_owned(), d.clone()));
                }
                if let Ok(None) = res {
                    assert_eq!(
                        self.client.snapshot().decisions.get(id),
                        Some(&d),
                        "a rejection is not held"
                    );
                }
            }
            Step::Clear(c) => {
                let _ = self.client.clear(call(*c));
            }
            Step::Submit => {
                let _ = self.client.submit(now);
            }
            Step::RejectAllAndSend(t, r) => {
                let d = Decision::reject(reason(*r));
                let ids: Vec<String> = shown(&before).into_iter().map(|g| g.0).collect();
                let res = self.client.reject_all_and_send(
                    now,
                    TEXTS[usize::from(*t) % TEXTS.len()],
                    reason(*r),
                );
                if res.is_ok() {
                    for id in ids {
                        self.made.push((id, d.clone()));
                    }
                }
            }
            Step::Abort => self.client.abort(),
            Step::Allow(allow) => {
                let _ = self.client.allow_tool(now, "tool", *allow);
            }
            Step::RestoreLast => {
                if let Some(p) = self.persisted.clone() {
                    self.client.restore_drafts(&p);
                }
            }
            Step::RestoreRaw(s) => self.client.restore_drafts(s),
            Step::Reply {
                which,
                status,
                body,
                delivery,
            } => {
                let Some(id) = self.pick(which) else { return };
                self.deliver(&before, id, status.code(), body_bytes(body), delivery);
            }
            Step::Answer {
                which,
                kind,
                delivery,
            } => {
                let Some(id) = self.pick(which) else { return };
                let Some(req) = self.open.iter().find(|r| r.id == id).cloned() else {
                    return;
                };
                let (code, canned) = answer(&req, kind);
                self.deliver(&before, id, code, canned_bytes(&canned), delivery);
            }
            Step::DecideAll { approve, reason: r } => {
                for (id, _) in pending_shown(&before) {
                    if *approve {
                        if self.client.approve(&id).is_ok() {
                            self.made.push((id, Decision::Approve));
                        }
                    } else if self.client.reject(&id, reason(*r)).is_ok() {
                        self.made.push((id, Decision::reject(reason(*r))));
                    }
                    // Each decision is a step of its own for the driver: drain it.
                    self.step_checks(&before);
                }
            }
            Step::Fail { which, failure } => {
                let Some(id) = self.pick(which) else { return };
                self.open.retain(|r| r.id != id);
                let e = match failure {
                    Failure::Network => TransportError::Network(String::new()),
                    Failure::Timeout => TransportError::Timeout,
                    Failure::Aborted => TransportError::Aborted,
                };
                self.client.handle_failure(now, id, e);
            }
            Step::Tick(ms) => {
                self.now += u64::from(*ms);
                self.client.handle_timeout(self.now);
            }
            Step::FireTimer => {
                if let Some(t) = self.client.poll_timeout() {
                    self.now = self.now.max(t);
                    self.client.handle_timeout(self.now);
                }
            }
        }
        self.step_checks(&before);
    }

    fn deliver(
        &mut self,
        before: &Snapshot,
        id: RequestId,
        code: u16,
        bytes: Vec<u8>,
        delivery: &Delivery,
    ) {
        let now = self.now;
        let streaming = self.open.iter().any(|r| r.id == id && r.streaming);
        self.open.retain(|r| r.id != id);
        {
            {
                match delivery {
                    Delivery::Streamed { cuts, cut_off } if streaming => {
                        self.client.handle_stream_start(now, id, code);
                        self.drain_between(before);
                        let mut points: Vec<usize> = cuts
                            .iter()
                            .take(8)
                            .map(|c| usize::from(*c) % (bytes.len() + 1))
                            .collect();
                        points.sort_unstable();
                        let mut at = 0;
                        for p in points {
                            self.client.handle_stream_chunk(now, id, &bytes[at..p]);
                            self.drain_between(before);
                            at = p;
                        }
                        if *cut_off {
                            self.client.handle_failure(
                                now,
                                id,
                                TransportError::Network("connection reset".into()),
                            );
                        } else {
                            self.client.handle_stream_chunk(now, id, &bytes[at..]);
                            self.drain_between(before);
                            self.client.handle_stream_end(now, id);
                        }
                    }
                    _ => self
                        .client
                        .handle_response(now, id, HttpResponse::new(code, bytes)),
                }
            }
        }
    }

    /// Between the pieces of one streamed answer: the outputs so far, checked like a step's.
    fn drain_between(&mut self, before: &Snapshot) {
        self.step_checks(before);
    }
}

fuzz_target!(|input: Input| {
    let mut config = if input.sidenet {
        let mut c = Config::sidenet("https://api.test", "t1");
        if input.collect {
            c.transport = Transport::Collect;
            c.agent_id = Some("agent_1".to_owned());
        }
        if input.pinned_version {
            c.agent_version_id = Some("agv".to_owned());
        }
        c
    } else {
        Config::new("https://api.test", "t1")
    };
    config.auto_submit = input.auto_submit;
    config.reload_after_post = input.reload_after_post;
    let client = Client::new(config).expect("valid config");
    let mut h = Harness {
        client,
        now: 1_000,
        open: Vec::new(),
        issued: Vec::new(),
        made: Vec::new(),
        persisted: None,
        sidenet: input.sidenet,
    };
    for step in input.steps.iter().take(64) {
        h.run(step);
    }
});
