//! What the UI renders: [`Snapshot`] and its parts. Everything writes itself as plain JSON ([`ToJson`]) with camelCase
//! keys; an absent value is `null`.
//!
//! ```text
//! {
//!   version: number,               // changes iff anything below changed
//!   phase: "idle" | "loading" | "sending" | "streaming" | "awaiting_approval" | "submitting"
//!        | "completed" | "expired" | "conflict" | "error",
//!   dialect: "neuron" | "sidenet", threadId: string,
//!   loaded: boolean,               // a thread load has succeeded at least once
//!   busy: boolean,                 // a request (or a retry timer) is outstanding for a command
//!   syncing: boolean,              // a quiet reload (after a POST; to catch up with another tab) is in flight (commands preempt it)
//!   messagesVersion: number,       // changes iff `messages` changed
//!   messages: MessageView[],       // the settled thread
//!   streaming: MessageView | null, // a message being streamed (Sidenet; always null for Neuron);
//!                                  // its `raw` is `{id, role}` until it lands in `messages`
//!   suspension: SuspensionView | null,  // null unless the tail is paused
//!   decisions: { [callId]: "approve" | "reject" | ["reject", reason] },  // the local drafts
//!   canSend: boolean, canSubmit: boolean,
//!   error: { code: string, message: string } | null,
//!   unsentText: string | null,     // a message that was not (or not surely) delivered
//!   lastSubmission: SubmissionView | null,
//!   droppedDrafts: string[],       // callIds whose drafts were dropped because the pause changed
//!   allowedTools: string[],        // tools whose calls are approved without asking (allowTool)
//!   finishReason: string | null,   // Sidenet: why the last answer ended, as its `finish` chunk says
//! }
//! MessageView  = { id: string | null, index: number, role: string | null,
//!                  kind: "text" | "tool_call" | "tool_result" | "other", text: string,
//!                  tools: ToolView[], raw: <the wire message, verbatim> }
//! ToolView     = { callId, name, inputs: object, result: any | null,
//!                  approval: "pending" | "approved" | "rejected" | null, approvalReason: string | null,
//!                  rejectReason: string | null,
//!                  status: "pending" | "approved" | "rejected" | "called" | "done"
//!                        | "denied" | "error" }   // denied, error: Sidenet
//! SuspensionView = { messageId: string | null, runId?: string, agentVersionId?: string (Sidenet),
//!                    tools: GatedView[] (tail order),
//!                    pending: GatedView[] (undecided), decided: GatedView[], undecided: string[],
//!                    complete: boolean }
//! GatedView    = { callId, name, description: string | null, inputs: object,
//!                  approval: "pending" | "approved" | "rejected"  (the draft, else the tail's),
//!                  approvalReason: string | null, rejectReason: string | null (the draft's, else the
//!                  tail's), draft: boolean, serverApproval: "pending" | "approved" | "rejected",
//!                  serverRejectReason: string | null,
//!                  runId?: string, agentVersionId?: string (Sidenet only),
//!                  expiresAt?: string (Neuron 4's deadline, as sent) }
//! SubmissionView = { callIds: string[] (what was sent), status: "awaiting_approval" | "completed",
//!                    stillPending: { callId, name, approvalReason }[] (pending on the tail after the
//!                    reply), notApplied: string[] (sent, yet still pending on the tail) }
//! ```

use crate::prelude::*;

use crate::approval::Approval;
use crate::decisions::{write_decision_map, Decision, Decisions};
use crate::error::Error;
use crate::json::{self, write_u64, Obj, ToJson, Value};
use crate::thread::Message;

use super::config::Dialect;

/// Where the client stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Nothing in flight and no run observed to finish yet (also before the first load).
    Idle,
    /// A `load()` is in flight (or waiting to retry).
    Loading,
    /// A new message is in flight, or the client is checking whether a failed one landed.
    Sending,
    /// Sidenet: the agent's answer is streaming in (`streaming` grows; `messages` does not change).
    Streaming,
    /// The tail is paused: the composer is locked until every gated tool is decided.
    AwaitingApproval,
    /// Decisions are in flight (or waiting to retry).
    Submitting,
    /// The last run finished.
    Completed,
    /// Sidenet: the paused run was abandoned by the server (its grace window passed without a
    /// decision). The thread is intact and the composer unlocked: the user can simply ask again.
    Expired,
    /// The server refused the operation (409) or the decisions went stale; the thread is being
    /// reloaded to reconcile the drafts. Lands in the right phase with `error` shown.
    Conflict,
    /// The last operation failed; `error` says why. Drafts and unsent text are kept.
    Error,
}

impl Phase {
    /// The wire form, e.g. `"awaiting_approval"`.
    pub const fn as_str(self) -> &'static str {
        crate::json::nth(PHASES, self as usize)
    }
}

/// The phases' wire forms, in declaration order (`json::nth`).
const PHASES: &str =
    "idle|loading|sending|streaming|awaiting_approval|submitting|completed|expired|conflict|error";

impl ToJson for Phase {
    fn write_json(&self, out: &mut String) {
        json::write_str(out, self.as_str());
    }
}

/// `{ code, message }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorView {
    pub code: &'static str,
    pub message: String,
}

impl From<&Error> for ErrorView {
    fn from(e: &Error) -> Self {
        ErrorView {
            code: e.code.as_str(),
            message: e.message.clone(),
        }
    }
}

impl ToJson for ErrorView {
    fn write_json(&self, out: &mut String) {
        let mut o = Obj::new(out);
        o.field("code", &self.code).field("message", &self.message);
        o.end();
    }
}

/// What kind of message, dialect-neutral.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageKindView {
    Text,
    ToolCall,
    ToolResult,
    Other,
}

impl MessageKindView {
    /// The wire form, e.g. `"tool_call"`.
    pub const fn as_str(self) -> &'static str {
        crate::json::nth(KINDS, self as usize)
    }
}

/// The message kinds' wire forms, in declaration order (`json::nth`).
const KINDS: &str = "text|tool_call|tool_result|other";

impl ToJson for MessageKindView {
    fn write_json(&self, out: &mut String) {
        json::write_str(out, self.as_str());
    }
}

/// A tool's state in a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolStatus {
    /// Gated, awaiting a decision.
    Pending,
    /// Gated and approved (on the call message).
    Approved,
    /// Gated and rejected.
    Rejected,
    /// Not gated, no result yet (on the call message).
    Called,
    /// Has a result (or sits on a result message).
    Done,
    /// Sidenet: declined by the user; the call did not run.
    Denied,
    /// Sidenet: the call failed, or its run was abandoned while it awaited approval.
    Error,
}

impl ToolStatus {
    /// The wire form, e.g. `"pending"`.
    pub const fn as_str(self) -> &'static str {
        crate::json::nth(STATUSES, self as usize)
    }
}

/// The tool statuses' wire forms, in declaration order (`json::nth`).
const STATUSES: &str = "pending|approved|rejected|called|done|denied|error";

impl ToJson for ToolStatus {
    fn write_json(&self, out: &mut String) {
        json::write_str(out, self.as_str());
    }
}

/// One tool of a message.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolView {
    pub call_id: String,
    pub name: String,
    pub inputs: Value,
    pub result: Option<Value>,
    pub approval: Option<Approval>,
    pub approval_reason: Option<String>,
    pub reject_reason: Option<String>,
    pub status: ToolStatus,
    /// `result` is the raw message's own: the `result` of the tool at the same place in its
    /// `tools` (null for none; Neuron), which the conversion to JS takes instead of a copy.
    pub(crate) raw_result: bool,
}

impl ToolView {
    /// The JSON form; with `js`, a `result` the raw message holds (`raw_result`) is written as
    /// null (see [`MessageView::write_js`]).
    fn write(&self, out: &mut String, js: bool) {
        let result: &dyn json::ToJsonDyn = if js && self.raw_result {
            &None::<Value>
        } else {
            &self.result
        };
        let mut o = Obj::new(out);
        o.field("callId", &self.call_id)
            .field("name", &self.name)
            .field("inputs", &self.inputs)
            .field("result", result)
            .field("approval", &self.approval)
            .field("approvalReason", &self.approval_reason)
            .field("rejectReason", &self.reject_reason)
            .field("status", &self.status);
        o.end();
    }
}

impl ToJson for ToolView {
    fn write_json(&self, out: &mut String) {
        self.write(out, false);
    }
}

/// A message's tools as the conversion to JS writes them (see [`ToolView::write`]).
struct ToolsJs<'a>(&'a [ToolView]);

impl ToJson for ToolsJs<'_> {
    fn write_json(&self, out: &mut String) {
        // `[` before the first item, `,` before each other one, as for a slice.
        let mut sep = '[';
        for tool in self.0 {
            out.push(sep);
            sep = ',';
            tool.write(out, true);
        }
        if sep == '[' {
            out.push('[');
        }
        out.push(']');
    }
}

/// One message, dialect-neutral, with the wire message in `raw`.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageView {
    pub id: Option<String>,
    pub index: usize,
    pub role: Option<String>,
    pub kind: MessageKindView,
    pub text: String,
    pub tools: Vec<ToolView>,
    pub raw: Message,
}

impl MessageView {
    /// Its role is `"user"`. (Its four bytes compared as one word: a step counting a long
    /// thread's user messages makes no `memcmp` call per message, which a build for size keeps.)
    pub(crate) fn is_user(&self) -> bool {
        match self.role.as_deref().map(str::as_bytes) {
            Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]) == u32::from_le_bytes(*b"user"),
            _ => false,
        }
    }

    /// The JSON form; with `text: false`, `"text":""` stands in for the text (a driver that
    /// keeps the streaming text on its side fills it in); with `js`, as the conversion to JS
    /// writes it (see [`ToolView::write`]).
    fn write(&self, out: &mut String, text: bool, js: bool) -> u64 {
        // For JS: the tools' results when they are the raw tools' (1), and the text when it is
        // the raw message's `content` (2) or the `text` of its part i (4 | i << 3), are taken
        // from `raw` (see `write_js`).
        let shared = if js {
            let same = |v: Option<&Value>| matches!(v, Some(Value::String(s)) if *s == self.text);
            let text_at = match self.raw.get("parts") {
                _ if same(self.raw.get("content")) => Some(2),
                Some(Value::Array(parts)) => parts
                    .iter()
                    .position(|p| same(p.as_object().and_then(|p| p.get("text"))))
                    .map(|i| 4 | (i as u64) << 3),
                _ => None,
            };
            u64::from(self.tools.first().is_some_and(|t| t.raw_result)) | text_at.unwrap_or(0)
        } else {
            0
        };
        let text = if text && shared & 6 == 0 {
            self.text.as_str()
        } else {
            ""
        };
        let text: &dyn json::ToJsonDyn = &text;
        let js_tools = ToolsJs(&self.tools);
        let tools: &dyn json::ToJsonDyn = if js { &js_tools } else { &self.tools };
        let mut o = Obj::new(out);
        o.field("id", &self.id)
            .field("index", &(self.index as u64))
            .field("role", &self.role)
            .field("kind", &self.kind)
            .field("text", text)
            .field("tools", tools)
            .field("raw", &self.raw);
        o.end();
        shared
    }

    /// The JSON form the conversion to JS reads: what the raw message holds is not written
    /// twice. A text that is the raw message's `content` or the `text` of one of its `parts` is
    /// written as `""` and the results its tools hold as null; the flags returned tell `append`
    /// in `fast.js` where to take them from: `raw.content` (2), `raw.parts[i].text`
    /// (4 | i << 3), and each result from the raw tool at the same place (1). (Not a member of
    /// the message: deleting one would leave V8 slower objects.)
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn write_js(&self, out: &mut String) -> u64 {
        self.write(out, true, true)
    }
}

impl ToJson for MessageView {
    fn write_json(&self, out: &mut String) {
        self.write(out, true, false);
    }
}

/// The settled messages, shared: cloning a snapshot does not copy them, and two snapshots compare
/// equal on this field iff they hold the very same list.
#[derive(Debug, Clone, Default)]
pub struct Messages(pub(crate) Shared<Vec<MessageView>>);

impl Messages {
    pub fn as_slice(&self) -> &[MessageView] {
        &self.0
    }
}

impl PartialEq for Messages {
    fn eq(&self, other: &Self) -> bool {
        Shared::ptr_eq(&self.0, &other.0)
    }
}

impl ToJson for Messages {
    fn write_json(&self, out: &mut String) {
        self.0.as_slice().write_json(out);
    }
}

/// A gated tool on the paused tail, with the local draft overlaid.
#[derive(Debug, Clone, PartialEq)]
pub struct GatedView {
    pub call_id: String,
    pub name: String,
    pub description: Option<String>,
    pub inputs: Value,
    /// The draft's decision if any, else the tail's.
    pub approval: Approval,
    pub approval_reason: Option<String>,
    /// The draft's reason if the draft is a rejection; none if the draft is an approval; else the
    /// tail's.
    pub reject_reason: Option<String>,
    /// `true` when a local draft decides this tool.
    pub draft: bool,
    /// The tail's decision (Neuron); Sidenet: the decision the server accepted for this call
    /// while it is still shown (no draft then, and no change to it is accepted).
    pub server_approval: Approval,
    pub server_reject_reason: Option<String>,
    /// Sidenet: the paused run this call belongs to (absent from the JSON when `None`).
    pub run_id: Option<String>,
    /// Sidenet: the agent version that paused (continuations are pinned to it; absent from the
    /// JSON when `None`).
    pub agent_version_id: Option<String>,
    /// Neuron 4: the request's deadline, `expiresAt` as the server sent it (absent from the JSON
    /// when `None`).
    pub expires_at: Option<String>,
}

impl ToJson for GatedView {
    #[inline(never)]
    fn write_json(&self, out: &mut String) {
        let mut o = Obj::new(out);
        o.field("callId", &self.call_id)
            .field("name", &self.name)
            .field("description", &self.description)
            .field("inputs", &self.inputs)
            .field("approval", &self.approval)
            .field("approvalReason", &self.approval_reason)
            .field("rejectReason", &self.reject_reason)
            .field("draft", &self.draft)
            .field("serverApproval", &self.server_approval)
            .field("serverRejectReason", &self.server_reject_reason)
            .field_if("runId", self.run_id.as_deref())
            .field_if("agentVersionId", self.agent_version_id.as_deref())
            .field_if("expiresAt", self.expires_at.as_deref());
        o.end();
    }
}

/// The paused tail, with the drafts overlaid.
#[derive(Debug, Clone, PartialEq)]
pub struct SuspensionView {
    pub message_id: Option<String>,
    /// Sidenet: the paused run (absent from the JSON when `None`).
    pub run_id: Option<String>,
    /// Sidenet: the agent version that paused (absent from the JSON when `None`).
    pub agent_version_id: Option<String>,
    pub tools: Vec<GatedView>,
    pub pending: Vec<GatedView>,
    pub decided: Vec<GatedView>,
    pub undecided: Vec<String>,
    pub complete: bool,
}

impl ToJson for SuspensionView {
    fn write_json(&self, out: &mut String) {
        let mut o = Obj::new(out);
        o.field("messageId", &self.message_id)
            .field_if("runId", self.run_id.as_deref())
            .field_if("agentVersionId", self.agent_version_id.as_deref())
            .field("tools", &self.tools)
            .field("pending", &self.pending)
            .field("decided", &self.decided)
            .field("undecided", &self.undecided)
            .field("complete", &self.complete);
        o.end();
    }
}

/// A tool still pending after a submission, and why it asks.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingNote {
    pub call_id: String,
    pub name: String,
    pub approval_reason: Option<String>,
}

impl ToJson for PendingNote {
    fn write_json(&self, out: &mut String) {
        let mut o = Obj::new(out);
        o.field("callId", &self.call_id)
            .field("name", &self.name)
            .field("approvalReason", &self.approval_reason);
        o.end();
    }
}

/// The outcome of the last decision submission.
#[derive(Debug, Clone, PartialEq)]
pub struct SubmissionView {
    pub call_ids: Vec<String>,
    pub status: Phase,
    pub still_pending: Vec<PendingNote>,
    pub not_applied: Vec<String>,
}

impl ToJson for SubmissionView {
    fn write_json(&self, out: &mut String) {
        let mut o = Obj::new(out);
        o.field("callIds", &self.call_ids)
            .field("status", &self.status)
            .field("stillPending", &self.still_pending)
            .field("notApplied", &self.not_applied);
        o.end();
    }
}

/// The drafts, as an ordered map `callId → wire decision`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DraftMap(pub Vec<(String, Decision)>);

impl DraftMap {
    /// The local drafts of a decision set (none when there is no pause).
    pub fn of(decisions: Option<&Decisions>) -> DraftMap {
        let mut drafts = Vec::new();
        if let Some(decisions) = decisions {
            for (id, d) in decisions.local() {
                drafts.push((id.to_owned(), d.clone()));
            }
        }
        DraftMap(drafts)
    }

    pub fn get(&self, call_id: &str) -> Option<&Decision> {
        self.0.iter().find(|(id, _)| id == call_id).map(|(_, d)| d)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

impl ToJson for DraftMap {
    fn write_json(&self, out: &mut String) {
        write_decision_map(out, self.0.iter().map(|(id, d)| (id.as_str(), d)));
    }
}

/// Everything the UI renders. See the module docs for the JSON shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub version: u64,
    pub phase: Phase,
    pub dialect: Dialect,
    pub thread_id: String,
    pub loaded: bool,
    pub busy: bool,
    pub syncing: bool,
    pub messages_version: u64,
    pub messages: Messages,
    pub streaming: Option<MessageView>,
    pub suspension: Option<SuspensionView>,
    pub decisions: DraftMap,
    pub can_send: bool,
    pub can_submit: bool,
    pub error: Option<ErrorView>,
    pub unsent_text: Option<String>,
    pub last_submission: Option<SubmissionView>,
    pub dropped_drafts: Vec<String>,
    pub allowed_tools: Vec<String>,
    pub finish_reason: Option<String>,
}

impl Snapshot {
    /// A view that serializes every field but `messages` (for drivers that cache the converted
    /// messages by `messagesVersion`).
    pub fn head(&self) -> SnapshotHead<'_> {
        SnapshotHead(self, true)
    }

    /// [`head`](Self::head) with `streaming.text` written as `""`: for drivers that keep the
    /// streaming text on their side and append only what is new (see
    /// [`Client::stream_epoch`](super::Client::stream_epoch)), so a snapshot costs the same
    /// however long the streamed reply has grown.
    pub fn head_without_stream_text(&self) -> SnapshotHead<'_> {
        SnapshotHead(self, false)
    }

    fn write(&self, out: &mut String, with_messages: bool, stream_text: bool) {
        write_version(out, self.version);
        self.write_after_version(out, with_messages, stream_text);
    }

    /// [`head`](Self::head)'s JSON after its first member, `version`: from the key after it to
    /// the closing `}` (two snapshots that differ only in `version` write the same).
    pub(crate) fn head_after_version(&self) -> String {
        let mut out = String::new();
        self.write_after_version(&mut out, false, true);
        out
    }

    fn write_after_version(&self, out: &mut String, with_messages: bool, stream_text: bool) {
        let mut o = Obj::after_first(out);
        o.field("phase", &self.phase)
            .field("dialect", &self.dialect)
            .field("threadId", &self.thread_id)
            .field("loaded", &self.loaded)
            .field("busy", &self.busy)
            .field("syncing", &self.syncing)
            .field("messagesVersion", &self.messages_version);
        if with_messages {
            o.field("messages", &self.messages);
        }
        let streaming = o.key("streaming");
        match &self.streaming {
            Some(view) => {
                view.write(streaming, stream_text, false);
            }
            None => streaming.push_str("null"),
        }
        o.field("suspension", &self.suspension)
            .field("decisions", &self.decisions)
            .field("canSend", &self.can_send)
            .field("canSubmit", &self.can_submit)
            .field("error", &self.error)
            .field("unsentText", &self.unsent_text)
            .field("lastSubmission", &self.last_submission)
            .field("droppedDrafts", &self.dropped_drafts)
            .field("allowedTools", &self.allowed_tools)
            .field("finishReason", &self.finish_reason);
        o.end();
    }
}

impl ToJson for Snapshot {
    fn write_json(&self, out: &mut String) {
        self.write(out, true, true);
    }
}

/// A snapshot's JSON up to and with the `,` after its `version` member.
pub(crate) fn write_version(out: &mut String, version: u64) {
    out.push_str("{\"version\":");
    write_u64(out, version);
    out.push(',');
}

/// [`Snapshot`] without `messages` (and, from
/// [`head_without_stream_text`](Snapshot::head_without_stream_text), without the streaming text);
/// see [`Snapshot::head`].
#[derive(Debug, Clone, Copy)]
pub struct SnapshotHead<'a>(&'a Snapshot, bool);

impl ToJson for SnapshotHead<'_> {
    fn write_json(&self, out: &mut String) {
        self.0.write(out, false, self.1);
    }
}

#[cfg(test)]
mod tests {
    use super::MessageView;
    use crate::json::{ToJson, Value};
    use crate::prelude::*;
    use crate::thread::Message;

    /// The JSON form written for JS, with what it took out put back as `append` in fast.js does
    /// (the text from `raw.content` or `raw.parts[i].text`, each result from the raw tool at its
    /// place), and the marker it carried.
    fn js_form_restored(view: &MessageView) -> (String, Option<u64>) {
        let mut js = String::new();
        let f = view.write_js(&mut js);
        let Ok(Value::Object(mut js)) = Value::parse(&js) else {
            panic!("{js}")
        };
        assert!(js.get("$").is_none());
        let flags = (f != 0).then_some(f);
        let raw = js
            .get("raw")
            .and_then(Value::as_object)
            .cloned()
            .expect("raw");
        let field = |v: Option<&Value>, key: &str| {
            v.and_then(Value::as_object)
                .and_then(|m| m.get(key))
                .cloned()
        };
        if f & 6 != 0 {
            assert_eq!(
                js.get("text"),
                Some(&Value::from("")),
                "written once, in raw"
            );
            let text = match raw.get("parts") {
                _ if f & 2 != 0 => raw.get("content").cloned(),
                Some(Value::Array(parts)) => field(parts.get((f >> 3) as usize), "text"),
                _ => None,
            };
            *js.get_mut("text").expect("text") = text.expect("the text in raw");
        }
        if f & 1 != 0 {
            let Some(Value::Array(raw_tools)) = raw.get("tools") else {
                panic!("raw tools")
            };
            let Some(Value::Array(tools)) = js.get_mut("tools") else {
                panic!("tools")
            };
            assert_eq!(tools.len(), raw_tools.len());
            for (tool, raw) in tools.iter_mut().zip(raw_tools) {
                let Value::Object(tool) = tool else {
                    panic!("tool")
                };
                let result = tool.get_mut("result").expect("result");
                assert_eq!(*result, Value::Null, "written once, in raw");
                *result = field(Some(raw), "result").unwrap_or(Value::Null);
            }
        }
        (Value::Object(js).to_json_string(), flags)
    }

    #[test]
    fn the_js_form_of_a_view_writes_what_raw_holds_once() {
        let neuron = [
            (
                r#"{"type":"tool_call_result","role":"tool","tools":[
                    {"callId":"a","name":"x","result":{"rows":[1,{"n":2}]}},
                    {"callId":"b","name":"y","result":null},
                    {"callId":"c","name":"z"},
                    {"callId":"d","name":"w","result":"s"}]}"#,
                Some(1),
            ),
            (
                r#"{"role":"assistant","content":"a long \"answer\""}"#,
                Some(2),
            ),
            (r#"{"role":"user","content":""}"#, Some(2)),
            (
                r#"{"type":"tool_call","role":"assistant","content":"let me look",
                    "tools":[{"callId":"a","name":"x","inputs":{"q":1},"approval":"pending"}]}"#,
                Some(3),
            ),
            (
                r#"{"role":"assistant","content":[{"type":"text","text":"a"},"b"]}"#,
                None,
            ),
            (r#"{"role":"assistant","content":null}"#, None),
        ];
        for (text, marker) in neuron {
            let message = Message::parse_str(text).expect("message");
            let view = super::super::neuron::message_view(3, &message);
            let (restored, got) = js_form_restored(&view);
            assert_eq!(got, marker, "{text}");
            assert_eq!(restored, view.to_json_string(), "{text}");
        }
        let sidenet = [
            (
                r#"{"id":"m1","role":"user","parts":[{"type":"text","text":"hello"}]}"#,
                Some(4),
            ),
            (
                r#"{"id":"m2","role":"assistant","parts":[{"type":"step-start"},
                    {"type":"text","text":"one \"q\""},
                    {"type":"tool-x","toolCallId":"c1","state":"output-available","input":{},"output":{"ok":1}}]}"#,
                Some(4 | 1 << 3),
            ),
            (
                r#"{"id":"m3","role":"assistant","parts":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#,
                None,
            ),
            (r#"{"id":"m4","role":"assistant","parts":[]}"#, None),
        ];
        for (text, marker) in sidenet {
            let Ok(Value::Object(raw)) = Value::parse(text) else {
                panic!("{text}")
            };
            let view = super::super::sidenet::ui_message_view(0, raw, &[]);
            let (restored, got) = js_form_restored(&view);
            assert_eq!(got, marker, "{text}");
            assert_eq!(restored, view.to_json_string(), "{text}");
        }
    }
}
