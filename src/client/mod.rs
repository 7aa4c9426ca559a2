//! The approval client: a sans-IO state machine (str0m / quinn-proto idiom).
//!
//! Two dialects behind one [`Client`]: Neuron (below) and Sidenet (streams, run ids, one
//! continuation per decision; its own diagram is in `sidenet.rs`). Same commands, same snapshot.
//!
//! The [`Client`] performs no I/O and reads no clock. Commands ([`Client::load`], [`Client::send`],
//! [`Client::approve`], [`Client::submit`], ...) and inputs ([`Client::handle_response`],
//! [`Client::handle_failure`], [`Client::handle_timeout`]) go in; effects come out of
//! [`Client::poll_output`] as plain data ([`Output::Http`], [`Output::Cancel`], [`Output::Persist`],
//! [`Output::Done`], [`Output::Changed`]); [`Client::snapshot`] is what the UI renders.
//!
//! # States
//!
//! At most one request is ever outstanding for the thread (single flight). The private state is
//! `Ready` or `Busy(flight)`, where a flight is one job (a load, a message, a decision submission)
//! that is either out on the wire (`Out(RequestId)`) or waiting to be retried (`Backoff(deadline)`).
//! The phase the UI sees is derived from the flight and from the thread's tail:
//!
//! ```text
//!                       load()                       2xx thread
//!   ┌──────┐  ───────────────────────▶ ┌─────────┐ ─────────────────▶ tail paused? ── yes ─▶ awaiting_approval
//!   │ idle │                           │ loading │ ◀─┐ 5xx / network /                 └─ no ─▶ idle | completed
//!   └──────┘                           └─────────┘ ──┘ timeout: backoff, retry
//!       │ send(text)                        │ 401, 4xx, bad body, retries exhausted ─▶ error
//!       ▼
//!   ┌─────────┐  2xx {status, message} ─▶ append; awaiting_approval | completed  (+ quiet reload: syncing)
//!   │ sending │  409 ─────────────────▶ conflict (reload) ─▶ awaiting_approval + error conflict + unsentText
//!   │         │                           (unless the reload shows the text landed: a re-sent POST)
//!   └─────────┘  5xx / network / timeout / bad body: NOT retried (not idempotent) ─▶ sending (reload):
//!                    the text landed? ─ yes ─▶ continue from the loaded thread
//!                                      └ no ──▶ error + unsentText
//!
//!   awaiting_approval ── approve / reject / clear (drafts, persisted) ── autoSubmit when complete ─┐
//!        │ submit()  (cumulative payload, only callIds gated on the tail, never empty)            │
//!        ▼                                                                                         │
//!   ┌────────────┐ ◀──────────────────────────────────────────────────────────────────────────────┘
//!   │ submitting │ 2xx ─▶ replace/append the tail ─▶ awaiting_approval (lastSubmission) | completed
//!   └────────────┘ 5xx / network / timeout / 2xx bad body ─▶ submitting (reload), never re-sent:
//!        │           shown applied, or the pause gone ─▶ acknowledged; still there, not applied
//!        │           ─▶ error, drafts kept (the next submit() reads the thread first)
//!        │ 409, 400, 408, 429, a conflict body
//!        ▼
//!   ┌──────────┐  reload ─▶ the pause the drafts were made on shows them ───────────▶ acknowledged
//!   │ conflict │                                     still there, not applied ───────▶ error, drafts kept
//!   └──────────┘                                     gone, or decided otherwise ─────▶ dropped + conflict
//! ```
//!
//! `abort()` cancels the flight from any busy phase (ops resolve with `aborted`; drafts and the unsent
//! text are kept) and returns to the phase the tail implies. `error` is left by any later `load`,
//! `send`, `submit` or `rejectAllAndSend` (a draft changed meanwhile leaves the error shown).
//!
//! # The driver's duties
//!
//! - perform every [`Output::Http`] (passing `timeout_ms` to fetch, with an abort signal) and report its
//!   end with [`Client::handle_response`] or [`Client::handle_failure`] under the request's id;
//! - for a request with [`HttpRequest::streaming`] (Sidenet), report the answer as it arrives:
//!   [`Client::handle_stream_start`] with the status once the head is in, each body read with
//!   [`Client::handle_stream_chunk`], then [`Client::handle_stream_end`]; a read failure mid-way with
//!   [`Client::handle_failure`]. `timeout_ms` bounds the wait for the head, not the whole stream.
//!   (`handle_response` with the whole body is accepted too, for drivers that cannot stream.)
//! - on [`Output::Cancel`] abort that fetch (a late reply for it is ignored anyway);
//! - on [`Output::Persist`] write (`Some`) or remove (`None`) the storage key; at start-up, read the
//!   key and hand it to [`Client::restore_drafts`], and so each value another tab gives it later
//!   (`""` once removed);
//! - after each step, arm one timer for [`Client::poll_timeout`] (an absolute time on the same clock as
//!   `now`) and call [`Client::handle_timeout`] when it fires;
//! - resolve the promise of each command's [`OpId`] on [`Output::Done`] (an op from `approve`/`reject`
//!   that triggered autoSubmit may have no promise: ignore unknown ops);
//! - notify subscribers on [`Output::Changed`] (at most one per step, always the last output of the step).

mod audit;
mod config;
mod engine;
mod neuron;
mod sidenet;

/// The Sidenet engine of a client (`as_ref` or `as_mut`), when its dialect is Sidenet. In a build
/// without the `sidenet` feature there is none, so none of the engine's code (nor the stream
/// decoders it alone uses) is linked into the module.
macro_rules! engine {
    ($client:ident, $borrow:ident) => {
        if cfg!(feature = "sidenet") {
            $client.sidenet.$borrow()
        } else {
            None
        }
    };
}
mod snapshot;

use crate::prelude::*;

use crate::approval::{Approval, GatedTool, Suspension};
use crate::decisions::{Decision, Decisions};
use crate::error::{Error, ErrorCode, Result};
use crate::json::{self, Keys, Map, Obj, ToJson, Value};
use crate::thread::{self, Marks, Message, Thread};
use audit::{Audit, Fate};
#[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
use engine::Wait;
use engine::{
    check_text, err_aborted, seed_auto, Core, Flight, Job, Stage, State, Submission, Why, NOW,
};

pub use config::{Config, Dialect, Retry, Routes, Transport};
pub use snapshot::{
    DraftMap, ErrorView, GatedView, MessageKindView, MessageView, Messages, PendingNote, Phase,
    Snapshot, SnapshotHead, SubmissionView, SuspensionView, ToolStatus, ToolView,
};

/// Identifies a command; its [`Output::Done`] carries the same id.
pub type OpId = u64;

/// Identifies one HTTP request; a reply under an id that is no longer awaited is ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

/// The HTTP method of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    Get,
    Post,
}

impl Method {
    pub const fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

/// A request for the driver to perform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub id: RequestId,
    pub method: Method,
    /// The full URL: `baseUrl` + the route, with the thread id percent-encoded.
    pub url: String,
    /// `Accept: application/json`, `Content-Type: application/json` on POSTs, then the configured
    /// headers (which win over the defaults).
    pub headers: Vec<(String, String)>,
    /// The JSON body of a POST.
    pub body: Option<String>,
    pub timeout_ms: u64,
    /// `true` when the answer is an event stream: report it with [`Client::handle_stream_start`],
    /// [`Client::handle_stream_chunk`] and [`Client::handle_stream_end`] as the bytes arrive (a
    /// failure mid-way with [`Client::handle_failure`]). `false` for every Neuron request.
    pub streaming: bool,
}

/// A reply, whatever its status.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> HttpResponse {
        HttpResponse {
            status,
            body: body.into(),
        }
    }
}

/// Why a request got no reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportError {
    /// Connection refused, dropped, reset, CORS, ...
    Network(String),
    /// The driver's timer (`timeout_ms`) fired first.
    Timeout,
    /// The driver aborted the request on its own (e.g. page unload): handled like [`Client::abort`].
    Aborted,
}

/// An effect for the driver.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Perform this request.
    Http(HttpRequest),
    /// Abort this request; its reply, if any, will be ignored.
    Cancel(RequestId),
    /// Write (`Some`) or remove (`None`) this storage entry.
    Persist { key: String, value: Option<String> },
    /// The command `op` is over.
    Done { op: OpId, result: Result<()> },
    /// The snapshot changed.
    Changed,
}

/// A pause: the tail's message id and its gated callIds, in tail order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct PauseKey {
    message_id: Option<String>,
    call_ids: Vec<String>,
}

impl PauseKey {
    fn of(suspension: &Suspension) -> Option<PauseKey> {
        if !suspension.suspended {
            return None;
        }
        Some(PauseKey {
            message_id: suspension.message_id.clone(),
            call_ids: gated_ids(suspension),
        })
    }

    /// Is `message` the message this pause was on (by id, else by its gated callIds)?
    fn is_message(&self, message: &Message) -> bool {
        if !message.is_tool_call() {
            return false;
        }
        // Its `__id` read in place (as `Message::id` reads it, no copy made to compare).
        let theirs = match message.get("__id") {
            Some(Value::String(s)) => Some(s.as_str()),
            Some(Value::Number(n)) => Some(n.as_str()),
            _ => None,
        };
        match (&self.message_id, theirs) {
            (Some(mine), Some(theirs)) => mine == theirs,
            _ => gated_ids(&Suspension::from_message(message)) == self.call_ids,
        }
    }
}

fn gated_ids(suspension: &Suspension) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for tool in suspension.each_gated() {
        if !ids.contains(&tool.call_id) {
            ids.push(tool.call_id.clone());
        }
    }
    ids
}

/// Is every gated call of `a` one of `b`'s: the same callId, tool and inputs?
fn same_calls(a: &Suspension, b: &Suspension) -> bool {
    a.each_gated().all(|o| {
        b.each_gated()
            .any(|n| n.call_id == o.call_id && n.name == o.name && n.inputs == o.inputs)
    })
}

/// How to judge drafts whose pause went away (see [`Client::adopt_tail`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ack {
    /// Acknowledged only if the pause's message, still in the thread, records them.
    Verify,
    /// Also acknowledged if the pause's message is gone (after a submission of them without a
    /// clear answer).
    IfMissing,
    /// Acknowledged: the server just accepted them (a 2xx reply to their submission).
    Accepted,
}

/// The stored drafts, as read back: `{v, messageId?, runId?, callIds, drafts}` (Neuron writes
/// `messageId`, Sidenet `runId`).
struct StoredIn {
    message_id: Option<String>,
    run_id: Option<String>,
    call_ids: Vec<String>,
    /// Each call's [`call_sig`], in the order of `call_ids`.
    sigs: Option<Value>,
    /// The calls the server holds a decision for, as the writer's tail shows (Neuron), or whose
    /// continuation it took, the reply streaming (Sidenet); absent when none.
    settled: Option<Value>,
    /// The calls an allowed tool approved (`Core::auto`); absent when none.
    auto: Option<Value>,
    drafts: Map,
}

/// What the drafts this tab alone holds (its write failed) are compared with, so that they give
/// way only to a change made in the other tab (`StoredIn::changed`): the record storage held
/// before the first failed write (`Core::unsaved`), while this tab takes in another's saves
/// (`quiet`).
fn unsaved_base(unsaved: Option<&str>, quiet: bool) -> Option<StoredIn> {
    unsaved.filter(|_| quiet).and_then(read_stored)
}

/// Reads stored drafts; `None` when the text is not a stored-drafts object of version 1.
fn read_stored(text: &str) -> Option<StoredIn> {
    let Ok(Value::Object(mut o)) = Value::parse(text) else {
        return None;
    };
    // Read by reference: the object is dropped at one place, whichever way that went.
    stored_of(&mut o)
}

/// [`read_stored`] of the object parsed (what it keeps moved out).
fn stored_of(o: &mut Map) -> Option<StoredIn> {
    // The text "1" is the only JSON number that reads as the integer 1.
    if o.get("v")?.as_number()?.as_str() != "1" {
        return None;
    }
    // Checked in an order that leaves the fewest values to drop on a refusal: the drafts (moved
    // out), the pause by reference, the callIds, and the copies last, where nothing can fail.
    let Some(Value::Object(drafts)) = o.remove("drafts") else {
        return None;
    };
    let message_id = match o.get("messageId") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(_) => return None,
    };
    let mut call_ids = Vec::new();
    for id in o.get("callIds")?.as_array()? {
        call_ids.push(id.as_str()?.to_owned());
    }
    Some(StoredIn {
        message_id: message_id.cloned(),
        run_id: o.get("runId").and_then(Value::as_str).map(str::to_owned),
        call_ids,
        sigs: o.remove("sigs"),
        settled: o.remove("settled"),
        auto: o.remove("auto"),
        drafts,
    })
}

impl StoredIn {
    /// Is the record's call `call_ids[i]` (`id`) the call of that id in `tail`: the same tool
    /// and inputs (not an older call whose callId a newer pause reuses)?
    fn same_call(&self, i: usize, id: &str, tail: &Suspension) -> bool {
        let sig = match &self.sigs {
            Some(Value::Array(sigs)) => sigs.get(i).and_then(Value::as_number),
            _ => None,
        };
        sig.is_some_and(|s| s.as_str() == json::u64_string(call_sig(tail, id)))
    }

    /// Were the drafts made on these very calls, every one of them?
    fn fits(&self, tail: &Suspension) -> bool {
        let mut i = 0;
        self.call_ids.iter().all(|id| {
            i += 1;
            self.same_call(i - 1, id, tail)
        })
    }

    /// Was the draft of `id` changed in this record since `base` (the record the writer held
    /// before this tab's write failed: see `Core::unsaved`)? Without a base, always.
    fn changed(&self, base: Option<&StoredIn>, id: &str) -> bool {
        base.map_or(true, |b| b.drafts.get(id) != self.drafts.get(id))
    }

    /// Does the record list `id` as settled?
    fn settled(&self, id: &str) -> bool {
        matches!(&self.settled, Some(Value::Array(ids)) if ids.iter().any(|s| s.as_str() == Some(id)))
    }
}

/// A fingerprint of the gated call `id` of a pause: the hash of its callId, tool name and inputs
/// (of each call under that id, summed), so that a draft is taken only for the call its callId
/// named when it was made, not for another one that a newer pause lists under the same callId.
fn call_sig(tail: &Suspension, id: &str) -> u64 {
    let mut sum: u32 = 0;
    // (A sum: the order of the walk does not matter.)
    for tool in tail.each_gated() {
        if tool.call_id == id {
            let name = fnv(fnv(FNV_OFFSET, id.as_bytes()), tool.name.as_bytes());
            sum = sum.wrapping_add(fnv(name, &value_hash(&tool.inputs).to_le_bytes()));
        }
    }
    u64::from(sum)
}

const FNV_OFFSET: u32 = 0x811c_9dc5;

/// FNV-1a of `bytes`, from `hash`.
fn fnv(mut hash: u32, bytes: &[u8]) -> u32 {
    for b in bytes {
        hash = (hash ^ u32::from(*b)).wrapping_mul(0x0100_0193);
    }
    hash
}

/// A hash of `value` that, as equality, does not depend on the order of an object's members (a
/// server that keeps a run's snapshot in a jsonb column gives them back in another order than the
/// stream did) nor on the earlier entries of a repeated key (which such a column drops): an
/// object's is the sum of its members' (each its key's and its last value's), so equal values
/// hash alike.
fn value_hash(value: &Value) -> u32 {
    match value {
        Value::Object(map) => {
            let mut sum: u32 = 0;
            for (key, v) in Keys::of(map).last_entries() {
                let key = fnv(FNV_OFFSET, key.as_bytes());
                sum = sum.wrapping_add(fnv(key, &value_hash(v).to_le_bytes()));
            }
            fnv(sum, b"{")
        }
        Value::Array(items) => {
            let mut hash = fnv(FNV_OFFSET, b"[");
            for v in items {
                hash = fnv(hash, &value_hash(v).to_le_bytes());
            }
            hash
        }
        scalar => fnv(FNV_OFFSET, scalar.to_json_string().as_bytes()),
    }
}

/// Sets the stored `drafts` that `keep` accepts and no draft overrides; returns them, for the
/// audit (a build without it, whose callers' loops over them are empty, lists none: no copies).
fn restore_into(
    decisions: &mut Decisions,
    drafts: &Map,
    keep: &dyn Fn(&str, &Decision) -> bool,
) -> Vec<(String, Decision)> {
    #[allow(unused_mut)]
    let mut restored = Vec::new();
    for (id, wire) in drafts {
        let Some(decision) = Decision::read_wire(wire) else {
            continue;
        };
        if decisions.lookup(id).0.is_some() || !keep(id, &decision) {
            continue;
        }
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        if decisions.set(id, decision.clone()).is_ok() {
            restored.push((id.clone(), decision));
        }
        #[cfg(not(any(debug_assertions, fuzzing, feature = "invariants")))]
        // (Read from the wire form: its reason is kept as `set` would keep it.)
        decisions.put_found(id, Some(decision));
    }
    restored
}

/// `{"v":1,"<pause key>":"<pause>","callIds":[...],"sigs":[...],"settled":[...],"auto":[...],
/// "drafts":{...}}`.
#[allow(clippy::too_many_arguments)]
fn write_stored(
    pause_key: &str,
    pause: Option<&str>,
    call_ids: &[String],
    tail: &Suspension,
    taken: Option<&String>,
    elsewhere: &[String],
    auto: &[(String, bool)],
    drafts: &DraftMap,
) -> String {
    let mut out = String::new();
    let mut o = Obj::new(&mut out);
    o.key("v").push('1');
    let key = o.key(pause_key);
    match pause {
        Some(pause) => json::write_str(key, pause),
        None => key.push_str("null"),
    }
    let ids = o.key("callIds");
    ids.push('[');
    for (i, id) in call_ids.iter().enumerate() {
        if i > 0 {
            ids.push(',');
        }
        json::write_str(ids, id);
    }
    ids.push(']');
    // Written in place: no list of them built.
    let sigs = o.key("sigs");
    sigs.push('[');
    for (i, id) in call_ids.iter().enumerate() {
        if i > 0 {
            sigs.push(',');
        }
        json::write_u64(sigs, call_sig(tail, id));
    }
    sigs.push(']');
    // Neuron: the calls the server holds decided (a Sidenet record lists the open calls alone),
    // but a callId the tail also has pending (two calls under one id): a reader would always
    // find it pending, and load again on every record.
    // Sidenet: the call whose continuation the server took, while its reply streams, and those
    // another tab's record listed so (`elsewhere`: that tab's reply still streams).
    // Written in place, no list built: the key before the first (absent when none).
    // Three plain loops, not a chain of adaptors (whose `next` is library code).
    let mut list: Option<&mut String> = None;
    macro_rules! settled {
        ($id:expr) => {
            let out = match list.take() {
                Some(out) => {
                    out.push(',');
                    out
                }
                None => {
                    let out = o.key("settled");
                    out.push('[');
                    out
                }
            };
            json::write_str(out, $id);
            list = Some(out);
        };
    }
    for t in &tail.decided {
        if !tail.pending.iter().any(|p| p.call_id == t.call_id) {
            settled!(&t.call_id);
        }
    }
    if let Some(id) = taken {
        settled!(id);
    }
    for id in elsewhere {
        settled!(id);
    }
    if let Some(out) = list {
        out.push(']');
    }
    // The calls an allowed tool approved: read back (after a reload, in another tab) so that the
    // rule approves each call once, and a draft the person cleared or changed stays so.
    if !auto.is_empty() {
        let ids = o.key("auto");
        let mut sep = '[';
        for (id, _) in auto {
            ids.push(sep);
            sep = ',';
            json::write_str(ids, id);
        }
        ids.push(']');
    }
    o.field("drafts", drafts);
    o.end();
    out
}

/// Is `name` in `list`? (One copy of the scan for the lists of callIds; in a build without
/// Sidenet it has one caller, and is inlined there.)
#[cfg_attr(feature = "sidenet", inline(never))]
fn listed(list: &[String], name: &str) -> bool {
    list.iter().any(|s| s == name)
}

/// The callIds of `cards`, in order.
fn ids_of(cards: &[GatedTool]) -> Vec<String> {
    let mut ids = Vec::new();
    for card in cards {
        ids.push(card.call_id.clone());
    }
    ids
}

/// The approval client for one thread. See the module docs.
#[derive(Debug)]
pub struct Client {
    /// The state both engines keep alike.
    c: Core,
    messages: Vec<Message>,
    /// Neuron: what the last load's document was, so that a reload parses only what changed.
    marks: Marks,
    view: Messages,
    suspension: Suspension,
    /// The key of `decisions`' pause.
    pause: Option<PauseKey>,
    /// The bookkeeping of [`check_invariants`](Self::check_invariants) (empty in release).
    audit: Audit<PauseKey>,
    /// The Sidenet engine, which answers every call when the dialect is Sidenet.
    sidenet: Option<Box<sidenet::Sidenet>>,
    /// Neuron: an answer reported through the stream inputs, buffered to its end.
    stream_rx: Option<(RequestId, u16, Vec<u8>)>,
    /// A quiet reload to start when the step settles, unless an automatic submission (whose
    /// answer brings its own) started instead: the driver never sees one issued and cancelled.
    sync_due: bool,
    /// The outcome of a decision POST is not known (stopped by `abort()` after it was sent, no
    /// clear answer, or accepted without the message and the read that followed lost): it may
    /// have landed, be running its tools, or have moved the run on to calls that reuse the
    /// callIds. Until the thread is read again, a submission reads it first and is sent only to
    /// the pause it was made on, not yet decided.
    unsure: bool,
    /// The pause such a POST (stopped after it went out, or without a clear answer) was sent to:
    /// it may land at any time, so the doubt lasts as long as that pause is shown, through reads
    /// and other submissions (see [`weigh_doubt`](Self::weigh_doubt)).
    doubt: Option<PauseKey>,
}

impl Client {
    /// A client for one thread; `invalid_argument` when the config is invalid.
    pub fn new(config: Config) -> Result<Client> {
        config.validate()?;
        Ok(Client::checked(config))
    }

    /// A client for a config already checked as [`Config::validate`] does (by `readOptions` in
    /// `src/wasm/fast.js`, for the wasm driver).
    pub(crate) fn checked(config: Config) -> Client {
        let (sidenet, config) = match (config.dialect, sidenet::LIVE) {
            (Dialect::Sidenet, Some(live)) => (
                Some(Box::new(sidenet::Sidenet::new(config, live))),
                // A placeholder: the Sidenet engine answers every call.
                Config::of(Dialect::Sidenet),
            ),
            _ => (None, config),
        };
        let mut client = Client {
            c: Core::new(config),
            messages: Vec::new(),
            marks: Marks::default(),
            view: Messages::default(),
            suspension: Suspension::default(),
            pause: None,
            audit: Audit::new(),
            sidenet,
            stream_rx: None,
            sync_due: false,
            unsure: false,
            doubt: None,
        };
        client.c.snapshot = client.build_snapshot();
        client
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        if let Some(engine) = engine!(self, as_ref) {
            return engine.config();
        }
        &self.c.config
    }

    // ------------------------------------------------------------------------------------------
    // Commands

    /// Loads the thread. `busy` while another command's request is in flight.
    pub fn load(&mut self, now: u64) -> Result<OpId> {
        if let Some(engine) = engine!(self, as_mut) {
            return engine.load(now);
        }
        self.c.tick(now);
        self.c.check_not_busy()?;
        self.cancel_sync();
        self.c.clear_notices();
        let op = self.c.new_op();
        self.start_load(Some(op), Why::User);
        self.settle();
        Ok(op)
    }

    /// Sends a new user message. `invalid_argument` for blank text, `busy` while a request is in
    /// flight, `input_locked` while the tail is paused.
    pub fn send(&mut self, now: u64, text: &str) -> Result<OpId> {
        if let Some(engine) = engine!(self, as_mut) {
            return engine.send(now, text);
        }
        let op = self.c.begin_send(now, text, self.suspension.suspended)?;
        self.cancel_sync();
        self.start_send(op, text.to_owned());
        self.settle();
        Ok(op)
    }

    /// Approves a gated tool on the paused tail (a local draft). Returns the op of the submission
    /// when autoSubmit fired. `busy`, `not_suspended`, `unknown_call_id`; Sidenet: `invalid_state`
    /// for a call whose decision the server already accepted (the reply to it was stopped).
    pub fn approve(&mut self, call_id: &str) -> Result<Option<OpId>> {
        self.decide(call_id, Decision::Approve)
    }

    /// Rejects a gated tool, with an optional reason the model reads verbatim (blank ⇒ none).
    pub fn reject(&mut self, call_id: &str, reason: Option<&str>) -> Result<Option<OpId>> {
        self.decide(call_id, Decision::reject(reason))
    }

    /// Allows the tool `name` for the client's life (`allow`), or stops allowing it. An allowed
    /// tool's calls are approved without asking: those of the current pause still undecided, and
    /// those of every later pause, each once (a draft the user clears or changes stays so); when
    /// that leaves nothing for a person to decide, the decisions are submitted at once (an op with
    /// no command: its end shows in the snapshot). No longer allowed: later pauses ask for it
    /// again; drafts already made stay. `snapshot().allowed_tools` lists them.
    /// `invalid_argument` for a blank name (a call without a name has an empty one: allowing
    /// `""` would approve those).
    pub fn allow_tool(&mut self, now: u64, name: &str, allow: bool) -> Result<()> {
        if json::is_blank(Some(name)) {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                "a tool name must not be blank",
            ));
        }
        if let Some(engine) = engine!(self, as_mut) {
            engine.allow_tool(now, name, allow);
            return Ok(());
        }
        self.c.tick(now);
        self.c.allow_tool(name, allow);
        self.settle();
        Ok(())
    }

    /// Drops the draft for a tool (the tail's own decision, if any, counts again).
    pub fn clear(&mut self, call_id: &str) -> Result<()> {
        if let Some(engine) = engine!(self, as_mut) {
            return engine.clear(call_id);
        }
        if self.c.clear_draft(call_id)? {
            self.audit.settle(call_id, Fate::Cleared);
        }
        self.settle();
        Ok(())
    }

    /// Sends the decisions: the cumulative set for this pause (the tail's own decisions restated,
    /// the drafts overlaid), keyed in tail order. `busy`, `not_suspended`, `empty_decisions`.
    pub fn submit(&mut self, now: u64) -> Result<OpId> {
        if let Some(engine) = engine!(self, as_mut) {
            return engine.submit(now);
        }
        self.c.tick(now);
        self.c.check_not_busy()?;
        let op = self.submit_now(None)?;
        self.settle();
        Ok(op)
    }

    /// The way out of a locked composer. Not paused: the same as [`send`](Self::send). Paused: rejects
    /// every undecided tool with `reason` (drafts already taken are kept), submits, and once the run
    /// has completed sends `text`. If the run pauses again instead (a chained tool), it stops there:
    /// the new tools are never rejected unseen; the op fails with `input_locked`, the phase is
    /// `awaiting_approval` and the text waits in `unsentText`.
    pub fn reject_all_and_send(
        &mut self,
        now: u64,
        text: &str,
        reason: Option<&str>,
    ) -> Result<OpId> {
        if let Some(engine) = engine!(self, as_mut) {
            return engine.reject_all_and_send(now, text, reason);
        }
        // Not paused: `send`, which checks the text and the flight as below.
        if !self.suspension.suspended {
            return self.send(now, text);
        }
        self.c.tick(now);
        check_text(text)?;
        self.c.check_not_busy()?;
        // For the audit only (the pause is set: the decisions are): a build without it lists no
        // callId, nor makes a decision per tool, just to drop them.
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        let undecided = self.c.undecided();
        self.c.reject_undecided(reason)?;
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        if let Some(pause) = &self.pause {
            for id in &undecided {
                self.audit.hold(pause, id, &Decision::reject(reason));
            }
        }
        let op = self.submit_now(Some(text.to_owned()))?;
        self.c.unsent_text = None;
        self.settle();
        Ok(op)
    }

    /// Cancels the flight, if any: [`Output::Cancel`] for a request on the wire, its op resolves with
    /// `aborted`. Drafts are kept; the text of an interrupted message goes to `unsentText`.
    pub fn abort(&mut self) {
        if let Some(engine) = engine!(self, as_mut) {
            return engine.abort();
        }
        if let Some((flight, out)) = self.c.cancel() {
            if let Some(id) = out {
                self.audit.ended(id);
            }
            self.stopped(flight.job, out.is_some());
        }
        self.settle();
    }

    /// `job` was stopped (`sent`: its request was out): its op fails with `aborted`. A submission
    /// that may have landed, or whose check was under way, leaves the client [`unsure`](Self)
    /// and reads the thread quietly.
    fn stopped(&mut self, job: Job, sent: bool) {
        let doubtful = match &job {
            Job::Submit(sub) if sent => {
                self.doubt_of(sub);
                true
            }
            // The check of a POST without a clear answer: what it carried may still land.
            Job::Load {
                why: Why::Reconcile { sub, resend, .. },
                ..
            } => {
                if resend.is_some() && *resend != NOW {
                    self.doubt_of(sub);
                }
                true
            }
            _ => false,
        };
        if doubtful {
            self.unsure = true;
            self.sync_due = true;
        }
        self.c.aborted(job, true);
    }

    /// A decision POST of `sub` whose outcome is unknown: what it carried may still land on its
    /// pause, and the next submission reads the thread first.
    fn doubt_of(&mut self, sub: &Submission) {
        self.doubt = Some(sub.pause.clone());
        self.unsure = true;
    }

    /// After a read, or a POST accepted: a POST in doubt can still move the run on while the pause
    /// it went to is shown (a pause shown unchanged proves nothing: it may land after this read,
    /// and the run pause again on calls that reuse the callIds; a submission settled by a read, or
    /// one that sent less, does not end it either). Then every submission reads the thread first;
    /// once another pause (or none) is shown, the doubt is over.
    fn weigh_doubt(&mut self) {
        let open = self.doubt.is_some() && self.doubt == self.pause;
        if !open {
            self.doubt = None;
        }
        self.unsure = open;
    }

    /// Hands over drafts read from storage (the value of an earlier [`Output::Persist`]; `""` for
    /// none). Applied only when they were made on the pause the tail shows now, and only for its
    /// gated tools. Before the first successful load they are held, then added to any drafts made
    /// meanwhile (which win); what is not kept of them is dropped from storage. After it, they are
    /// what another tab wrote (the `storage` event): when no command is in flight, they replace
    /// the drafts when they are for the pause shown (drafts for another pause, from a tab behind
    /// or ahead, leave these as they are), and nothing is written back; `""` (the key removed, by
    /// a tab that shows no pause) leaves them too, and they are written again. Drafts for a pause
    /// not shown, or a removal while a pause is shown, also load the thread again to catch up
    /// (Neuron: the quiet reload; Sidenet: a load). During a command they are ignored, and
    /// [`ApprovalClient::take_missed_restore`] tells the driver to read storage again once it is
    /// over (as it does after a new pause).
    pub fn restore_drafts(&mut self, persisted: &str) {
        if let Some(engine) = engine!(self, as_mut) {
            return engine.restore_drafts(persisted);
        }
        if let Some(persisted) = self.c.restore(persisted) {
            let taken = self.apply_restore(persisted);
            // Caught up by a quiet reload (when nothing else is in flight).
            self.sync_due |= self.c.restored(taken, persisted, self.pause.is_some());
        }
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        self.audit.forget(&self.c.drafts());
        self.settle();
    }

    // ------------------------------------------------------------------------------------------
    // Inputs

    /// The reply to request `id` (any status). Replies to ids no longer awaited are ignored.
    pub fn handle_response(&mut self, now: u64, id: RequestId, response: HttpResponse) {
        if let Some(engine) = engine!(self, as_mut) {
            return engine.handle_response(now, id, response);
        }
        self.c.tick(now);
        let Some(flight) = self.take_flight(id) else {
            return;
        };
        let attempt = flight.attempt;
        match flight.job {
            job @ Job::Load { .. } => self.on_load_response(now, attempt, job, response),
            Job::Send {
                op,
                text,
                users_before,
            } => self.on_send_response(op, text, users_before, &response),
            Job::Submit(sub) => self.on_submit_response(sub, &response),
        }
        self.settle();
    }

    /// The head of the answer to a streaming request `id` ([`HttpRequest::streaming`]): its status.
    /// A 2xx (but 204) is decoded as an event stream as its bytes arrive; any other status is
    /// buffered and handled as a whole answer at [`handle_stream_end`](Self::handle_stream_end).
    /// Ignored for ids no longer awaited.
    pub fn handle_stream_start(&mut self, now: u64, id: RequestId, status: u16) {
        if let Some(engine) = engine!(self, as_mut) {
            return engine.handle_stream_start(now, id, status);
        }
        // Only the request awaited (a late head of a cancelled one must not take the buffer from
        // it), once.
        let awaited = matches!(&self.c.state, State::Busy(f) if f.awaits(id));
        if !awaited || self.stream_rx.as_ref().is_some_and(|(r, _, _)| *r == id) {
            return;
        }
        self.stream_rx = Some((id, status, Vec::new()));
    }

    /// The next bytes of the answer to request `id`, split anywhere.
    pub fn handle_stream_chunk(&mut self, now: u64, id: RequestId, bytes: &[u8]) {
        if let Some(engine) = engine!(self, as_mut) {
            return engine.handle_stream_chunk(now, id, bytes);
        }
        if let Some((r, _, body)) = self.stream_rx.as_mut() {
            if *r == id {
                body.extend_from_slice(bytes);
            }
        }
    }

    /// The answer to request `id` ended (a read failure goes to
    /// [`handle_failure`](Self::handle_failure) instead).
    pub fn handle_stream_end(&mut self, now: u64, id: RequestId) {
        if let Some(engine) = engine!(self, as_mut) {
            return engine.handle_stream_end(now, id);
        }
        if self.stream_rx.as_ref().is_some_and(|(r, _, _)| *r == id) {
            if let Some((_, status, body)) = self.stream_rx.take() {
                self.handle_response(now, id, HttpResponse { status, body });
            }
        }
    }

    /// Request `id` got no reply. Ignored for ids no longer awaited.
    pub fn handle_failure(&mut self, now: u64, id: RequestId, error: TransportError) {
        if let Some(engine) = engine!(self, as_mut) {
            return engine.handle_failure(now, id, error);
        }
        self.c.tick(now);
        let Some(flight) = self.take_flight(id) else {
            return;
        };
        match transport_error(error, self.c.config.timeout_ms) {
            None => self.stopped(flight.job, true),
            Some(error) => match flight.job {
                Job::Send {
                    op,
                    text,
                    users_before,
                } => self.verify_send(op, text, users_before, error, false),
                // No clear answer: checked, never sent again by itself (see `Why::Reconcile`).
                Job::Submit(sub) => self.reconcile(sub, error, Some(0)),
                job => self.c.retry_or_fail(now, job, flight.attempt, error),
            },
        }
        self.settle();
    }

    /// Fires a due retry.
    pub fn handle_timeout(&mut self, now: u64) {
        if let Some(engine) = engine!(self, as_mut) {
            return engine.handle_timeout(now);
        }
        self.c.tick(now);
        if let Some(flight) = self.c.due(now) {
            self.issue(flight.job, flight.attempt.saturating_add(1));
        }
        self.settle();
    }

    // ------------------------------------------------------------------------------------------
    // Outputs

    /// The next effect, if any.
    pub fn poll_output(&mut self) -> Option<Output> {
        if let Some(engine) = engine!(self, as_mut) {
            return engine.poll_output();
        }
        self.c.poll_output()
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due (same clock as `now`).
    pub fn poll_timeout(&self) -> Option<u64> {
        if let Some(engine) = engine!(self, as_ref) {
            return engine.poll_timeout();
        }
        self.c.poll_timeout()
    }

    /// What the UI renders.
    pub fn snapshot(&self) -> &Snapshot {
        if let Some(engine) = engine!(self, as_ref) {
            return engine.snapshot();
        }
        &self.c.snapshot
    }

    /// Whether the driver should read storage again and hand over what it holds (`""` for
    /// nothing) to [`ApprovalClient::restore_drafts`], now that no command is in flight (`true`
    /// once): another tab saved drafts during a command (what arrives then is ignored), or the
    /// thread shows a pause it did not show before, for which another tab that got there first
    /// may have saved drafts. In that case the step wrote nothing; the read takes those drafts in,
    /// and otherwise this client's record is written then.
    pub fn take_missed_restore(&mut self) -> bool {
        match engine!(self, as_mut) {
            Some(engine) => engine.c.take_missed(),
            None => self.c.take_missed(),
        }
    }

    /// The driver could not write the last [`Output::Persist`] (a full storage: it removed the
    /// key instead, never leaving an older record). Until a later write, the drafts live in this
    /// client alone, and the record storage held before does not replace them when another tab
    /// writes it again (told of the removal, it writes what it holds, which lacks them); a newer
    /// record from it (a decision made there since) does, as always.
    pub fn persist_failed(&mut self) {
        match engine!(self, as_mut) {
            Some(engine) => engine.c.write_failed(),
            None => self.c.write_failed(),
        }
    }

    /// The JSON of [`Snapshot::head_without_stream_text`] for [`snapshot`](Self::snapshot):
    /// written by the step that made the snapshot, and reused while nothing streams.
    pub fn head_json(&mut self) -> String {
        match engine!(self, as_mut) {
            Some(engine) => engine.c.head_json(),
            None => self.c.head_json(),
        }
    }

    /// How many leading views of the snapshot's `messages` are the same as at the previous call
    /// (at most as many as there were then; 0 at the first call), for a driver that converts the
    /// messages for its UI: it converts only the views from that index on, and keeps its
    /// conversions of the ones before. A turn adds a message or two at the end of the thread, or
    /// changes the last one, so what is converted does not grow with the thread. Call it each time
    /// the messages are converted ([`Snapshot::messages_version`] changed), and only then.
    pub fn take_unchanged_messages(&mut self) -> usize {
        match engine!(self, as_mut) {
            Some(engine) => engine.c.take_unchanged(),
            None => self.c.take_unchanged(),
        }
    }

    /// Changes iff the snapshot changed.
    pub fn version(&self) -> u64 {
        self.snapshot().version
    }

    /// Identifies the streaming message ([`Snapshot::streaming`]): while it stays the same, the
    /// streaming message's `text` only grows at its end, so a driver may keep the text it already
    /// converted and append only the new part (see [`Snapshot::head_without_stream_text`]).
    pub fn stream_epoch(&self) -> u64 {
        engine!(self, as_ref).map_or(0, |e| e.stream_epoch())
    }

    /// How many message views were built or copied so far (Sidenet; 0 for Neuron). For tests: a
    /// streamed text delta must not change it, whatever the length of the thread.
    #[doc(hidden)]
    #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
    pub fn messages_touched(&self) -> u64 {
        engine!(self, as_ref).map_or(0, |e| e.messages_touched())
    }

    /// The current decision set (tail decisions plus drafts), when paused.
    pub fn decisions(&self) -> Option<&Decisions> {
        if let Some(engine) = engine!(self, as_ref) {
            return engine.decisions();
        }
        self.c.decisions.as_ref()
    }

    /// Checks the machine's invariants (for tests and fuzzers):
    /// never an empty decision map sent; never a callId not gated on the current tail; never a
    /// message sent while paused; never two requests in flight; every decision the user made is
    /// held (a draft), acknowledged, replaced or cleared by the user, or dropped and shown.
    ///
    /// Compiled with debug assertions, under `--cfg fuzzing`, or with the `invariants` feature.
    #[doc(hidden)]
    #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
    pub fn check_invariants(&self) -> core::result::Result<(), String> {
        if let Some(engine) = engine!(self, as_ref) {
            return engine.check_invariants();
        }
        self.c.check_head()?;
        self.c.check_unchanged()?;
        // The views kept by `messages_changed` are the ones the messages make now, and share
        // their objects.
        let views = self.view.as_slice();
        if views.len() != self.messages.len() {
            return Err("a view for each message".to_owned());
        }
        for (i, (v, m)) in views.iter().zip(&self.messages).enumerate() {
            if *v != neuron::message_view(i, m) || !v.raw.is(m) {
                return Err(format!("the view of message {i} is not the message's"));
            }
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
        if self.c.decisions.is_some() != self.suspension.suspended {
            return Err("a decision set exists iff the tail is paused".to_owned());
        }
        if !self.suspension.suspended && !self.c.auto.is_empty() {
            return Err(
                "calls approved by an allowed tool remembered with nothing paused".to_owned(),
            );
        }
        if self.pause != PauseKey::of(&self.suspension) {
            return Err("the drafts' pause is not the tail's pause".to_owned());
        }
        if self.c.loaded && self.c.held_restore.is_some() {
            return Err("restored drafts held after the thread was loaded".to_owned());
        }
        let drafts: Vec<(String, Decision)> = self
            .c
            .decisions
            .as_ref()
            .map(|d| d.local().map(|(i, d)| (i.to_owned(), d.clone())).collect())
            .unwrap_or_default();
        let held: Vec<&audit::Entry<PauseKey>> = self.audit.held().collect();
        for entry in &held {
            if Some(&entry.pause) != self.pause.as_ref() {
                return Err(format!(
                    "decision for {} neither acknowledged nor held: its pause is gone",
                    json::quote(&entry.call_id)
                ));
            }
            if !drafts
                .iter()
                .any(|(id, d)| *id == entry.call_id && *d == entry.decision)
            {
                return Err(format!(
                    "decision for {} neither acknowledged nor held",
                    json::quote(&entry.call_id)
                ));
            }
        }
        for (id, d) in &drafts {
            if !held.iter().any(|e| e.call_id == *id && e.decision == *d) {
                return Err(format!(
                    "draft for {} that the user never made",
                    json::quote(id)
                ));
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------------------------------------
    // Internals: commands

    /// Cancels a quiet reload in flight.
    fn cancel_sync(&mut self) {
        if matches!(&self.c.state, State::Busy(f) if f.job.is_sync()) {
            if let Some((_, Some(id))) = self.c.cancel() {
                self.audit.ended(id);
            }
        }
    }

    /// [`approve`](Self::approve) and [`reject`](Self::reject), for both dialects (called by the
    /// wasm driver directly: one call for both).
    pub(crate) fn decide(&mut self, call_id: &str, decision: Decision) -> Result<Option<OpId>> {
        if let Some(engine) = engine!(self, as_mut) {
            return engine.decide(call_id, decision);
        }
        // The audit's copy of the decision (none is made where it is off).
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        let held = decision.clone();
        self.c.set_draft(call_id, decision)?;
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        if let Some(pause) = &self.pause {
            self.audit.hold(pause, call_id, &held);
        }
        let mut op = None;
        if self.c.auto_submit_due() {
            if let Ok(id) = self.submit_now(None) {
                op = Some(id);
            }
        }
        self.settle();
        Ok(op)
    }

    /// Starts the submission of the decisions (the op is new).
    fn submit_now(&mut self, then_send: Option<String>) -> Result<OpId> {
        let (Some(decisions), Some(pause)) = (&self.c.decisions, &self.pause) else {
            return Err(not_suspended());
        };
        if decisions.local().next().is_none() {
            return Err(Error::new(
                ErrorCode::EmptyDecisions,
                "no decision to send: approve or reject at least one tool",
            ));
        }
        // Not empty, with the draft just found.
        let (body, sent) = payload_of(decisions);
        let pause = pause.clone();
        let op = self.c.new_op();
        self.cancel_sync();
        self.c.clear_notices();
        let sub = Submission {
            op,
            body,
            pause,
            queue: Vec::new(),
            queued: 0,
            sent,
            skipped: Vec::new(),
            then_send,
        };
        // A server that keys calls by the tool's name (neuron-ai's Gemini provider) gives the
        // next pause on the tool the same callId: the decisions of a view another device made
        // stale would land on a call nobody here saw. The thread is read first for those too.
        let by_name = self.suspension.each_gated().any(|t| t.call_id == t.name);
        if self.unsure || by_name {
            // The thread first: sent at once only to the same pause, not yet decided.
            // (Its error is not reported: a failed read reports its own; see `NOW`.)
            self.reconcile(sub, err_aborted(), NOW);
        } else {
            self.start(Job::Submit(sub));
        }
        Ok(op)
    }

    fn start_send(&mut self, op: OpId, text: String) {
        let users_before = self.c.loaded.then(|| self.users().0);
        self.start(Job::Send {
            op,
            text,
            users_before,
        });
    }

    fn start_load(&mut self, op: Option<OpId>, why: Why) {
        self.start(Job::Load {
            op,
            why,
            stage: Stage::History,
            recheck: false,
        });
    }

    fn start(&mut self, job: Job) {
        self.issue(job, 1);
    }

    fn issue(&mut self, job: Job, attempt: u32) {
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        if let Job::Submit(sub) = &job {
            self.check_sent(sub);
        }
        if self.suspension.suspended && matches!(job, Job::Send { .. }) {
            self.audit
                .violation(|| "a message was sent while the tail is paused".to_owned());
        }
        let config = &self.c.config;
        let (method, route, body) = match &job {
            Job::Load { .. } => (Method::Get, &config.routes.thread, None),
            Job::Send { text, .. } => (
                Method::Post,
                &config.routes.chat,
                Some(neuron::message_body(text)),
            ),
            Job::Submit(sub) => (Method::Post, &config.routes.chat, Some(sub.body.clone())),
        };
        let url = config.url(route);
        let id = self.c.http(job, attempt, method, url, body, false);
        self.audit.issued(id);
    }

    /// Records a violation if a submission is empty or names a callId not gated on the tail.
    #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
    fn check_sent(&mut self, sub: &Submission) {
        if sub.sent.is_empty() {
            self.audit
                .violations
                .push("an empty decision map was sent".to_owned());
        }
        let gated = gated_ids(&self.suspension);
        if self.pause.as_ref() != Some(&sub.pause) {
            self.audit
                .violations
                .push("decisions were sent for a pause that is not the tail's".to_owned());
        }
        for (id, _) in &sub.sent {
            if !gated.contains(id) {
                self.audit.violations.push(format!(
                    "a decision for {}, not gated on the tail, was sent",
                    json::quote(id)
                ));
            }
        }
        match Value::parse(&sub.body) {
            Ok(Value::Object(body)) => match body.get("decisions") {
                Some(Value::Object(map)) if map.len() == sub.sent.len() && !map.is_empty() => {}
                _ => self
                    .audit
                    .violations
                    .push("the body's decisions differ from what was recorded".to_owned()),
            },
            _ => self
                .audit
                .violations
                .push("the decision body is not an object".to_owned()),
        }
    }

    fn take_flight(&mut self, id: RequestId) -> Option<Flight> {
        let flight = self.c.take_flight(id)?;
        self.audit.ended(id);
        Some(flight)
    }

    // ------------------------------------------------------------------------------------------
    // Internals: replies

    /// The answer to a load (`job`, handed back whole to be retried or failed: not taken apart
    /// and built again).
    fn on_load_response(&mut self, now: u64, attempt: u32, job: Job, response: HttpResponse) {
        let error = match response.status {
            200..=299 => match thread::parse_thread_again(&response.body, &mut self.marks) {
                Ok(thread) => {
                    // The body goes before the views are built: a load's peak is the body and the
                    // parsed thread, or the thread and its views, not all three.
                    drop(response);
                    if let Job::Load { op, why, .. } = job {
                        self.on_thread(op, why, thread);
                    }
                    return;
                }
                Err(error) => error,
            },
            status => status_error(status, &response.body),
        };
        self.c
            .status_failed(now, job, attempt, response.status, error);
    }

    fn on_thread(&mut self, op: Option<OpId>, why: Why, thread: Thread) {
        let unsure = core::mem::replace(&mut self.unsure, false);
        let was_paused = self.suspension.suspended;
        let ack = match why {
            // Refused (409, 400, a conflict body): the server said it did not take them, so only
            // a record of them in the thread says otherwise (a browser's silent re-send of a POST
            // that landed). A pause message gone (a trimmed or windowed history, another tab's
            // decisions) is no such record.
            Why::Reconcile { resend: None, .. } => Ack::Verify,
            // No clear answer: a pause gone since is the likelier sign that they were applied.
            Why::Reconcile { .. } => Ack::IfMissing,
            Why::Recover(Some(_)) => Ack::Accepted,
            // Any read while a submission's outcome is unknown (its POST stopped while out, or
            // its follow-up read never landed) judges its drafts as the check read would.
            _ if unsure => Ack::IfMissing,
            _ => Ack::Verify,
        };
        self.messages = thread.messages;
        self.adopt_tail(ack);
        self.weigh_doubt();
        // As kept (a message equal to its view's is that view's): the next reload's unchanged
        // messages are these very objects, which the views' comparison takes at a glance.
        self.marks.messages = self.messages.clone();
        self.c.read_ok();
        if let Some(held) = self.c.held_restore.take() {
            self.apply_restore(&held);
        }
        let paused = self.suspension.suspended;
        match why {
            // A decision POST accepted without the message (see `on_submit_response`).
            Why::Recover(Some(sub)) => {
                self.accepted(sub, None);
            }
            Why::User | Why::Sync | Why::Recover(None) => {
                if was_paused && !paused {
                    self.c.run_completed = true;
                }
                self.c.resolve(op);
            }
            Why::VerifySend {
                text,
                users_before,
                error,
                refused,
            } => {
                if self.landed(&text, users_before, refused) {
                    self.c.run_completed = !paused;
                    self.c.resolve(op);
                } else {
                    self.c.give_up(op, Some(text), error, !refused);
                }
            }
            Why::Reconcile { sub, error, resend } => self.reconciled(sub, error, resend),
        }
    }

    /// After the reload that follows a refused / unclear decision submission (`resend`: see
    /// [`Why::Reconcile`]).
    fn reconciled(&mut self, mut sub: Submission, error: Error, resend: Option<u32>) {
        if !self.suspension.suspended {
            self.c.run_completed = true;
        }
        // A draft sent was dropped: a tail without `__id` whose calls reuse the callIds for other
        // tools has the same key, and `adopt_tail` dropped them; or the pause went away and the
        // record did not show them.
        let conflicted = sub.sent.iter().any(|(id, _)| self.c.dropped.contains(id));
        // One `give_up` for both failures.
        let (error, failed) = if conflicted {
            let error = Error::new(
                ErrorCode::Conflict,
                "the paused tools were decided elsewhere or are gone; your drafts were not applied",
            );
            (error, false)
        } else {
            // The pause went away: `adopt_tail` acknowledged the drafts if the record shows them
            // (or, after no clear answer, the pause message is gone), and dropped them otherwise
            // (none was dropped).
            // Still there: were the decisions applied? Either way acknowledged, by one call.
            let still = self.pause.as_ref().is_some_and(|p| *p == sub.pause);
            let decisions = self.c.decisions.as_ref();
            let applied = !still
                || sub.sent.iter().all(|(id, d)| {
                    // No draft left, and the tail records the decision.
                    decisions.is_some_and(|ds| matches!(ds.lookup(id), (None, Some(e)) if e == d))
                });
            if !applied && resend == NOW {
                // Made before the read: sent as the thread just read has it (a decision another
                // tab recorded or revised since is restated as it now stands, not reverted), and
                // only while a draft is left to send (else acknowledged, below).
                if let Some(ds) = decisions.filter(|ds| ds.local().next().is_some()) {
                    (sub.body, sub.sent) = payload_of(ds);
                    return self.start(Job::Submit(sub));
                }
            }
            // One call for every acknowledgement.
            if applied || resend == NOW {
                return self.after_acknowledged(sub);
            }
            // Not shown applied. After no clear answer (`Some(0)`) that proves nothing: an
            // append-only history shows the pause unchanged while the tools run, and after a
            // tool that threw (a 500), a second POST would run it again. The submission
            // fails, the drafts stay, and the person's next one reads the thread first.
            self.unsure |= resend.is_some();
            (error, true)
        };
        self.c
            .give_up(Some(sub.op), sub.then_send.take(), error, failed);
    }

    /// The submission took effect: resolve its op, or go on to the message of `rejectAllAndSend`.
    /// (Its callers, `reconciled` and `accepted`, have marked a run that is not paused completed.)
    fn after_acknowledged(&mut self, sub: Submission) {
        match sub.then_send {
            Some(text) if !self.suspension.suspended => self.start_send(sub.op, text),
            Some(text) => self.c.paused_again(sub.op, text),
            None => self.c.resolve(Some(sub.op)),
        }
    }

    /// Did `text` land: is the last user message `text` (but for white space at either end, which
    /// servers trim: Laravel's `TrimStrings` middleware does by default), and one more than
    /// `users_before`? Without
    /// that count, the last message alone tells, but not for a `refused` POST: the refusal is the
    /// likelier story then (the same text sent twice).
    fn landed(&self, text: &str, users_before: Option<usize>, refused: bool) -> bool {
        let (count, last) = self.users();
        let grew = users_before.map_or(!refused, |before| count > before);
        grew && last.is_some_and(|m| m.text.trim_ascii() == text.trim_ascii())
    }

    /// How many user messages, and the last (read from the views, which hold each message's role
    /// and kind: a step reads no message's members for it).
    fn users(&self) -> (usize, Option<&MessageView>) {
        let mut count = 0;
        let mut last = None;
        for m in self.view.as_slice() {
            if neuron::is_user_text(m) {
                count += 1;
                last = Some(m);
            }
        }
        (count, last)
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

    fn on_send_response(
        &mut self,
        op: OpId,
        text: String,
        users_before: Option<usize>,
        response: &HttpResponse,
    ) {
        // Every unclear outcome, and a refusal (`refused`: a conflict), goes to one
        // `verify_send`.
        let refusal = "the server refused the message (409)";
        let (error, refused) = match response.status {
            200..=299 => match neuron::parse_chat_reply(&response.body) {
                Ok(neuron::ChatReply::Ok {
                    status,
                    message: Some(message),
                }) => {
                    let was_loaded = self.c.loaded;
                    if let Some(user) = neuron::user_message(&text) {
                        self.messages.push(user);
                    }
                    self.messages.push(message);
                    self.adopt_tail(Ack::Verify);
                    let consistent = (status == neuron::ChatStatus::AwaitingApproval)
                        == self.suspension.suspended;
                    self.c.run_completed = !self.suspension.suspended;
                    self.c.resolve(Some(op));
                    if self.c.config.reload_after_post || !consistent || !was_loaded {
                        self.start_sync();
                    }
                    return;
                }
                Ok(neuron::ChatReply::Conflict(reason)) => (conflict(reason, refusal), true),
                // Accepted without the message (Laravel's JSON turn answers `{status,
                // approvals}`): delivered, whatever the read shows (a text the server trimmed or
                // stored in another form), and never kept for sending again.
                Ok(neuron::ChatReply::Ok { message: None, .. }) => {
                    return self.start_load(Some(op), Why::User);
                }
                Err(error) => (error, false),
            },
            409 => (conflict(neuron::error_text(&response.body), refusal), true),
            status => {
                let error = status_error(status, &response.body);
                if !retryable_status(status) {
                    // What `Core::fail` does for a `Job::Send`, without building the job.
                    return self.c.give_up(Some(op), Some(text), error, true);
                }
                (error, false)
            }
        };
        self.verify_send(op, text, users_before, error, refused);
    }

    fn start_sync(&mut self) {
        self.sync_due = true;
    }

    fn on_submit_response(&mut self, sub: Submission, response: &HttpResponse) {
        let status = response.status;
        // Every check of the thread goes through one `reconcile` (`resend`: see `Why::Reconcile`).
        let (error, resend) = match status {
            200..=299 => match neuron::parse_chat_reply(&response.body) {
                Ok(neuron::ChatReply::Ok {
                    status,
                    message: Some(message),
                }) => return self.apply_submit_reply(sub, status, message),
                // Accepted, without the message (Laravel's JSON turn answers `{status,
                // approvals}`): the thread tells where the run stands.
                // Unsure until that read lands (stopped or failed, the next submission reads first).
                Ok(neuron::ChatReply::Ok { message: None, .. }) => {
                    self.unsure = true;
                    return self.start_load(Some(sub.op), Why::Recover(Some(sub)));
                }
                Ok(neuron::ChatReply::Conflict(reason)) => {
                    (conflict(reason, "the server refused the decisions"), None)
                }
                // Accepted, and unreadable: no clear answer.
                Err(error) => (error, Some(0)),
            },
            _ => {
                let error = status_error(status, &response.body);
                if matches!(status, 409 | 400 | 408 | 429) {
                    // Refused: 409, 400, or not taken at all (408, 429).
                    (error, None)
                } else if retryable_status(status) {
                    // No clear answer (a 500 may come after a tool ran, or threw): checked, not
                    // re-sent.
                    (error, Some(0))
                } else {
                    return self.c.fail(Job::Submit(sub), error);
                }
            }
        };
        self.reconcile(sub, error, resend);
    }

    fn reconcile(&mut self, sub: Submission, error: Error, resend: Option<u32>) {
        // Unsure until the read lands (one that fails for good leaves the next submission to
        // read first); after no clear answer, what it carried may still land.
        if resend.is_some() && resend != NOW {
            self.doubt_of(&sub);
        }
        self.unsure = true;
        self.start_load(Some(sub.op), Why::Reconcile { sub, error, resend });
    }

    fn apply_submit_reply(
        &mut self,
        sub: Submission,
        status: neuron::ChatStatus,
        message: Message,
    ) {
        // The tail replaced in place when the reply is the pause's message, else appended (the
        // pause's message, when it is the tail, then shows the decisions the server took).
        match self.messages.last_mut() {
            Some(tail) if sub.pause.is_message(tail) && sub.pause.is_message(&message) => {
                *tail = message;
            }
            tail => {
                if let Some(tail) = tail.filter(|t| sub.pause.is_message(t)) {
                    *tail = neuron::with_decisions(tail, &sub.sent);
                }
                self.messages.push(message);
            }
        }
        self.adopt_tail(Ack::Accepted);
        if self.accepted(sub, Some(status)) {
            self.start_sync();
        }
    }

    /// The server accepted the submission and the thread shows its outcome (drafts adopted with
    /// [`Ack::Accepted`]): record it, and resolve its op or go on to the message of
    /// `rejectAllAndSend`. `true` when a quiet reload should follow (`status`: the reply's).
    fn accepted(&mut self, sub: Submission, status: Option<neuron::ChatStatus>) -> bool {
        self.weigh_doubt();
        let paused = self.suspension.suspended;
        let consistent = status.map_or(true, |s| {
            (s == neuron::ChatStatus::AwaitingApproval) == paused
        });
        self.c.run_completed = !paused;
        // (Empty when not paused: a tail is paused iff it has a pending tool.)
        let pending = &self.suspension.pending;
        self.c.last_submission = Some(submission_view(pending, &sub.sent, paused));
        // No reload when the message goes now.
        let sends = !paused && sub.then_send.is_some();
        self.after_acknowledged(sub);
        // (A client never loaded reads the thread, as after a send: it may have preempted the
        // read that send started, and it holds what storage handed over until a read.)
        !sends
            && status.is_some()
            && (self.c.config.reload_after_post || !consistent || !self.c.loaded)
    }

    // ------------------------------------------------------------------------------------------
    // Internals: thread state and drafts

    /// `messages` changed (edited in place): their views are built again from the first message
    /// that is not the one its view was made from on (a view is made from its message and index
    /// alone). A message that came back equal from a reload is replaced by the one its view holds,
    /// so the two copies are not both kept.
    fn messages_changed(&mut self) {
        // The snapshot's share is released first, so the views can be edited in place (a list
        // someone else holds, a clone of a snapshot, is left to them: every view is built again).
        self.c.snapshot.messages = Messages::default();
        if Shared::get_mut(&mut self.view.0).is_none() {
            self.view = Messages::default();
        }
        let Some(views) = Shared::get_mut(&mut self.view.0) else {
            return;
        };
        let had = views.len();
        let mut same = 0;
        for (m, v) in self.messages.iter_mut().zip(views.iter()) {
            if !v.raw.is(m) {
                if !v.raw.same(m) {
                    break;
                }
                *m = v.raw.clone();
            }
            same += 1;
        }
        views.truncate(same);
        for m in self.messages.get(same..).unwrap_or_default() {
            views.push(neuron::message_view(views.len(), m));
        }
        // None did (a reload of the same thread): `messagesVersion` stays, and JS keeps its array.
        if same < had.max(views.len()) {
            self.c.messages_changed(same);
        }
    }

    /// Re-reads the tail and reconciles the drafts with it (the stale-target guard): drafts survive
    /// only on the very pause they were made on; a draft the tail already records is acknowledged;
    /// drafts of a pause that went away are acknowledged as `ack` says, and dropped (listed in
    /// `droppedDrafts`) otherwise. The messages changed: their views are built again first.
    fn adopt_tail(&mut self, ack: Ack) {
        self.messages_changed();
        let suspension = match self.messages.last() {
            Some(tail) => Suspension::from_message(tail),
            None => Suspension::default(),
        };
        // The new pause and decisions put in place at once (both are `Some` iff the tail is
        // paused), the old ones taken out: nothing dropped where a taken field was left `None`.
        let old_pause = core::mem::replace(&mut self.pause, PauseKey::of(&suspension));
        let old_decisions = core::mem::replace(&mut self.c.decisions, Decisions::of(&suspension));
        let new_key = &self.pause;
        // The same gated calls: without message ids a newer pause may reuse the callIds (counted
        // per step), so each call must also keep its tool and inputs. Every call is looked for
        // among the other's, both ways: a callId two calls share (neuron-ai's Gemini provider
        // names calls after their tool) is not one call (looked up by callId, the second twin was
        // compared with the first: a pause read again unchanged was a new one, its drafts
        // dropped).
        let same = old_pause.is_some()
            && *new_key == old_pause
            && same_calls(&self.suspension, &suspension)
            && same_calls(&suspension, &self.suspension);
        if new_key.is_some() && !same {
            self.c.new_pause();
            // Its calls are new ones whatever their ids (a server that counts ids per step uses
            // them again): an allowed tool's call there is approved as any other.
            self.c.auto.clear();
        }
        // By reference: each is dropped whole, once.
        if let (Some(old), Some(old_key)) = (&old_decisions, &old_pause) {
            // The record of the old pause: its message and what follows it.
            let record = if same {
                None
            } else {
                let messages = &self.messages;
                messages
                    .iter()
                    .rposition(|m| old_key.is_message(m))
                    .and_then(|i| messages.get(i..))
            };
            for (id, draft) in old.local() {
                if same {
                    if tail_holds(&suspension, id, draft) {
                        self.audit.settle(id, Fate::Acknowledged);
                        continue;
                    }
                    // The same pause has the same gated callIds: the draft is kept (as it was set,
                    // its reason already read as `set` reads it; no error to build and drop).
                    if let Some(nd) = self.c.decisions.as_mut() {
                        nd.put_found(id, Some(draft.clone()));
                    }
                } else {
                    let recorded = record.map(|m| records(m, id, draft));
                    let acknowledged = match (ack, recorded) {
                        (Ack::Accepted, _) | (_, Some(true)) | (Ack::IfMissing, None) => true,
                        (Ack::Verify, None) | (_, Some(false)) => false,
                    };
                    if acknowledged {
                        self.audit.settle(id, Fate::Acknowledged);
                    } else {
                        self.audit.settle(id, Fate::Dropped);
                        self.c.drop_draft(id);
                    }
                }
            }
        }
        if !suspension.suspended {
            self.c.unpaused();
        }
        self.suspension = suspension;
    }

    /// `Some` when the stored drafts were for the pause shown (and so taken in): whether the
    /// record has the server holding a decision on a call this tab shows pending (it is behind).
    fn apply_restore(&mut self, persisted: &str) -> Option<bool> {
        let stored = read_stored(persisted)?;
        let (Some(pause), Some(decisions)) = (&self.pause, self.c.decisions.as_mut()) else {
            return None;
        };
        let suspension = &self.suspension;
        if pause.message_id != stored.message_id
            || pause.call_ids != stored.call_ids
            || !stored.fits(suspension)
        {
            return None;
        }
        seed_auto(&mut self.c.auto, stored.auto.as_ref());
        // Another tab's drafts for this pause replace ours. Drafts this tab alone holds (its write
        // failed) give way only to a change made there: the record from before, written back over
        // the removal (older than ours), changes none, so it takes nothing from them.
        let base = unsaved_base(self.c.unsaved.as_deref(), self.c.quiet);
        let base = base.as_ref();
        if self.c.quiet {
            if self.c.unsaved.is_some() {
                for id in &stored.call_ids {
                    if stored.changed(base, id) {
                        decisions.put_found(id, None);
                    }
                }
                self.c.unsaved = Some(persisted.to_owned());
            } else {
                decisions.clear_local();
            }
        }
        let restored = restore_into(decisions, &stored.drafts, &|id, decision| {
            stored.changed(base, id) && !tail_holds(suspension, id, decision)
        });
        // By reference: in a build without the audit the loop is empty and goes away.
        for (id, decision) in &restored {
            self.audit.hold(pause, id, decision);
        }
        Some(
            suspension
                .pending
                .iter()
                .any(|t| stored.settled(&t.call_id)),
        )
    }

    fn suspension_view(&self) -> Option<SuspensionView> {
        // A decision set exists iff the tail is suspended.
        let decisions = self.c.decisions.as_ref()?;
        Some(suspension_view(
            decisions,
            &self.suspension,
            None,
            None,
            &[],
        ))
    }

    fn build_snapshot(&self) -> Snapshot {
        let paused = self.suspension.suspended;
        let suspension = self.suspension_view();
        // Something to send iff a decision was made since the tail last changed (a draft): the
        // decisions the tail holds alone would be sent again for nothing.
        let can_submit = self
            .c
            .decisions
            .as_ref()
            .is_some_and(|d| d.local().next().is_some());
        self.c.head(
            self.c.phase(paused, false),
            self.view.clone(),
            suspension,
            can_submit,
            paused,
        )
    }

    /// The end of every step: persist the drafts if they changed, and emit one `Changed` if the
    /// snapshot did.
    fn settle(&mut self) {
        // The allowed tools' approvals, and their submission when no person needs asking.
        let (pause, audit) = (&self.pause, &mut self.audit);
        let due = self.c.allow_step(&self.suspension.pending, &mut |id| {
            if let Some(pause) = pause {
                audit.hold(pause, id, &Decision::Approve);
            }
        });
        if due {
            // Its failure, if any, shows as the others' do; it is not started again.
            let _ = self.submit_now(None);
        }
        if core::mem::take(&mut self.sync_due) && matches!(self.c.state, State::Ready) {
            self.start_load(None, Why::Sync);
        }
        if self.c.persisting() {
            let desired = self.pause.as_ref().and_then(|p| {
                self.c.stored(
                    "messageId",
                    p.message_id.as_deref(),
                    &p.call_ids,
                    &self.suspension,
                    None,
                    &[],
                )
            });
            self.c.persist(desired);
        }
        let next = self.build_snapshot();
        self.c.commit(next, false);
    }
}

/// The headers of a request: `Accept` (`text/event-stream` for a stream, else `application/json`),
/// `Content-Type: application/json` on POSTs, `Authorization: Bearer <token>` when a token is set,
/// then the configured headers (which win).
fn request_headers(config: &Config, method: Method, streaming: bool) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    // One body for every header (a configured one replaces any of the same name; the built-in
    // names differ, so for them the `retain` removes nothing).
    let mut set = |name: &str, value: &str| {
        headers.retain(|(n, _): &(String, String)| !n.eq_ignore_ascii_case(name));
        headers.push((name.to_owned(), value.to_owned()));
    };
    set(
        "Accept",
        if streaming {
            "text/event-stream"
        } else {
            "application/json"
        },
    );
    if method == Method::Post {
        set("Content-Type", "application/json");
    }
    if let Some(token) = &config.token {
        let mut value = "Bearer ".to_owned();
        value.push_str(token);
        set("Authorization", &value);
    }
    for (name, value) in &config.headers {
        set(name, value);
    }
    headers
}

/// Does the record of a pause (its message, then what follows it) hold `decision` for `call_id`
/// (approved ⇔ approve, rejected ⇔ reject)? The pause message says so where the server updates it;
/// an append-only history (Neuron's newest) keeps it pending for ever and writes the outcome on the
/// `tool_call_result` right after it.
fn records(record: &[Message], call_id: &str, decision: &Decision) -> bool {
    // The approval of the first tool of `call_id` (walked in place, no list of the tools built).
    let outcome = |m: &Message| {
        let mut first = None;
        m.each_tool(&mut |t| {
            if first.is_none() && t.call_id() == call_id {
                first = Some(t.approval());
            }
        });
        first.flatten().filter(|a| *a != Approval::Pending)
    };
    // The pause message, then the result after it: one loop, one call of `outcome`.
    let mut found = None;
    for (i, m) in record.get(..2).unwrap_or(record).iter().enumerate() {
        if i > 0 && !matches!(m.get("type"), Some(Value::String(t)) if t == "tool_call_result") {
            break;
        }
        found = outcome(m);
        if found.is_some() {
            break;
        }
    }
    matches!(
        (found, decision),
        (Some(Approval::Approved), Decision::Approve)
            | (Some(Approval::Rejected), Decision::Reject(_))
    )
}

/// One payload for both a submission's body and what it sent: the tail's decisions restated, the
/// drafts overlaid.
fn payload_of(decisions: &Decisions) -> (String, Vec<(String, Decision)>) {
    let payload = decisions.effective();
    let mut body = String::from("{\"decisions\":");
    payload.write_json(&mut body);
    body.push('}');
    let mut sent = Vec::new();
    for (id, d) in payload.iter() {
        sent.push((id.to_owned(), d.clone()));
    }
    (body, sent)
}

/// Does the tail already record `decision` for its call `id` (its [`Decision::from_tail`])?
fn tail_holds(tail: &Suspension, id: &str, decision: &Decision) -> bool {
    tail.tool(id)
        .and_then(Decision::from_tail)
        .is_some_and(|t| t == *decision)
}

/// Equal texts, or equal JSON values (storage may hold the same drafts with other key order).
fn same_stored(a: Option<&str>, b: Option<&str>) -> bool {
    if a == b {
        return true;
    }
    let (Some(a), Some(b)) = (a, b) else {
        return false;
    };
    // Both parsed, then compared by reference: the two results dropped together.
    let parsed = (Value::parse(a), Value::parse(b));
    matches!(&parsed, (Ok(x), Ok(y)) if x == y)
}

/// The error for a transport failure; `None` for [`TransportError::Aborted`].
fn transport_error(error: TransportError, timeout_ms: u64) -> Option<Error> {
    // One `Error::new` for both kinds.
    let (code, message) = match error {
        TransportError::Aborted => return None,
        TransportError::Network(message) if message.is_empty() => {
            (ErrorCode::Network, "the request failed".to_owned())
        }
        TransportError::Network(message) => (ErrorCode::Network, message),
        TransportError::Timeout => {
            let mut m = "no answer within ".to_owned();
            json::write_u64(&mut m, timeout_ms);
            m.push_str(" ms");
            (ErrorCode::Timeout, m)
        }
    };
    Some(Error::new(code, message))
}

/// The view of a pause: its gated tools in order with their drafts (`agent_version_id` is the
/// pause's, the fallback of each tool's; Sidenet only, as are `run_id` and `taken`: calls whose
/// decision is shown as the server's, no draft).
fn suspension_view(
    decisions: &Decisions,
    tail: &Suspension,
    run_id: Option<&String>,
    agent_version_id: Option<&String>,
    taken: &[String],
) -> SuspensionView {
    let mut tools = Vec::new();
    let mut pending = Vec::new();
    let mut decided = Vec::new();
    for tool in tail.each_gated() {
        let (draft, effective) = decisions.lookup(&tool.call_id);
        let approval = match effective {
            Some(Decision::Approve) => Approval::Approved,
            Some(Decision::Reject(_)) => Approval::Rejected,
            None => Approval::Pending,
        };
        // The draft's reason, else the tail's (made for each view that keeps it).
        let reject_reason = || match draft {
            Some(d) => d.reason().map(str::to_owned),
            None => tool.reject_reason.clone(),
        };
        let taken = taken.contains(&tool.call_id);
        // Made twice by one body (no derived `clone` of a view beside it, and no more copies of
        // its parts than that would make): for `tools`, and for the list the tool belongs to.
        let view = || GatedView {
            call_id: tool.call_id.clone(),
            name: tool.name.clone(),
            description: tool.description.clone(),
            inputs: tool.inputs.clone(),
            approval,
            approval_reason: tool.approval_reason.clone(),
            reject_reason: reject_reason(),
            draft: draft.is_some() && !taken,
            server_approval: if taken { approval } else { tool.approval },
            server_reject_reason: if taken {
                reject_reason()
            } else {
                tool.reject_reason.clone()
            },
            run_id: tool.run_id.clone(),
            agent_version_id: tool.agent_version_id.as_ref().or(agent_version_id).cloned(),
            expires_at: tool.expires_at.clone(),
        };
        let list = if approval == Approval::Pending {
            &mut pending
        } else {
            &mut decided
        };
        list.push(view());
        tools.push(view());
    }
    let undecided = decisions.undecided_ids();
    SuspensionView {
        message_id: tail.message_id.clone(),
        run_id: run_id.cloned(),
        agent_version_id: agent_version_id.cloned(),
        // Complete iff nothing is undecided (no second pass over the decisions).
        complete: undecided.is_empty(),
        undecided,
        tools,
        pending,
        decided,
    }
}

/// What a submission did: what was sent, and what the pause left pending (`pending`, empty when the
/// run is not paused) shows of it.
fn submission_view(
    pending: &[GatedTool],
    sent: &[(String, Decision)],
    paused: bool,
) -> SubmissionView {
    let mut still_pending = Vec::new();
    let mut not_applied = Vec::new();
    for tool in pending {
        still_pending.push(PendingNote {
            call_id: tool.call_id.clone(),
            name: tool.name.clone(),
            approval_reason: tool.approval_reason.clone(),
        });
        if sent.iter().any(|(id, _)| *id == tool.call_id) {
            not_applied.push(tool.call_id.clone());
        }
    }
    let mut call_ids = Vec::new();
    for (id, _) in sent {
        call_ids.push(id.clone());
    }
    SubmissionView {
        call_ids,
        status: if paused {
            Phase::AwaitingApproval
        } else {
            Phase::Completed
        },
        still_pending,
        not_applied,
    }
}

/// `conflict`, with the server's reason, else `otherwise`.
fn conflict(reason: Option<String>, otherwise: &str) -> Error {
    Error::new(
        ErrorCode::Conflict,
        reason.unwrap_or_else(|| otherwise.to_owned()),
    )
}

fn not_suspended() -> Error {
    Error::new(
        ErrorCode::NotSuspended,
        "the conversation is not awaiting approval",
    )
}

pub(super) fn retryable_status(status: u16) -> bool {
    status >= 500 || status == 408 || status == 429
}

/// The error for a non-2xx status, with the server's explanation when it gives one.
fn status_error(status: u16, body: &[u8]) -> Error {
    let reason = neuron::error_text(body);
    let code = match status {
        401 => ErrorCode::Unauthorized,
        409 => ErrorCode::Conflict,
        _ => ErrorCode::HttpStatus,
    };
    let message = match reason {
        Some(reason) => reason,
        None => {
            let mut m = "the server answered HTTP ".to_owned();
            json::write_u64(&mut m, u64::from(status));
            m
        }
    };
    Error::new(code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(json: &str) -> Message {
        Message::parse_str(json).unwrap()
    }

    /// A call's outcome is read from its own tool alone: another call's decided tool in the pause
    /// or in the `tool_call_result` after it never stands in for a call missing there.
    #[test]
    fn records_reads_the_outcome_of_its_own_call_only() {
        let pause = message(
            r#"{"type":"tool_call","__id":"m1","tools":[
                {"name":"a","callId":"x","inputs":{},"approval":"pending"},
                {"name":"b","callId":"y","inputs":{},"approval":"pending"}]}"#,
        );
        let result = message(
            r#"{"type":"tool_call_result","tools":[
                {"name":"b","callId":"y","inputs":{},"approval":"approved","result":"ok"}]}"#,
        );
        let record = [pause, result];
        assert!(records(&record, "y", &Decision::Approve));
        assert!(!records(&record, "y", &Decision::reject(None)));
        // `x` is not on the result: its outcome is unknown, not `y`'s.
        assert!(!records(&record, "x", &Decision::Approve));

        let decided = message(
            r#"{"type":"tool_call","__id":"m1","tools":[
                {"name":"b","callId":"y","inputs":{},"approval":"approved"}]}"#,
        );
        let decided = [decided];
        assert!(records(&decided, "y", &Decision::Approve));
        assert!(!records(&decided, "x", &Decision::Approve));
    }

    /// Only a `tool_call_result` right after the pause message holds its outcome: a later
    /// `tool_call` that shows the same callId decided is another call's record, not this one's.
    #[test]
    fn records_reads_only_a_result_right_after_the_pause() {
        let pause = message(
            r#"{"type":"tool_call","__id":"m1","tools":[
                {"name":"b","callId":"y","inputs":{},"approval":"pending"}]}"#,
        );
        let next = message(
            r#"{"type":"tool_call","__id":"m2","tools":[
                {"name":"b","callId":"y","inputs":{},"approval":"approved"}]}"#,
        );
        assert!(!records(&[pause.clone(), next], "y", &Decision::Approve));
        let result = message(
            r#"{"type":"tool_call_result","tools":[
                {"name":"b","callId":"y","inputs":{},"approval":"approved","result":"ok"}]}"#,
        );
        assert!(records(&[pause, result], "y", &Decision::Approve));
    }

    /// A pause is known by its message's id, a number as well as a string, before its callIds: a
    /// newer message asking for the same callIds under another id is not the pause's message.
    #[test]
    fn a_pause_is_known_by_its_message_id_string_or_number() {
        for (id, other) in [(r#""m1""#, r#""m2""#), ("7", "8")] {
            let tools = r#""tools":[{"name":"b","callId":"y","inputs":{},"approval":"pending"}]"#;
            let pause = message(&format!(r#"{{"type":"tool_call","__id":{id},{tools}}}"#));
            let key = PauseKey::of(&Suspension::from_message(&pause)).unwrap();
            assert!(key.is_message(&pause), "{id}");
            let newer = message(&format!(r#"{{"type":"tool_call","__id":{other},{tools}}}"#));
            assert!(!key.is_message(&newer), "{id} against {other}");
        }
    }
}
