//! The Sidenet dialect: a UI message stream per request, run ids, one continuation per decision.
//!
//! - `POST {chat}` (`/v1/chat`) with `{"messages":[{"role":"user","parts":[{"type":"text","text"}]}],
//!   "threadId", "agentVersionId"?}` → an event stream: text deltas, tool parts, and, for a gated call,
//!   `data-tool-call-approval {runId, toolCallId, toolName, reason, args, agentVersionId}` (or the AI
//!   SDK form: `data-run {runId, agentVersionId}` then `tool-approval-request {approvalId,
//!   toolCallId}`, name and input from the earlier `tool-input-available`); a paused stream ends
//!   there, a finished one with `finish` and `[DONE]`.
//! - a decision: `POST {chat}` with `{"messages":[], "threadId", "agentVersionId", "approval":
//!   {"runId", "toolCallId", "approved"}}` (the version that paused) → the stream goes on: the call's
//!   `tool-output-available` / `tool-output-denied`, then the remaining approval chunks, or the next
//!   step, or the final text.
//! - `GET {thread}` (`/v1/threads/{threadId}`) → `{id, messages}` as AI SDK UI messages (404: none);
//! - `GET {stream}` (`/v1/chat/stream?threadId=`) → the pending approval chunks replayed (inside the
//!   grace window), or 204 (nothing paused, or the run was abandoned).
//! - `transport: "collect"`: `POST {run}` (`/v1/agents/{agentId}/run`) with the same bodies →
//!   `{chunks: [...], finishReason}`, applied like a stream.
//!
//! # States
//!
//! One flight at a time, as in the Neuron dialect. A load is two requests (history, then replay); a
//! submission is one continuation per decided call, in card order, each sent only when the previous
//! one's stream has ended and only for a call the last stream (or replay) still shows pending.
//!
//! ```text
//!   idle ── load() ─▶ loading: GET thread (404 ⇒ empty) ─▶ GET replay ─┬ approval chunks ─▶ awaiting_approval
//!                        5xx / network: backoff, retry                  ├ 204, a pause was known and the
//!                                                                       │   history shows it waiting ─▶ both
//!                                                                       │   read again once ─▶ expired
//!                                                                       └ 204 ─▶ idle | completed
//!   send(text) ─▶ sending ─ 2xx ─▶ streaming (deltas into `streaming`) ─┬ approvals ─▶ awaiting_approval
//!                   │                                                   └ finish / [DONE] ─▶ completed
//!                   ├ 409 ─▶ conflict (reload) ─▶ error conflict + unsentText (unless it landed)
//!                   ├ 5xx / network before the stream: NOT retried ─▶ sending (reload): landed?
//!                   └ dropped mid-stream ─▶ loading (history + replay), the op goes on
//!   awaiting_approval ─ approve / reject (drafts) ─ submit() ─▶ submitting ─ 2xx ─▶ streaming ─▶ next
//!        continuation (if its call is still pending) … ─▶ awaiting_approval (the rest) | completed
//!        5xx / network before the stream ─▶ backoff, identical re-send
//!        409 / 400 ─▶ conflict (reload): the call recorded as decided ⇒ acknowledged, go on;
//!                     still pending, the same call ⇒ error, draft kept; decided otherwise,
//!                     another call under its callId, abandoned ⇒ dropped
//!        dropped mid-stream ─▶ acknowledged (the server answered 2xx) ─▶ loading ─▶ go on
//! ```

use crate::prelude::*;
use core::mem::take;

use crate::approval::{Approval, GatedTool, Suspension};
use crate::decisions::{Decision, Decisions};
use crate::error::{Error, ErrorCode, Result};
use crate::json::{self, put, put_str, Map, Obj, Value};
use crate::stream::{inputs_of, parse_chunk_value, Chunk, ChunkDecoder};
use crate::thread::{self, Message};

use super::audit::{Audit, Fate};
use super::config::{Config, Transport};
#[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
use super::engine::Wait;
use super::engine::{check_text, seed_auto, Core, Flight, Job, Stage, State, Submission, Why};
use super::snapshot::{
    MessageKindView, MessageView, Messages, Snapshot, SuspensionView, ToolStatus, ToolView,
};
use super::{
    ids_of, listed, not_suspended, read_stored, restore_into, retryable_status, status_error,
    submission_view, suspension_view, transport_error, unsaved_base, HttpResponse, Method, OpId,
    Output, PauseKey, RequestId, TransportError,
};

/// The most bytes buffered of a non-2xx answer (the rest is dropped).
const MAX_BUFFER: usize = 1 << 20;

/// A pause: the run, and its calls still pending on the server, in arrival order.
#[derive(Debug, Clone, PartialEq)]
struct Pause {
    run_id: String,
    agent_version_id: Option<String>,
    /// The cards' callIds, in order (listed once, for the stored drafts of every step).
    call_ids: Vec<String>,
    /// The cards (`pending`, never empty) and the assistant message the pause is on
    /// (`message_id`), kept as the [`Suspension`] the decisions are made from (no copy to build).
    /// A card whose continuation the server accepted stays until the call leaves the pause, that
    /// decision as its `approval` (see `ack_current`).
    tail: Suspension,
}

impl Pause {
    #[inline(always)]
    fn has(&self, call_id: &str) -> bool {
        self.card(call_id).is_some()
    }

    fn card(&self, call_id: &str) -> Option<&GatedTool> {
        self.tail.pending.iter().find(|c| c.call_id == call_id)
    }

    /// Is the call's card open: pending, its decision not yet accepted by the server?
    fn open(&self, call_id: &str) -> bool {
        self.card(call_id)
            .is_some_and(|c| c.approval == Approval::Pending)
    }

    /// Is any card open (its decision not yet accepted by the server)?
    fn any_open(&self) -> bool {
        self.tail
            .pending
            .iter()
            .any(|c| c.approval == Approval::Pending)
    }

    /// Did the server accept a decision for this card (its continuation answered 2xx)?
    fn accepted(&self, call_id: &str) -> bool {
        self.card(call_id)
            .is_some_and(|c| c.approval != Approval::Pending)
    }

    /// The decisions for this pause.
    fn decisions(&self) -> Option<Decisions> {
        Decisions::of(&self.tail)
    }
}

/// What a stream told so far.
#[derive(Debug)]
pub(super) struct Feed {
    /// The cards announced, de-duplicated by toolCallId, in arrival order.
    approvals: Vec<GatedTool>,
    /// From the last `data-run` with a run id: the run id and agent version (two plain options,
    /// not a tuple type of their own).
    run_id: Option<String>,
    run_version: Option<String>,
    /// The `start` chunk's messageId.
    start_id: Option<String>,
    /// Tool names and inputs seen (`tool-input-*`), for AI SDK approval requests on a replay: kept
    /// as tool views (only `call_id`, `name` and `inputs` are read), the list type the messages use.
    inputs: Vec<ToolView>,
    /// A `finish`, `[DONE]`, `abort` or `error` chunk (each ends what the stream tells; one flag).
    done: bool,
    /// A `finish` chunk: the run ended (a bare `[DONE]` ends a paused stream, an `abort` chunk a
    /// stopped one, a collected answer without `finish` a paused run's output).
    finished: bool,
    /// The `[DONE]` chunk: nothing follows it (the request is let go, whether or not the server
    /// closes the connection).
    last: bool,
    /// An `error` chunk.
    error: Option<String>,
    /// The `finish` chunk's `finishReason`.
    finish_reason: Option<String>,
    /// The first malformed chunk.
    malformed: Option<Error>,
}

/// Written out and not inlined: every stream starts one (a call at each site, not a copy).
impl Default for Feed {
    #[inline(never)]
    fn default() -> Feed {
        Feed {
            approvals: Vec::new(),
            run_id: None,
            run_version: None,
            start_id: None,
            inputs: Vec::new(),
            done: false,
            finished: false,
            last: false,
            error: None,
            finish_reason: None,
            malformed: None,
        }
    }
}

impl Feed {
    fn terminal(&self) -> bool {
        self.done || !self.approvals.is_empty()
    }
}

/// What an engine and each [`Rx`] carry to exist: a unit value in a build with the `sidenet`
/// feature. Without it there is no value of this type, so no engine and no `Rx` can be made: the
/// shared core's `Option<Rx>` is known to be `None`, and none of the code that would drop an
/// answer is linked into the Neuron-only module (-181 B gzip there).
#[cfg(feature = "sidenet")]
#[derive(Debug, Clone, Copy)]
pub(super) struct Live;
#[cfg(not(feature = "sidenet"))]
pub(super) type Live = core::convert::Infallible;

/// The [`Live`] value, where there is one.
#[cfg(feature = "sidenet")]
pub(super) const LIVE: Option<Live> = Some(Live);
#[cfg(not(feature = "sidenet"))]
pub(super) const LIVE: Option<Live> = None;

#[derive(Debug)]
pub(super) enum Rx {
    /// A 2xx event stream being decoded.
    Stream(Box<(ChunkDecoder, Feed)>, Live),
    /// Any other answer, buffered to its end.
    Buffer {
        status: u16,
        body: Vec<u8>,
        _live: Live,
    },
}

/// The message being streamed: its raw form (the view is `snapshot.streaming`).
#[derive(Debug, Default)]
struct Building {
    /// The raw message without `parts`.
    base: Map,
    parts: Vec<Value>,
    /// The open text part: its id and index in `parts`.
    text_part: Option<(String, usize)>,
    /// Where the current step began: its first index in `parts` and in the view's tools (0 and 0
    /// until a `start-step`: a continuation goes on with the paused message's last step).
    step: (usize, usize),
    /// No chunk applied yet.
    fresh: bool,
}

/// What the client believed paused when it lost sight of the run.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    Calls(Vec<String>),
    /// A stream dropped before telling.
    Unknown,
}

/// A chat body: `{"messages":[<the user message>?],"threadId","agentVersionId"?,"approval"?:
/// {"runId","toolCallId","approved"}}`.
fn chat_body(
    text: Option<&str>,
    thread_id: &str,
    agent_version_id: Option<&str>,
    approval: Option<(&str, &str, bool)>,
) -> String {
    let mut out = String::new();
    let mut o = Obj::new(&mut out);
    let messages = o.key("messages");
    messages.push('[');
    if let Some(text) = text {
        json::write_value(messages, &Value::Object(user_message(text)));
    }
    messages.push(']');
    o.field_if("threadId", Some(thread_id))
        .field_if("agentVersionId", agent_version_id);
    if let Some((run_id, tool_call_id, approved)) = approval {
        let mut inner = Obj::new(o.key("approval"));
        inner
            .field("runId", &run_id)
            .field("toolCallId", &tool_call_id)
            .field("approved", &approved);
        inner.end();
    }
    o.end();
    out
}

/// `{"role":"user","parts":[{"type":"text","text":<text>}]}`.
fn user_message(text: &str) -> Map {
    let mut raw = Map::new();
    put_str(&mut raw, "role", "user");
    put(&mut raw, "parts", Value::Array(vec![text_part(text)]));
    raw
}

/// `{"type":"text","text":<text>}`.
fn text_part(text: &str) -> Value {
    let mut part = Map::new();
    put_str(&mut part, "type", "text");
    put_str(&mut part, "text", text);
    Value::Object(part)
}

/// The Sidenet engine behind [`super::Client`].
#[derive(Debug)]
pub(crate) struct Sidenet {
    /// The state both engines keep alike.
    pub(super) c: Core,
    messages: Shared<Vec<MessageView>>,
    /// How many of `messages` are the user's, and the index of the last (what `users` answers,
    /// kept up to date by each change instead of counted at each message sent: a long history's
    /// count is a walk through all its views).
    users: (usize, Option<usize>),
    building: Option<Building>,
    /// `snapshot.streaming` changed in place since the last step.
    stream_dirty: bool,
    /// Bumped whenever `snapshot.streaming` becomes a new message; between bumps its text only
    /// grows at the end.
    stream_epoch: u64,
    pause: Option<Pause>,
    expired: bool,
    expect: Option<Expect>,
    /// The calls whose continuation, the last record taken in from another tab says, the server
    /// took (that tab's reply streaming: `settled`): never sent again from here, nor changed. The
    /// next record that lists none is written once that reply ended (the run went on), and this
    /// tab loads. Emptied by each load of this tab (the server's word).
    taken_elsewhere: Vec<String>,
    /// Reasons the user gave to rejections (the protocol carries none): one per continuation sent
    /// with a reason (a re-send adds its own); the last for a call counts. See [`Reason`].
    reasons: Vec<Reason>,
    /// While a collected continuation's chunks are applied: the call it declined (a streamed
    /// one's is read from the flight).
    declining: Option<String>,
    /// The bookkeeping of `check_invariants` (empty in release); the pause is the run id.
    audit: Audit<String>,
    live: Live,
}

impl Sidenet {
    pub(crate) fn config(&self) -> &Config {
        &self.c.config
    }

    pub(crate) fn new(config: Config, live: Live) -> Sidenet {
        let mut s = Sidenet {
            c: Core::new(config),
            messages: Shared::new(Vec::new()),
            users: (0, None),
            building: None,
            stream_dirty: false,
            stream_epoch: 0,
            pause: None,
            expired: false,
            expect: None,
            taken_elsewhere: Vec::new(),
            reasons: Vec::new(),
            declining: None,
            audit: Audit::new(),
            live,
        };
        s.c.snapshot = s.build_head();
        s
    }

    // ------------------------------------------------------------------------------------------
    // Commands

    pub(crate) fn load(&mut self, now: u64) -> Result<OpId> {
        self.c.tick(now);
        self.c.check_not_busy()?;
        self.c.clear_notices();
        self.expired = false;
        let op = self.c.new_op();
        self.start_load(Some(op), Why::User);
        self.settle();
        Ok(op)
    }

    pub(crate) fn send(&mut self, now: u64, text: &str) -> Result<OpId> {
        let op = self.c.begin_send(now, text, self.pause.is_some())?;
        self.start_send(op, text.to_owned());
        self.settle();
        Ok(op)
    }

    pub(crate) fn decide(&mut self, call_id: &str, decision: Decision) -> Result<Option<OpId>> {
        // The audit's copy of the decision (none is made where it is off).
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        let held = decision.clone();
        self.check_unsent(call_id)?;
        self.c.set_draft(call_id, decision)?;
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        if let Some(pause) = &self.pause {
            self.audit.hold(&pause.run_id, call_id, &held);
        }
        let mut op = None;
        if self.c.auto_submit_due() {
            op = self.submit_now(None).ok();
        }
        self.settle();
        Ok(op)
    }

    pub(crate) fn clear(&mut self, call_id: &str) -> Result<()> {
        self.check_unsent(call_id)?;
        if self.c.clear_draft(call_id)? {
            self.audit.settle(call_id, Fate::Cleared);
        }
        self.settle();
        Ok(())
    }

    pub(crate) fn allow_tool(&mut self, now: u64, name: &str, allow: bool) {
        self.c.tick(now);
        self.c.allow_tool(name, allow);
        self.settle();
    }

    pub(crate) fn submit(&mut self, now: u64) -> Result<OpId> {
        self.c.tick(now);
        self.c.check_not_busy()?;
        let op = self.submit_now(None)?;
        self.settle();
        Ok(op)
    }

    pub(crate) fn reject_all_and_send(
        &mut self,
        now: u64,
        text: &str,
        reason: Option<&str>,
    ) -> Result<OpId> {
        self.c.tick(now);
        check_text(text)?;
        self.c.check_not_busy()?;
        if self.pause.is_none() {
            return self.send(now, text);
        }
        // The audit's record of the rejections (no list of them is made where it is off).
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        let undecided = self.c.undecided();
        self.c.reject_undecided(reason)?;
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        if let Some(pause) = &self.pause {
            for id in &undecided {
                self.audit
                    .hold(&pause.run_id, id, &Decision::reject(reason));
            }
        }
        let op = self.submit_now(Some(text.to_owned()))?;
        self.c.unsent_text = None;
        self.settle();
        Ok(op)
    }

    pub(crate) fn abort(&mut self) {
        if let Some((flight, out)) = self.c.cancel() {
            if let Some(id) = out {
                self.audit.ended(id);
            }
            self.aborted(flight);
        }
        self.settle();
    }

    pub(crate) fn restore_drafts(&mut self, persisted: &str) {
        if let Some(persisted) = self.c.restore(persisted) {
            let taken = self.apply_restore(persisted);
            // Caught up by a load (no command is in flight when stored drafts are applied).
            if self.c.restored(taken, persisted, self.pause.is_some()) {
                self.start_load(None, Why::User);
            }
        } else if self.c.loaded || self.expect.is_some() {
            // Read before the first load alone, and only while nothing is expected yet.
        } else if let Some(mut stored) = read_stored(persisted) {
            // The ids taken, not moved out: `stored` is dropped whole.
            if stored.run_id.is_some() {
                // Nothing, once a call's continuation was taken (its reply was streaming): the
                // run went on, and is no abandoned pause if the replay is empty (not even one
                // whose other calls still wait: the run is busy with the settled one).
                let mut ids = take(&mut stored.call_ids);
                if ids.iter().any(|id| stored.settled(id)) {
                    ids.clear();
                }
                self.expect = Some(Expect::Calls(ids));
            }
        }
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        self.audit.forget(&self.c.drafts());
        self.settle();
    }

    // ------------------------------------------------------------------------------------------
    // Inputs

    pub(crate) fn handle_response(&mut self, now: u64, id: RequestId, response: HttpResponse) {
        self.c.tick(now);
        let streamed = match &self.c.state {
            State::Busy(f) if f.awaits(id) && f.rx.is_none() => {
                f.streaming && is_stream_status(response.status)
            }
            _ => return,
        };
        if streamed {
            self.open(id, response.status);
            self.bytes(id, &response.body);
            self.close(now, id);
        } else if let Some(Flight { job, attempt, .. }) = self.take_flight(id) {
            self.on_response(now, job, attempt, response.status, response.body);
        }
        self.settle();
    }

    pub(crate) fn handle_stream_start(&mut self, now: u64, id: RequestId, status: u16) {
        self.c.tick(now);
        self.open(id, status);
        self.settle();
    }

    pub(crate) fn handle_stream_chunk(&mut self, now: u64, id: RequestId, bytes: &[u8]) {
        self.c.tick(now);
        if self.bytes(id, bytes) {
            // `[DONE]` came: the answer is whole, though the server may hold the connection open.
            self.c.outputs.push(Output::Cancel(id));
            self.close(now, id);
        }
        self.settle();
    }

    pub(crate) fn handle_stream_end(&mut self, now: u64, id: RequestId) {
        self.c.tick(now);
        self.close(now, id);
        self.settle();
    }

    pub(crate) fn handle_failure(&mut self, now: u64, id: RequestId, error: TransportError) {
        self.c.tick(now);
        let Some(flight) = self.take_flight(id) else {
            return;
        };
        match transport_error(error, self.c.config.timeout_ms) {
            None => self.aborted(flight),
            error => self.end_rx(now, flight, error),
        }
        self.settle();
    }

    pub(crate) fn handle_timeout(&mut self, now: u64) {
        self.c.tick(now);
        if let Some(flight) = self.c.due(now) {
            self.issue(flight.job, flight.attempt.saturating_add(1));
        }
        self.settle();
    }

    // ------------------------------------------------------------------------------------------
    // Outputs

    pub(crate) fn poll_output(&mut self) -> Option<Output> {
        self.c.poll_output()
    }

    pub(crate) fn poll_timeout(&self) -> Option<u64> {
        self.c.poll_timeout()
    }

    pub(crate) fn snapshot(&self) -> &Snapshot {
        &self.c.snapshot
    }

    pub(crate) fn decisions(&self) -> Option<&Decisions> {
        self.c.decisions.as_ref()
    }

    pub(crate) fn stream_epoch(&self) -> u64 {
        self.stream_epoch
    }

    #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
    pub(crate) fn messages_touched(&self) -> u64 {
        self.audit.touched
    }

    #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
    pub(crate) fn check_invariants(&self) -> core::result::Result<(), String> {
        self.c.check_head()?;
        self.c.check_unchanged()?;
        if self.users != count_users(&self.messages) {
            return Err(format!("the user messages are not {:?}", self.users));
        }
        self.audit.first_error()?;
        match (&self.c.state, self.audit.outstanding.first()) {
            (
                State::Busy(Flight {
                    wait: Wait::Out(id),
                    ..
                }),
                Some(o),
            ) if id == o => {}
            (
                State::Busy(Flight {
                    wait: Wait::Out(id),
                    ..
                }),
                _,
            ) => return Err(format!("request {} in flight but not tracked", id.0)),
            (_, Some(o)) => return Err(format!("request {} tracked but not awaited", o.0)),
            _ => {}
        }
        let chat_stream = matches!(
            &self.c.state,
            State::Busy(Flight { job, rx: Some(Rx::Stream(..)), .. }) if job.is_chat()
        );
        if self.building.is_some() != chat_stream {
            return Err("a streaming message exists iff a chat stream is open".to_owned());
        }
        if self.c.snapshot.streaming.is_some() != self.building.is_some() {
            return Err("the snapshot's streaming message is out of step".to_owned());
        }
        if !Shared::ptr_eq(&self.c.snapshot.messages.0, &self.messages) {
            return Err("the snapshot does not show the settled messages".to_owned());
        }
        if self.c.decisions.is_some() != self.pause.is_some() {
            return Err("a decision set exists iff the run is paused".to_owned());
        }
        if self.pause.is_none() && !self.c.auto.is_empty() {
            return Err(
                "calls approved by an allowed tool remembered with nothing paused".to_owned(),
            );
        }
        if self.c.loaded && self.c.held_restore.is_some() {
            return Err("restored drafts held after the thread was loaded".to_owned());
        }
        let drafts = self.c.drafts();
        if let Some(pause) = &self.pause {
            if pause.tail.pending.is_empty() {
                return Err("a pause without cards".to_owned());
            }
            if pause.call_ids != ids_of(&pause.tail.pending) {
                return Err("a pause's callIds are not its cards'".to_owned());
            }
            for (id, _) in &drafts.0 {
                if !pause.has(id) {
                    return Err(format!(
                        "a draft for {}, which is not pending",
                        json::quote(id)
                    ));
                }
            }
        }
        let run = self.pause.as_ref().map(|p| p.run_id.as_str());
        for entry in self.audit.held() {
            if Some(entry.pause.as_str()) != run {
                return Err(format!(
                    "decision for {} neither acknowledged nor held: its pause is gone",
                    json::quote(&entry.call_id)
                ));
            }
            if drafts.get(&entry.call_id) != Some(&entry.decision) {
                return Err(format!(
                    "decision for {} neither acknowledged nor held",
                    json::quote(&entry.call_id)
                ));
            }
        }
        for (id, d) in &drafts.0 {
            let held = self
                .audit
                .held()
                .any(|e| e.call_id == *id && e.decision == *d);
            if !held {
                return Err(format!(
                    "draft for {} that the user never made",
                    json::quote(id)
                ));
            }
        }
        for (i, m) in self.messages.iter().enumerate() {
            if m.index != i {
                return Err(format!("message {i} has index {}", m.index));
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------------------------------------
    // Internals: commands

    /// Starts the submission of the drafts not yet acknowledged (the op is new).
    fn submit_now(&mut self, then_send: Option<String>) -> Result<OpId> {
        // Decisions exist iff a pause does.
        let Some(decisions) = &self.c.decisions else {
            return Err(not_suspended());
        };
        let mut queue = Vec::new();
        for (id, d) in decisions.local() {
            if !self.sent(id) {
                queue.push((id.to_owned(), d.clone()));
            }
        }
        if queue.is_empty() {
            return Err(Error::new(
                ErrorCode::EmptyDecisions,
                "no decision to send: approve or reject at least one tool",
            ));
        }
        let op = self.c.new_op();
        self.c.clear_notices();
        self.continue_submission(Submission {
            op,
            body: String::new(),
            pause: PauseKey::default(),
            queue,
            queued: 0,
            sent: Vec::new(),
            skipped: Vec::new(),
            then_send,
        });
        Ok(op)
    }

    fn start_send(&mut self, op: OpId, text: String) {
        self.expired = false;
        self.c.run_completed = false;
        let users_before = self.c.loaded.then(|| self.users().0);
        self.issue(
            Job::Send {
                op,
                text,
                users_before,
            },
            1,
        );
    }

    fn start_load(&mut self, op: Option<OpId>, why: Why) {
        self.issue(
            Job::Load {
                op,
                why,
                stage: Stage::History,
                recheck: false,
            },
            1,
        );
    }

    /// Sends the continuation of the first queued call still pending; finishes when none is left.
    fn continue_submission(&mut self, mut sub: Submission) {
        loop {
            let Some((id, _)) = sub.next_queued() else {
                self.finish_submission(sub);
                return;
            };
            if self.drafted(id) {
                self.issue(Job::Submit(sub), 1);
                return;
            }
            if let Some((id, _)) = sub.take_queued() {
                sub.skipped.push(id);
            }
        }
    }

    fn finish_submission(&mut self, mut sub: Submission) {
        let cards = self.pause.as_ref().map_or(&[][..], |p| &p.tail.pending);
        // A pause never lacks cards.
        let paused = !cards.is_empty();
        self.c.last_submission = Some(submission_view(cards, &sub.sent, paused));
        // Taken, not moved out: `sub` is dropped whole.
        let then_send = sub.then_send.take();
        let op = sub.op;
        // A failed run always has its error shown (`failed` is never set without one).
        let result = if let (true, Some(error)) = (self.c.failed, &self.c.error) {
            let error = error.clone();
            self.c.unsend(then_send);
            Err(error)
        } else {
            match then_send {
                Some(text) if !paused => return self.start_send(op, text),
                Some(text) => return self.c.paused_again(op, text),
                None if sub.skipped.is_empty() => Ok(()),
                None => {
                    let error = self.not_sent(
                        "the paused run was abandoned before every decision was sent",
                        "some tools were no longer awaiting approval; those decisions were not sent",
                    );
                    return self.c.refuse(Some(op), error);
                }
            }
        };
        self.c.done(op, result);
    }

    fn issue(&mut self, job: Job, attempt: u32) {
        let body = match &job {
            Job::Load { .. } => None,
            Job::Send { text, .. } => {
                if self.pause.is_some() {
                    self.audit
                        .violation(|| "a message was sent while the run is paused".to_owned());
                }
                let config = &self.c.config;
                Some(chat_body(
                    Some(text),
                    &config.thread_id,
                    config.agent_version_id.as_deref(),
                    None,
                ))
            }
            Job::Submit(sub) => self.continuation_body(sub),
        };
        let config = &self.c.config;
        let routes = &config.routes;
        let collect = config.transport == Transport::Collect;
        let (method, route, streaming) = match &job {
            Job::Load {
                stage: Stage::History,
                ..
            } => (Method::Get, &routes.thread, false),
            Job::Load {
                stage: Stage::Replay,
                ..
            } => (Method::Get, &routes.stream, true),
            _ if collect => (Method::Post, &routes.run, false),
            _ => (Method::Post, &routes.chat, true),
        };
        let url = config.url(route);
        let id = self.c.http(job, attempt, method, url, body, streaming);
        self.audit.issued(id);
    }

    /// The body of the continuation for the first queued call, checking it is one to send.
    fn continuation_body(&mut self, sub: &Submission) -> Option<String> {
        let Some((call_id, decision)) = sub.next_queued() else {
            self.audit
                .violation(|| "an empty continuation was sent".to_owned());
            return None;
        };
        let Some(pause) = &self.pause else {
            self.audit
                .violation(|| "a continuation was sent while nothing is paused".to_owned());
            return None;
        };
        let Some(card) = pause.card(call_id) else {
            self.audit.violation(|| {
                format!(
                    "a continuation for {}, which is not pending, was sent",
                    json::quote(call_id)
                )
            });
            return None;
        };
        let run_id = card.run_id.as_ref().unwrap_or(&pause.run_id);
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        if pause.accepted(call_id) {
            self.audit.violation(|| {
                format!(
                    "the continuation for {} was sent again after the server accepted it",
                    json::quote(call_id)
                )
            });
        }
        // The pause's version already falls back to the configured one (see `make_pause`).
        let agent_version_id = card
            .agent_version_id
            .as_deref()
            .or(pause.agent_version_id.as_deref());
        let text = Some(chat_body(
            None,
            &self.c.config.thread_id,
            agent_version_id,
            Some((run_id, call_id, matches!(decision, Decision::Approve))),
        ));
        if let Some(reason) = decision.reason() {
            // The last reason given for a call is the one read (`reason_of` looks from the end).
            // Its message tells it from a later call reusing the callId (ids counted per step).
            let message = self.message_id_of(call_id);
            self.reasons
                .push((message, call_id.clone(), reason.to_owned()));
        }
        text
    }

    /// Is the call still pending, the call the person decided (its draft kept by `adopt_pause`)?
    fn drafted(&self, call_id: &str) -> bool {
        self.c
            .decisions
            .as_ref()
            .is_some_and(|d| d.lookup(call_id).0.is_some())
    }

    fn take_flight(&mut self, id: RequestId) -> Option<Flight> {
        let flight = self.c.take_flight(id)?;
        self.audit.ended(id);
        Some(flight)
    }

    fn aborted(&mut self, flight: Flight) {
        // Taken apart: the answer is dropped once, the job goes on.
        let Flight { mut job, rx, .. } = flight;
        let streamed = matches!(rx, Some(Rx::Stream(..)));
        if streamed && job.is_chat() {
            // What was shown stays; where the run stands is known again at the next load. A pause
            // keeps what it expects (its cards, set when it was adopted): the load tells an
            // abandoned card from a finished run by them.
            self.commit_building();
            // A continuation whose stream opened: the server accepted its decision.
            if let (Job::Submit(sub), Some(Rx::Stream(stream, _))) = (&mut job, &rx) {
                self.ack_current(sub, &stream.1);
            }
            // A reply that announced calls before it was stopped: the run is paused on them (its
            // snapshot outlives the request), so their cards stand, as at the end of the stream.
            // A continuation's pause with calls still open stays as it is instead (its drafts
            // kept; the server announces the calls still waiting, the new ones with them, on
            // the next continuation); one whose calls were all answered gives way to the new.
            if let Some(Rx::Stream(mut stream, _)) = rx {
                // A card is open when its own decision is not the server's (a callId is on one
                // card: no look-up by id).
                let open = matches!(job, Job::Submit(_))
                    && self.pause.as_ref().is_some_and(Pause::any_open);
                if !stream.1.approvals.is_empty() && !open {
                    self.adopt_cards(&mut stream.1);
                }
            }
            if self.pause.is_none() {
                self.expect = Some(Expect::Unknown);
            }
        }
        self.c.aborted(job, !streamed);
    }

    fn verify_send(
        &mut self,
        op: OpId,
        text: String,
        users_before: Option<usize>,
        error: Error,
        refused: bool,
    ) {
        self.start_load(
            Some(op),
            Why::VerifySend {
                text,
                users_before,
                error,
                refused,
            },
        );
    }

    // ------------------------------------------------------------------------------------------
    // Internals: answers

    fn open(&mut self, id: RequestId, status: u16) {
        let State::Busy(flight) = &mut self.c.state else {
            return;
        };
        if !flight.awaits(id) || flight.rx.is_some() {
            return;
        }
        let stream = flight.streaming && is_stream_status(status);
        // Set at one place (into the empty slot).
        flight.rx = Some(if stream {
            Rx::Stream(Box::default(), self.live)
        } else {
            Rx::Buffer {
                status,
                body: Vec::new(),
                _live: self.live,
            }
        });
        if !stream {
            return;
        }
        let user = match &flight.job {
            Job::Send { text, .. } => Some(text.clone()),
            _ => None,
        };
        if flight.job.is_chat() {
            if let Some(text) = user {
                self.append_user(text);
            }
            self.begin_building();
        }
    }

    /// Whether the stream's `[DONE]` has come.
    fn bytes(&mut self, id: RequestId, bytes: &[u8]) -> bool {
        let State::Busy(flight) = &mut self.c.state else {
            return false;
        };
        if !flight.awaits(id) {
            return false;
        }
        let chat = flight.job.is_chat();
        match &mut flight.rx {
            Some(Rx::Buffer { body, .. }) => {
                let room = MAX_BUFFER.saturating_sub(body.len());
                // Shorter than the room left: all of it.
                body.extend_from_slice(bytes.get(..room).unwrap_or(bytes));
            }
            rx @ Some(Rx::Stream(..)) => {
                // The box leaves the flight while its chunks are applied (no stand-in feed made
                // and dropped), and goes back (applying chunks never ends the flight).
                let Some(Rx::Stream(mut boxed, live)) = rx.take() else {
                    return false;
                };
                let (decoder, feed) = &mut *boxed;
                decoder.feed_with(bytes, &mut |item| self.apply(feed, item, chat));
                let last = feed.last;
                // Into the slot left empty (no old answer to drop).
                if let State::Busy(Flight { rx: rx @ None, .. }) = &mut self.c.state {
                    *rx = Some(Rx::Stream(boxed, live));
                }
                return last;
            }
            None => {}
        }
        false
    }

    fn close(&mut self, now: u64, id: RequestId) {
        if let Some(flight) = self.take_flight(id) {
            self.end_rx(now, flight, None);
        }
    }

    /// The answer to the flight's request ended, or broke off with `failure`.
    /// The flight is taken apart up front (no field of it left to drop on each path), and the
    /// stream's box stays whole: its feed is lent, the box dropped once.
    fn end_rx(&mut self, now: u64, flight: Flight, failure: Option<Error>) {
        let Flight {
            job, attempt, rx, ..
        } = flight;
        match rx {
            Some(Rx::Buffer { status, body, .. }) => {
                // The status is known: handle what arrived of the body.
                self.on_response(now, job, attempt, status, body)
            }
            Some(Rx::Stream(mut boxed, _)) => {
                let (decoder, feed) = &mut *boxed;
                match failure {
                    Some(error) => self.stream_dropped(now, job, attempt, feed, error),
                    None => {
                        let chat = job.is_chat();
                        decoder.finish_with(&mut |item| self.apply(feed, item, chat));
                        self.stream_ended(now, job, attempt, feed);
                    }
                }
            }
            None => {
                let error = failure.unwrap_or_else(|| {
                    Error::new(ErrorCode::Network, "the answer ended before it began")
                });
                self.no_answer(now, job, attempt, error);
            }
        }
    }

    /// The request got no answer: a message may have landed (verify), anything else is retried.
    fn no_answer(&mut self, now: u64, job: Job, attempt: u32, error: Error) {
        match job {
            Job::Send {
                op,
                text,
                users_before,
            } => self.verify_send(op, text, users_before, error, false),
            job => self.c.retry_or_fail(now, job, attempt, error),
        }
    }

    /// A whole (non-stream) answer.
    fn on_response(&mut self, now: u64, job: Job, attempt: u32, status: u16, body: Vec<u8>) {
        let ok = matches!(status, 200..=299);
        let job = match job {
            // The job goes on whole (its stage set to the replay): nothing moved out and rebuilt.
            mut job @ Job::Load {
                stage: Stage::History,
                ..
            } if ok || status == 404 => {
                // A 404 (no thread yet) reads as an empty body: no message.
                let history = parse_history(if status == 404 { &[] } else { &body });
                // The body goes before the views are built (as Neuron's load).
                drop(body);
                return match history {
                    Ok(history) => {
                        self.set_history(history);
                        if let Job::Load { stage, .. } = &mut job {
                            *stage = Stage::Replay;
                        }
                        self.issue(job, 1);
                    }
                    Err(error) => self.c.fail(job, error),
                };
            }
            // A replay answered whole is a 204 (any other 2xx is read as a stream): nothing
            // paused, no chunk to read. When the history shows a call this client expects
            // unanswered, the run was abandoned, or the call was answered (in another tab) between
            // the two reads, the history read first: both are read again, once, before it counts
            // as abandoned (an `expired` the person would read as lost).
            Job::Load {
                op, why, recheck, ..
            } if ok => {
                if !recheck && self.expect.as_ref().is_some_and(|e| self.abandoned(e)) {
                    return self.issue(
                        Job::Load {
                            op,
                            why,
                            stage: Stage::History,
                            recheck: true,
                        },
                        1,
                    );
                }
                return self.after_load(op, why, &mut Feed::default());
            }
            Job::Send {
                op,
                text,
                users_before,
            } => {
                let error = if ok {
                    match parse_collected(&body) {
                        Ok(items) => {
                            self.append_user(text);
                            let mut feed = self.collected_feed(items);
                            return self.end_send(op, &mut feed);
                        }
                        Err(error) => error,
                    }
                } else {
                    status_error(status, &body)
                };
                let refused = status == 409;
                return if refused || ok || retryable_status(status) {
                    self.verify_send(op, text, users_before, error, refused);
                } else {
                    // As `fail` would: the op fails, the text waits in unsentText.
                    self.c.give_up(Some(op), Some(text), error, true);
                };
            }
            Job::Submit(sub) if ok || status == 409 || status == 400 => {
                let error = if ok {
                    match parse_collected(&body) {
                        Ok(items) => {
                            self.declining = match sub.next_queued() {
                                Some((id, Decision::Reject(_))) => Some(id.clone()),
                                _ => None,
                            };
                            let mut feed = self.collected_feed(items);
                            self.declining = None;
                            // As a stream that ended so (one that leaves calls of the pause
                            // unannounced, still paused, is followed up).
                            return self.stream_ended(now, Job::Submit(sub), attempt, &mut feed);
                        }
                        Err(error) => error,
                    }
                } else {
                    status_error(status, &body)
                };
                let op = Some(sub.op);
                return self.start_load(
                    op,
                    Why::Reconcile {
                        sub,
                        error,
                        resend: None,
                    },
                );
            }
            job => job,
        };
        let error = status_error(status, &body);
        self.c.status_failed(now, job, attempt, status, error);
    }

    /// Applies collected chunks (as a chat stream), each typed as it comes, and returns what
    /// they told.
    fn collected_feed(&mut self, chunks: Vec<Value>) -> Feed {
        self.begin_building();
        let mut feed = Feed::default();
        for c in &chunks {
            if let Some(item) = parse_chunk_value(c).transpose() {
                self.apply(&mut feed, item, true);
            }
        }
        // Collected whole: the answer has ended; the run, where a `finish` chunk says so (a
        // paused run's output has none, nor a `finishReason`).
        feed.done = true;
        feed
    }

    /// A 2xx stream ended.
    fn stream_ended(&mut self, now: u64, job: Job, attempt: u32, feed: &mut Feed) {
        let terminal = feed.terminal();
        match job {
            // A load's stream is its replay (the history is never read as one).
            Job::Load { op, why, .. } if terminal => self.after_load(op, why, feed),
            Job::Send { op, .. } if terminal => self.end_send(op, feed),
            Job::Submit(sub) if terminal && !self.unannounced(&sub, feed) => {
                self.end_submit(sub, feed)
            }
            // Cut short: a load's replay is retried (see `stream_dropped`), a chat is recovered.
            job => {
                let error = Error::new(ErrorCode::Network, "the stream was cut short");
                self.stream_dropped(now, job, attempt, feed, error);
            }
        }
    }

    /// A continuation's stream ended as a paused one does (a bare `[DONE]`: no `finish`, no error;
    /// or a `finish` whose reason is `tool-calls`, as the AI SDK ends a paused step; or a collected
    /// answer without a `finish` chunk) without announcing a call, while cards of the pause other than the one it answered are
    /// still open: a server that does not repeat the approval chunks of the calls still waiting.
    /// Where the run stands is found out as after a dropped stream, not taken for its end.
    fn unannounced(&self, sub: &Submission, feed: &Feed) -> bool {
        let current = sub.next_queued().map(|(id, _)| id);
        feed.approvals.is_empty()
            && (!feed.finished || feed.finish_reason.as_deref() == Some("tool-calls"))
            && feed.error.is_none()
            && self.pause.as_ref().is_some_and(|p| {
                p.tail.pending.iter().any(|c| {
                    c.approval == Approval::Pending
                        && !matches!(current, Some(id) if *id == c.call_id)
                })
            })
    }

    /// A 2xx stream broke off: the server accepted the request, so never re-send it; find out where
    /// the run stands (history + replay) and go on from there.
    fn stream_dropped(&mut self, now: u64, job: Job, attempt: u32, feed: &Feed, error: Error) {
        if let Job::Load { .. } = job {
            return self.c.retry_or_fail(now, job, attempt, error);
        }
        self.commit_building();
        match job {
            Job::Load { .. } => {}
            Job::Send {
                op,
                text,
                users_before,
            } => {
                self.expect = Some(if feed.approvals.is_empty() {
                    Expect::Unknown
                } else {
                    Expect::Calls(ids_of(&feed.approvals))
                });
                // The server took the request, but did the message land? A thread that does not
                // show it (yet: a server may write it once the run ends) keeps the text in
                // `unsentText`, not surely delivered, and says so: `timeout` for a reply that went
                // silent for `timeoutMs`, else `network`.
                let error = Error::new(
                    error.code,
                    "the reply broke off and the thread does not show the message (it may still arrive)",
                );
                self.verify_send(op, text, users_before, error, false);
            }
            Job::Submit(mut sub) => {
                self.ack_current(&mut sub, feed);
                let mut calls = Vec::new();
                if let Some(pause) = &self.pause {
                    for card in &pause.tail.pending {
                        if !sub.sent.iter().any(|(s, _)| *s == card.call_id) {
                            calls.push(card.call_id.clone());
                        }
                    }
                }
                for card in &feed.approvals {
                    if !calls.contains(&card.call_id) {
                        calls.push(card.call_id.clone());
                    }
                }
                self.expect = Some(Expect::Calls(calls));
                let op = sub.op;
                self.start_load(Some(op), Why::Recover(Some(sub)));
            }
        }
    }

    fn end_send(&mut self, op: OpId, feed: &mut Feed) {
        self.commit_building();
        // A failed run's error is the one shown.
        let result = match (self.adopt_feed(feed), &self.c.error) {
            (true, Some(error)) => Err(error.clone()),
            _ => Ok(()),
        };
        self.c.done(op, result);
    }

    fn end_submit(&mut self, mut sub: Submission, feed: &mut Feed) {
        self.commit_building();
        self.ack_current(&mut sub, feed);
        if self.adopt_feed(feed) {
            self.finish_submission(sub);
            return;
        }
        self.continue_submission(sub);
    }

    /// The first queued call was accepted by the server: its decision becomes the card's own (the
    /// server's, no draft left: never sent again, shown as settled). A later pause that shows the
    /// call pending again has a new, undecided card for it, which the person can answer. `feed`
    /// is what the continuation's reply told.
    fn ack_current(&mut self, sub: &mut Submission, feed: &Feed) {
        let Some((id, decision)) = sub.take_queued() else {
            return;
        };
        // Read once, for the card and the view.
        let approved = matches!(decision, Decision::Approve);
        let reason = decision.reason();
        // The tool of the card decided: the view shown decided is that call's, not a later call's
        // under its callId (which the reply may have asked for already).
        let mut name = String::new();
        if let (Some(p), Some(d)) = (&mut self.pause, &mut self.c.decisions) {
            if let Some(c) = card_mut(&mut p.tail.pending, &id) {
                c.approval = if approved {
                    Approval::Approved
                } else {
                    Approval::Rejected
                };
                c.reject_reason = reason.map(str::to_owned);
                name.push_str(&c.name);
                d.accept(&id);
            }
        }
        // Not where the reply asked for the call again, as the same tool (a new call under the
        // callId, ids counted per step): the view it would mark is that call's, asking.
        if !feed
            .approvals
            .iter()
            .any(|c| c.call_id == id && same_call(&c.name, &name))
        {
            self.show_decided(&id, &name, approved, reason);
        }
        self.audit.settle(&id, Fate::Acknowledged);
        sub.sent.push((id, decision));
    }

    /// A call whose decision the server accepted shows as decided where its message still shows
    /// it pending (a server that runs the calls once every one is answered, as Mastra and an AI
    /// SDK server do, streams no outcome yet): `approved` or `rejected`, its part
    /// `approval-responded`, as the history records it. Its message is the newest that holds the
    /// call: the search stops there, so a call whose outcome already streamed costs a look at the
    /// last few messages, not a walk through a long thread's history (an older message showing
    /// the same callId pending is another call's).
    fn show_decided(&mut self, call_id: &str, name: &str, approved: bool, reason: Option<&str>) {
        // Found by `message_of` (a view's index is its place in the list); the last tool of the
        // callId, if it can be the call decided (`name`, its tool: "" if unknown).
        let Some((at, ToolStatus::Pending)) = self.message_of(call_id).and_then(|m| {
            let t = tool_in(&m.tools, call_id).filter(|t| same_call(&t.name, name))?;
            Some((m.index, t.status))
        }) else {
            return;
        };
        let Some(m) = self.messages_mut().and_then(|m| m.get_mut(at)) else {
            return;
        };
        if let Some(t) = tool_mut(&mut m.tools, call_id) {
            (t.status, t.approval) = if approved {
                (ToolStatus::Approved, Some(Approval::Approved))
            } else {
                (ToolStatus::Rejected, Some(Approval::Rejected))
            };
            t.reject_reason = reason.map(str::to_owned);
        }
        let mut raw = m.raw.as_object().clone();
        if let Some(Value::Array(parts)) = raw.get_mut("parts") {
            let part = parts.iter_mut().rev().find(|p| of_call(p, call_id));
            if let Some(Value::Object(part)) = part {
                put_str(part, "state", "approval-responded");
                set_approved(part, call_id, approved);
            }
        }
        m.raw = raw_message(raw);
        self.c.messages_changed(at);
    }

    /// Adopts what a finished chat stream told: a pause, or the end of the run. `true` after an
    /// `error` chunk that ends the run (phase `error`; the error is the one shown). After a pause
    /// the pause stands, and the `error` chunk's text is the error shown beside its cards. What
    /// it keeps is taken from `feed` (whose owner drops it whole).
    fn adopt_feed(&mut self, feed: &mut Feed) -> bool {
        let paused = self.adopt_cards(feed);
        // Swapped, not assigned: the old reason goes with the feed (no drop here).
        core::mem::swap(&mut self.c.finish_reason, &mut feed.finish_reason);
        if self.adopt_errors(feed, paused) && !paused {
            return true;
        }
        self.c.run_completed = !paused;
        false
    }

    /// Shows a stream's malformed chunk or `error` chunk (taken from `feed`); the latter fails the
    /// run unless it is `paused`. `true` after an `error` chunk.
    fn adopt_errors(&mut self, feed: &mut Feed, paused: bool) -> bool {
        if let Some(malformed) = feed.malformed.take() {
            self.c.error = Some(malformed);
        }
        let Some(text) = feed.error.take() else {
            return false;
        };
        self.c.error = Some(Error::new(ErrorCode::StreamError, text));
        self.c.failed = !paused;
        true
    }

    /// Adopts the cards a stream (or replay) announced: a pause, or none. `true` when paused.
    /// They are taken from `feed` (whose owner drops it whole).
    fn adopt_cards(&mut self, feed: &mut Feed) -> bool {
        let cards = self.finish_cards(take(&mut feed.approvals));
        let pause = if cards.is_empty() {
            None
        } else {
            Some(self.make_pause(cards, feed.start_id.take()))
        };
        // What is paused is what the client expects to find paused next (nothing: no pause).
        self.expect = pause.as_ref().map(|p| Expect::Calls(p.call_ids.clone()));
        let paused = pause.is_some();
        self.adopt_pause(pause);
        paused
    }

    /// The end of a load (history and replay).
    fn after_load(&mut self, op: Option<OpId>, why: Why, feed: &mut Feed) {
        let was_paused = self.pause.is_some();
        let expected = self.expect.take();
        let paused = self.adopt_cards(feed);
        // A replay that reports an error or a malformed chunk says so (the run failed: not
        // abandoned, as an empty replay would read).
        let failed = self.adopt_errors(feed, paused);
        let expired = !paused && !failed && expected.as_ref().is_some_and(|e| self.abandoned(e));
        self.c.read_ok();
        self.taken_elsewhere.clear();
        if let Some(held) = self.c.held_restore.take() {
            // Drafts only: the pause stays as adopted.
            self.apply_restore(&held);
        }
        self.expired = expired;
        if expired {
            self.c.run_completed = false;
            self.c.error = Some(Error::new(
                ErrorCode::Expired,
                "the paused run was abandoned: no decision arrived within its grace window; ask again",
            ));
        } else if !paused && !failed && (was_paused || expected.is_some()) {
            self.c.run_completed = true;
        }
        match why {
            Why::User | Why::Sync | Why::Recover(None) => {}
            Why::Recover(Some(sub)) => return self.continue_submission(sub),
            Why::VerifySend {
                text,
                users_before,
                error,
                refused,
            } => {
                // A pause found (the composer was open when the text went: a run started since,
                // the one it started) tells as much as the history, which a server may write only
                // once the run ends.
                let landed = (paused && !refused) || self.landed(&text, users_before, refused);
                if !landed {
                    return self.c.give_up(op, Some(text), error, !refused);
                }
                // Dropped here, once, not on each way out below.
                drop(text);
                drop(error);
                // Landed, and its run failed (the replay's error): as on an unbroken stream.
                if let (true, Some(op), Some(error)) = (self.c.failed, op, &self.c.error) {
                    return self.c.done(op, Err(error.clone()));
                }
                if !paused && !expired {
                    self.c.run_completed = true;
                }
            }
            Why::Reconcile { sub, error, .. } => return self.reconciled(sub, error),
        }
        // The load (or the send it verified) is done.
        if let Some(op) = op {
            self.c.done(op, Ok(()));
        }
    }

    /// After the reload that follows a refused continuation.
    fn reconciled(&mut self, mut sub: Submission, error: Error) {
        // Looked at, not taken: only an acknowledged call moves on (the submission ends otherwise).
        let (error, failed) = match sub.next_queued() {
            // Still pending, the same call: the decision was not applied. The draft stays.
            Some((id, _)) if self.drafted(id) => (error, true),
            next => {
                // Not shown: dropped here, once, not on each way out below.
                drop(error);
                // Nothing queued (`continue_submission` finishes the submission), or applied (an
                // answer lost on the way back): acknowledged, go on (one call for both).
                if next.map_or(true, |(id, decision)| self.records(id, decision)) {
                    if let Some(acked) = sub.take_queued() {
                        sub.sent.push(acked);
                    }
                    return self.continue_submission(sub);
                }
                let error = self.not_sent(
                    "the paused run was abandoned before the decision arrived",
                    "the paused tool was decided elsewhere or changed; your decision was not applied",
                );
                (error, false)
            }
        };
        // Taken, not moved out: `sub` is dropped whole (one drop call, not one per field).
        let then_send = sub.then_send.take();
        self.c.give_up(Some(sub.op), then_send, error, failed);
    }

    /// Why decisions were not sent or applied: `expired` (an `expired` error) when the paused run
    /// was abandoned, else `conflict`.
    #[inline(never)]
    fn not_sent(&self, expired: &str, conflict: &str) -> Error {
        if self.expired {
            Error::new(ErrorCode::Expired, expired)
        } else {
            Error::new(ErrorCode::Conflict, conflict)
        }
    }

    /// Did a pause the client knew of end without an answer (abandoned by the server)?
    fn abandoned(&self, expect: &Expect) -> bool {
        match expect {
            Expect::Calls(ids) => ids.iter().any(|id| {
                !matches!(
                    self.find_tool(id).map(|t| t.status),
                    Some(
                        ToolStatus::Done
                            | ToolStatus::Denied
                            | ToolStatus::Approved
                            | ToolStatus::Rejected
                    )
                )
            }),
            Expect::Unknown => self.messages.last().is_some_and(|m| {
                m.role.as_deref() == Some("assistant")
                    && m.raw
                        .get("parts")
                        .and_then(Value::as_array)
                        .and_then(|parts| parts.last())
                        .and_then(Value::as_object)
                        .is_some_and(|p| {
                            is_tool_part(p)
                                && matches!(
                                    p.get("state").and_then(Value::as_str),
                                    Some("approval-requested" | "output-error")
                                )
                        })
            }),
        }
    }

    /// Did `text` land: is the last user message `text`, and one more than `users_before`? Without
    /// that count, the last message alone tells, but not for a `refused` POST: the refusal is the
    /// likelier story then (the same text sent twice).
    fn landed(&self, text: &str, users_before: Option<usize>, refused: bool) -> bool {
        let (count, last) = self.users();
        let grew = users_before.map_or(!refused, |before| count > before);
        grew && last.is_some_and(|m| m.text == text)
    }

    /// How many user messages, and the last.
    fn users(&self) -> (usize, Option<&MessageView>) {
        let (count, last) = self.users;
        (count, last.and_then(|i| self.messages.get(i)))
    }

    /// Counts the user messages again (`users`), after a change other than a push.
    fn count_users(&mut self) {
        self.users = count_users(&self.messages);
    }

    /// The last tool with this callId in the settled messages.
    fn find_tool(&self, call_id: &str) -> Option<&ToolView> {
        tool_in(&self.message_of(call_id)?.tools, call_id)
    }

    /// The last settled message with a tool of this callId.
    #[inline(never)]
    fn message_of(&self, call_id: &str) -> Option<&MessageView> {
        self.messages
            .iter()
            .rev()
            .find(|m| tool_in(&m.tools, call_id).is_some())
    }

    /// The id of the last settled message with a tool of this callId (one copy for both callers).
    #[inline(never)]
    fn message_id_of(&self, call_id: &str) -> Option<String> {
        self.message_of(call_id)?.id.clone()
    }

    /// Does the thread record `decision` for `call_id`?
    fn records(&self, call_id: &str, decision: &Decision) -> bool {
        self.find_tool(call_id).is_some_and(|t| {
            matches!(
                (t.approval, decision),
                (Some(Approval::Approved), Decision::Approve)
                    | (Some(Approval::Rejected), Decision::Reject(_))
            )
        })
    }

    // ------------------------------------------------------------------------------------------
    // Internals: chunks

    /// One chunk (or malformed chunk) of an answer. Nothing follows `[DONE]` (what does, a
    /// proxy's trailing bytes, is not read).
    fn apply(&mut self, feed: &mut Feed, item: Result<Chunk>, chat: bool) {
        let mut chunk = match item {
            Ok(chunk) => chunk,
            Err(error) => {
                if !feed.last && feed.malformed.is_none() {
                    feed.malformed = Some(error);
                }
                return;
            }
        };
        // Read by reference, what is kept taken out: the chunk is dropped whole, by one call.
        if !feed.last {
            self.read_chunk(feed, &mut chunk, chat);
        }
    }

    /// One chunk, read in place (its owner, `apply`, drops it).
    fn read_chunk(&mut self, feed: &mut Feed, chunk: &mut Chunk, chat: bool) {
        // Every chunk of the answer's content (not `start`, which names the message, nor the
        // bookkeeping chunks) first opens the streaming message.
        if chat
            && !matches!(
                *chunk,
                Chunk::Done
                    | Chunk::Finish { .. }
                    | Chunk::Abort
                    | Chunk::Error { .. }
                    | Chunk::StartStep
                    | Chunk::FinishStep
                    | Chunk::Data { .. }
                    | Chunk::Start { .. }
                    | Chunk::TextEnd { .. }
                    | Chunk::ToolInputDelta { .. }
            )
        {
            self.first_chunk(None);
        }
        match chunk {
            Chunk::Done => {
                feed.done = true;
                feed.last = true;
            }
            Chunk::Finish { finish_reason } => {
                // Swapped, not assigned: an earlier reason goes with the chunk (no drop here).
                core::mem::swap(&mut feed.finish_reason, finish_reason);
                feed.done = true;
                feed.finished = true;
            }
            // The stream stopped, the run not necessarily: a continuation whose calls are still
            // waiting is followed up as one that ends paused without announcing them.
            Chunk::Abort => feed.done = true,
            // The last chunk read (as the AI SDK's chat stops there).
            Chunk::Error { error_text } => {
                feed.error = Some(take(error_text));
                feed.done = true;
                feed.last = true;
            }
            // A call announced after it under a callId of an earlier step is a new call, as in the
            // AI SDK's own client (some providers count ids per step: `call_0` in each).
            Chunk::StartStep => {
                if let (Some(b), Some(v)) = (&mut self.building, &self.c.snapshot.streaming) {
                    b.step = (b.parts.len(), v.tools.len());
                }
            }
            Chunk::FinishStep => {}
            Chunk::Data { name, data, .. } => {
                if let (true, Some(data)) = (name == "run", data.as_object()) {
                    if let Some(run_id) = data.get("runId").and_then(Value::as_str) {
                        feed.run_id = Some(run_id.to_owned());
                        feed.run_version = data
                            .get("agentVersionId")
                            .and_then(Value::as_str)
                            .map(str::to_owned);
                    }
                }
            }
            Chunk::Start { message_id } => {
                if chat {
                    self.first_chunk(message_id.as_deref());
                }
                fill(&mut feed.start_id, message_id);
            }
            Chunk::TextStart { id } => {
                if chat {
                    self.text_start(take(id));
                }
            }
            Chunk::TextDelta { id, delta } => {
                if chat {
                    self.text_delta(id, delta);
                }
            }
            Chunk::TextEnd { id } => {
                if self.text_open(id) {
                    if let Some(b) = &mut self.building {
                        b.text_part = None;
                    }
                }
            }
            Chunk::ToolInputStart {
                tool_call_id,
                tool_name,
            } => {
                self.tool_input(feed, chat, tool_call_id, tool_name, None, "input-streaming");
            }
            Chunk::ToolInputDelta { .. } => {}
            Chunk::ToolInputAvailable {
                tool_call_id,
                tool_name,
                input,
            } => {
                let input = Some(take(input));
                self.tool_input(
                    feed,
                    chat,
                    tool_call_id,
                    tool_name,
                    input,
                    "input-available",
                );
            }
            Chunk::ToolOutputAvailable {
                tool_call_id,
                output,
            } => {
                settled(feed, tool_call_id);
                if chat {
                    self.tool_settle(tool_call_id, ToolStatus::Done, Some(take(output)));
                }
            }
            Chunk::ToolOutputError {
                tool_call_id,
                error_text,
            } => {
                settled(feed, tool_call_id);
                if chat {
                    let text = Some(Value::from(take(error_text)));
                    self.tool_settle(tool_call_id, ToolStatus::Error, text);
                }
            }
            // The call could not be read: shown as a tool that failed, with the error.
            Chunk::ToolInputError(e) => {
                let id = &e.tool_call_id;
                settled(feed, id);
                if chat {
                    let input = take(&mut e.input);
                    self.tool_upsert(id, &e.tool_name, Some(input), "input-available");
                    let text = Some(Value::from(take(&mut e.error_text)));
                    self.tool_settle(id, ToolStatus::Error, text);
                }
            }
            Chunk::ToolOutputDenied { tool_call_id } => {
                settled(feed, tool_call_id);
                if chat {
                    self.tool_settle(tool_call_id, ToolStatus::Denied, None);
                }
            }
            Chunk::ToolCallApproval(approval) => {
                let card = GatedTool {
                    call_id: take(&mut approval.tool_call_id),
                    name: take(&mut approval.tool_name),
                    description: None,
                    inputs: take(&mut approval.args),
                    approval: Approval::Pending,
                    approval_reason: approval.reason.take(),
                    reject_reason: None,
                    run_id: Some(take(&mut approval.run_id)),
                    agent_version_id: approval.agent_version_id.take(),
                    expires_at: None,
                    position: 0,
                };
                self.on_approval(feed, card, chat, None);
            }
            // Decided by the server's own policy: no person to ask, no card. The call shows as
            // approved (an automatic denial then ends `output-denied`, which shows it rejected), as
            // the AI SDK records it in the history.
            Chunk::ToolApprovalRequest {
                automatic: true,
                approval_id,
                tool_call_id,
                ..
            } => {
                if chat {
                    self.tool_automatic(tool_call_id, approval_id);
                }
            }
            Chunk::ToolApprovalRequest {
                approval_id,
                tool_call_id,
                reason,
                ..
            } => {
                // The run of the last `data-run`; else Mastra's approval ids are
                // `<runId>::<toolCallId>`; else the pause's. (Not the pause's first: a replay read
                // by a load may be a new run's, the pause still the old one until it ends.)
                let mastra = approval_id
                    .strip_suffix(tool_call_id.as_str())
                    .and_then(|run| run.strip_suffix("::"));
                let run_id = feed
                    .run_id
                    .as_deref()
                    .or(mastra)
                    .or(self.pause.as_ref().map(|p| p.run_id.as_str()))
                    .map(str::to_owned);
                let card = GatedTool {
                    call_id: take(tool_call_id),
                    name: String::new(),
                    description: None,
                    inputs: Value::Null,
                    approval: Approval::Pending,
                    approval_reason: reason.take(),
                    reject_reason: None,
                    run_id,
                    agent_version_id: None,
                    expires_at: None,
                    position: 0,
                };
                self.on_approval(feed, card, chat, Some(approval_id));
            }
        }
    }

    /// A card announced; its run id is set already where the stream or the pause names one. The
    /// AI SDK form names the approval (`approvalId`, its own id): its part records that id, as the
    /// history does; otherwise the call's id.
    fn on_approval(
        &mut self,
        feed: &mut Feed,
        mut card: GatedTool,
        chat: bool,
        approval_id: Option<&str>,
    ) {
        // The version that paused the run stays its pin, whatever a replay reports; a new call
        // in it (a continuation that pauses again, `data-run` not repeated) is pinned to it too.
        if let Some(p) = self
            .pause
            .as_ref()
            .filter(|p| matches!(&card.run_id, Some(run) if *run == p.run_id))
        {
            card.agent_version_id = p.agent_version_id.clone();
        }
        if card.agent_version_id.is_none() {
            card.agent_version_id = feed.run_version.clone();
        }
        if card.name.is_empty() || card.inputs.is_null() {
            let mut known = tool_in(&feed.inputs, &card.call_id);
            if let (None, Some(v)) = (known, &self.c.snapshot.streaming) {
                known = tool_in(&v.tools, &card.call_id);
            }
            if known.is_none() {
                known = self.find_tool(&card.call_id);
            }
            if let (true, Some(known)) = (card.name.is_empty(), known) {
                // Appended to the empty name: no old string to drop.
                card.name.push_str(&known.name);
            }
            if card.inputs.is_null() {
                // Null (unknown or null inputs) shows as `{}`.
                card.inputs = inputs_of(known.map(|t| &t.inputs));
            }
        }
        // Always an object (args that are a list or no object at all).
        if !card.inputs.is_object() {
            card.inputs = inputs_of(Some(&card.inputs));
        }
        // A call that neither the stream nor the thread showed: nothing to put before the person
        // (the AI SDK's chat fails the same way).
        if card.name.is_empty() {
            if feed.malformed.is_none() {
                feed.malformed = Some(Error::new(
                    ErrorCode::StreamError,
                    "an approval request names a call the stream did not show",
                ));
            }
            return;
        }
        if chat {
            self.tool_pending(&card, approval_id);
        }
        if let Some(known) = card_mut(&mut feed.approvals, &card.call_id) {
            // A replayed or repeated chunk: keep the first, fill what it lacked.
            fill(&mut known.approval_reason, &mut card.approval_reason);
            fill(&mut known.agent_version_id, &mut card.agent_version_id);
            fill(&mut known.run_id, &mut card.run_id);
            return;
        }
        // `position` stays 0: a pause's tail has only pending cards, already in order, so nothing
        // reads it.
        feed.approvals.push(card);
    }

    /// The cards of a finished stream: those with a run id (a card without one cannot be answered).
    fn finish_cards(&mut self, mut cards: Vec<GatedTool>) -> Vec<GatedTool> {
        if let Some(card) = cards.iter().find(|c| c.run_id.is_none()) {
            if self.c.error.is_none() {
                let mut m = "an approval request for ".to_owned();
                json::write_str(&mut m, &card.call_id);
                m.push_str(" came without a run id");
                self.c.error = Some(Error::new(ErrorCode::StreamError, m));
            }
            // Only then a pass to drop them.
            retain_cards(&mut cards, &|c| c.run_id.is_some());
        }
        cards
    }

    fn make_pause(&self, cards: Vec<GatedTool>, message_id: Option<String>) -> Pause {
        let first = cards.first();
        let run_id = first.and_then(|c| c.run_id.clone()).unwrap_or_default();
        let agent_version_id = first
            .and_then(|c| c.agent_version_id.as_ref())
            .or(self.c.config.agent_version_id.as_ref())
            .cloned();
        // The message that shows the first card (committed by every caller: a continuation goes
        // on in the paused message whatever id its `start` names), else the stream's.
        let held = first.and_then(|c| self.message_id_of(&c.call_id));
        let message_id = held.or(message_id);
        Pause {
            run_id,
            agent_version_id,
            call_ids: ids_of(&cards),
            tail: Suspension {
                suspended: !cards.is_empty(),
                message_id,
                resume_token: None,
                pending: cards,
                decided: Vec::new(),
            },
        }
    }

    // ------------------------------------------------------------------------------------------
    // Internals: the streaming message

    fn begin_building(&mut self) {
        self.building = Some(Building {
            base: {
                let mut base = Map::new();
                put_str(&mut base, "role", "assistant");
                base
            },
            parts: Vec::new(),
            text_part: None,
            step: (0, 0),
            fresh: true,
        });
        self.stream_epoch = self.stream_epoch.wrapping_add(1);
        // Its raw message is what raw_message(Map::new()) gives, either way.
        self.c.snapshot.streaming =
            Some(self.new_view("assistant", String::new(), Message::empty()));
        self.stream_dirty = true;
    }

    /// On the first chunk of a chat stream: a continuation goes on with the paused message (moved
    /// back out of `messages`), a new message takes the stream's id.
    fn first_chunk(&mut self, message_id: Option<&str>) {
        let Some(b) = &mut self.building else {
            return;
        };
        if !b.fresh {
            return;
        }
        b.fresh = false;
        let last = self.messages.last();
        // The message of the id, or the paused one, whatever id a continuation's `start` names
        // (as the AI SDK's client does: a continuation goes on with the last assistant message).
        let resume = last.is_some_and(|m| {
            (message_id.is_some() && m.id.as_deref() == message_id)
                || m.role.as_deref() == Some("assistant")
                    && self
                        .pause
                        .as_ref()
                        .is_some_and(|p| m.tools.iter().any(|t| p.has(&t.call_id)))
        });
        if resume {
            let Some(view) = self.messages_mut().and_then(Vec::pop) else {
                return;
            };
            self.c.messages_changed(self.messages.len());
            if view.is_user() {
                self.count_users();
            }
            let mut base = view.raw.as_object().clone();
            let mut parts = match base.remove("parts") {
                Some(Value::Array(parts)) => parts,
                _ => Vec::new(),
            };
            // Swapped, not assigned: the fresh ones are dropped below, on one way.
            if let Some(b) = &mut self.building {
                core::mem::swap(&mut b.base, &mut base);
                core::mem::swap(&mut b.parts, &mut parts);
            }
            self.stream_epoch = self.stream_epoch.wrapping_add(1);
            // Its raw form is set below, from the base.
            self.c.snapshot.streaming = Some(view);
        } else if let Some(id) = message_id {
            put_str(&mut b.base, "id", id);
            if let Some(v) = &mut self.c.snapshot.streaming {
                v.id = Some(id.to_owned());
            }
        } else {
            self.stream_dirty = true;
            return;
        }
        // The view's raw message is the base (without `parts`), either way.
        if let (Some(b), Some(v)) = (&self.building, &mut self.c.snapshot.streaming) {
            v.raw = raw_message(b.base.clone());
        }
        self.stream_dirty = true;
    }

    fn text_start(&mut self, id: String) {
        let (Some(b), Some(v)) = (&mut self.building, &mut self.c.snapshot.streaming) else {
            return;
        };
        b.parts.push(text_part(""));
        b.text_part = Some((id, b.parts.len().saturating_sub(1)));
        if !v.text.is_empty() {
            v.text.push('\n');
        }
        self.stream_dirty = true;
    }

    /// Is `id` the open text part?
    #[inline(never)]
    fn text_open(&self, id: &str) -> bool {
        self.building
            .as_ref()
            .is_some_and(|b| b.text_part.as_ref().is_some_and(|(o, _)| o == id))
    }

    /// O(delta): two appends.
    fn text_delta(&mut self, id: &str, delta: &str) {
        if !self.text_open(id) {
            self.text_start(id.to_owned());
        }
        let (Some(b), Some(v)) = (&mut self.building, &mut self.c.snapshot.streaming) else {
            return;
        };
        if let Some((_, index)) = &b.text_part {
            if let Some(Value::Object(part)) = b.parts.get_mut(*index) {
                if let Some(Value::String(text)) = part.get_mut("text") {
                    text.push_str(delta);
                }
            }
        }
        v.text.push_str(delta);
        self.stream_dirty = true;
    }

    /// A tool's input: shown in a chat stream (in `state`), else remembered for the cards.
    #[inline(never)]
    fn tool_input(
        &mut self,
        feed: &mut Feed,
        chat: bool,
        call_id: &str,
        name: &str,
        input: Option<Value>,
        state: &str,
    ) {
        if chat {
            self.tool_upsert(call_id, name, input, state);
        } else {
            remember_input(feed, call_id, name, input);
        }
    }

    fn tool_upsert(&mut self, call_id: &str, name: &str, input: Option<Value>, state: &str) {
        let (Some(b), Some(v)) = (&mut self.building, &mut self.c.snapshot.streaming) else {
            return;
        };
        // A tool's inputs are never null in the views: null is the new tool's, filled here. The
        // call is looked for in the current step alone (see `Building::step`).
        let (first_part, first_tool) = b.step;
        if let Some(tool) = tool_view(&mut v.tools, first_tool, call_id, name, &Value::Null) {
            if input.is_some() || tool.inputs.is_null() {
                tool.inputs = inputs_of(input.as_ref());
            }
            if tool.name.is_empty() {
                // Appended to the empty name: no old string to drop.
                tool.name.push_str(name);
            }
        }
        v.kind = MessageKindView::ToolCall;
        match tool_part(&mut b.parts, first_part, call_id, name) {
            Some(part) => {
                put_str(part, "state", state);
                if let Some(input) = input {
                    put(part, "input", input);
                }
            }
            // Dropped here: the way on is one.
            None => drop(input),
        }
        // An open text part stays open (deltas after the tool go on in it, as the AI SDK's
        // client appends them).
        self.stream_dirty = true;
    }

    fn tool_pending(&mut self, card: &GatedTool, approval_id: Option<&str>) {
        let (Some(b), Some(v)) = (&mut self.building, &mut self.c.snapshot.streaming) else {
            return;
        };
        if let Some(tool) = tool_view(&mut v.tools, 0, &card.call_id, &card.name, &card.inputs) {
            tool.status = ToolStatus::Pending;
            tool.approval = Some(Approval::Pending);
            if card.approval_reason.is_some() {
                tool.approval_reason = card.approval_reason.clone();
            }
        }
        v.kind = MessageKindView::ToolCall;
        if let Some(part) = tool_part(&mut b.parts, 0, &card.call_id, &card.name) {
            put_str(part, "state", "approval-requested");
            if part.get("input").is_none() {
                put(part, "input", card.inputs.clone());
            }
            // A repeated request (the other form, or a replay) keeps the id the part has; any
            // answer recorded before is of an earlier request.
            let old = part.remove("approval");
            let id = approval_id
                .or_else(|| old.as_ref()?.get("id")?.as_str())
                .unwrap_or(&card.call_id);
            let mut approval = Map::new();
            put_str(&mut approval, "id", id);
            if let Some(reason) = &card.approval_reason {
                put_str(&mut approval, "reason", reason);
            }
            put(part, "approval", Value::Object(approval));
        }
        self.stream_dirty = true;
    }

    /// A call the server's policy decided: approved in its view and its part (`approval` with
    /// the request's id, `isAutomatic`), until an outcome says otherwise.
    fn tool_automatic(&mut self, call_id: &str, approval_id: &str) {
        let (Some(b), Some(v)) = (&mut self.building, &mut self.c.snapshot.streaming) else {
            return;
        };
        let Some(tool) = tool_mut(&mut v.tools, call_id) else {
            return;
        };
        tool.approval = Some(Approval::Approved);
        if let Some(part) = tool_part(&mut b.parts, 0, call_id, &tool.name) {
            set_approved(part, approval_id, true);
            if let Some(Value::Object(approval)) = part.get_mut("approval") {
                put(approval, "isAutomatic", Value::Bool(true));
            }
        }
        self.stream_dirty = true;
    }

    fn tool_settle(&mut self, call_id: &str, status: ToolStatus, result: Option<Value>) {
        let (Some(b), Some(v)) = (&mut self.building, &mut self.c.snapshot.streaming) else {
            return;
        };
        let empty = Value::Object(Map::new());
        let mut tool = tool_view(&mut v.tools, 0, call_id, "", &empty);
        // The part is named after the tool (borrowed, not copied: the lists are apart).
        let part = tool_part(
            &mut b.parts,
            0,
            call_id,
            tool.as_deref().map_or("", |t| &t.name),
        );
        // A call the person rejected stays rejected, whatever its outcome (a server may record a
        // decline as a result: LangChain's answers it with an error): the server took the
        // rejection before (the view shows it), or is answering it now (a call that asked: not
        // a later call under its callId that asked nobody).
        let on_the_wire =
            rejecting(&self.c.state, call_id) || self.declining.as_deref() == Some(call_id);
        let mut rejected = false;
        if let Some(tool) = &mut tool {
            tool.status = status;
            tool.result = result.clone();
            rejected = tool
                .approval
                .is_some_and(|a| on_the_wire || a == Approval::Rejected);
            if rejected || status == ToolStatus::Denied {
                tool.approval = Some(Approval::Rejected);
                let message = b.base.get("id").and_then(Value::as_str);
                tool.reject_reason = reason_of(&self.reasons, message, call_id);
            } else if tool.approval.is_some() {
                // A gated call that ran, whether it succeeded or failed, was approved (a declined
                // one ends `output-denied`), as the AI SDK records it in the history.
                tool.approval = Some(Approval::Approved);
            }
        }
        v.kind = MessageKindView::ToolCall;
        if let Some(part) = part {
            let approved = part.get("approval").is_some().then_some(!rejected);
            // Done and Error come with a result, Denied without.
            let (state, key, approved) = match status {
                ToolStatus::Done => ("output-available", "output", approved),
                ToolStatus::Error => ("output-error", "errorText", approved),
                _ => ("output-denied", "", Some(false)),
            };
            put_str(part, "state", state);
            if let Some(result) = result {
                put(part, key, result);
            }
            if let Some(approved) = approved {
                set_approved(part, call_id, approved);
            }
        } else {
            // Dropped here: the way on is one.
            drop(result);
        }
        self.stream_dirty = true;
    }

    /// Moves the streaming message into `messages` (once per stream).
    fn commit_building(&mut self) {
        let building = self.building.take();
        let view = self.c.snapshot.streaming.take();
        self.stream_dirty = true;
        let (Some(b), Some(mut view)) = (building, view) else {
            return;
        };
        // No chunk applied: nothing shown (every chunk that shows text or a tool applies first).
        if b.fresh {
            return;
        }
        let mut raw = b.base;
        put(&mut raw, "parts", Value::Array(b.parts));
        // Its index is right: set when the stream began (or the paused message was taken back),
        // and the settled messages do not change while it streams.
        view.raw = raw_message(raw);
        self.push_message(view);
    }

    fn append_user(&mut self, text: String) {
        let raw = raw_message(user_message(&text));
        let view = self.new_view("user", text, raw);
        self.push_message(view);
    }

    /// The view of a new message of `role`, without id or tools, after the settled ones.
    #[inline(never)]
    fn new_view(&self, role: &str, text: String, raw: Message) -> MessageView {
        MessageView {
            id: None,
            index: self.messages.len(),
            role: Some(role.to_owned()),
            kind: MessageKindView::Text,
            text,
            tools: Vec::new(),
            raw,
        }
    }

    fn push_message(&mut self, view: MessageView) {
        let Some(messages) = self.messages_mut() else {
            return;
        };
        let at = messages.len();
        let user = view.is_user();
        messages.push(view);
        if user {
            self.users = (self.users.0 + 1, Some(at));
        }
        self.audit.touch(1);
        self.c.messages_changed(at);
    }

    /// The settled messages, to edit. The snapshot's share of them is released first: every step
    /// ends by building the next snapshot (`settle`), which shares the edited list again (an
    /// invariant), so a new message is pushed in place instead of copying the whole thread. A copy
    /// is made only while someone else holds the list (a clone of a snapshot). No
    /// `Shared::make_mut`, whose weak-reference path is dead weight here. Always `Some`.
    fn messages_mut(&mut self) -> Option<&mut Vec<MessageView>> {
        self.c.snapshot.messages = Messages::default();
        if Shared::get_mut(&mut self.messages).is_none() {
            self.audit.touch(self.messages.len() as u64);
            self.messages = Shared::new(self.messages.to_vec());
        }
        Shared::get_mut(&mut self.messages)
    }

    /// The history's messages become the settled ones (entries that are not objects are skipped).
    fn set_history(&mut self, history: Vec<Value>) {
        let mut views = Vec::new();
        for m in history {
            if let Value::Object(m) = m {
                views.push(ui_message_view(views.len(), m, &self.reasons));
            }
        }
        self.audit.touch(views.len() as u64);
        // The views that came back the same as the settled ones (a reload of the same history):
        // a view is made from its message, its index and the reasons given for its tools.
        let same = views
            .iter()
            .zip(self.messages.iter())
            .take_while(|(new, old)| {
                new.raw.same(&old.raw)
                    && new
                        .tools
                        .iter()
                        .zip(&old.tools)
                        .all(|(n, o)| n.reject_reason == o.reject_reason)
            })
            .count();
        if same == views.len().max(self.messages.len()) {
            // None changed: the settled list (the snapshot's) and `messagesVersion` stay.
            return;
        }
        self.messages = Shared::new(views);
        self.c.messages_changed(same);
        self.count_users();
    }

    // ------------------------------------------------------------------------------------------
    // Internals: drafts

    /// Adopts a new pause (or none): drafts survive on calls of the same run still pending; a
    /// draft whose call left the pause is acknowledged if the thread records it, and dropped
    /// (listed in `droppedDrafts`) otherwise (a decision the server accepted is no draft: see
    /// `ack_current`).
    fn adopt_pause(&mut self, new: Option<Pause>) {
        let old = self.pause.take();
        let old_decisions = self.c.decisions.take();
        let mut new_decisions = new.as_ref().and_then(Pause::decisions);
        if let (Some(old), Some(od)) = (&old, &old_decisions) {
            // Drafts carry over within the run.
            let same_run = new.as_ref().filter(|n| n.run_id == old.run_id);
            for (id, draft) in od.local() {
                let card = old.card(id);
                // The same call: a newer one may reuse the callId (ids counted per step).
                let still = same_run.is_some_and(|n| {
                    matches!((n.card(id), card),
                            (Some(c), Some(o)) if c.name == o.name && c.inputs == o.inputs)
                });
                if still {
                    // Put as it is, without the error `set` would build for an unknown callId
                    // (a draft is kept as `set` keeps it).
                    let kept = new_decisions
                        .as_mut()
                        .is_some_and(|nd| nd.put_found(id, Some(draft.clone())));
                    if kept {
                        continue;
                    }
                }
                if self.records(id, draft) {
                    self.audit.settle(id, Fate::Acknowledged);
                } else {
                    self.drop_draft(id);
                }
            }
        }
        // A pause always has its decisions (its tail is suspended: `Decisions::of` accepts it).
        if let Some(n) = &new {
            if !old
                .as_ref()
                .is_some_and(|o| o.run_id == n.run_id && o.call_ids == n.call_ids)
            {
                // Drafts are shared call by call within a run: a failed write outlives the step.
                let same_run = old.as_ref().is_some_and(|o| o.run_id == n.run_id);
                // Otherwise left for `new_pause` to drop.
                let unsaved = if same_run {
                    self.c.unsaved.take()
                } else {
                    None
                };
                self.c.new_pause();
                self.c.unsaved = unsaved;
            }
            self.expired = false;
        } else {
            self.c.unpaused();
        }
        self.pause = new;
        self.c.decisions = new_decisions;
    }

    fn drop_draft(&mut self, call_id: &str) {
        self.audit.settle(call_id, Fate::Dropped);
        self.c.drop_draft(call_id);
    }

    /// Did the server accept a decision for this card, here or (`taken_elsewhere`) in another
    /// tab? A change to it could never be sent.
    fn sent(&self, call_id: &str) -> bool {
        self.pause.as_ref().is_some_and(|p| p.accepted(call_id))
            || listed(&self.taken_elsewhere, call_id)
    }

    /// `invalid_state` for a call whose decision the server accepted (`sent`: its reply stopped
    /// before the call left the pause, or another tab's streams).
    fn check_unsent(&self, call_id: &str) -> Result<()> {
        if self.sent(call_id) {
            return Err(Error::new(
                ErrorCode::InvalidState,
                "decision already accepted",
            ));
        }
        Ok(())
    }

    /// `Some` when the stored drafts were for the pause shown (it shares a call with the record,
    /// and each shared call is the same call: their drafts are taken in): whether this tab shows
    /// open a call the record leaves out (the server accepted its decision: it is behind).
    fn apply_restore(&mut self, persisted: &str) -> Option<bool> {
        // From another tab showing this pause (a storage event), not read at a new pause (a
        // reload reads its own record then, of a reply no tab streams any more).
        let elsewhere = self.c.quiet && !self.c.fresh;
        // Nothing paused: nothing to restore (the stored drafts are not even read).
        let (Some(pause), Some(decisions)) = (&self.pause, self.c.decisions.as_mut()) else {
            return None;
        };
        // Read in place, nothing moved out: `stored` is dropped whole.
        let stored = read_stored(persisted)?;
        let run_id = &pause.run_id;
        let call_ids = &stored.call_ids;
        if !matches!(&stored.run_id, Some(run) if run == run_id) {
            return None;
        }
        // Call by call: a tab one call behind or ahead (a continuation's reply between them)
        // still shares the others, and a decision made on them in either tab is kept.
        let mut shared = false;
        for (i, id) in call_ids.iter().enumerate() {
            if pause.has(id) {
                if !stored.same_call(i, id, &pause.tail) {
                    return None;
                }
                shared = true;
            }
        }
        if !shared {
            return None;
        }
        seed_auto(&mut self.c.auto, stored.auto.as_ref());
        // Another tab's drafts for the calls both show replace ours. Drafts this tab alone holds
        // (its write failed) give way only to a change made there: the record from before,
        // written back over the removal (older than ours), changes none, so it takes nothing.
        let base = unsaved_base(self.c.unsaved.as_deref(), self.c.quiet);
        let base = base.as_ref();
        if self.c.quiet {
            for id in call_ids {
                if stored.changed(base, id) {
                    let _ = decisions.clear(id);
                }
            }
            if self.c.unsaved.is_some() {
                self.c.unsaved = Some(persisted.to_owned());
            }
        }
        // Never on a card whose decision the server accepted: that decision is the server's.
        // One whose continuation it took in another tab (`settled`: its reply streaming)
        // shows the decision sent there; not on a reload (no tab is left to stream that
        // reply: the call is answerable if the server still shows it waiting).
        let restored = restore_into(decisions, &stored.drafts, &|id, _| {
            listed(call_ids, id)
                && stored.changed(base, id)
                && !pause.accepted(id)
                && (elsewhere || !stored.settled(id))
        });
        // By reference: in a build without the audit the loop is empty and goes away.
        for (id, decision) in &restored {
            self.audit.hold(run_id, id, decision);
        }
        // A record that lists a call this pause holds open no longer (this tab's own, read back
        // after the server took it, or a tab behind's) is behind: ours is written over it, so
        // that the tabs still showing that call catch up.
        if call_ids.iter().any(|id| !pause.open(id)) {
            self.c.quiet = false;
            self.c.persisted = None;
        }
        // A record written while a continuation's reply streams is not the writer's last word:
        // it writes again once the reply has ended (its next pause, or a removal), and this tab
        // catches up then, not by a load in the middle of the reply.
        let streaming = matches!(&stored.settled, Some(Value::Array(ids)) if !ids.is_empty());
        // The record written once it ended may show the same calls (the run paused again on a
        // call of the same callId, tool and inputs): it ended all the same.
        let ended = !self.taken_elsewhere.is_empty() && !streaming;
        self.taken_elsewhere.clear();
        if elsewhere {
            for id in call_ids {
                if stored.settled(id) {
                    self.taken_elsewhere.push(id.clone());
                }
            }
        }
        Some(
            !streaming
                && (ended
                    || pause.tail.pending.iter().any(|c| {
                        c.approval == Approval::Pending && !call_ids.contains(&c.call_id)
                    })),
        )
    }

    fn suspension_view(&self) -> Option<SuspensionView> {
        let pause = self.pause.as_ref()?;
        let decisions = self.c.decisions.as_ref()?;
        // The pause's tail has no decided tool: its gated tools are the pending ones, in order.
        // A call whose continuation another tab's reply took shows the decision sent there as
        // the server's, no draft (nothing to undo or change here: `check_unsent`).
        Some(suspension_view(
            decisions,
            &pause.tail,
            Some(&pause.run_id),
            pause.agent_version_id.as_ref(),
            &self.taken_elsewhere,
        ))
    }

    /// Every field but `streaming` (which lives in the snapshot and is edited in place).
    fn build_head(&self) -> Snapshot {
        let paused = self.pause.is_some();
        // Decisions exist iff a pause does.
        let can_submit = self
            .c
            .decisions
            .as_ref()
            .is_some_and(|d| d.local().any(|(id, _)| !self.sent(id)));
        self.c.head(
            self.c.phase(paused, self.expired),
            Messages(Shared::clone(&self.messages)),
            self.suspension_view(),
            can_submit,
            paused,
        )
    }

    /// The end of every step: persist the drafts if they changed, and emit one `Changed` if the
    /// snapshot did. The streaming message is not cloned: it moves from the old snapshot to the new.
    fn settle(&mut self) {
        // Every card accepted by the server and nothing in flight (a reply stopped, or the reload
        // after it stopped or failed): the pause is over as far as the client can tell (no card
        // left to answer, nothing to send, the composer locked otherwise).
        if matches!(self.c.state, State::Ready)
            && self.pause.as_ref().is_some_and(|p| !p.any_open())
        {
            self.adopt_pause(None);
        }
        // The allowed tools' approvals, and their submission when no person needs asking.
        if let Some(pause) = &self.pause {
            let audit = &mut self.audit;
            let due = self.c.allow_step(&pause.tail.pending, &mut |id| {
                audit.hold(&pause.run_id, id, &Decision::Approve)
            });
            if due {
                // Its failure, if any, shows as the others' do; it is not started again.
                let _ = self.submit_now(None);
            }
        } else {
            // Nothing paused: the calls remembered are over (as `allow_step` does without a pause).
            self.c.auto.clear();
        }
        if self.c.persisting() {
            // The call whose continuation the server took (its 2xx reply streaming) is listed as
            // `settled`: no reader takes its draft again, a reload before the reply ends (which
            // shows the others alone) finds theirs, and another tab, which still shows it, waits
            // for the record written once the reply has ended, which drops it.
            let taken = match &self.c.state {
                State::Busy(Flight {
                    job: Job::Submit(sub),
                    rx: Some(Rx::Stream(..)),
                    ..
                }) => sub.next_queued().map(|(id, _)| id),
                _ => None,
            };
            // The drafts are written for the open cards (whose decision the server has not
            // accepted), signed against the pause's own tail, as `apply_restore` reads them: a
            // callId is on one card at most, so an open card's signature is the same there.
            let desired = self.pause.as_ref().and_then(|p| {
                let mut open = Vec::new();
                for card in &p.tail.pending {
                    if card.approval == Approval::Pending {
                        open.push(card.call_id.clone());
                    }
                }
                self.c.stored(
                    "runId",
                    Some(&p.run_id),
                    &open,
                    &p.tail,
                    taken.filter(|id| p.open(id)),
                    // Another tab's (read from its record) carried on, so that a record written
                    // here meanwhile (a decision, this tab's own continuation) does not read, in a
                    // third tab, as the end of that reply.
                    &self.taken_elsewhere,
                )
            });
            self.c.persist(desired);
        }
        let next = self.build_head();
        self.c.commit(next, self.stream_dirty);
        self.stream_dirty = false;
    }
}

/// Gives `slot` the value of `from` (taken) if it has none.
fn fill(slot: &mut Option<String>, from: &mut Option<String>) {
    // Swapped, not assigned: the empty slot goes to `from`, nothing is dropped.
    if slot.is_none() {
        core::mem::swap(slot, from);
    }
}

/// A 2xx with a body: 204 (no content) is handled as a whole answer.
#[inline(never)]
fn is_stream_status(status: u16) -> bool {
    matches!(status, 200..=299) && status != 204
}

/// The call `id` has its outcome in the stream: a card announced for it before is no longer open.
fn settled(feed: &mut Feed, id: &str) {
    retain_cards(&mut feed.approvals, &|c| c.call_id != *id);
}

/// The card of a call in `cards`, to edit.
#[inline(never)]
fn card_mut<'a>(cards: &'a mut [GatedTool], call_id: &str) -> Option<&'a mut GatedTool> {
    cards.iter_mut().find(|c| c.call_id == call_id)
}

/// The cards `keep` accepts, the others dropped (one `retain` for every caller).
#[inline(never)]
fn retain_cards(cards: &mut Vec<GatedTool>, keep: &dyn Fn(&GatedTool) -> bool) {
    cards.retain(|c| keep(c));
}

fn remember_input(feed: &mut Feed, call_id: &str, name: &str, input: Option<Value>) {
    // Null until known: a card given null inputs shows `{}` (see `on_approval`).
    match tool_view(&mut feed.inputs, 0, call_id, name, &Value::Null) {
        Some(tool) => {
            if let Some(input) = input {
                tool.inputs = input;
            }
        }
        // Dropped here: the way on is one.
        None => drop(input),
    }
}

/// A reason the user gave to a rejection: the id of the message that held the call (where it
/// had one), the callId, the reason.
type Reason = (Option<String>, String, String);

/// The reason the user gave to the rejection of call `call_id` of message `message`, if any (a
/// reason given to a call of another message, one reusing the callId, is not it; without message
/// ids the callId alone tells).
fn reason_of(reasons: &[Reason], message: Option<&str>, call_id: &str) -> Option<String> {
    let (_, _, reason) = reasons.iter().rev().find(|(m, id, _)| {
        id == call_id && (m.is_none() || message.is_none() || m.as_deref() == message)
    })?;
    Some(reason.clone())
}

/// The tool for a call in `tools`: the last of its callId (a message can hold two calls under
/// one callId, ids counted per step: the later is the one a card or an outcome is about).
fn tool_in<'a>(tools: &'a [ToolView], call_id: &str) -> Option<&'a ToolView> {
    tools.iter().rev().find(|t| t.call_id == call_id)
}

/// The tool for a call in `tools`, to edit (the last, as `tool_in`; one find for
/// `show_decided`, `tool_automatic` and `tool_view`).
#[inline(never)]
fn tool_mut<'a>(tools: &'a mut [ToolView], call_id: &str) -> Option<&'a mut ToolView> {
    tools.iter_mut().rev().find(|t| t.call_id == call_id)
}

/// Can the call known by the tool name `known` be the one a chunk names `name`, under the same
/// callId? Not when both are known and differ: that is a new call reusing the callId (ids
/// counted per step), shown apart, so that its card shows its own tool with its own inputs.
fn same_call(known: &str, name: &str) -> bool {
    known.is_empty() || name.is_empty() || known == name
}

/// The view of the tool for a call in `tools` from index `from` on, appended (`called`) if
/// missing there or another call's (`same_call`).
fn tool_view<'a>(
    tools: &'a mut Vec<ToolView>,
    from: usize,
    call_id: &str,
    name: &str,
    inputs: &Value,
) -> Option<&'a mut ToolView> {
    // Looked for, then taken to edit, through the two shared finds (a second short scan of one
    // message's tools, where a position kept would be code of its own).
    let known = |t: &[ToolView]| tool_in(t, call_id).is_some_and(|t| same_call(&t.name, name));
    if tools.get(from..).is_some_and(known) {
        return tools.get_mut(from..).and_then(|t| tool_mut(t, call_id));
    }
    tools.push(ToolView {
        call_id: call_id.to_owned(),
        name: name.to_owned(),
        inputs: inputs.clone(),
        result: None,
        approval: None,
        approval_reason: None,
        reject_reason: None,
        status: ToolStatus::Called,
        raw_result: false,
    });
    tools.last_mut()
}

/// The raw tool part for a call in `parts` from index `from` on (the last, as `tool_in`), created
/// (`tool-<name>`) if missing there or another call's, as its view is.
fn tool_part<'a>(
    parts: &'a mut Vec<Value>,
    from: usize,
    call_id: &str,
    name: &str,
) -> Option<&'a mut Map> {
    let found = parts.iter().rposition(|p| {
        p.as_object()
            .and_then(tool_name_of)
            .is_some_and(|known| same_call(known, name))
            && of_call(p, call_id)
    });
    let i = match found.filter(|&i| i >= from) {
        Some(i) => i,
        None => {
            let mut part = Map::new();
            let mut ty = "tool-".to_owned();
            ty.push_str(name);
            put(&mut part, "type", Value::from(ty));
            put_str(&mut part, "toolCallId", call_id);
            parts.push(Value::Object(part));
            parts.len().saturating_sub(1)
        }
    };
    match parts.get_mut(i) {
        Some(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// Is `part` a part of the call `call_id` (its `toolCallId`)?
#[inline(never)]
fn of_call(part: &Value, call_id: &str) -> bool {
    part.get("toolCallId").and_then(Value::as_str) == Some(call_id)
}

fn set_approved(part: &mut Map, call_id: &str, approved: bool) {
    let mut approval = match part.remove("approval") {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    if approval.get("id").is_none() {
        put_str(&mut approval, "id", call_id);
    }
    put(&mut approval, "approved", Value::Bool(approved));
    put(part, "approval", Value::Object(approval));
}

fn is_tool_part(part: &Map) -> bool {
    tool_name_of(part).is_some()
}

/// The tool name of a tool part: what follows `tool-` in its `type`, "" for a `dynamic-tool`;
/// `None` for a part that is no tool's.
#[inline(never)]
fn tool_name_of(part: &Map) -> Option<&str> {
    let ty = part.get("type")?.as_str()?;
    match ty.strip_prefix("tool-") {
        None if ty == "dynamic-tool" => Some(""),
        name => name,
    }
}

/// A message for `raw`: the object as is when the thread model accepts it, else without the keys
/// it refuses.
fn raw_message(raw: Map) -> Message {
    match Message::try_from_map(raw) {
        Ok(m) => m,
        Err(mut raw) => {
            raw.remove("type");
            raw.remove("__id");
            if raw.get("role").is_some_and(|r| !r.is_string()) {
                raw.remove("role");
            }
            Message::try_from_map(raw).unwrap_or_else(|_| Message::empty())
        }
    }
}

/// The history document: `{messages: [...]}` or a bare array, its entries as sent (the non-object
/// ones are skipped by [`Sidenet::set_history`]). Not inlined into the answer's handler.
#[inline(never)]
fn parse_history(body: &[u8]) -> Result<Vec<Value>> {
    let text = json::utf8(body)?;
    if json::is_blank(Some(text)) {
        return Ok(Vec::new());
    }
    let (what, path, other) = match Value::parse(text)? {
        Value::Array(items) => return Ok(items),
        Value::Object(mut map) => {
            let messages = map.remove("messages");
            // Dropped here, once, not on each way out below.
            drop(map);
            match messages {
                Some(Value::Array(items)) => return Ok(items),
                None | Some(Value::Null) => return Ok(Vec::new()),
                Some(other) => (thread::BAD_MESSAGES, "$.messages", other),
            }
        }
        other => (
            "a thread must be an object with a \"messages\" array",
            "$",
            other,
        ),
    };
    Err(thread::got_error(what, json::describe(&other), path))
}

/// The collected output of `POST /v1/agents/{id}/run`: `{chunks: [...], finishReason}`, its
/// chunks as sent (typed by [`Sidenet::collected_feed`]).
fn parse_collected(body: &[u8]) -> Result<Vec<Value>> {
    let text = json::utf8(body)?;
    // The document, then what it holds under `chunks`, each dropped on one way.
    let chunks = match Value::parse(text)? {
        Value::Object(mut map) => map.remove("chunks"),
        _ => None,
    };
    match chunks {
        Some(Value::Array(chunks)) => Ok(chunks),
        _ => Err(Error::parse("collected output needs a \"chunks\" array").with_path("$.chunks")),
    }
}

/// How many of `messages` are the user's, and the index of the last.
fn count_users(messages: &[MessageView]) -> (usize, Option<usize>) {
    let mut users = (0, None);
    for (i, m) in messages.iter().enumerate() {
        if m.is_user() {
            users = (users.0 + 1, Some(i));
        }
    }
    users
}

/// The dialect-neutral view of one AI SDK UI message.
pub(super) fn ui_message_view(index: usize, raw: Map, reasons: &[Reason]) -> MessageView {
    let id = match raw.get("id") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.as_str().to_owned()),
        _ => None,
    };
    let role = match raw.get("role") {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    };
    let mut text = String::new();
    let mut tools = Vec::new();
    match raw.get("parts") {
        Some(Value::Array(parts)) => {
            for part in parts {
                let Some(part) = part.as_object() else {
                    continue;
                };
                let ty = part.get("type").and_then(Value::as_str);
                if ty == Some("text") {
                    if let Some(Value::String(t)) = part.get("text") {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(t);
                    }
                } else if let Some(tool) = part_tool(part, ty, id.as_deref(), reasons) {
                    tools.push(tool);
                }
            }
        }
        _ => {
            if let Some(Value::String(s)) = raw.get("content") {
                text.push_str(s);
            }
        }
    }
    MessageView {
        id,
        index,
        role,
        kind: if tools.is_empty() {
            MessageKindView::Text
        } else {
            MessageKindView::ToolCall
        },
        text,
        tools,
        raw: raw_message(raw),
    }
}

/// The tool of a part whose `type` is `ty`. Not inlined into the history's reader (a call per
/// part, not its code spread through the loop).
#[inline(never)]
fn part_tool(
    part: &Map,
    ty: Option<&str>,
    message: Option<&str>,
    reasons: &[Reason],
) -> Option<ToolView> {
    let ty = ty?;
    let name = match ty.strip_prefix("tool-") {
        Some(name) => name.to_owned(),
        None if ty == "dynamic-tool" => part
            .get("toolName")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        None => return None,
    };
    let Some(Value::String(call_id)) = part.get("toolCallId") else {
        return None;
    };
    let call_id = call_id.clone();
    // AI SDK 6 keeps the input of a call that failed its schema as `rawInput`.
    let inputs = inputs_of(part.get("input").or(part.get("rawInput")));
    let approval_obj = part.get("approval").and_then(Value::as_object);
    let approved = match approval_obj.and_then(|a| a.get("approved")) {
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    };
    let text_of = |key| {
        approval_obj
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
    };
    // The request's reason: Sidenet's history keeps it as `reason` (a denied call is recorded
    // "with the reason the model gave"); the AI SDK from 7.0.82 keeps it as `requestReason`, and
    // its `reason` is then the approver's answer, not read (a rejection's note stays with the
    // drafts' record).
    let approval_reason = text_of("requestReason")
        .or(text_of("reason"))
        .map(str::to_owned);
    let decided = approved.map(|a| {
        if a {
            Approval::Approved
        } else {
            Approval::Rejected
        }
    });
    // The result's key, where the state has one (read once, after the match).
    let (status, approval, key) = match part.get("state").and_then(Value::as_str) {
        Some("approval-requested") => (ToolStatus::Pending, Some(Approval::Pending), None),
        Some("approval-responded") => match approved {
            Some(false) => (ToolStatus::Rejected, Some(Approval::Rejected), None),
            _ => (ToolStatus::Approved, Some(Approval::Approved), None),
        },
        Some("output-available") => (ToolStatus::Done, decided, Some("output")),
        Some("output-denied") => (ToolStatus::Denied, Some(Approval::Rejected), None),
        Some("output-error") => (ToolStatus::Error, decided, Some("errorText")),
        _ => (ToolStatus::Called, None, None),
    };
    let result = key.and_then(|key| part.get(key)).cloned();
    let reject_reason = if matches!(approval, Some(Approval::Rejected)) {
        reason_of(reasons, message, &call_id)
    } else {
        None
    };
    Some(ToolView {
        call_id,
        name,
        inputs,
        result,
        approval,
        approval_reason,
        reject_reason,
        status,
        raw_result: false,
    })
}

/// The decision a continuation in flight carries is the rejection of this call.
fn rejecting(state: &State, call_id: &str) -> bool {
    let State::Busy(Flight {
        job: Job::Submit(sub),
        ..
    }) = state
    else {
        return false;
    };
    matches!(sub.next_queued(), Some((id, Decision::Reject(_))) if id == call_id)
}
