//! Pending detection: is the thread suspended, and which tools are pending or decided?
//!
//! The tail rule: only the **last** message counts. The thread is suspended exactly when the last message
//! has `type == "tool_call"` and at least one of its `tools[]` has `approval == "pending"`. Older
//! `tool_call` messages are settled record, whatever they say.
//!
//! [`pending_approvals_str`] and [`pending_approvals_bytes`] do not build the thread: they walk the
//! document once, checking that it is well-formed JSON of the right shape (an object with a `messages`
//! array or a bare array, every message an object, a valid `id`), keep only the raw text of the last
//! message, and build and validate that one message alone. Older messages are not otherwise inspected,
//! so a document whose old messages break a rule [`crate::thread::parse_thread_str`] enforces (say a
//! `tool_call` without `tools`) still answers here.
//!
//! [`pending_approvals_windows`] does the same over a document it reads a window at a time into
//! one reused buffer (what `pendingApprovals` does with a `Uint8Array`, so that wasm memory, which
//! never shrinks, stays O(window + largest message) whatever the thread's size), with the same
//! result and the same errors.

use crate::error::Result;
use crate::json::{self, Obj, ToJson, Value};
use crate::prelude::*;
use crate::thread::{self, Message, Mode, Thread, ToolCall, Walked};

/// The approval state of a gated tool. Written as `"pending"`, `"approved"`, `"rejected"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Approval {
    #[default]
    Pending,
    Approved,
    Rejected,
}

impl Approval {
    /// `"pending"`, `"approved"` or `"rejected"` (exactly, case-sensitive); anything else is `None`.
    pub fn parse(s: &str) -> Option<Approval> {
        match s {
            "pending" => Some(Approval::Pending),
            "approved" => Some(Approval::Approved),
            "rejected" => Some(Approval::Rejected),
            _ => None,
        }
    }

    /// The wire form.
    pub const fn as_str(self) -> &'static str {
        crate::json::nth(APPROVALS, self as usize)
    }
}

/// The approvals' wire forms, in declaration order (`json::nth`).
const APPROVALS: &str = "pending|approved|rejected";

impl ToJson for Approval {
    fn write_json(&self, out: &mut String) {
        json::write_str(out, self.as_str());
    }
}

/// A tool on the tail that has an approval state: what an approval card shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GatedTool {
    pub call_id: String,
    /// `name`; empty when the message has none.
    pub name: String,
    pub description: Option<String>,
    /// Always an object (see [`ToolCall::inputs`]).
    pub inputs: Value,
    pub approval: Approval,
    /// Why the tool asks (tool to human).
    pub approval_reason: Option<String>,
    /// Why it was rejected (human to model).
    pub reject_reason: Option<String>,
    /// Sidenet only (absent from the JSON when `None`).
    pub run_id: Option<String>,
    /// Sidenet only (absent from the JSON when `None`).
    pub agent_version_id: Option<String>,
    /// Neuron 4: the request's deadline, the tool's `expiresAt` string as sent (absent from the
    /// JSON when `None`).
    pub expires_at: Option<String>,
    /// The tool's index in the tail's `tools[]` (not written): `pending` and `decided` are each in
    /// tail order, and this restores the order across both.
    pub position: usize,
}

/// `{callId, name, description, inputs, approval, approvalReason, rejectReason, runId?,
/// agentVersionId?, expiresAt?}`.
impl ToJson for GatedTool {
    fn write_json(&self, out: &mut String) {
        let mut o = Obj::new(out);
        o.field("callId", &self.call_id)
            .field("name", &self.name)
            .field("description", &self.description)
            .field("inputs", &self.inputs)
            .field("approval", &self.approval)
            .field("approvalReason", &self.approval_reason)
            .field("rejectReason", &self.reject_reason)
            .field_if("runId", self.run_id.as_deref())
            .field_if("agentVersionId", self.agent_version_id.as_deref())
            .field_if("expiresAt", self.expires_at.as_deref());
        o.end();
    }
}

impl GatedTool {
    /// The card for a gated tool; `None` when the tool is not gated.
    pub fn from_tool(tool: &ToolCall<'_>) -> Option<GatedTool> {
        let approval = tool.approval()?;
        Some(GatedTool {
            call_id: tool.call_id().to_owned(),
            name: tool.name().unwrap_or_default().to_owned(),
            description: tool.description().map(str::to_owned),
            inputs: Value::Object(tool.owned_inputs()),
            approval,
            approval_reason: tool.approval_reason().map(str::to_owned),
            reject_reason: tool.reject_reason().map(str::to_owned),
            run_id: None,
            agent_version_id: None,
            expires_at: tool.expires_at().map(str::to_owned),
            position: tool.index(),
        })
    }
}

/// Where a thread stands: suspended or not, and the gated tools on its tail.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Suspension {
    /// The tail is a `tool_call` with at least one pending tool: lock the composer, show the cards.
    pub suspended: bool,
    /// The tail's `__id`, when the tail is a `tool_call`.
    pub message_id: Option<String>,
    /// The tail's `resume_token`, when the tail is a `tool_call` that has one (kept, never sent).
    pub resume_token: Option<String>,
    /// Tools on the tail with `approval: "pending"`, in tail order.
    pub pending: Vec<GatedTool>,
    /// Tools on the tail with `approval: "approved"` or `"rejected"`, in tail order.
    pub decided: Vec<GatedTool>,
}

/// `{suspended, messageId, resumeToken, pending, decided}`.
impl ToJson for Suspension {
    fn write_json(&self, out: &mut String) {
        let mut o = Obj::new(out);
        o.field("suspended", &self.suspended)
            .field("messageId", &self.message_id)
            .field("resumeToken", &self.resume_token)
            .field("pending", &self.pending)
            .field("decided", &self.decided);
        o.end();
    }
}

impl Suspension {
    /// The suspension of a parsed thread: decided by its last message.
    pub fn from_thread(thread: &Thread) -> Suspension {
        thread
            .last()
            .map(Suspension::from_message)
            .unwrap_or_default()
    }

    /// The suspension a message would mean if it were the tail.
    pub fn from_message(message: &Message) -> Suspension {
        if !message.is_tool_call() {
            return Suspension::default();
        }
        let mut pending = Vec::new();
        let mut decided = Vec::new();
        message.each_tool(&mut |tool| {
            if let Some(gated) = GatedTool::from_tool(&tool) {
                let list = if gated.approval == Approval::Pending {
                    &mut pending
                } else {
                    &mut decided
                };
                list.push(gated);
            }
        });
        Suspension {
            suspended: !pending.is_empty(),
            message_id: message.id(),
            resume_token: message.resume_token().map(str::to_owned),
            pending,
            decided,
        }
    }

    /// Every gated tool on the tail, pending and decided, in tail order.
    pub fn gated(&self) -> Vec<&GatedTool> {
        // A stable insertion sort by position (pending first among equals): a handful of tools,
        // and no sort routine in the binary.
        let mut all: Vec<&GatedTool> = Vec::new();
        for tool in self.pending.iter().chain(&self.decided) {
            // After the last one not after it (`all` is sorted).
            let at = all
                .iter()
                .rposition(|t| t.position <= tool.position)
                .map_or(0, |i| i + 1);
            all.insert(at, tool);
        }
        all
    }

    /// [`Suspension::gated`] without the allocation, for the clients and [`crate::Decisions`]:
    /// a merge by position of `pending` and `decided` (pending first among equals), each in tail
    /// order as [`Suspension::from_message`] builds them (a Sidenet pause has only `pending`).
    pub(crate) fn each_gated(&self) -> EachGated<'_> {
        EachGated {
            pending: &self.pending,
            decided: &self.decided,
        }
    }

    /// The gated tool with this callId, if any.
    // A plain loop: smaller in wasm than `find`.
    #[allow(clippy::manual_find)]
    pub fn tool(&self, call_id: &str) -> Option<&GatedTool> {
        for tool in self.pending.iter().chain(&self.decided) {
            if tool.call_id == call_id {
                return Some(tool);
            }
        }
        None
    }
}

/// The suspension of a thread document given as text, building only its last message.
pub fn pending_approvals_str(input: &str) -> Result<Suspension> {
    of_tail(thread::walk(input, Mode::Tail)?)
}

/// The suspension a tail walk found, building its last message.
fn of_tail(walked: Walked<'_>) -> Result<Suspension> {
    let Some(raw) = walked.tail else {
        return Ok(Suspension::default());
    };
    // A parse error of the message is at the message's path; a check error under it.
    match Value::parse(raw).and_then(Message::checked) {
        Ok(message) => Ok(Suspension::from_message(&message)),
        Err(e) => {
            let path = thread::message_path(walked.bare, walked.count.saturating_sub(1));
            Err(thread::under(path, e))
        }
    }
}

/// The suspension of a thread document given as UTF-8 bytes (checked in place, not copied).
pub fn pending_approvals_bytes(input: &[u8]) -> Result<Suspension> {
    pending_approvals_str(json::utf8(input)?)
}

/// [`pending_approvals_bytes`] of a document of `len` bytes read a window at a time:
/// `fill(offset, dest)` copies the document's bytes from `offset` into `dest` (never past `len`),
/// into one buffer of about `window` bytes, reused. The result is the same, the memory
/// O(`window` + the largest message) however long the document. On a bad document (invalid JSON
/// or UTF-8, a wrong shape, a cut) the whole document is read into memory after all, for
/// [`pending_approvals_bytes`]' exact error.
pub fn pending_approvals_windows(
    len: usize,
    window: usize,
    mut fill: impl FnMut(usize, &mut [u8]),
) -> Result<Suspension> {
    thread::walk_windows(len, window, &mut fill, of_tail).unwrap_or_else(|| {
        let mut all = vec![0; len];
        fill(0, &mut all);
        pending_approvals_bytes(&all)
    })
}

/// The suspension of an already parsed thread document, cloning only its last message.
pub fn pending_approvals_value(document: &Value) -> Result<Suspension> {
    let (_, messages, bare) = thread::document(document)?;
    if let Some(index) = messages.iter().position(|m| !m.is_object()) {
        let got = messages.get(index).map_or("nothing", json::describe);
        return Err(thread::got_error(
            thread::BAD_MESSAGE,
            got,
            &thread::message_path(bare, index),
        ));
    }
    let Some(tail) = messages.last() else {
        return Ok(Suspension::default());
    };
    let index = messages.len() - 1;
    let message = Message::from_value_at(tail.clone(), || thread::message_path(bare, index))?;
    Ok(Suspension::from_message(&message))
}

/// The walk of [`Suspension::each_gated`]: what is left of `pending` and `decided`. One `next`
/// for its callers, not inlined in each of their loops.
pub(crate) struct EachGated<'a> {
    pending: &'a [GatedTool],
    decided: &'a [GatedTool],
}

impl<'a> Iterator for EachGated<'a> {
    type Item = &'a GatedTool;

    #[inline(never)]
    fn next(&mut self) -> Option<&'a GatedTool> {
        let decided_first = match (self.pending.first(), self.decided.first()) {
            (Some(a), Some(b)) => b.position < a.position,
            (Some(_), None) => false,
            (None, _) => true,
        };
        let side = if decided_first {
            &mut self.decided
        } else {
            &mut self.pending
        };
        let (first, rest) = side.split_first()?;
        *side = rest;
        Some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::Suspension;
    use crate::prelude::*;
    use crate::thread::Message;

    /// `each_gated` walks what `gated` collects, for every mix of pending, decided and ungated
    /// tools (a callId repeated too) on a tail of up to five tools.
    #[test]
    fn each_gated_is_gated() {
        let kinds = [r#""pending""#, r#""approved""#, r#""rejected""#, "null"];
        for n in 0..=5u32 {
            for mut code in 0..4usize.pow(n) {
                let mut tools = Vec::new();
                for i in 0..n {
                    let kind = kinds[code % 4];
                    code /= 4;
                    let id = if i == 3 { 0 } else { i };
                    tools.push(format!(r#"{{"callId":"c{id}","approval":{kind}}}"#));
                }
                let text = format!(
                    r#"{{"role":"assistant","type":"tool_call","tools":[{}]}}"#,
                    tools.join(",")
                );
                let s = Suspension::from_message(&Message::parse_str(&text).unwrap());
                let walked: Vec<_> = s.each_gated().collect();
                assert_eq!(walked, s.gated(), "{text}");
            }
        }
    }
}
