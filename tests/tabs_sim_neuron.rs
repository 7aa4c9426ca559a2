//! Three tabs of one Neuron thread, each its own `Client` with `persist`, sharing one storage with
//! a browser's semantics (a write that changes the value fires one `storage` event in each other
//! tab, which reads what storage holds when it handles it; the writer gets none), against a
//! scripted Neuron endpoint (a port of `www/server/neuron.mjs`), in random interleavings: a tab
//! sends each message, every tab decides cards (each call the same way whichever tab decides it),
//! takes decisions back and makes them again, submits, loads, stops its request (which the server
//! may take now, never, or, a decision POST, at any later step) and reloads (a new client on the
//! same storage). With stops also: answers lost (the request applied or not), 503s, retries, and
//! storage writes that fail (the key removed, `persist_failed`).
//!
//! Each seed picks a server: history updated in place or append-only (the paused tool_call keeps
//! `pending`, the outcome on the tool_call_result), replies with the message or message-less
//! (`{status, approvals}`), strict, incremental or cumulative decisions, a conflict as 409 or as a
//! 200 `{"status": "conflict"}`, 2 or 3 gated calls on the first pause, an ungated tool beside them,
//! a second pause in the run (1 or 2 calls), one or two turns, and the client's `reloadAfterPost`
//! and `autoSubmit`.
//!
//! Checked: each client's invariants after every step; no second request while one is in flight;
//! no decision reaches the server for a call no person decided, or other than decided, and no
//! malformed or empty payload; a submission made while a decision POST of the same page may still
//! land reads the thread first (README); at the end every turn was sent and its run is over, every
//! gated call ran or was skipped once, as decided (with its reason), and no tab shows a pause.
//! Once the run is over the people stop (but a tab whose own stopped POST may still land submits,
//! a tab showing an error or whose write failed is loaded again): the tabs must come to the end by
//! themselves. `SEED=n` replays one seed with its log (`SHOW=1` prints it when it passes too),
//! `SEEDS=n` (`FIRST=n`) runs more, `STATS=1` counts what they went through; `REUSE=1` makes the
//! server number callIds per step (a newer pause reuses the ids of the one before: a page's
//! decisions sent to a pause that another page's moved on land on the newer calls, which no client
//! can prevent; such landings are counted as `races`, not failures).

use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};

/// The cards a tab showed when it sent a request: callId to signature, and the decision the
/// thread it read records for the call, if any.
type Cards = HashMap<String, (String, Option<Value>)>;

const KEY: &str = "toolgate:drafts:neuron:https://api.test:thread_42";
const BASE: &str = "https://api.test";
const TID: &str = "thread_42";
const THREAD_URL: &str = "https://api.test/threads/thread_42";
const CHAT_URL: &str = "https://api.test/threads/thread_42/chat";
#[path = "support/client.rs"]
mod support;
use support::Invariants;

#[path = "support/tabs.rs"]
#[macro_use]
mod tabs;
use tabs::Rng;
use toolgate::approval::Approval;
use toolgate::client::{
    Client, Config, HttpRequest, HttpResponse, Method, Output, Phase, RequestId, TransportError,
};

// ----------------------------------------------------------------------------------------------
// The server: neuron.mjs's `chat` and `getThread`, on one thread.

#[derive(Clone, Copy, PartialEq, Debug)]
enum History {
    /// Decisions written on the paused tool_call (neuron.mjs's default).
    Update,
    /// The paused tool_call is never changed; outcomes go on the tool_call_result after it.
    AppendOnly,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Strict,
    Incremental,
    Cumulative,
}

#[derive(Clone, Debug)]
struct Variant {
    history: History,
    /// `{status, approvals}` replies, without the message.
    approvals_reply: bool,
    mode: Mode,
    /// A conflict answered as a 200 `{"status": "conflict"}` (the seed's own controller).
    conflict_200: bool,
    /// Gated calls on the first pause (2 or 3).
    gated_first: usize,
    /// An ungated tool beside the gated ones on the first tool_call.
    ungated: bool,
    /// Gated calls on a second pause of the same run (0: none).
    gated_second: usize,
    turns: usize,
    reload_after_post: bool,
    auto_submit: bool,
    /// callIds numbered per step (`call_0`, `call_1`, ...), reused by every later pause.
    reuse_ids: bool,
}

impl Variant {
    fn pick(rng: &mut Rng, reuse_ids: bool) -> Variant {
        Variant {
            history: if rng.one_in(2) {
                History::AppendOnly
            } else {
                History::Update
            },
            approvals_reply: rng.one_in(3),
            mode: [
                Mode::Strict,
                Mode::Strict,
                Mode::Incremental,
                Mode::Cumulative,
            ][rng.below(4)],
            conflict_200: rng.one_in(4),
            gated_first: 2 + rng.below(2),
            ungated: rng.one_in(2),
            gated_second: [0, 0, 1, 2][rng.below(4)],
            turns: 1 + rng.below(2),
            reload_after_post: !rng.one_in(3),
            auto_submit: rng.one_in(4),
            reuse_ids,
        }
    }
}

/// A call of a step: tool name and inputs.
type Spec = (&'static str, Value);

fn turn_text(turn: usize) -> String {
    format!("turn {turn}: delete, email, buy, deploy")
}

/// The run's steps for a turn.
fn plan(v: &Variant, turn: usize) -> Vec<Vec<Spec>> {
    let mut first: Vec<Spec> = vec![
        ("delete_file", json!({"path": format!("/tmp/x{turn}")})),
        (
            "send_email",
            json!({"to": "w@example.com", "subject": format!("turn {turn}")}),
        ),
    ];
    if v.gated_first > 2 {
        first.push((
            "buy_ticket",
            json!({"quantity": 2, "price": 80 + turn, "amount": 2 * (80 + turn)}),
        ));
    }
    if v.ungated {
        first.insert(
            1,
            ("read_file", json!({"path": format!("/etc/motd{turn}")})),
        );
    }
    let mut steps = vec![first];
    if v.gated_second > 0 {
        steps[0].push(("run_tests", json!({"service": format!("api{turn}")})));
        let mut second: Vec<Spec> = vec![(
            "deploy",
            json!({"service": format!("api{turn}"), "environment": "production"}),
        )];
        if v.gated_second > 1 {
            second.push(("delete_file", json!({"path": format!("/tmp/old{turn}")})));
        }
        steps.push(second);
    }
    steps
}

fn policy(name: &str) -> Option<&'static str> {
    match name {
        "delete_file" => Some("Deleting a file is irreversible"),
        "send_email" => Some("Outbound email reaches people outside this workspace"),
        "buy_ticket" => Some("Buying 2 tickets costs more than the 100 limit"),
        "deploy" => Some("Deploying api to production affects live users"),
        _ => None,
    }
}

/// A call as the person sees it on a card: callId, tool and inputs.
fn sig(call_id: &str, name: &str, inputs: &Value) -> String {
    format!("{call_id}|{name}|{inputs}")
}

/// How every tab decides a call (a person's one intent, whichever tab they act in).
fn rejects(signature: &str, seed: u64) -> bool {
    signature
        .bytes()
        .fold(seed, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
        % 3
        == 0
}

fn reason_for(name: &str) -> String {
    format!("not {name}")
}

struct Run {
    steps: Vec<Vec<Spec>>,
    step: usize,
    awaiting: bool,
    /// Append-only history: the decisions held on the run.
    decided: Option<Map<String, Value>>,
    /// Cumulative mode on an updated history: the partial set held aside.
    held: Option<Map<String, Value>>,
}

/// A gated call's outcome once its step ran.
struct Outcome {
    signature: String,
    name: String,
    approved: bool,
    reject_reason: Option<String>,
}

struct Server {
    v: Variant,
    messages: Vec<Value>,
    seq: u64,
    ids: u64,
    run: Option<Run>,
    /// Messages received (turns started).
    received: usize,
    /// Gated calls written (their signatures), in order.
    gated: Vec<String>,
    outcomes: Vec<Outcome>,
    /// Things no client should have done.
    wrong: Vec<String>,
    /// Refusals and conflicts, counted (for the report).
    refusals: usize,
    /// Decisions a tab sent for a pause that another tab's decisions had since replaced, which
    /// reached a newer call under the same callId (with `reuse_ids` only: no client can tell).
    races: usize,
    /// The calls such a decision reached (their outcome is the race's, not a person's).
    raced: HashSet<String>,
}

enum Answer {
    Ok(Value),
    Status(u16, Value),
}

impl Server {
    fn new(v: Variant) -> Server {
        Server {
            v,
            messages: Vec::new(),
            seq: 0,
            ids: 0,
            run: None,
            received: 0,
            gated: Vec::new(),
            outcomes: Vec::new(),
            wrong: Vec::new(),
            refusals: 0,
            races: 0,
            raced: HashSet::new(),
        }
    }

    fn next_id(&mut self) -> String {
        self.seq += 1;
        format!("msg_{}", self.seq)
    }

    fn tail(&self) -> Option<&Value> {
        self.messages.last()
    }

    /// Whether the tail is a paused tool_call.
    fn paused(&self) -> bool {
        self.run.is_some()
            && self.tail().is_some_and(|t| {
                t["type"] == "tool_call"
                    && t["tools"]
                        .as_array()
                        .is_some_and(|ts| ts.iter().any(|x| x["approval"] == "pending"))
            })
    }

    fn decided_aside(&self, call_id: &str) -> Option<Value> {
        self.run
            .as_ref()
            .and_then(|r| r.decided.as_ref())
            .and_then(|d| d.get(call_id).cloned())
    }

    fn undecided(&self) -> Vec<Value> {
        let held = self.run.as_ref().and_then(|r| r.held.as_ref());
        let mut out = Vec::new();
        if let Some(t) = self.tail() {
            for x in t["tools"].as_array().into_iter().flatten() {
                let id = x["callId"].as_str().unwrap_or("");
                if x["approval"] == "pending"
                    && self.decided_aside(id).is_none()
                    && !held.is_some_and(|h| h.contains_key(id))
                {
                    out.push(x.clone());
                }
            }
        }
        out
    }

    /// The decision the server holds for a gated call of the paused tail, if any: written on it,
    /// held on the run (append-only) or held aside (cumulative).
    fn held_decision(&self, k: &str, x: &Value) -> Option<Value> {
        if let Some(d) = self.decided_aside(k) {
            return Some(d);
        }
        if let Some(d) = self
            .run
            .as_ref()
            .and_then(|r| r.held.as_ref())
            .and_then(|h| h.get(k))
        {
            return Some(d.clone());
        }
        match x["approval"].as_str() {
            Some("approved") => Some(json!("approve")),
            Some("rejected") => Some(match x["rejectReason"].as_str() {
                Some(r) => json!(["reject", r]),
                None => json!("reject"),
            }),
            _ => None,
        }
    }

    fn conflict(&mut self, error: &str) -> Answer {
        self.refusals += 1;
        let body = json!({"status": "conflict", "error": error});
        if self.v.conflict_200 {
            Answer::Ok(body)
        } else {
            Answer::Status(409, body)
        }
    }

    fn bad(&mut self, error: String) -> Answer {
        self.refusals += 1;
        Answer::Status(400, json!({ "error": error }))
    }

    /// `persons`: the calls some person decided so far (signatures).
    fn handle(
        &mut self,
        r: &HttpRequest,
        cards: &Cards,
        persons: &HashSet<String>,
        seed: u64,
    ) -> HttpResponse {
        let answer = match r.method {
            Method::Get => {
                assert_eq!(r.url, THREAD_URL);
                Answer::Ok(json!({"id": TID, "messages": self.messages}))
            }
            Method::Post => {
                assert_eq!(r.url, CHAT_URL);
                self.chat(r.body.as_deref().unwrap_or(""), cards, persons, seed)
            }
        };
        match answer {
            Answer::Ok(b) => HttpResponse::new(200, b.to_string()),
            Answer::Status(s, b) => HttpResponse::new(s, b.to_string()),
        }
    }

    fn chat(&mut self, body: &str, cards: &Cards, persons: &HashSet<String>, seed: u64) -> Answer {
        let Ok(Value::Object(body)) = serde_json::from_str::<Value>(body) else {
            self.wrong
                .push(format!("a body that is no JSON object: {body}"));
            return self.bad("Request body must be a JSON object".into());
        };
        let answer = match (body.get("message"), body.get("decisions")) {
            (Some(Value::String(text)), None) => self.new_message(text),
            (None, Some(Value::Object(d))) => {
                if d.is_empty() {
                    self.wrong.push("an empty decisions map".into());
                    if self.v.mode == Mode::Strict {
                        return self.bad("\"decisions\" must not be empty".into());
                    }
                }
                for (k, v) in d {
                    let ok = v == "approve"
                        || v == "reject"
                        || v.as_array()
                            .is_some_and(|a| a.len() == 2 && a[0] == "reject" && a[1].is_string());
                    if !ok {
                        self.wrong.push(format!("a malformed decision {k}: {v}"));
                        return self.bad(format!("Malformed decision for {k}"));
                    }
                }
                self.decide(d.clone(), cards, persons, seed)
            }
            _ => {
                self.wrong
                    .push(format!("a body that is no message nor decisions: {body:?}"));
                return self.bad("Expected a \"message\" or a \"decisions\" field".into());
            }
        };
        if let Some(a) = answer {
            return a;
        }
        let paused = self.paused();
        let status = if paused {
            "awaiting_approval"
        } else {
            "completed"
        };
        if self.v.approvals_reply {
            let approvals: Vec<Value> = if paused {
                self.undecided()
                    .iter()
                    .map(|x| json!({"id": x["callId"], "name": x["name"], "reason": x["approvalReason"]}))
                    .collect()
            } else {
                Vec::new()
            };
            return Answer::Ok(json!({"status": status, "approvals": approvals}));
        }
        Answer::Ok(json!({"status": status, "message": self.tail()}))
    }

    fn new_message(&mut self, text: &str) -> Option<Answer> {
        if self.paused() {
            return Some(self.conflict("Thread thread_42 is awaiting approval"));
        }
        self.received += 1;
        let turn = self.received;
        if text != turn_text(turn) {
            self.wrong.push(format!(
                "message {turn} is {text:?}, not the text of that turn"
            ));
        }
        self.run = None;
        let id = self.next_id();
        self.messages
            .push(json!({"__id": id, "role": "user", "content": text}));
        self.run = Some(Run {
            steps: plan(&self.v, turn),
            step: 0,
            awaiting: false,
            decided: None,
            held: None,
        });
        self.advance();
        None
    }

    fn decide(
        &mut self,
        decisions: Map<String, Value>,
        cards: &Cards,
        persons: &HashSet<String>,
        seed: u64,
    ) -> Option<Answer> {
        if !self.paused() {
            return Some(self.conflict("Thread thread_42 has no tool call awaiting approval"));
        }
        let tools: Vec<Value> = self.tail().unwrap()["tools"].as_array().unwrap().clone();
        let find = |k: &str| tools.iter().find(|x| x["callId"] == k);
        let gated = |x: &Value| !x["approval"].is_null();
        if self.v.mode == Mode::Strict {
            for k in decisions.keys() {
                match find(k) {
                    None => return Some(self.bad(format!("Unknown callId {k:?}"))),
                    Some(x) if !gated(x) => {
                        let s = sig(k, x["name"].as_str().unwrap(), &x["inputs"]);
                        if cards.get(k).is_some_and(|(shown, _)| *shown != s) {
                            // Sent to the call the tab showed, since passed (see `races`).
                            assert!(self.v.reuse_ids, "{k}: the tab showed {cards:?}");
                            self.races += 1;
                        } else {
                            self.wrong
                                .push(format!("a decision for the ungated call {k}"));
                        }
                        return Some(
                            self.bad(format!("Tool call {k:?} does not require approval")),
                        );
                    }
                    _ => {}
                }
            }
        }
        let entries: Map<String, Value> = decisions
            .into_iter()
            .filter(|(k, _)| find(k).is_some_and(gated))
            .collect();
        // Every decision taken in reaches a call a person decided, as they decided it, or
        // restates what the server holds or what the tab read the thread record.
        for (k, v) in &entries {
            let x = find(k).unwrap();
            let s = sig(k, x["name"].as_str().unwrap(), &x["inputs"]);
            if cards.get(k).is_some_and(|(shown, _)| *shown != s) {
                // Sent for the call the tab showed, which the run has since passed: the payload
                // names callIds only, so it lands on the newer call (see `races`).
                assert!(self.v.reuse_ids, "{k}: the tab showed {cards:?}");
                self.races += 1;
                self.raced.insert(s);
                continue;
            }
            if self.held_decision(k, x).as_ref() == Some(v) {
                continue;
            }
            if cards
                .get(k)
                .is_some_and(|(_, read)| read.as_ref() == Some(v))
            {
                // What the thread recorded when the tab read it, which differs from what it holds
                // now only when a race wrote it (a person's decisions of a call all agree).
                assert!(self.v.reuse_ids, "{k}: the tab showed {cards:?}");
                self.raced.insert(s);
                continue;
            }
            if !persons.contains(&s) {
                self.wrong
                    .push(format!("{k} ({s}) given {v} though no person decided it"));
            }
            let want = if rejects(&s, seed) {
                json!(["reject", reason_for(x["name"].as_str().unwrap())])
            } else {
                json!("approve")
            };
            if *v != want {
                self.wrong.push(format!("{k} given {v}, decided {want}"));
            }
        }
        let run = self.run.as_mut().unwrap();
        if self.v.history == History::AppendOnly {
            let mut prior = if self.v.mode == Mode::Cumulative {
                Map::new()
            } else {
                run.decided.take().unwrap_or_default()
            };
            prior.extend(entries);
            run.decided = Some(prior);
            self.advance();
            return None;
        }
        if self.v.mode == Mode::Cumulative {
            let all = tools
                .iter()
                .filter(|x| x["approval"] == "pending")
                .all(|x| entries.contains_key(x["callId"].as_str().unwrap()));
            if !all {
                run.held = Some(entries);
                return None;
            }
            run.held = None;
        }
        let tail = self.messages.last_mut().unwrap();
        for (k, v) in entries {
            for x in tail["tools"].as_array_mut().unwrap() {
                if x["callId"] == k.as_str() {
                    outcome_onto(x, &v);
                }
            }
        }
        self.advance();
        None
    }

    fn advance(&mut self) {
        loop {
            let run = self.run.as_ref().unwrap();
            let tail = self.tail().unwrap();
            if run.awaiting && tail["type"] == "tool_call" {
                let written: Vec<Value> = tail["tools"].as_array().unwrap().clone();
                if written.iter().any(|x| {
                    x["approval"] == "pending"
                        && self.decided_aside(x["callId"].as_str().unwrap()).is_none()
                }) {
                    return; // paused
                }
                let mut executed = Vec::new();
                for w in written {
                    let mut x = w.clone();
                    let id = x["callId"].as_str().unwrap().to_owned();
                    if w["approval"] == "pending" {
                        if let Some(held) = self.decided_aside(&id) {
                            outcome_onto(&mut x, &held);
                        }
                    }
                    let name = x["name"].as_str().unwrap().to_owned();
                    if !x["approval"].is_null() {
                        self.outcomes.push(Outcome {
                            signature: sig(&id, &name, &x["inputs"]),
                            name: name.clone(),
                            approved: x["approval"] == "approved",
                            reject_reason: x["rejectReason"].as_str().map(str::to_owned),
                        });
                    }
                    x["result"] = if x["approval"] == "rejected" {
                        json!(format!(
                            "TOOL NOT EXECUTED. User instruction: {}.",
                            x["rejectReason"]
                                .as_str()
                                .unwrap_or("No specific instruction provided")
                        ))
                    } else {
                        json!(format!("ran {name}"))
                    };
                    executed.push(x);
                }
                let id = self.next_id();
                self.messages.push(json!({"__id": id, "role": "tool", "content": [], "type": "tool_call_result", "tools": executed}));
                let run = self.run.as_mut().unwrap();
                run.step += 1;
                run.awaiting = false;
                run.decided = None;
                continue;
            }
            if run.step >= run.steps.len() {
                let id = self.next_id();
                self.messages.push(
                    json!({"__id": id, "role": "assistant", "content": format!("turn {} done", self.received)}),
                );
                self.run = None;
                return;
            }
            let newest = self.v.history == History::AppendOnly;
            let specs = run.steps[run.step].clone();
            let mut tools = Vec::new();
            for (i, (name, inputs)) in specs.into_iter().enumerate() {
                let call_id = if self.v.reuse_ids {
                    format!("call_{i}")
                } else {
                    self.ids += 1;
                    format!("toolu_{:02}", self.ids)
                };
                let p = policy(name);
                if p.is_some() {
                    self.gated.push(sig(&call_id, name, &inputs));
                }
                let mut t = json!({
                    "callId": call_id,
                    "name": name,
                    "description": format!("the {name} tool"),
                    "parameters": [],
                    "inputs": inputs,
                    "result": null,
                    "approval": if p.is_some() { json!("pending") } else { Value::Null },
                    "approvalReason": p,
                    "rejectReason": null,
                });
                if newest {
                    let o = t.as_object_mut().unwrap();
                    o.remove("parameters");
                    if p.is_none() {
                        o.remove("approval");
                    }
                }
                tools.push(t);
            }
            let id = self.next_id();
            let any_gated = tools.iter().any(|x| x["approval"] == "pending");
            let msg = if any_gated && !newest {
                json!({"__id": id, "resume_token": format!("workflow_{id}"), "role": "assistant", "content": [], "type": "tool_call", "tools": tools})
            } else {
                json!({"__id": id, "role": "assistant", "content": [], "type": "tool_call", "tools": tools})
            };
            self.messages.push(msg);
            self.run.as_mut().unwrap().awaiting = true;
        }
    }

    /// Every turn sent and its run over.
    fn finished(&self) -> bool {
        self.received == self.v.turns && self.run.is_none()
    }
}

fn outcome_onto(x: &mut Value, v: &Value) {
    if v == "approve" {
        x["approval"] = json!("approved");
        x["rejectReason"] = Value::Null;
    } else {
        x["approval"] = json!("rejected");
        x["rejectReason"] = v.as_array().map(|a| a[1].clone()).unwrap_or(Value::Null);
    }
}

// ----------------------------------------------------------------------------------------------
// The tabs

/// A request of one tab: not yet at the server, or its answer (or failure) on the way back.
enum Wire {
    Out(HttpRequest, Cards),
    Answer(RequestId, HttpResponse),
    Failed(RequestId, TransportError),
}

impl Wire {
    fn id(&self) -> RequestId {
        match self {
            Wire::Out(r, _) => r.id,
            Wire::Answer(id, _) | Wire::Failed(id, _) => *id,
        }
    }
}

struct Tab {
    c: Client,
    wire: Option<Wire>,
    events: usize,
    /// A decision POST of this page whose outcome it cannot know (stopped after it went out, or
    /// its answer lost): the pause it was sent on. Until a read shows another pause (or the drafts
    /// are gone), a submission must read the thread first (README: "Nothing lost, nothing sent
    /// twice").
    doubt: Option<Doubt>,
    /// Bumped by each of the person's actions in this tab.
    acts: u64,
    /// The `acts` at which the tab's last GET went out.
    last_get: Option<u64>,
    /// Its last write to storage failed (README: its drafts then live in that tab alone, and no
    /// other tab hears of its pause).
    write_failed: bool,
}

/// A decision POST whose outcome its page cannot know: the pause it was made on, what it sent.
#[derive(Debug)]
struct Doubt {
    pause: Option<String>,
    sent: Map<String, Value>,
}

impl Doubt {
    fn of(c: &Client, r: &HttpRequest) -> Doubt {
        let body: Value = serde_json::from_str(r.body.as_deref().unwrap_or("{}")).unwrap();
        Doubt {
            pause: c
                .snapshot()
                .suspension
                .as_ref()
                .and_then(|s| s.message_id.clone()),
            sent: body["decisions"].as_object().cloned().unwrap_or_default(),
        }
    }
}

/// The decision the thread a tab read records for a card, in wire form.
fn read_of(c: &toolgate::client::GatedView) -> Option<Value> {
    match c.server_approval {
        Approval::Approved => Some(json!("approve")),
        Approval::Rejected => Some(match &c.server_reject_reason {
            Some(r) => json!(["reject", r]),
            None => json!("reject"),
        }),
        Approval::Pending => None,
    }
}

/// The tab a person types turn `turn` in.
fn sender(seed: u64, turn: usize) -> usize {
    (seed as usize + turn) % 3
}

/// What the runs went through, counted (`STATS=1` prints them).
#[derive(Default, Debug)]
struct Stats {
    runs: u64,
    stopped_reached: u64,
    lost_answers: u64,
    reloads: u64,
    refusals: u64,
    races: u64,
    partial_posts: u64,
    two_pause_runs: u64,
    conflicts_seen: u64,
    timers: u64,
    unavailable: u64,
    failed_writes: u64,
    clears: u64,
    late_landings: u64,
    /// Runs that end with a tab offering as unsent a message the server took (a stopped send).
    unsent_landed: u64,
    steps: u64,
}

struct World {
    stats: Stats,
    /// A stopped POST landed late on a newer pause that reuses its callIds.
    blind: bool,
    /// Requests cut off that may still reach the server: the tab, the request, its cards.
    ghosts: Vec<(usize, HttpRequest, Cards)>,
    tabs: Vec<Tab>,
    storage: Option<String>,
    server: Server,
    /// The calls some person decided (their signatures).
    persons: HashSet<String>,
    now: u64,
    log: Vec<String>,
    verbose: bool,
    /// Stops, reloads and lost answers too.
    chaos: bool,
    /// A client broke a rule (the run stops there).
    broken: Option<String>,
    rng: Rng,
    seed: u64,
}

fn client(v: &Variant) -> Client {
    let mut config = Config::new(BASE, TID);
    config.persist = true;
    config.reload_after_post = v.reload_after_post;
    config.auto_submit = v.auto_submit;
    Client::new(config).expect("config")
}

fn short(v: &str) -> String {
    if v.is_empty() {
        return "<removed>".into();
    }
    let j: Value = serde_json::from_str(v).unwrap_or(Value::Null);
    let mut j2 = j.clone();
    if let Some(o) = j2.as_object_mut() {
        o.remove("v");
    }
    j2.to_string()
}

impl World {
    /// A request reaches the server (its answer is kept only when `keep`).
    fn serve(&mut self, r: &HttpRequest, cards: &Cards) -> HttpResponse {
        self.server.handle(r, cards, &self.persons, self.seed)
    }

    /// A request of tab `t` whose answer nobody awaits any more (stopped, or its page reloaded):
    /// it reaches the server now, never, or (a stopped decision POST, with stops) at some later
    /// step. (A page reloaded cannot learn what its old request did: its request lands now or
    /// never, else no page could tell the run moved on.)
    fn cut_off(&mut self, t: usize, r: HttpRequest, cards: Cards, late: bool) {
        let decisions = r
            .body
            .as_deref()
            .is_some_and(|b| b.contains("\"decisions\""));
        if decisions {
            self.tabs[t].doubt = Some(Doubt::of(&self.tabs[t].c, &r));
        }
        match self.rng.below(if decisions && self.chaos && late {
            3
        } else {
            2
        }) {
            0 => {
                note!(self, "  tab{t}'s cut-off request reaches the server");
                self.stats.stopped_reached += 1;
                let _ = self.serve(&r, &cards);
            }
            1 => note!(self, "  tab{t}'s cut-off request never reaches the server"),
            _ => {
                note!(self, "  tab{t}'s cut-off request is still on its way");
                self.ghosts.push((t, r, cards));
            }
        }
    }

    fn after(&mut self, t: usize) {
        loop {
            while let Some(o) = self.tabs[t].c.poll_output() {
                match o {
                    Output::Http(r) => {
                        note!(
                            self,
                            "  tab{t} http {:?} {}",
                            r.method,
                            r.body.as_deref().unwrap_or("")
                        );
                        if let Some(w) = &self.tabs[t].wire {
                            self.broken = Some(format!(
                                "tab{t}: a second request ({:?}) while {:?} is in flight",
                                r.id,
                                w.id()
                            ));
                        }
                        let mut cards = Cards::new();
                        if let Some(sus) = &self.tabs[t].c.snapshot().suspension {
                            for c in &sus.tools {
                                let inputs: Value = serde_json::from_str(
                                    &toolgate::json::ToJson::to_json_string(&c.inputs),
                                )
                                .unwrap();
                                let read = read_of(c);
                                cards.insert(
                                    c.call_id.clone(),
                                    (sig(&c.call_id, &c.name, &inputs), read),
                                );
                            }
                        }
                        let tab = &mut self.tabs[t];
                        if r.method == Method::Get {
                            tab.last_get = Some(tab.acts);
                        } else if r
                            .body
                            .as_deref()
                            .is_some_and(|b| b.contains("\"decisions\""))
                            && tab.doubt.is_some()
                        {
                            if tab.last_get != Some(tab.acts) {
                                self.broken = Some(format!(
                                    "tab{t}: a submission went out without reading the thread \
                                     first, though a decision POST of its own on {:?} may still \
                                     land",
                                    tab.doubt
                                ));
                            }
                            // The submission after the doubt read first (README: "that
                            // submission ... reads the thread first"): the doubt is honoured.
                            tab.doubt = None;
                        }
                        self.tabs[t].wire = Some(Wire::Out(r, cards));
                    }
                    Output::Cancel(id) => {
                        if self.tabs[t].wire.as_ref().map(Wire::id) != Some(id) {
                            continue;
                        }
                        // Stopped: a request still on its way may reach the server all the same
                        // (its answer is lost), now or later.
                        if let Some(Wire::Out(r, cards)) = self.tabs[t].wire.take() {
                            self.cut_off(t, r, cards, true);
                        }
                    }
                    Output::Persist { key, mut value } => {
                        assert_eq!(key, KEY);
                        let failed = value.is_some() && self.chaos && self.rng.one_in(30);
                        if failed {
                            // A full storage: the driver removes the key instead (never leaving an
                            // older record) and tells the client.
                            note!(self, "  tab{t}'s write fails: the key removed");
                            self.stats.failed_writes += 1;
                            value = None;
                            self.tabs[t].c.persist_failed();
                        }
                        self.tabs[t].write_failed = failed;
                        let changed = tabs::write(&mut self.storage, value);
                        note!(
                            self,
                            "  tab{t} writes {} {}",
                            short(self.storage.as_deref().unwrap_or("")),
                            if changed { "" } else { "(same: no event)" }
                        );
                        if changed {
                            for (i, o) in self.tabs.iter_mut().enumerate() {
                                if i != t {
                                    o.events += 1;
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
            if self.tabs[t].c.take_missed_restore() {
                let v = self.storage.clone().unwrap_or_default();
                note!(self, "  tab{t} reads again {}", short(&v));
                self.tabs[t].c.restore_drafts(&v);
                continue;
            }
            break;
        }
    }

    fn desc(&self, t: usize) -> String {
        let s = self.tabs[t].c.snapshot();
        format!(
            "tab{t}: {:?}{}{}{} cards {} err {:?} unsent {:?} tail {}",
            s.phase,
            if s.busy { " busy" } else { "" },
            if s.syncing { " syncing" } else { "" },
            if s.can_submit { " can_submit" } else { "" },
            s.suspension
                .as_ref()
                .map(|s| format!(
                    "{}[{}]",
                    s.message_id.as_deref().unwrap_or("?"),
                    s.tools
                        .iter()
                        .map(|t| format!(
                            "{}:{:?}{}{}",
                            t.call_id,
                            t.approval,
                            if t.draft { "(draft)" } else { "" },
                            match (&t.server_approval, &t.server_reject_reason) {
                                (Approval::Rejected, Some(r)) => format!("[server: {r}]"),
                                _ => String::new(),
                            }
                        ))
                        .collect::<Vec<_>>()
                        .join(",")
                ))
                .unwrap_or("-".into()),
            s.error.as_ref().map(|e| e.code),
            s.unsent_text,
            s.messages
                .as_slice()
                .last()
                .map(|m| m.id.clone().unwrap_or_default())
                .unwrap_or_default(),
        )
    }

    /// One random action; false when none is enabled.
    fn step(&mut self) -> bool {
        self.now += 1;
        let mut acts: Vec<(usize, u8)> = Vec::new();
        for (i, t) in self.tabs.iter().enumerate() {
            if t.wire.is_some() {
                acts.push((i, 0));
            }
            if t.events > 0 {
                acts.push((i, 1));
            }
            if t.c.poll_timeout().is_some() {
                acts.push((i, 8));
            }
            let s = t.c.snapshot();
            // Stop (a person pressing it while a message or decisions are on their way: the demo
            // offers no Stop for a load), and a reload of the page.
            let stoppable = matches!(s.phase, Phase::Sending | Phase::Submitting);
            if self.chaos && s.busy && stoppable && self.rng.one_in(8) {
                acts.push((i, 6));
            }
            if self.chaos && self.rng.one_in(40) {
                acts.push((i, 7));
            }
            if !s.busy && s.error.is_some() && t.wire.is_none() {
                // The person retries after an error shown (a load, as the demo's Retry does).
                acts.push((i, 11));
            }
            if !s.busy {
                if let Some(sus) = &s.suspension {
                    if !sus.undecided.is_empty() {
                        acts.push((i, 2));
                    }
                    if s.can_submit {
                        acts.push((i, 3));
                    }
                    if sus.tools.iter().any(|c| c.draft) && self.rng.one_in(4) {
                        acts.push((i, 9));
                    }
                } else if i == sender(self.seed, self.server.received + 1)
                    && self.server.received < self.server.v.turns
                    && self.server.run.is_none()
                    && s.can_send
                    && t.wire.is_none()
                {
                    acts.push((i, 4));
                } else if !self.server.finished() && t.wire.is_none() {
                    acts.push((i, 5));
                }
            }
        }
        if self.server.finished() {
            // The conversation is over: the people stop (nobody acts on a pause shown that is
            // over), and every tab must come to show that by itself.
            // But for a tab whose own stopped decision POST may have landed after its last read
            // (no page can learn that without reading again): its person submits the drafts it
            // still shows, which reads the thread first.
            let tabs = &self.tabs;
            // And a tab whose last write failed, which no other tab could tell of anything: its
            // person loads it.
            // (Deciding too: another tab's save may have taken its drafts away.)
            acts.retain(|&(i, a)| {
                matches!(a, 0 | 1 | 8 | 11) || matches!(a, 2 | 3) && tabs[i].doubt.is_some()
            });
            // And every tab, once a stopped POST landed blind on a newer pause (`blind`).
            for (i, t) in self.tabs.iter().enumerate() {
                let s = t.c.snapshot();
                if (t.write_failed || self.blind)
                    && s.suspension.is_some()
                    && !s.busy
                    && t.wire.is_none()
                {
                    acts.push((i, 5));
                }
            }
        }
        if !self.ghosts.is_empty() {
            acts.push((usize::MAX, 10));
        }
        if acts.is_empty() {
            return false;
        }
        let (t, a) = acts[self.rng.below(acts.len())];
        let now = self.now;
        if matches!(a, 2 | 3 | 4 | 5 | 6 | 9 | 11) {
            self.tabs[t].acts += 1;
        }
        match a {
            0 => {
                let wire = self.tabs[t].wire.take();
                match wire {
                    Some(Wire::Out(r, cards)) => {
                        if let Some(b) = &r.body {
                            let n = b.matches("approve").count() + b.matches("reject").count();
                            if b.contains("decisions") && n < self.server.undecided().len() {
                                self.stats.partial_posts += 1;
                            }
                        }
                        // Chaos: the connection drops before the request is taken, or after the
                        // server applied it (the answer lost).
                        if self.chaos && self.rng.one_in(20) {
                            note!(self, "tab{t}'s request is refused by a busy server (503)");
                            self.stats.unavailable += 1;
                            self.tabs[t].wire = Some(Wire::Answer(
                                r.id,
                                HttpResponse::new(503, r#"{"error":"overloaded"}"#),
                            ));
                        } else if self.chaos && self.rng.one_in(15) {
                            note!(self, "tab{t}'s request is lost on the way");
                            self.tabs[t].wire =
                                Some(Wire::Failed(r.id, TransportError::Network("reset".into())));
                        } else {
                            let resp = self.serve(&r, &cards);
                            note!(
                                self,
                                "server handles tab{t}'s request: {} {}",
                                resp.status,
                                String::from_utf8_lossy(&resp.body)
                                    .chars()
                                    .take(160)
                                    .collect::<String>()
                            );
                            self.tabs[t].wire = Some(if self.chaos && self.rng.one_in(15) {
                                note!(self, "  (its answer will be lost)");
                                if r.body
                                    .as_deref()
                                    .is_some_and(|b| b.contains("\"decisions\""))
                                {
                                    self.tabs[t].doubt = Some(Doubt::of(&self.tabs[t].c, &r));
                                }
                                self.stats.lost_answers += 1;
                                Wire::Failed(
                                    r.id,
                                    if self.rng.one_in(2) {
                                        TransportError::Timeout
                                    } else {
                                        TransportError::Network("reset".into())
                                    },
                                )
                            } else {
                                Wire::Answer(r.id, resp)
                            });
                        }
                    }
                    Some(Wire::Answer(id, p)) => {
                        if p.status == 409 || String::from_utf8_lossy(&p.body).contains("conflict")
                        {
                            self.stats.conflicts_seen += 1;
                        }
                        note!(self, "tab{t} gets answer {}", p.status);
                        self.tabs[t].c.handle_response(now, id, p);
                        self.after(t);
                    }
                    Some(Wire::Failed(id, e)) => {
                        note!(self, "tab{t} gets failure {e:?}");
                        self.tabs[t].c.handle_failure(now, id, e);
                        self.after(t);
                    }
                    None => {}
                }
            }
            1 => {
                self.tabs[t].events -= 1;
                let v = self.storage.clone().unwrap_or_default();
                note!(self, "tab{t} storage event, reads {}", short(&v));
                self.tabs[t].c.restore_drafts(&v);
                self.after(t);
            }
            2 => {
                let sus = self.tabs[t].c.snapshot().suspension.clone().unwrap();
                let id = sus.undecided[self.rng.below(sus.undecided.len())].clone();
                let card = sus.tools.iter().find(|c| c.call_id == id).unwrap();
                let inputs: Value =
                    serde_json::from_str(&toolgate::json::ToJson::to_json_string(&card.inputs))
                        .unwrap();
                let s = sig(&id, &card.name, &inputs);
                let reject = rejects(&s, self.seed);
                note!(
                    self,
                    "tab{t} {} {id} ({})",
                    if reject { "rejects" } else { "approves" },
                    card.name
                );
                self.persons.insert(s);
                let _ = if reject {
                    let why = reason_for(&card.name);
                    self.tabs[t].c.reject(&id, Some(&why))
                } else {
                    self.tabs[t].c.approve(&id)
                };
                self.after(t);
            }
            3 => {
                note!(self, "tab{t} submits");
                let _ = self.tabs[t].c.submit(now);
                self.after(t);
            }
            4 => {
                let text = turn_text(self.server.received + 1);
                note!(self, "tab{t} sends {text:?}");
                let _ = self.tabs[t].c.send(now, &text);
                self.after(t);
            }
            5 | 11 => {
                note!(self, "tab{t} loads");
                let _ = self.tabs[t].c.load(now);
                self.after(t);
            }
            6 => {
                note!(self, "tab{t} stops");
                self.tabs[t].c.abort();
                self.after(t);
            }
            7 => {
                // A new client on the same storage, which it reads before its first load; the
                // old one's request may still reach the server.
                note!(self, "tab{t} reloads");
                self.stats.reloads += 1;
                if let Some(Wire::Out(r, cards)) = self.tabs[t].wire.take() {
                    self.cut_off(t, r, cards, false);
                }
                self.tabs[t].wire = None;
                // Its stopped requests still on their way land now or never (the new page could
                // not learn of a later landing, nor could any other).
                let mut i = 0;
                while i < self.ghosts.len() {
                    if self.ghosts[i].0 == t {
                        let (_, r, cards) = self.ghosts.remove(i);
                        if self.rng.one_in(2) {
                            note!(self, "  tab{t}'s stopped request reaches the server");
                            let _ = self.serve(&r, &cards);
                        }
                    } else {
                        i += 1;
                    }
                }
                self.tabs[t].doubt = None;
                self.tabs[t].write_failed = false;
                let mut c = client(&self.server.v);
                if let Some(v) = &self.storage {
                    c.restore_drafts(v);
                }
                self.tabs[t].c = c;
                self.tabs[t].events = 0;
                let _ = self.tabs[t].c.load(now);
                self.after(t);
            }
            10 => {
                let (g, r, cards) = self.ghosts.remove(self.rng.below(self.ghosts.len()));
                if self.rng.one_in(4) {
                    note!(self, "tab{g}'s cut-off request is lost for good");
                } else {
                    let races = self.server.races;
                    let resp = self.serve(&r, &cards);
                    // Landed on a newer pause that reuses the callIds (`REUSE`): no page can
                    // learn that the run moved on but by reading the thread.
                    self.blind |= self.server.races > races;
                    self.stats.late_landings += 1;
                    note!(
                        self,
                        "tab{g}'s cut-off request reaches the server late: {} {}",
                        resp.status,
                        String::from_utf8_lossy(&resp.body)
                            .chars()
                            .take(120)
                            .collect::<String>()
                    );
                }
                return true;
            }
            9 => {
                // A person takes a decision back (and makes it again later, the same way).
                let sus = self.tabs[t].c.snapshot().suspension.clone().unwrap();
                let drafts: Vec<&str> = sus
                    .tools
                    .iter()
                    .filter(|c| c.draft)
                    .map(|c| c.call_id.as_str())
                    .collect();
                let id = drafts[self.rng.below(drafts.len())].to_owned();
                note!(self, "tab{t} clears {id}");
                self.stats.clears += 1;
                let _ = self.tabs[t].c.clear(&id);
                self.after(t);
            }
            _ => {
                let at = self.tabs[t].c.poll_timeout().unwrap();
                self.now = self.now.max(at);
                note!(self, "tab{t} timer at {at}");
                self.stats.timers += 1;
                self.tabs[t].c.handle_timeout(self.now);
                self.after(t);
            }
        }
        if self.verbose {
            let d = self.desc(t);
            note!(self, "      = {d}");
        }
        if self.broken.is_some() {
            return false;
        }
        // A read shows another pause, or none, or what was sent recorded (it landed): no doubt
        // left to honour. (Not when the tab's drafts are gone: another tab's save can take them
        // away and bring others, and the stopped POST may still land; its person goes on with
        // the pause the tab shows, and that submission reads first.)
        let tab = &mut self.tabs[t];
        if let Some(d) = &tab.doubt {
            let s = tab.c.snapshot();
            let open = s.suspension.as_ref().is_some_and(|sus| {
                sus.message_id == d.pause
                    && !d.sent.iter().all(|(k, v)| {
                        sus.tools
                            .iter()
                            .any(|c| c.call_id == *k && read_of(c).as_ref() == Some(v))
                    })
            });
            if !open && !s.busy {
                tab.doubt = None;
            }
        }
        if let Err(e) = self.tabs[t].c.invariants() {
            self.broken = Some(format!("tab{t}: invariant: {e}"));
            return false;
        }
        if !self.server.wrong.is_empty() {
            self.broken = Some(format!("server: {}", self.server.wrong.join("; ")));
            return false;
        }
        true
    }

    fn failure(&self, what: &str) -> String {
        let mut msg = format!(
            "{what}\nvariant {:?}\n{}",
            self.server.v,
            self.log.join("\n")
        );
        for i in 0..3 {
            msg.push_str(&format!("\n{}", self.desc(i)));
        }
        msg.push_str(&format!(
            "\nstorage {}\nserver {}",
            short(self.storage.as_deref().unwrap_or("")),
            serde_json::to_string(&self.server.messages).unwrap()
        ));
        msg
    }
}

fn run(
    seed: u64,
    chaos: bool,
    verbose: bool,
    reuse_ids: bool,
    stats: &mut Stats,
) -> Result<(), String> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let v = Variant::pick(&mut rng, reuse_ids);
    let tabs = (0..3)
        .map(|_| Tab {
            c: client(&v),
            wire: None,
            events: 0,
            doubt: None,
            acts: 0,
            last_get: None,
            write_failed: false,
        })
        .collect();
    let mut w = World {
        stats: Stats::default(),
        blind: false,
        ghosts: Vec::new(),
        tabs,
        storage: None,
        server: Server::new(v),
        persons: HashSet::new(),
        now: 1000,
        log: Vec::new(),
        verbose,
        chaos,
        broken: None,
        rng,
        seed,
    };
    for t in 0..3 {
        let _ = w.tabs[t].c.load(w.now);
        w.after(t);
    }
    let mut n = 0;
    while w.step() {
        n += 1;
        if n > 5000 {
            return Err(w.failure("no end"));
        }
    }
    stats.runs += 1;
    let texts: Vec<String> = (1..=w.server.received).map(turn_text).collect();
    if w.tabs.iter().any(|t| {
        t.c.snapshot()
            .unsent_text
            .as_ref()
            .is_some_and(|u| texts.contains(u))
    }) {
        stats.unsent_landed += 1;
    }
    stats.steps += n;
    stats.refusals += w.server.refusals as u64;
    stats.races += w.server.races as u64;
    stats.two_pause_runs += u64::from(w.server.v.gated_second > 0);
    for (a, b) in [
        (&mut stats.stopped_reached, w.stats.stopped_reached),
        (&mut stats.lost_answers, w.stats.lost_answers),
        (&mut stats.reloads, w.stats.reloads),
        (&mut stats.partial_posts, w.stats.partial_posts),
        (&mut stats.conflicts_seen, w.stats.conflicts_seen),
        (&mut stats.timers, w.stats.timers),
        (&mut stats.unavailable, w.stats.unavailable),
        (&mut stats.failed_writes, w.stats.failed_writes),
        (&mut stats.clears, w.stats.clears),
        (&mut stats.late_landings, w.stats.late_landings),
    ] {
        *a += b;
    }
    if let Some(broken) = w.broken.take() {
        return Err(w.failure(&broken));
    }
    let mut wrong = Vec::new();
    if w.server.received < w.server.v.turns {
        wrong.push(format!(
            "{} of {} messages sent",
            w.server.received, w.server.v.turns
        ));
    }
    if w.server.run.is_some() {
        wrong.push("the run did not finish".to_owned());
    }
    for s in &w.server.gated {
        let got: Vec<&Outcome> = w
            .server
            .outcomes
            .iter()
            .filter(|o| &o.signature == s)
            .collect();
        let [o] = got.as_slice() else {
            wrong.push(format!("{s} ran {} times", got.len()));
            continue;
        };
        if w.server.raced.contains(s) {
            continue;
        }
        let want_reject = rejects(s, seed);
        if o.approved == want_reject {
            wrong.push(format!(
                "{s} approved: {}, decided the other way",
                o.approved
            ));
        } else if want_reject && o.reject_reason.as_deref() != Some(&reason_for(&o.name)) {
            wrong.push(format!("{s} rejected with reason {:?}", o.reject_reason));
        }
    }
    for t in 0..3 {
        if w.tabs[t].c.snapshot().suspension.is_some() {
            wrong.push(format!("tab{t} left on a pause"));
        }
    }
    if wrong.is_empty() {
        if verbose && std::env::var("SHOW").is_ok() {
            return Err(w.failure("ok (SHOW)"));
        }
        Ok(())
    } else {
        Err(w.failure(&wrong.join("; ")))
    }
}

#[test]
fn three_neuron_tabs_in_random_interleavings_finish_with_every_decision_as_made() {
    let env = |k: &str| std::env::var(k).ok().and_then(|s| s.parse::<u64>().ok());
    let reuse = env("REUSE").is_some_and(|r| r != 0);
    if let Some(seed) = env("SEED") {
        for chaos in [false, true] {
            if let Err(m) = run(seed, chaos, true, reuse, &mut Stats::default()) {
                panic!("seed {seed} (stops and reloads: {chaos}): {m}");
            }
        }
        return;
    }
    let seeds = env("SEEDS").unwrap_or(250);
    let first = env("FIRST").unwrap_or(1);
    let mut failed = Vec::new();
    let mut stats = Stats::default();
    for seed in first..first + seeds {
        for chaos in [false, true] {
            if let Err(m) = run(seed, chaos, false, reuse, &mut stats) {
                failed.push(format!(
                    "seed {seed} (stops and reloads: {chaos}): {}",
                    m.lines().next().unwrap_or("")
                ));
            }
        }
    }
    if std::env::var("STATS").is_ok() {
        println!("{stats:#?}");
    }
    assert!(
        failed.is_empty(),
        "{} of {} runs failed (SEED=n replays one with its log):\n{}",
        failed.len(),
        seeds * 2,
        failed.join("\n")
    );
}
