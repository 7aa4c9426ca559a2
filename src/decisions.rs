//! The decision set for one suspension, and its wire form.
//!
//! A [`Decisions`] starts from a suspended tail ([`Suspension`]): its gated tools, each with the decision
//! the tail already records (`approved` ⇒ approve, `rejected` ⇒ reject with the tail's `rejectReason`),
//! plus a local overlay of the user's drafts. The rules:
//!
//! - only callIds of gated tools on the suspended tail are accepted (anything else is `unknown_call_id`);
//! - decided tools stay revisable until the whole set is decided: a local decision simply replaces the
//!   tail's (last write wins), and [`Decisions::clear`] drops it again;
//! - a rejection's reason is optional; an empty or whitespace-only reason is a bare `"reject"`; approvals
//!   are bare (there is no approve-with-comment);
//! - the payload restates the tail's decisions and overlays the local ones, keyed in tail order, so it
//!   is right whether the server treats payloads as cumulative or incremental; it is never empty.
//!
//! Wire form: `{"decisions": {"<callId>": "approve" | "reject" | ["reject", "<reason>"], ...}}`.

use crate::approval::{Approval, GatedTool, Suspension};
use crate::error::{Error, ErrorCode, Result};
use crate::json::{self, ToJson, Value};
use crate::prelude::*;

/// One decision. Wire form: `"approve"`, `"reject"` or `["reject", "<reason>"]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Decision {
    Approve,
    /// A rejection, with the reason the model will read verbatim (`None`: no reason).
    Reject(Option<String>),
}

impl Decision {
    /// A rejection; an empty or whitespace-only reason counts as none. A reason is otherwise kept
    /// verbatim (not trimmed).
    pub fn reject(reason: Option<&str>) -> Decision {
        if json::is_blank(reason) {
            Decision::Reject(None)
        } else {
            Decision::Reject(reason.map(str::to_owned))
        }
    }

    /// The decision a tail tool already records: approved ⇒ approve, rejected ⇒ reject with its
    /// `rejectReason` (blank ⇒ none); `None` for a pending tool.
    pub fn from_tail(tool: &GatedTool) -> Option<Decision> {
        match tool.approval {
            Approval::Pending => None,
            Approval::Approved => Some(Decision::Approve),
            Approval::Rejected => Some(Decision::reject(tool.reject_reason.as_deref())),
        }
    }

    /// The reason of a rejection, if any (blank reasons count as none).
    pub fn reason(&self) -> Option<&str> {
        match self {
            Decision::Reject(Some(reason)) if !json::is_blank(Some(reason)) => Some(reason),
            _ => None,
        }
    }

    /// The wire form as a JSON value.
    pub fn to_wire(&self) -> Value {
        match (self, self.reason()) {
            (Decision::Approve, _) => Value::from("approve"),
            (Decision::Reject(_), None) => Value::from("reject"),
            (Decision::Reject(_), Some(reason)) => {
                Value::Array(vec![Value::from("reject"), Value::from(reason)])
            }
        }
    }

    /// Reads the wire form: exactly `"approve"`, `"reject"` or `["reject", <string>]` (a blank reason
    /// reads as a bare reject). Anything else is a `parse_error`.
    pub fn from_wire(value: &Value) -> Result<Decision> {
        Decision::read_wire(value).ok_or_else(|| bad_wire(value))
    }

    /// [`Decision::from_wire`] without the error: `None` for anything else than the wire form
    /// (for callers that drop a bad one, such as stored drafts, and would pay for its message).
    #[inline(never)]
    pub(crate) fn read_wire(value: &Value) -> Option<Decision> {
        match value {
            Value::String(s) if s == "approve" => Some(Decision::Approve),
            Value::String(s) if s == "reject" => Some(Decision::Reject(None)),
            Value::Array(items) => match items.as_slice() {
                [Value::String(tag), Value::String(reason)] if tag == "reject" => {
                    Some(Decision::reject(Some(reason)))
                }
                _ => None,
            },
            _ => None,
        }
    }
}

fn bad_wire(value: &Value) -> Error {
    let mut m =
        "a decision must be \"approve\", \"reject\" or [\"reject\", \"<reason>\"], got ".to_owned();
    json::write_value(&mut m, value);
    Error::parse(m)
}

/// The wire form: `"approve"`, `"reject"` or `["reject","<reason>"]`.
impl ToJson for Decision {
    fn write_json(&self, out: &mut String) {
        match (self, self.reason()) {
            (Decision::Approve, _) => out.push_str("\"approve\""),
            (Decision::Reject(_), None) => out.push_str("\"reject\""),
            (Decision::Reject(_), Some(reason)) => {
                out.push_str("[\"reject\",");
                json::write_str(out, reason);
                out.push(']');
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    call_id: String,
    /// What the tail records.
    tail: Option<Decision>,
    /// The user's draft, which wins over `tail`.
    local: Option<Decision>,
}

impl Entry {
    fn effective(&self) -> Option<&Decision> {
        self.local.as_ref().or(self.tail.as_ref())
    }
}

/// The decision set for one suspension: the tail's gated tools and the user's local drafts.
#[derive(Debug, Clone, PartialEq)]
pub struct Decisions {
    message_id: Option<String>,
    /// In tail order; one entry per callId.
    entries: Vec<Entry>,
}

impl Decisions {
    /// Starts a decision set for a suspended tail; a suspension that is not suspended is
    /// `not_suspended`. A callId repeated on the tail is kept once (its first occurrence).
    pub fn new(suspension: &Suspension) -> Result<Decisions> {
        Decisions::of(suspension).ok_or_else(|| {
            Error::new(
                ErrorCode::NotSuspended,
                "the thread is not suspended: no tool on its last message awaits approval",
            )
        })
    }

    /// [`Decisions::new`] without the error: `None` for a suspension that is not suspended (for
    /// the clients, which drop the error).
    pub(crate) fn of(suspension: &Suspension) -> Option<Decisions> {
        if !suspension.suspended {
            return None;
        }
        let mut decisions = Decisions {
            message_id: suspension.message_id.clone(),
            entries: Vec::new(),
        };
        for tool in suspension.each_gated() {
            let tail = Decision::from_tail(tool);
            match decisions.position(&tool.call_id) {
                None => decisions.entries.push(Entry {
                    call_id: tool.call_id.clone(),
                    tail,
                    local: None,
                }),
                // A callId the tail repeats is decided only where every one of its tools records
                // the same decision: one still pending is undecided, and never takes another's.
                Some(i) => {
                    if let Some(e) = decisions.entries.get_mut(i) {
                        if e.tail != tail {
                            e.tail = None;
                        }
                    }
                }
            }
        }
        Some(decisions)
    }

    /// The `__id` of the tail these decisions are for, if it had one.
    pub fn message_id(&self) -> Option<&str> {
        self.message_id.as_deref()
    }

    /// Every gated callId on the tail, in tail order.
    pub fn call_ids(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.call_id.as_str())
    }

    /// Approves a gated tool (bare: no comment).
    pub fn approve(&mut self, call_id: &str) -> Result<()> {
        self.put(call_id, Some(Decision::Approve))
    }

    /// Rejects a gated tool, with an optional reason for the model (blank ⇒ bare reject).
    pub fn reject(&mut self, call_id: &str, reason: Option<&str>) -> Result<()> {
        self.put(call_id, Some(Decision::reject(reason)))
    }

    /// Sets a decision (same as [`approve`](Self::approve) / [`reject`](Self::reject)).
    pub fn set(&mut self, call_id: &str, decision: Decision) -> Result<()> {
        let decision = match decision {
            Decision::Approve => Decision::Approve,
            Decision::Reject(reason) => Decision::reject(reason.as_deref()),
        };
        self.put(call_id, Some(decision))
    }

    /// Rejects every tool without an effective decision, with an optional reason (blank ⇒ bare
    /// reject); the decided ones are left as they are.
    pub(crate) fn reject_undecided(&mut self, reason: Option<&str>) {
        for e in &mut self.entries {
            if e.effective().is_none() {
                e.local = Some(Decision::reject(reason));
            }
        }
    }

    /// The server accepted a tool's draft: it becomes the tail's decision (no draft left to send).
    pub(crate) fn accept(&mut self, call_id: &str) {
        // Found here, not by `entry_mut`: no error built for an id that is not gated.
        if let Some(e) = self.find_mut(call_id) {
            e.tail = e.local.take();
        }
    }

    /// Drops the local decision for a tool; the tail's own decision, if any, counts again.
    pub fn clear(&mut self, call_id: &str) -> Result<()> {
        self.put(call_id, None)
    }

    /// Sets a tool's draft (`None`: none): one body for `approve`, `reject` and `clear` (and
    /// the JS class's methods, which call it directly).
    #[inline(never)]
    pub(crate) fn put(&mut self, call_id: &str, local: Option<Decision>) -> Result<()> {
        if self.put_found(call_id, local) {
            Ok(())
        } else {
            Err(unknown(call_id))
        }
    }

    /// [`put`](Self::put) without the error: `false` for a callId that is not gated (for the
    /// clients, which drop the error, and would pay for its message).
    #[inline(never)]
    pub(crate) fn put_found(&mut self, call_id: &str, local: Option<Decision>) -> bool {
        match self.find_mut(call_id) {
            Some(e) => {
                e.local = local;
                true
            }
            None => false,
        }
    }

    /// Drops every local decision (the tail's count again).
    pub(crate) fn clear_local(&mut self) {
        for e in &mut self.entries {
            e.local = None;
        }
    }

    /// The effective decision for a tool: the local one, else the tail's, else `None` (undecided).
    pub fn get(&self, call_id: &str) -> Result<Option<Decision>> {
        Ok(self.get_ref(call_id)?.cloned())
    }

    /// [`Decisions::get`] by reference (for a caller that only writes it: nothing cloned).
    pub(crate) fn get_ref(&self, call_id: &str) -> Result<Option<&Decision>> {
        Ok(self.entry(call_id)?.effective())
    }

    /// A tool's local draft and its effective decision, by reference and in one look-up, without
    /// [`Decisions::get`]'s error: `(None, None)` for a callId that is not gated.
    pub(crate) fn lookup(&self, call_id: &str) -> (Option<&Decision>, Option<&Decision>) {
        match self.find(call_id) {
            Some(e) => (e.local.as_ref(), e.effective()),
            None => (None, None),
        }
    }

    /// The local drafts only, in tail order.
    pub fn local(&self) -> impl Iterator<Item = (&str, &Decision)> {
        Local(&self.entries)
    }

    /// `true` when every gated tool on the tail has an effective decision.
    pub fn is_complete(&self) -> bool {
        self.entries.iter().all(|e| e.effective().is_some())
    }

    /// The callIds without an effective decision, in tail order.
    pub fn undecided(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for e in &self.entries {
            if e.effective().is_none() {
                out.push(e.call_id.as_str());
            }
        }
        out
    }

    /// [`Decisions::undecided`], owned (for the views, which keep them, and the JS getter: one
    /// list made, not one of references and then its copy).
    pub(crate) fn undecided_ids(&self) -> Vec<String> {
        let mut out = Vec::new();
        for e in &self.entries {
            if e.effective().is_none() {
                out.push(e.call_id.clone());
            }
        }
        out
    }

    /// The effective decisions to send, in tail order; `empty_decisions` when there are none.
    pub fn payload(&self) -> Result<Payload<'_>> {
        let payload = self.effective();
        if payload.is_empty() {
            return Err(Error::new(
                ErrorCode::EmptyDecisions,
                "no decision to send: approve or reject at least one tool",
            ));
        }
        Ok(payload)
    }

    /// [`Decisions::payload`] without its check: empty when nothing is decided (for a caller that
    /// knows a draft is there, and would forward an error that cannot happen).
    pub(crate) fn effective(&self) -> Payload<'_> {
        let mut entries = Vec::new();
        for e in &self.entries {
            if let Some(d) = e.effective() {
                entries.push((e.call_id.as_str(), d));
            }
        }
        Payload { entries }
    }

    /// The request body: `{"decisions":{...}}`, keys in tail order.
    pub fn to_json_string(&self) -> Result<String> {
        let payload = self.payload()?;
        let mut out = String::from("{\"decisions\":");
        payload.write_json(&mut out);
        out.push('}');
        Ok(out)
    }

    fn entry(&self, call_id: &str) -> Result<&Entry> {
        self.find(call_id).ok_or_else(|| unknown(call_id))
    }

    /// The entry of `call_id`: one search for every look-up.
    #[inline(never)]
    fn position(&self, call_id: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.call_id == call_id)
    }

    fn find(&self, call_id: &str) -> Option<&Entry> {
        self.entries.get(self.position(call_id)?)
    }

    fn find_mut(&mut self, call_id: &str) -> Option<&mut Entry> {
        let i = self.position(call_id)?;
        self.entries.get_mut(i)
    }
}

/// The walk of [`Decisions::local`]: the entries left. One `next` for its callers, not a
/// `filter_map` inlined in each of their loops.
struct Local<'a>(&'a [Entry]);

impl<'a> Iterator for Local<'a> {
    type Item = (&'a str, &'a Decision);

    #[inline(never)]
    fn next(&mut self) -> Option<(&'a str, &'a Decision)> {
        while let Some((e, rest)) = self.0.split_first() {
            self.0 = rest;
            if let Some(d) = &e.local {
                return Some((&e.call_id, d));
            }
        }
        None
    }
}

fn unknown(call_id: &str) -> Error {
    let mut m = call_id.to_json_string();
    m.push_str(" is not a gated tool on the suspended tail");
    Error::new(ErrorCode::UnknownCallId, m)
}

/// The decisions to send, keyed by callId in tail order. Written as the map itself (the value of
/// `"decisions"`), keeping that order.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload<'a> {
    entries: Vec<(&'a str, &'a Decision)>,
}

impl<'a> Payload<'a> {
    /// The entries, in tail order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a Decision)> + '_ {
        self.entries.iter().copied()
    }

    /// How many decisions (never 0).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Always `false`: an empty payload is never built.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The decision for a callId, if in the payload.
    pub fn get(&self, call_id: &str) -> Option<&'a Decision> {
        self.entries
            .iter()
            .find(|(id, _)| *id == call_id)
            .map(|(_, d)| *d)
    }
}

impl ToJson for Payload<'_> {
    fn write_json(&self, out: &mut String) {
        write_decision_map(out, self.entries.iter().copied());
    }
}

/// `{"<callId>": <decision>, ...}` in the given order.
pub(crate) fn write_decision_map<'a>(
    out: &mut String,
    entries: impl Iterator<Item = (&'a str, &'a Decision)>,
) {
    out.push('{');
    for (i, (call_id, decision)) in entries.enumerate() {
        if i > 0 {
            out.push(',');
        }
        json::write_str(out, call_id);
        out.push(':');
        decision.write_json(out);
    }
    out.push('}');
}
