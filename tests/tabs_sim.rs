//! Three tabs of one Sidenet thread (the AI SDK's approval form or Sidenet's, a run that pauses
//! over one step or two), each its own `Client` with `persist`,
//! sharing one storage with a browser's semantics (a write that changes the value fires one
//! `storage` event in each other tab, which reads what storage holds when it handles it; the writer
//! gets none), against a scripted server, in random interleavings: tab 0 sends the message, every
//! tab decides cards (each call the same way whichever tab decides it), submits, loads, stops its
//! request (which the server may have taken all the same) and reloads (a new client on the same
//! storage). At the end the server's run is over, every call was decided as intended, and no tab
//! is left showing a pause. (The three-tab browser soak, `npm run soak:tabs`, found a tab left so;
//! this finds such interleavings in milliseconds.) `SEED=n` replays one seed with its log,
//! `SEEDS=n` (`FIRST=n`) runs more.

use serde_json::{json, Value};

const KEY: &str = "toolgate:drafts:sidenet:https://api.test:thread_42";
#[path = "support/client.rs"]
mod support;
use support::Invariants;

#[path = "support/tabs.rs"]
#[macro_use]
mod tabs;
use tabs::Rng;
use toolgate::client::{
    Client, Config, HttpRequest, HttpResponse, Method, Output, Phase, RequestId,
};

#[derive(Clone, Copy, PartialEq, Debug)]
enum St {
    Pending,
    Approved,
    Denied,
}

fn sse(chunks: &[Value], done: bool) -> Vec<u8> {
    let mut out = String::from(": keep-alive\n\n");
    for c in chunks {
        out.push_str(&format!("data: {c}\n\n"));
    }
    if done {
        out.push_str("data: [DONE]\n\n");
    }
    out.into_bytes()
}

fn data_run() -> Value {
    json!({"type": "data-run", "data": {"runId": "run_1", "agentVersionId": "agv_ref_1", "threadId": "thread_42"}})
}

enum Resp {
    Plain(HttpResponse),
    Stream(Vec<u8>),
}

struct Call {
    id: &'static str,
    apr: &'static str,
    name: &'static str,
    input: Value,
    /// The step of the run that makes the call (the run pauses on each step's gated calls).
    step: usize,
    st: St,
}

struct Server {
    sent: bool,
    calls: Vec<Call>,
    /// The step the run is at (its calls shown; the ones before all decided).
    step: usize,
    finished: bool,
    /// The AI SDK's approval form (`tool-approval-request`, approvals with ids of their own,
    /// `data-run`), else Sidenet's (`data-tool-call-approval` naming the call).
    ai_sdk: bool,
}

impl Server {
    /// Three gated calls, in one step or over two (the run pauses again after the first two).
    fn new(ai_sdk: bool, two_steps: bool) -> Server {
        let second = usize::from(two_steps);
        let call = |id, apr, name, input, step| Call {
            id,
            apr,
            name,
            input,
            step,
            st: St::Pending,
        };
        Server {
            sent: false,
            step: 0,
            finished: false,
            ai_sdk,
            calls: vec![
                call(
                    "call_P",
                    "apr_P",
                    "buy_ticket",
                    json!({"quantity": 2, "price": 80, "amount": 160}),
                    0,
                ),
                call(
                    "call_Q",
                    "apr_Q",
                    "delete_file",
                    json!({"path": "/tmp/x"}),
                    0,
                ),
                call(
                    "call_X",
                    "apr_X",
                    "send_email",
                    json!({"to": "w@example.com", "subject": "all"}),
                    second,
                ),
            ],
        }
    }
    fn approval_id(&self, c: &Call) -> &'static str {
        if self.ai_sdk {
            c.apr
        } else {
            c.id
        }
    }
    /// The calls of the steps so far.
    fn shown(&self) -> impl Iterator<Item = &Call> {
        self.calls.iter().filter(move |c| c.step <= self.step)
    }
    fn pending(&self) -> Vec<&Call> {
        self.shown().filter(|c| c.st == St::Pending).collect()
    }
    fn head(&self, out: &mut Vec<Value>) {
        out.push(json!({"type": "start", "messageId": "msg_a1"}));
        if self.ai_sdk {
            out.push(data_run());
        }
    }
    /// The calls of the current step, announced.
    fn step_calls(&self, out: &mut Vec<Value>) {
        out.push(json!({"type": "start-step"}));
        for p in self.calls.iter().filter(|c| c.step == self.step) {
            out.push(json!({"type": "tool-input-start", "toolCallId": p.id, "toolName": p.name}));
            out.push(json!({"type": "tool-input-available", "toolCallId": p.id, "toolName": p.name, "input": p.input}));
        }
    }
    /// The pause: an approval request per pending call, and the end of the turn.
    fn approvals(&self, out: &mut Vec<Value>) {
        for c in self.pending() {
            out.push(if self.ai_sdk {
                json!({"type": "tool-approval-request", "approvalId": c.apr, "toolCallId": c.id})
            } else {
                json!({"type": "data-tool-call-approval", "id": c.id, "data": {
                    "runId": "run_1", "toolCallId": c.id, "toolName": c.name, "reason": "needs a person",
                    "args": c.input, "agentVersionId": "agv_ref_1", "threadId": "thread_42"}})
            });
        }
        if self.ai_sdk {
            out.push(json!({"type": "finish-step"}));
            out.push(json!({"type": "finish", "finishReason": "tool-calls"}));
        }
    }
    fn final_chunks(&self, out: &mut Vec<Value>) {
        out.push(json!({"type": "finish-step"}));
        out.push(json!({"type": "start-step"}));
        out.push(json!({"type": "text-start", "id": "txt_1"}));
        out.push(json!({"type": "text-delta", "id": "txt_1", "delta": "all done"}));
        out.push(json!({"type": "text-end", "id": "txt_1"}));
        out.push(json!({"type": "finish-step"}));
        out.push(json!({"type": "finish", "finishReason": "stop"}));
    }
    fn history(&self) -> Value {
        let mut msgs = Vec::new();
        if self.sent {
            msgs.push(json!({"id": "msg_u1", "role": "user", "parts": [{"type": "text", "text": "buy 2 tickets at 80 and delete /tmp/x and email w@example.com about all"}]}));
            let mut parts = Vec::new();
            for c in self.shown() {
                let ty = format!("tool-{}", c.name);
                let apr = self.approval_id(c);
                parts.push(match c.st {
                    St::Pending => json!({"type": ty, "toolCallId": c.id, "state": "approval-requested", "input": c.input, "approval": {"id": apr}}),
                    St::Approved => json!({"type": ty, "toolCallId": c.id, "state": "output-available", "input": c.input, "approval": {"id": apr, "approved": true}, "output": "ok"}),
                    St::Denied => json!({"type": ty, "toolCallId": c.id, "state": "output-denied", "input": c.input, "approval": {"id": apr, "approved": false}}),
                });
            }
            if self.finished {
                parts.push(json!({"type": "text", "text": "all done"}));
            }
            msgs.push(json!({"id": "msg_a1", "role": "assistant", "parts": parts}));
        }
        json!({"id": "thread_42", "messages": msgs})
    }
    fn handle(&mut self, r: &HttpRequest) -> Resp {
        match r.method {
            Method::Get if r.url.contains("/threads/") => {
                Resp::Plain(HttpResponse::new(200, self.history().to_string()))
            }
            Method::Get => {
                // The replay of a paused run: its pending calls again.
                if !self.sent || self.pending().is_empty() {
                    return Resp::Plain(HttpResponse::new(204, ""));
                }
                let mut c = Vec::new();
                self.head(&mut c);
                for p in self.pending() {
                    c.push(
                        json!({"type": "tool-input-start", "toolCallId": p.id, "toolName": p.name}),
                    );
                    c.push(json!({"type": "tool-input-available", "toolCallId": p.id, "toolName": p.name, "input": p.input}));
                }
                self.approvals(&mut c);
                Resp::Stream(sse(&c, true))
            }
            Method::Post => {
                let body: Value = serde_json::from_str(r.body.as_deref().unwrap_or("{}")).unwrap();
                let mut c = Vec::new();
                if body.get("approval").is_none() {
                    if self.sent {
                        return Resp::Plain(HttpResponse::new(
                            409,
                            r#"{"error":"paused","code":"run_paused"}"#,
                        ));
                    }
                    self.sent = true;
                    self.head(&mut c);
                    self.step_calls(&mut c);
                    self.approvals(&mut c);
                    return Resp::Stream(sse(&c, true));
                }
                let a = &body["approval"];
                assert_eq!(a["runId"], json!("run_1"), "a continuation names the run");
                let id = a["toolCallId"].as_str().unwrap().to_owned();
                let approved = a["approved"].as_bool().unwrap();
                let step = self.step;
                let Some(call) = self
                    .calls
                    .iter_mut()
                    .find(|c| c.id == id && c.step <= step && c.st == St::Pending)
                else {
                    return Resp::Plain(HttpResponse::new(
                        409,
                        r#"{"error":"not pending","code":"tool_call_not_pending"}"#,
                    ));
                };
                call.st = if approved { St::Approved } else { St::Denied };
                self.head(&mut c);
                if approved {
                    c.push(
                        json!({"type": "tool-output-available", "toolCallId": id, "output": "ok"}),
                    );
                } else {
                    c.push(json!({"type": "tool-output-denied", "toolCallId": id}));
                }
                if !self.pending().is_empty() {
                    self.approvals(&mut c);
                } else if self.calls.iter().any(|c| c.step > self.step) {
                    // The step is over: the run goes on to the next, and pauses there.
                    c.push(json!({"type": "finish-step"}));
                    self.step += 1;
                    self.step_calls(&mut c);
                    self.approvals(&mut c);
                } else {
                    self.finished = true;
                    self.final_chunks(&mut c);
                }
                Resp::Stream(sse(&c, true))
            }
        }
    }
}

/// A request of one tab: not yet at the server, or its answer being delivered.
enum Wire {
    Out(HttpRequest),
    Plain(RequestId, HttpResponse),
    /// Opened yet?, the bytes left, piece size.
    Stream(RequestId, bool, Vec<u8>),
}

struct Tab {
    c: Client,
    wire: Option<Wire>,
    events: usize,
    sends: bool,
}

struct World {
    tabs: Vec<Tab>,
    storage: Option<String>,
    server: Server,
    now: u64,
    log: Vec<String>,
    verbose: bool,
    /// Stops and reloads too.
    chaos: bool,
    /// A client's invariants failed (the run stops there).
    broken: Option<String>,
    rng: Rng,
    seed: u64,
}

/// How every tab decides a call (a person's one intent, whichever tab they act in).
fn rejects(call_id: &str, seed: u64) -> bool {
    call_id
        .bytes()
        .fold(seed, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
        % 3
        == 0
}

fn client() -> Client {
    let mut config = Config::sidenet("https://api.test", "thread_42");
    config.persist = true;
    Client::new(config).expect("config")
}

fn short(v: &str) -> String {
    if v.is_empty() {
        return "<removed>".into();
    }
    let j: Value = serde_json::from_str(v).unwrap_or(Value::Null);
    format!(
        "{{ids {} settled {} drafts {}}}",
        j["callIds"],
        j.get("settled").cloned().unwrap_or(Value::Null),
        j["drafts"]
    )
}

impl World {
    fn after(&mut self, t: usize) {
        loop {
            let mut outs = Vec::new();
            while let Some(o) = self.tabs[t].c.poll_output() {
                outs.push(o);
            }
            for o in outs {
                match o {
                    Output::Http(r) => {
                        note!(
                            self,
                            "  tab{t} http {:?} {}{}",
                            r.method,
                            r.url.rsplit('/').next().unwrap_or(""),
                            r.body
                                .as_deref()
                                .map(|b| {
                                    let j: Value = serde_json::from_str(b).unwrap();
                                    format!(
                                        " {}",
                                        j.get("approval")
                                            .map(|a| a.to_string())
                                            .unwrap_or("msg".into())
                                    )
                                })
                                .unwrap_or_default()
                        );
                        self.tabs[t].wire = Some(Wire::Out(r));
                    }
                    Output::Cancel(_) => {
                        // Stopped: a request still on its way may reach the server all the same
                        // (its answer is lost).
                        if let Some(Wire::Out(r)) = self.tabs[t].wire.take() {
                            if self.rng.below(2) == 0 {
                                note!(self, "  tab{t}'s stopped request reaches the server");
                                let _ = self.server.handle(&r);
                            }
                        }
                    }
                    Output::Persist { value, .. } => {
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
            "tab{t}: {:?}{} cards {}",
            s.phase,
            if s.busy { " busy" } else { "" },
            s.suspension
                .as_ref()
                .map(|s| s
                    .tools
                    .iter()
                    .map(|t| format!(
                        "{}:{:?}{}",
                        &t.call_id[5..],
                        t.approval,
                        if t.draft { "(draft)" } else { "" }
                    ))
                    .collect::<Vec<_>>()
                    .join(","))
                .unwrap_or("-".into())
        )
    }

    /// One random action; false when none is enabled.
    fn step(&mut self) -> bool {
        self.now += 1;
        let now = self.now;
        let mut acts: Vec<(usize, u8)> = Vec::new();
        for (i, t) in self.tabs.iter().enumerate() {
            if t.wire.is_some() {
                acts.push((i, 0));
            }
            if t.events > 0 {
                acts.push((i, 1));
            }
            let s = t.c.snapshot();
            // Stop (a person pressing it while a message, decisions or a reply are on their way:
            // the demo offers no Stop for a load), and a reload of the page.
            let stoppable = matches!(
                s.phase,
                Phase::Sending | Phase::Submitting | Phase::Streaming
            );
            if self.chaos && s.busy && stoppable && self.rng.below(8) == 0 {
                acts.push((i, 6));
            }
            if self.chaos && self.rng.below(40) == 0 {
                acts.push((i, 7));
            }
            if !s.busy {
                if let Some(sus) = &s.suspension {
                    if !sus.undecided.is_empty() {
                        acts.push((i, 2));
                    }
                    if s.can_submit {
                        acts.push((i, 3));
                    }
                } else if t.sends && !self.server.sent && s.can_send && t.wire.is_none() {
                    acts.push((i, 4));
                } else if !self.server.finished && t.wire.is_none() {
                    acts.push((i, 5));
                }
            }
        }
        if acts.is_empty() {
            return false;
        }
        let (t, a) = acts[self.rng.below(acts.len())];
        match a {
            0 => {
                let wire = self.tabs[t].wire.take();
                match wire {
                    Some(Wire::Out(r)) => {
                        let resp = self.server.handle(&r);
                        note!(self, "server handles tab{t}'s request");
                        self.tabs[t].wire = Some(match resp {
                            Resp::Plain(p) => Wire::Plain(r.id, p),
                            Resp::Stream(b) => Wire::Stream(r.id, false, b),
                        });
                    }
                    Some(Wire::Plain(id, p)) => {
                        note!(self, "tab{t} gets answer {}", p.status);
                        self.tabs[t].c.handle_response(now, id, p);
                        self.after(t);
                    }
                    Some(Wire::Stream(id, false, b)) => {
                        note!(self, "tab{t} stream opens");
                        self.tabs[t].wire = Some(Wire::Stream(id, true, b));
                        self.tabs[t].c.handle_stream_start(now, id, 200);
                        self.after(t);
                    }
                    Some(Wire::Stream(id, true, b)) => {
                        if b.is_empty() {
                            note!(self, "tab{t} stream ends");
                            self.tabs[t].c.handle_stream_end(now, id);
                        } else {
                            let n = (1 + self.rng.below(3)) * 60;
                            let n = n.min(b.len());
                            self.tabs[t].wire = Some(Wire::Stream(id, true, b[n..].to_vec()));
                            note!(self, "tab{t} stream chunk");
                            self.tabs[t].c.handle_stream_chunk(now, id, &b[..n]);
                        }
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
                let und = self.tabs[t]
                    .c
                    .snapshot()
                    .suspension
                    .as_ref()
                    .unwrap()
                    .undecided
                    .clone();
                let id = &und[self.rng.below(und.len())];
                let reject = rejects(id, self.seed);
                note!(
                    self,
                    "tab{t} {} {id}",
                    if reject { "rejects" } else { "approves" }
                );
                let _ = if reject {
                    self.tabs[t].c.reject(id, Some("no"))
                } else {
                    self.tabs[t].c.approve(id)
                };
                self.after(t);
            }
            3 => {
                note!(self, "tab{t} submits");
                let _ = self.tabs[t].c.submit(now);
                self.after(t);
            }
            4 => {
                note!(self, "tab{t} sends");
                let _ = self.tabs[t].c.send(
                    now,
                    "buy 2 tickets at 80 and delete /tmp/x and email w@example.com about all",
                );
                self.after(t);
            }
            5 => {
                note!(self, "tab{t} loads");
                let _ = self.tabs[t].c.load(now);
                self.after(t);
            }
            6 => {
                note!(self, "tab{t} stops");
                self.tabs[t].c.abort();
                self.after(t);
            }
            _ => {
                // A new client on the same storage, which it reads before its first load; the
                // old one's request may still reach the server.
                note!(self, "tab{t} reloads");
                if let Some(Wire::Out(r)) = self.tabs[t].wire.take() {
                    if self.rng.below(2) == 0 {
                        let _ = self.server.handle(&r);
                    }
                }
                let mut c = client();
                if let Some(v) = &self.storage {
                    c.restore_drafts(v);
                }
                self.tabs[t].c = c;
                self.tabs[t].events = 0;
                let _ = self.tabs[t].c.load(now);
                self.after(t);
            }
        }
        if self.verbose {
            let d = self.desc(t);
            note!(self, "      = {d}");
        }
        if let Err(e) = self.tabs[t].c.invariants() {
            self.broken = Some(format!("tab{t}: invariant: {e}"));
            return false;
        }
        true
    }
}

fn run(seed: u64, chaos: bool, verbose: bool) -> Result<(), String> {
    let tabs = (0..3)
        .map(|i| Tab {
            c: client(),
            wire: None,
            events: 0,
            sends: i == 0,
        })
        .collect();
    let mut w = World {
        tabs,
        storage: None,
        server: Server::new(seed % 2 == 0, seed % 3 != 0),
        now: 1000,
        log: Vec::new(),
        verbose,
        chaos,
        broken: None,
        rng: Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
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
    if let Some(broken) = w.broken.take() {
        return Err(w.failure(&broken));
    }
    let mut wrong = Vec::new();
    if !w.server.sent {
        wrong.push("the message was never sent".to_owned());
    }
    if !w.server.finished {
        wrong.push("the run did not finish".to_owned());
    }
    for call in &w.server.calls {
        let want = if rejects(call.id, seed) {
            St::Denied
        } else {
            St::Approved
        };
        if call.st != want {
            wrong.push(format!("{} is {:?}, decided {:?}", call.id, call.st, want));
        }
    }
    for t in 0..3 {
        if w.tabs[t].c.snapshot().suspension.is_some() {
            wrong.push(format!("tab{t} left on a pause"));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(w.failure(&wrong.join("; ")))
    }
}

impl World {
    fn failure(&self, what: &str) -> String {
        let mut msg = format!("{what}\n{}", self.log.join("\n"));
        for i in 0..3 {
            msg.push_str(&format!("\n{}", self.desc(i)));
        }
        msg.push_str(&format!(
            "\nstorage {}",
            short(self.storage.as_deref().unwrap_or(""))
        ));
        msg
    }
}

#[test]
fn three_tabs_in_random_interleavings_finish_with_every_decision_as_made() {
    let env = |k: &str| std::env::var(k).ok().and_then(|s| s.parse::<u64>().ok());
    if let Some(seed) = env("SEED") {
        for chaos in [false, true] {
            if let Err(m) = run(seed, chaos, true) {
                panic!("seed {seed} (stops and reloads: {chaos}): {m}");
            }
        }
        return;
    }
    let seeds = env("SEEDS").unwrap_or(400);
    let first = env("FIRST").unwrap_or(1);
    let mut failed = Vec::new();
    for seed in first..first + seeds {
        for chaos in [false, true] {
            if let Err(m) = run(seed, chaos, false) {
                failed.push(format!(
                    "seed {seed} (stops and reloads: {chaos}): {}",
                    m.lines().next().unwrap_or("")
                ));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} runs failed (SEED=n replays one with its log):\n{}",
        failed.len(),
        seeds * 2,
        failed.join("\n")
    );
}
