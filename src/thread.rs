//! The wire model of a Neuron thread.
//!
//! A thread document is either an object `{"id"?: string | number | null, "messages": [...], ...}` or a
//! bare array of messages. Each [`Message`] keeps its whole original JSON object, so serializing it back
//! loses nothing (unknown fields and unknown message types included), and offers typed accessors on top:
//! [`Message::kind`], [`Message::role`], [`Message::tools`] (typed [`ToolCall`] views), and so on.
//!
//! Parsing validates only what the approval flow relies on, and reports anything else as an
//! [`Error`] with code `parse_error`, a message and a JSON path such as `$.messages[3].tools[0].approval`:
//!
//! - the document is an object with a `messages` array, or an array; `id`, if present, is a string, a
//!   number (kept as its decimal string) or null;
//! - every message is an object; `role`, if present, is a string; `type`, if present, is a string or
//!   null; `__id`, if present, is a string, a number or null;
//! - on `tool_call` and `tool_call_result` messages, `tools` is an array of objects, each with an
//!   `approval` that is `"pending"`, `"approved"`, `"rejected"`, null or absent, a string `callId`
//!   (null or absent only where `approval` is: a tool that is not gated, from a provider that gives
//!   calls no id), and `inputs` that is an object, an array, null or absent.
//!
//! Malformed JSON is a `parse_error` with the line and column (as serde_json would report them).

use crate::prelude::*;
use alloc::borrow::Cow;

use crate::approval::Approval;
use crate::error::{Error, Result};
use crate::json::{self, Fail, Map, Obj, Parser, ToJson, Value};

/// A parsed thread: its id (if the document had one) and every message, in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Thread {
    /// The thread's `id`; a numeric id becomes its decimal string. `None` for bare arrays, a missing id
    /// or `"id": null`.
    pub id: Option<String>,
    pub messages: Vec<Message>,
}

impl Thread {
    /// The last message, the only one that decides whether the thread is suspended.
    pub fn last(&self) -> Option<&Message> {
        self.messages.last()
    }
}

/// Writes `{"id": <string | null>, "messages": [...]}`.
impl ToJson for Thread {
    fn write_json(&self, out: &mut String) {
        let mut o = Obj::new(out);
        o.field("id", &self.id).field("messages", &self.messages);
        o.end();
    }
}

/// Parses a thread document from text.
pub fn parse_thread_str(input: &str) -> Result<Thread> {
    let walked = walk(input, Mode::All)?;
    Ok(Thread {
        id: walked.id,
        messages: walked.messages,
    })
}

/// Checks a thread document exactly as [`parse_thread_str`] does, keeping no message: the thread's
/// id and whether the document is a bare array of messages (for callers that build the messages
/// themselves, e.g. with `JSON.parse`).
pub fn check_thread_str(input: &str) -> Result<(Option<String>, bool)> {
    let walked = walk(input, Mode::Check)?;
    Ok((walked.id, walked.bare))
}

/// Parses a thread document from UTF-8 bytes (checked without copying; invalid UTF-8 is a
/// `parse_error` with line and column).
pub fn parse_thread_bytes(input: &[u8]) -> Result<Thread> {
    parse_thread_str(json::utf8(input)?)
}

/// What a client keeps of the last thread document it read, so that reading the next one (a
/// reload: mostly the same text, grown or changed at its end) builds only the messages after the
/// text the two share: the walk's last state, which holds its last checkpoint between two
/// messages (see `State::mark`), the hash of the text before that, and the messages (set by the
/// caller, as it keeps them).
#[derive(Debug, Default)]
pub(crate) struct Marks {
    s: State,
    hash: u64,
    /// The document's messages.
    pub(crate) messages: Vec<Message>,
}

/// [`parse_thread_bytes`], for a document read again: when the text before the mark of `marks`
/// hashes as it did in the document they were made of, the messages before the mark are theirs,
/// not parsed again, and the walk resumes at the mark, where it stood then. The thread is the one
/// `parse_thread_bytes` gives (the walk's state at a checkpoint is all that decides the rest, and
/// it is the same after the same text), and so are the errors. `marks` become this document's
/// (their `messages` left to the caller).
#[inline(never)]
pub(crate) fn parse_thread_again(input: &[u8], marks: &mut Marks) -> Result<Thread> {
    let text = json::utf8(input)?;
    let mut messages = core::mem::take(&mut marks.messages);
    let mut s = State::default();
    let (cp, index) = marks.s.mark;
    let mut keep = 0;
    // A checkpoint is a char boundary: the walk resumes there.
    if index > 0
        && index <= messages.len()
        && text.is_char_boundary(cp)
        && json::text_hash(text.as_bytes().get(..cp).unwrap_or_default()) == marks.hash
    {
        (s.at, s.cp, s.index, s.seen, s.bare) =
            (At::Messages(false), cp, index, true, marks.s.bare);
        (s.mark, s.id_then) = (marks.s.mark, marks.s.id_then.take());
        s.id = s.id_then.clone();
        keep = index;
    }
    messages.truncate(keep);
    let walked = walk_at(text, Mode::All, &mut s, messages)?;
    marks.hash = json::text_hash(text.as_bytes().get(..s.mark.0).unwrap_or_default());
    marks.s = s;
    Ok(Thread {
        id: walked.id,
        messages: walked.messages,
    })
}

/// For the fuzz targets: `new` read again after `old` (their first reads' marks), which must be
/// `parse_thread_bytes(new)`.
#[cfg(fuzzing)]
pub fn read_again(old: &[u8], new: &[u8]) -> Result<Thread> {
    let mut marks = Marks::default();
    if let Ok(thread) = parse_thread_again(old, &mut marks) {
        marks.messages = thread.messages;
    }
    parse_thread_again(new, &mut marks)
}

/// Builds a thread from an already parsed JSON value.
pub fn parse_thread_value(value: Value) -> Result<Thread> {
    let (id, _, bare) = document(&value)?;
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut map) => match map.remove("messages") {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    let mut messages = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        messages.push(Message::from_value_at(item, || message_path(bare, index))?);
    }
    Ok(Thread { id, messages })
}

/// `e` with `base` prefixed to its path (a relative path, or none).
pub(crate) fn under(base: String, mut e: Error) -> Error {
    let mut path = base;
    path.push_str(e.path.as_deref().unwrap_or_default());
    e.path = Some(path);
    e
}

/// Checks the shape of a parsed thread document (an object with a valid `id` and a `messages`
/// array, or an array): its id, its messages (not yet checked) and whether it is a bare array.
pub(crate) fn document(value: &Value) -> Result<(Option<String>, &[Value], bool)> {
    match value {
        Value::Array(items) => Ok((None, items, true)),
        Value::Object(map) => {
            let id = match map.get("id") {
                None => None,
                Some(v) => id_from_value(v).map_err(|got| got_error(BAD_ID, got, "$.id"))?,
            };
            match map.get("messages") {
                Some(Value::Array(items)) => Ok((id, items, false)),
                Some(other) => Err(got_error(BAD_MESSAGES, json::describe(other), "$.messages")),
                None => Err(missing_messages()),
            }
        }
        other => Err(got_error(BAD_THREAD, json::describe(other), "$")),
    }
}

pub(crate) const BAD_ID: &str = "the thread id must be a string, a number or null";
pub(crate) const BAD_MESSAGES: &str = "messages must be an array";
pub(crate) const BAD_THREAD: &str =
    "a thread must be an object with a \"messages\" array or an array of messages";
pub(crate) const BAD_MESSAGE: &str = "a message must be an object";

/// A `parse_error` "<what>, got <got>" at `path`.
#[inline(never)]
pub(crate) fn got_error(what: &str, got: &str, path: &str) -> Error {
    let mut m = what.to_owned();
    m.push_str(", got ");
    m.push_str(got);
    Error::parse(m).with_path(path)
}

fn missing_messages() -> Error {
    Error::parse("a thread object needs a \"messages\" array").with_path("$")
}

/// `Ok(None)` for null, the decimal string for a number, the string itself; `Err(description)` else.
fn id_from_value(value: &Value) -> core::result::Result<Option<String>, &'static str> {
    // A string's text or a number's: one copy for both.
    let id = match value {
        Value::Null => return Ok(None),
        Value::String(s) => s.as_str(),
        Value::Number(n) => n.as_str(),
        other => return Err(json::describe(other)),
    };
    Ok(Some(id.to_owned()))
}

/// What a message is, from its `type` (absent or null ⇒ [`MessageKind::Text`], whatever the role).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MessageKind {
    /// A plain message (`type` absent or null): user, assistant, system, ... text.
    Text,
    /// `type: "tool_call"`: the model asks for tools; the approval-bearing message.
    ToolCall,
    /// `type: "tool_call_result"`: the tools' results.
    ToolCallResult,
    /// Any other `type`, kept verbatim.
    Unknown(String),
}

/// A message's `content`: a string, an array of blocks, null/absent, or (tolerated) anything else.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Content<'a> {
    /// `content` is absent or null.
    None,
    Text(&'a str),
    Blocks(&'a [Value]),
    /// A `content` of another JSON type, kept as is.
    Other(&'a Value),
}

/// One message of a thread: its original JSON object plus typed accessors.
///
/// Writes exactly its original object (keys in their original order). A message is never changed
/// once made, so its object is shared: a clone (a client's view of a message beside the thread it
/// keeps) copies nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    raw: Shared<Map>,
}

impl ToJson for Message {
    fn write_json(&self, out: &mut String) {
        self.raw.write_json(out);
    }
}

impl Message {
    /// The same message: the very object, or an equal one (the same members and values).
    #[inline(always)]
    pub(crate) fn same(&self, other: &Message) -> bool {
        self.is(other) || self.raw == other.raw
    }

    /// The very same object.
    pub(crate) fn is(&self, other: &Message) -> bool {
        Shared::ptr_eq(&self.raw, &other.raw)
    }

    /// Validates one message (see the module docs); error paths start at `$`.
    pub fn from_value(value: Value) -> Result<Message> {
        // Its error's path made in the error arm (no closure to pass).
        match Message::checked(value) {
            Ok(message) => Ok(message),
            Err(e) => Err(under("$".to_owned(), e)),
        }
    }

    /// Parses one message from text.
    pub fn parse_str(input: &str) -> Result<Message> {
        Message::from_value(Value::parse(input)?)
    }

    /// Validates one message; `base` gives the message's path, built only on error.
    pub(crate) fn from_value_at(value: Value, base: impl FnOnce() -> String) -> Result<Message> {
        Message::checked(value).map_err(|e| under(base(), e))
    }

    /// Validates one message; the error's path is relative to the message (empty for the message
    /// itself). Not generic, so compiled once for every caller of `from_value_at`.
    #[inline(never)]
    pub(crate) fn checked(value: Value) -> Result<Message> {
        match value {
            Value::Object(raw) => check(&raw).map(|()| Message {
                raw: Shared::new(raw),
            }),
            other => Err(got_error(BAD_MESSAGE, json::describe(&other), "")),
        }
    }

    /// The object as a message when it is a valid one, else the object back (nothing copied to
    /// try, no error built for a caller that drops it).
    pub(crate) fn try_from_map(raw: Map) -> core::result::Result<Message, Map> {
        match check(&raw) {
            Ok(()) => Ok(Message {
                raw: Shared::new(raw),
            }),
            Err(_) => Err(raw),
        }
    }

    /// `{}`: a message with no field at all.
    pub(crate) fn empty() -> Message {
        Message {
            raw: Shared::new(Map::new()),
        }
    }

    /// The original JSON object.
    pub fn as_object(&self) -> &Map {
        &self.raw
    }

    /// The original JSON object, as a value.
    pub fn into_value(self) -> Value {
        Value::Object(Shared::try_unwrap(self.raw).unwrap_or_else(|raw| (*raw).clone()))
    }

    /// Any field of the original object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.raw.get(key)
    }

    /// `__id`; a numeric id becomes its decimal string.
    pub fn id(&self) -> Option<String> {
        match self.raw.get("__id") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.as_str().to_owned()),
            _ => None,
        }
    }

    /// `role`, e.g. `"user"` or `"assistant"`.
    pub fn role(&self) -> Option<&str> {
        self.raw.get("role").and_then(Value::as_str)
    }

    /// What the message is, from `type`.
    pub fn kind(&self) -> MessageKind {
        kind_of(&self.raw)
    }

    /// `true` for `type: "tool_call"`.
    pub fn is_tool_call(&self) -> bool {
        matches!(self.raw.get("type"), Some(Value::String(t)) if t == "tool_call")
    }

    /// `content`: a string, an array of blocks or nothing.
    pub fn content(&self) -> Content<'_> {
        match self.raw.get("content") {
            None | Some(Value::Null) => Content::None,
            Some(Value::String(s)) => Content::Text(s),
            Some(Value::Array(blocks)) => Content::Blocks(blocks),
            Some(other) => Content::Other(other),
        }
    }

    /// `resume_token`, if present and a string (kept, never required, never sent).
    pub fn resume_token(&self) -> Option<&str> {
        self.raw.get("resume_token").and_then(Value::as_str)
    }

    /// The typed views of `tools[]` on `tool_call` and `tool_call_result` messages, in order; empty for
    /// any other message.
    pub fn tools(&self) -> Vec<ToolCall<'_>> {
        let mut out = Vec::new();
        self.each_tool(&mut |tool| out.push(tool));
        out
    }

    /// Calls `f` with each view [`tools`](Self::tools) would list, in order, listing none.
    pub(crate) fn each_tool<'a>(&'a self, f: &mut dyn FnMut(ToolCall<'a>)) {
        if tool_kind(&self.raw).is_none() {
            return;
        }
        if let Some(Value::Array(tools)) = self.raw.get("tools") {
            for (index, tool) in tools.iter().enumerate() {
                if let Some(raw) = tool.as_object() {
                    f(ToolCall {
                        raw,
                        call_id: raw.get("callId").and_then(Value::as_str).unwrap_or(""),
                        index,
                    });
                }
            }
        }
    }
}

/// A typed, borrowed view of one entry of a message's `tools[]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolCall<'a> {
    raw: &'a Map,
    call_id: &'a str,
    index: usize,
}

impl<'a> ToolCall<'a> {
    /// The original JSON object of the tool.
    pub fn as_object(&self) -> &'a Map {
        self.raw
    }

    /// The position of this tool in the message's `tools[]`.
    pub fn index(&self) -> usize {
        self.index
    }

    /// `callId`; `""` on a tool that is not gated and has none.
    pub fn call_id(&self) -> &'a str {
        self.call_id
    }

    /// `name`, if a string.
    #[inline(always)]
    pub fn name(&self) -> Option<&'a str> {
        self.str_field("name")
    }

    /// `description`, if a string.
    #[inline(always)]
    pub fn description(&self) -> Option<&'a str> {
        self.str_field("description")
    }

    /// `inputs`, always an object: `{}` for absent, null or `[]`; a non-empty array (a PHP list) becomes
    /// an object keyed `"0"`, `"1"`, ... The message itself keeps the original form.
    pub fn inputs(&self) -> Cow<'a, Map> {
        match self.raw.get("inputs") {
            Some(Value::Object(map)) => Cow::Borrowed(map),
            Some(Value::Array(items)) => Cow::Owned(list_inputs(items)),
            _ => Cow::Owned(Map::new()),
        }
    }

    /// [`ToolCall::inputs`] as an owned map (a copy when borrowed), without a `Cow` to build and
    /// take apart (`Cow::into_owned` would link a copy routine of its own).
    pub(crate) fn owned_inputs(&self) -> Map {
        match self.raw.get("inputs") {
            Some(Value::Object(map)) => map.clone(),
            Some(Value::Array(items)) => list_inputs(items),
            _ => Map::new(),
        }
    }

    /// `result`; `None` when absent or null.
    pub fn result(&self) -> Option<&'a Value> {
        self.raw.get("result").filter(|v| !v.is_null())
    }

    /// `approval`; `None` (absent or null) means the tool is not gated.
    pub fn approval(&self) -> Option<Approval> {
        self.raw
            .get("approval")
            .and_then(Value::as_str)
            .and_then(Approval::parse)
    }

    /// `true` when the tool has an approval state (pending, approved or rejected).
    pub fn is_gated(&self) -> bool {
        self.approval().is_some()
    }

    /// `approvalReason` (the tool to the human: why it asks), if a string.
    #[inline(always)]
    pub fn approval_reason(&self) -> Option<&'a str> {
        self.str_field("approvalReason")
    }

    /// `expiresAt` (Neuron 4: the deadline of the approval request, as the server wrote it), if a
    /// string.
    #[inline(always)]
    pub fn expires_at(&self) -> Option<&'a str> {
        self.str_field("expiresAt")
    }

    /// `rejectReason` (the human to the model: why not), if a string.
    #[inline(always)]
    pub fn reject_reason(&self) -> Option<&'a str> {
        self.str_field("rejectReason")
    }

    /// `parameters` (older Neuron versions), if present.
    pub fn parameters(&self) -> Option<&'a Value> {
        self.raw.get("parameters")
    }

    /// `deferred` (newer Neuron versions), if present.
    pub fn deferred(&self) -> Option<&'a Value> {
        self.raw.get("deferred")
    }

    /// A string field (the accessors above, inlined: a call of this with the key at each use).
    fn str_field(&self, key: &str) -> Option<&'a str> {
        self.raw.get(key).and_then(Value::as_str)
    }
}

/// A list of inputs (a PHP list) as an object keyed `"0"`, `"1"`, ...
pub(crate) fn list_inputs(items: &[Value]) -> Map {
    // The keys are distinct: no need to look each one up as `insert` would.
    let mut entries = Vec::with_capacity(items.len());
    for (i, v) in items.iter().enumerate() {
        entries.push((json::u64_string(i as u64), v.clone()));
    }
    Map::from_entries(entries)
}

/// The message's `type` when it is `"tool_call"` or `"tool_call_result"` (without building a
/// [`MessageKind`]).
fn tool_kind(raw: &Map) -> Option<&str> {
    match raw.get("type") {
        Some(Value::String(t)) if t == "tool_call" || t == "tool_call_result" => Some(t),
        _ => None,
    }
}

fn kind_of(raw: &Map) -> MessageKind {
    match raw.get("type") {
        Some(Value::String(t)) => match t.as_str() {
            "tool_call" => MessageKind::ToolCall,
            "tool_call_result" => MessageKind::ToolCallResult,
            other => MessageKind::Unknown(other.to_owned()),
        },
        _ => MessageKind::Text,
    }
}

/// A `parse_error` "<what>, got <got>" at the path `rel` inside the message.
fn invalid(rel: &str, what: &str, got: &Value) -> Error {
    got_error(what, json::describe(got), rel)
}

/// `.tools[i]<field>`.
fn tool_path(i: usize, field: &str) -> String {
    let mut path = ".tools[".to_owned();
    json::write_u64(&mut path, i as u64);
    path.push(']');
    path.push_str(field);
    path
}

/// Checks one message; the error's path is relative to the message.
fn check(raw: &Map) -> Result<()> {
    match raw.get("role") {
        None | Some(Value::String(_)) => {}
        Some(other) => return Err(invalid(".role", "role must be a string", other)),
    }
    match raw.get("type") {
        None | Some(Value::Null) | Some(Value::String(_)) => {}
        Some(other) => return Err(invalid(".type", "type must be a string", other)),
    }
    match raw.get("__id") {
        None | Some(Value::Null) | Some(Value::String(_)) | Some(Value::Number(_)) => {}
        Some(other) => {
            return Err(invalid(
                ".__id",
                "__id must be a string, a number or null",
                other,
            ))
        }
    }
    let Some(kind) = tool_kind(raw) else {
        return Ok(());
    };
    let tools = match raw.get("tools") {
        Some(Value::Array(tools)) => tools,
        Some(other) => return Err(invalid(".tools", "tools must be an array", other)),
        None => {
            let mut m = "a ".to_owned();
            m.push_str(kind);
            m.push_str(" message needs a tools array");
            return Err(Error::parse(m).with_path(".tools"));
        }
    };
    for (i, tool) in tools.iter().enumerate() {
        let Some(tool) = tool.as_object() else {
            return Err(invalid(&tool_path(i, ""), "a tool must be an object", tool));
        };
        // A tool that is not gated may lack a callId (providers that give none): it is never
        // decided, and its view has `""`. A gated one is decided by its callId.
        let approval = tool.get("approval");
        let gated = !matches!(approval, None | Some(Value::Null));
        match tool.get("callId") {
            Some(Value::String(_)) => {}
            None | Some(Value::Null) if !gated => {}
            None | Some(Value::Null) => {
                return Err(
                    Error::parse("a gated tool needs a callId").with_path(tool_path(i, ".callId"))
                )
            }
            Some(other) => {
                return Err(invalid(
                    &tool_path(i, ".callId"),
                    "callId must be a string",
                    other,
                ))
            }
        }
        match approval {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if Approval::parse(s).is_some() => {}
            Some(other) => {
                let quoted;
                let got = match other {
                    Value::String(s) => {
                        quoted = json::quote(s);
                        &quoted
                    }
                    other => json::describe(other),
                };
                return Err(got_error(
                    "approval must be \"pending\", \"approved\", \"rejected\" or null",
                    got,
                    &tool_path(i, ".approval"),
                ));
            }
        }
        match tool.get("inputs") {
            None | Some(Value::Null) | Some(Value::Object(_)) | Some(Value::Array(_)) => {}
            Some(other) => {
                return Err(invalid(
                    &tool_path(i, ".inputs"),
                    "inputs must be an object",
                    other,
                ))
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------
// The streaming walk over a document: validates the JSON and the thread's shape, and either builds every
// message (`Mode::All`) or keeps only the raw text of the last one (`Mode::Tail`), never a Vec of the
// others nor a `Value` per message.
//
// It is a small state machine over the top level of the document (before it, between the root
// object's members, between messages, after it), so that a walk can stop at any of those
// checkpoints and resume there on more text: `walk_windows` reads a document a window at a time
// that way. Inside a member or a message the parser's recursive descent does the work.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Build and validate every message.
    All,
    /// Check every message is an object; keep only the last one, unparsed.
    Tail,
    /// Build and validate every message, keep none (a thread check).
    Check,
}

/// What a walk found.
pub(crate) struct Walked<'de> {
    pub(crate) id: Option<String>,
    /// `true` for a bare-array document (paths are `$[i]`, not `$.messages[i]`).
    pub(crate) bare: bool,
    /// How many messages there are.
    pub(crate) count: usize,
    /// `Mode::Tail`: the last message's raw text.
    pub(crate) tail: Option<&'de str>,
    /// `Mode::All`: every message.
    pub(crate) messages: Vec<Message>,
}

/// The path of message `index`, e.g. `$.messages[3]` or `$[3]` (`bare`).
pub(crate) fn message_path(bare: bool, index: usize) -> String {
    let mut path = String::from(if bare { "$[" } else { "$.messages[" });
    json::write_u64(&mut path, index as u64);
    path.push(']');
    path
}

/// Where the walk is, for the path of an error.
#[derive(Debug, Clone, Copy)]
enum Loc {
    // The first three's paths are `LOC_PATHS`, in this order.
    Root,
    Id,
    Messages,
    Message,
}

/// The paths of the places of a walk but a message, in `Loc`'s order (`json::nth`).
const LOC_PATHS: &str = "$|$.id|$.messages";

/// Where a walk stands, at a checkpoint.
#[derive(Debug, Clone, Copy, Default)]
enum At {
    /// Before the document.
    #[default]
    Start,
    /// In the root object: before its first member (`true`) or after a member.
    Root(bool),
    /// In the messages array: before its first message (`true`) or after a message.
    Messages(bool),
    /// After the document: whitespace only, to the end.
    End,
}

/// What a walk knows at its checkpoint: all it needs to resume there. (The default: before a
/// document.)
#[derive(Debug, Default)]
struct State {
    at: At,
    /// The checkpoint's position in the text.
    cp: usize,
    id: Option<String>,
    bare: bool,
    /// A `messages` member was read.
    seen: bool,
    /// The messages of the messages array being read, so far.
    index: usize,
    /// The messages of the last whole messages array.
    count: usize,
    /// `Mode::Tail`: the last message's place in the text.
    tail: Option<(usize, usize)>,
    /// The last checkpoint between two messages of the messages array, and how many came before
    /// it (0: none yet); with `id_then`, the id as known where that array began, the walk can
    /// resume there on the same text before it (see [`parse_thread_again`]).
    mark: (usize, usize),
    id_then: Option<String>,
}

struct Walker<'a, 's> {
    p: Parser<'a>,
    mode: Mode,
    loc: Loc,
    s: &'s mut State,
    /// `Mode::All`: every message so far.
    messages: Vec<Message>,
    /// Why the walk stopped, when not for a syntax error (which the parser keeps, and whose path
    /// is where the walk was, `loc`).
    shape: Option<Error>,
}

impl Walker<'_, '_> {
    /// Stops the walk with an error of ours (with its own path).
    fn stop(&mut self, e: Error) -> Fail {
        self.shape = Some(e);
        Fail
    }
}

type Step = core::result::Result<(), Fail>;

/// A walker over `text` resuming at `s`'s checkpoint.
#[inline(never)]
fn walker<'a, 's>(text: &'a str, mode: Mode, s: &'s mut State) -> Walker<'a, 's> {
    let depth = match s.at {
        At::Start | At::End => 0,
        At::Root(_) => 1,
        At::Messages(_) => 2 - u32::from(s.bare),
    };
    Walker {
        p: Parser::resume(text, s.cp, depth),
        mode,
        loc: Loc::Root,
        s,
        messages: Vec::new(),
        shape: None,
    }
}

/// What a finished walk found.
fn walked<'a>(w: Walker<'a, '_>) -> Walked<'a> {
    Walked {
        tail: w.s.tail.map(|(from, to)| w.p.slice(from, to)),
        id: w.s.id.take(),
        bare: w.s.bare,
        count: w.s.count,
        messages: w.messages,
    }
}

/// Walks a thread document once: checks the JSON and the thread's shape, and builds every message
/// (`Mode::All`) or keeps only the last one's raw text (`Mode::Tail`).
pub(crate) fn walk(input: &str, mode: Mode) -> Result<Walked<'_>> {
    walk_at(input, mode, &mut State::default(), Vec::new())
}

/// [`walk`] from the checkpoint `s`, after `messages` (`Mode::All`: the messages before it).
fn walk_at<'a>(
    input: &'a str,
    mode: Mode,
    s: &mut State,
    messages: Vec<Message>,
) -> Result<Walked<'a>> {
    let mut w = walker(input, mode, s);
    w.messages = messages;
    if steps(&mut w).is_ok() {
        return Ok(walked(w));
    }
    if let Some(error) = w.shape {
        return Err(error);
    }
    let path = match w.loc {
        Loc::Message => message_path(w.s.bare, w.s.index),
        // `$`, `$.id` or `$.messages`: one copy for the three.
        loc => json::nth(LOC_PATHS, loc as usize).to_owned(),
    };
    Err(json::to_error(input, w.p.syntax()).with_path(path))
}

/// Skips a value that is not of the expected kind (valid JSON first), then reports its kind.
fn wrong(w: &mut Walker<'_, '_>, what: &str, path: &str) -> Step {
    let first = w.p.ws();
    w.p.skip_value()?;
    Err(w.stop(got_error(what, json::describe_byte(first), path)))
}

/// Walks from the checkpoint to the end of the text, one member or message at a time, moving
/// the checkpoint past each once it is whole; `Ok` at the end of the document. A repeated
/// `messages` key replaces what an earlier one gave.
fn steps(w: &mut Walker<'_, '_>) -> Step {
    loop {
        let next = w.p.ws();
        w.s.cp = w.p.pos();
        w.loc = Loc::Root;
        match w.s.at {
            At::Start => {
                w.s.at = match next {
                    Some(b'[') => At::Messages(true),
                    Some(b'{') => At::Root(true),
                    // A scalar document: valid JSON first, then the wrong shape.
                    _ => return wrong(w, BAD_THREAD, "$"),
                };
                w.s.bare = next == Some(b'[');
                w.p.enter()?;
            }
            At::Root(first) => {
                let key = w.p.object_member(first)?;
                match key.as_deref() {
                    None if w.s.seen => {
                        w.s.at = At::End;
                        continue;
                    }
                    None => return Err(w.stop(missing_messages())),
                    Some("id") => {
                        w.loc = Loc::Id;
                        let value = w.p.parse_value()?;
                        w.s.id = match id_from_value(&value) {
                            Ok(id) => id,
                            Err(got) => return Err(w.stop(got_error(BAD_ID, got, "$.id"))),
                        };
                    }
                    Some("messages") => {
                        w.loc = Loc::Messages;
                        if w.p.ws() != Some(b'[') {
                            return wrong(w, BAD_MESSAGES, "$.messages");
                        }
                        w.p.enter()?;
                        (w.s.seen, w.s.tail, w.s.index) = (true, None, 0);
                        w.messages.clear();
                        (w.s.mark.1, w.s.id_then) = (0, w.s.id.clone());
                        w.s.at = At::Messages(true);
                        continue;
                    }
                    Some(_) => w.p.skip_value()?,
                }
                // A number at the end of the text may go on in the next piece: the member is
                // whole once something follows it. (At the end of the document this is the
                // next step's error, at the same place.)
                if w.p.ws().is_none() {
                    w.loc = Loc::Root;
                    w.p.object_member(false)?;
                }
                w.s.at = At::Root(false);
            }
            At::Messages(first) => {
                w.loc = Loc::Message;
                let more = w.p.array_item(first)?;
                if !more {
                    w.s.count = w.s.index;
                    w.s.at = if w.s.bare { At::End } else { At::Root(false) };
                    continue;
                }
                let (bare, index) = (w.s.bare, w.s.index);
                // A checkpoint between two messages: the mark, as far as this message.
                if !first {
                    w.s.mark = (w.s.cp, index);
                }
                if w.mode == Mode::Tail {
                    if w.p.ws() != Some(b'{') {
                        return wrong(w, BAD_MESSAGE, &message_path(bare, index));
                    }
                    let start = w.p.pos();
                    w.p.skip_value()?;
                    w.s.tail = Some((start, w.p.pos()));
                } else {
                    let value = w.p.parse_value()?;
                    // Its error's path made in the error arm (no closure to pass).
                    let message = match Message::checked(value) {
                        Ok(message) => message,
                        Err(e) => return Err(w.stop(under(message_path(bare, index), e))),
                    };
                    if w.mode == Mode::All {
                        w.messages.push(message);
                    }
                }
                w.s.index += 1;
                w.s.at = At::Messages(false);
            }
            At::End => return w.p.end(),
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// The tail walk over a document read a window at a time: what `walk(.., Mode::Tail)` does, with the
// input copied piece by piece into one reused buffer, so that memory stays O(window + largest
// message) whatever the document's size.
//
// When the parser runs out of text (an EOF syntax code) with input still to come, the bytes still
// needed (the last message so far, and everything from the checkpoint on) move to the front of
// the buffer, the next piece is appended, and a fresh parser resumes at the checkpoint. Every
// decision the parser makes before the end of its text is the one it makes on the whole input (a
// cut anywhere is an EOF code, never another error nor a success; the one value that can end
// with the text, a number, is a member's value only once something follows it), so a walk that
// ends is the whole walk. Any other failure (bad JSON, a wrong shape, invalid UTF-8, a truncated
// document) ends it with `None`, and the caller reads the whole input the usual way for the
// exact error. Memory: the buffer, O(window + the largest message or other top-level member).

/// The tail walk over a document of `len` bytes that `fill(offset, dest)` copies into `dest`,
/// into a buffer of `window` bytes (larger when a message is: the buffer then doubles, so
/// re-reading a message cut by a window's end stays linear). `then` gets what [`walk`] in
/// `Mode::Tail` finds; `None` when the walk failed, for whatever reason.
pub(crate) fn walk_windows<R>(
    len: usize,
    window: usize,
    fill: &mut dyn FnMut(usize, &mut [u8]),
    then: impl FnOnce(Walked<'_>) -> R,
) -> Option<R> {
    let mut buf = Vec::new();
    // Bytes in the buffer; of them, checked as whole UTF-8 sequences; of the input, read.
    let (mut filled, mut checked, mut read) = (0, 0, 0);
    let mut s = State::default();
    loop {
        // The buffer stays at the window's size, or twice what is kept when that is more.
        let n = (window.max(2 * filled) - filled).max(1).min(len - read);
        if buf.len() < filled + n {
            // A new buffer with what is kept (`vec!` zeroes it faster than `resize` would).
            let mut bigger = vec![0; filled + n];
            bigger
                .get_mut(..filled)?
                .copy_from_slice(buf.get(..filled)?);
            buf = bigger;
        }
        fill(read, buf.get_mut(filled..filled + n)?);
        read += n;
        filled += n;
        let last = read == len;
        match json::utf8_error(buf.get(checked..filled)?) {
            None => checked = filled,
            // A sequence cut by the window's end: checked again with the next piece.
            Some((valid, true)) if !last => checked += valid,
            Some(_) => return None,
        }
        // SAFETY: `buf[..checked]` is valid UTF-8: each piece appended is checked from where the
        // valid text ended (above), and the compaction below keeps two runs of that text that
        // start and end at positions the parser reached, which are char boundaries (see
        // `Parser::slice`).
        let text = unsafe { core::str::from_utf8_unchecked(buf.get(..checked)?) };
        let mut w = walker(text, Mode::Tail, &mut s);
        match steps(&mut w) {
            Ok(()) if last => return Some(then(walked(w))),
            // The end of the document so far, or a cut: read on.
            Ok(()) => {}
            Err(Fail) if !last && w.shape.is_none() && w.p.syntax().code.is_eof() => {}
            Err(Fail) => return None,
        }
        // Keep the tail and what follows the checkpoint, at the front of the buffer.
        let (from, to) = s.tail.unwrap_or((s.cp, s.cp));
        let kept = to - from;
        if !(from <= to && to <= s.cp && s.cp <= filled && filled <= buf.len()) {
            return None;
        }
        // SAFETY: both runs, and their destinations before them, lie within `buf`: the
        // positions are in order and within it (checked just above). (`copy_within` would check
        // again, with a panic path and its location strings in the module.)
        unsafe {
            let p = buf.as_mut_ptr();
            core::ptr::copy(p.add(from), p, kept);
            core::ptr::copy(p.add(s.cp), p.add(kept), filled - s.cp);
        }
        let shift = s.cp - kept;
        filled -= shift;
        checked -= shift;
        s.cp = kept;
        s.tail = s.tail.map(|_| (0, kept));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: &str = r#"{"role":"user","content":"hi"}"#;
    const PENDING: &str = r#"{"__id":"m2","type":"tool_call","role":"assistant","tools":[{"callId":"c1","name":"delete","inputs":{"path":"/tmp/a"},"approval":"pending"}]}"#;
    const APPROVED: &str = r#"{"__id":"m2","type":"tool_call","role":"assistant","tools":[{"callId":"c1","name":"delete","inputs":{"path":"/tmp/a"},"approval":"rejected"}]}"#;
    const RESULT: &str = r#"{"type":"tool_call_result","role":"user","tools":[{"callId":"c1","result":"gone \u00e9 \"x\""}]}"#;

    /// The marks of `doc` read with none, its messages kept as a client keeps them.
    fn marks_of(doc: &[u8]) -> Option<Marks> {
        let mut marks = Marks::default();
        marks.messages = parse_thread_again(doc, &mut marks).ok()?.messages;
        Some(marks)
    }

    /// What marks say (nothing of a place without one).
    fn of(m: &Marks) -> (usize, usize, u64, Option<String>, bool) {
        let s = &m.s;
        match s.mark {
            (_, 0) => (0, 0, 0, s.id_then.clone(), s.bare),
            (cp, index) => (cp, index, m.hash, s.id_then.clone(), s.bare),
        }
    }

    /// `new` read again after `old`: what `parse_thread_bytes` gives, or its very error, with the
    /// marks a first read makes (or, where the walk resumed at the end of the messages, marks at
    /// its checkpoint); how many messages are `old`'s very objects (a prefix).
    fn again(old: &str, new: &[u8]) -> usize {
        let Some(mut last) = marks_of(old.as_bytes()) else {
            return 0;
        };
        let before = last.messages.clone();
        let whole = parse_thread_bytes(new);
        let label = format!("{old} then {}", String::from_utf8_lossy(new));
        match parse_thread_again(new, &mut last) {
            Ok(thread) => {
                assert_eq!(Ok(&thread), whole.as_ref(), "{label}");
                let fresh = marks_of(new).expect("marks");
                if last.s.mark.1 < thread.messages.len() {
                    assert_eq!(of(&last), of(&fresh), "{label}");
                }
                // Marks that serve: the same text read with them is the same thread again.
                let mut marks = last;
                marks.messages = thread.messages.clone();
                let next = parse_thread_again(new, &mut marks);
                assert_eq!(next.as_ref(), whole.as_ref(), "{label}, twice");
                let kept = thread
                    .messages
                    .iter()
                    .zip(&before)
                    .take_while(|(a, b)| a.is(b))
                    .count();
                let shared = thread
                    .messages
                    .iter()
                    .filter(|m| before.iter().any(|o| o.is(m)))
                    .count();
                assert_eq!(kept, shared, "{label}");
                kept
            }
            Err(e) => {
                assert_eq!(Err(e), whole, "{label}");
                0
            }
        }
    }

    fn docs() -> Vec<String> {
        vec![
            format!("[{USER},{PENDING}]"),
            format!("[{USER},{APPROVED},{RESULT}]"),
            format!(r#"{{"id":"t1","messages":[{USER},{PENDING}]}}"#),
            format!(r#"{{"id":"t1","messages":[{USER},{APPROVED},{RESULT}]}}"#),
            format!(r#"{{"id":"t2","messages":[{USER},{PENDING}]}}"#),
            format!(r#"{{"messages":[{USER},{PENDING}],"id":42}}"#),
            format!(r#"{{"messages":[{USER},{PENDING},{RESULT}],"id":43,"x":[1]}}"#),
            format!(r#"{{"id":null,"x":{{"a":[1,{{"b":null}}]}},"messages":[{USER},{PENDING}]}}"#),
            format!(r#"{{"messages":[{PENDING}],"messages":[{USER},{PENDING}]}}"#),
            format!(r#"{{"messages":[{USER},{PENDING}],"messages":[{USER}]}}"#),
            format!("\n[\n  {USER} ,\n  {PENDING}\n]\n"),
            format!("\n[\n  {USER} ,\n  {APPROVED} , {RESULT}\n]\n"),
            format!("[{USER},{USER},{USER},{PENDING}]"),
            "[]".to_owned(),
            r#"{"id":"t1","messages":[]}"#.to_owned(),
            r#"{"id":"t1","messages":[{}]}"#.to_owned(),
        ]
    }

    #[test]
    fn a_document_read_again_parses_as_a_first_read_does() {
        let docs = docs();
        for old in &docs {
            for new in &docs {
                again(old, new.as_bytes());
            }
        }
        // Cut short everywhere, and every byte changed to a few others (invalid UTF-8 too): the
        // same thread, or the same error (path, line and column), after documents of each shape.
        for old in [&docs[1], &docs[3], &docs[5], &docs[8], &docs[11]] {
            for new in &docs {
                for cut in 0..new.len() {
                    again(old, &new.as_bytes()[..cut]);
                }
                for at in 0..new.len() {
                    for b in [b' ', b'"', b'}', b'1', 0xff] {
                        let mut bytes = new.as_bytes().to_vec();
                        bytes[at] = b;
                        again(old, &bytes);
                    }
                }
            }
        }
    }

    #[test]
    fn only_the_messages_after_the_shared_text_are_parsed_again() {
        let thread = |id: &str, messages: &[&str]| {
            format!(r#"{{"id":"{id}","messages":[{}]}}"#, messages.join(","))
        };
        let old = thread("t1", &[USER, USER, PENDING]);
        let again = |new: &str| again(&old, new.as_bytes());
        // The same text: every message but the last kept (the mark is before it).
        assert_eq!(again(&old), 2);
        // Grown at the end.
        assert_eq!(again(&thread("t1", &[USER, USER, PENDING, RESULT])), 2);
        // The tail changed in place, and more after it.
        assert_eq!(again(&thread("t1", &[USER, USER, APPROVED, RESULT])), 2);
        // One message fewer: the messages before the mark, and the end.
        assert_eq!(again(&thread("t1", &[USER, USER])), 2);
        // A message before the last changed: nothing kept.
        assert_eq!(again(&thread("t1", &[USER, RESULT, PENDING])), 0);
        assert_eq!(again(&thread("t1", &[USER])), 0);
        // Text before the messages changed: nothing kept.
        assert_eq!(again(&thread("t9", &[USER, USER, PENDING])), 0);
        // Whitespace is text.
        assert_eq!(again(&old.replace(r#"},{"#, "}, {")), 0);
        // Read again and again: the mark moves on with the messages.
        let mut marks = marks_of(old.as_bytes()).expect("marks");
        for n in 4..8 {
            let mut messages = vec![USER; n];
            messages.push(PENDING);
            let new = thread("t1", &messages);
            let read = parse_thread_again(new.as_bytes(), &mut marks).expect("thread");
            assert_eq!(Ok(&read), parse_thread_bytes(new.as_bytes()).as_ref());
            assert_eq!(marks.s.mark.1, n);
            marks.messages = read.messages;
        }
        // An id after the messages is read again whatever came before it.
        let after = |id: u32, messages: &[&str]| {
            format!(r#"{{"messages":[{}],"id":{id}}}"#, messages.join(","))
        };
        let old = after(1, &[USER, PENDING]);
        assert_eq!(
            super::tests::again(&old, after(2, &[USER, PENDING]).as_bytes()),
            1
        );
        let mut marks = marks_of(old.as_bytes()).expect("marks");
        let thread = parse_thread_again(after(2, &[USER]).as_bytes(), &mut marks).expect("thread");
        assert_eq!(thread.id.as_deref(), Some("2"));
        // A bare array, and the same messages in an object: nothing kept.
        let bare = format!("[{USER},{PENDING}]");
        assert_eq!(super::tests::again(&bare, format!("{bare} ").as_bytes()), 1);
        let object = format!(r#"{{"messages":{bare}}}"#);
        assert_eq!(super::tests::again(&bare, object.as_bytes()), 0);
    }

    #[test]
    fn texts_one_word_apart_never_hash_alike() {
        let text = format!("[{USER},{PENDING},{RESULT}]").into_bytes();
        let hash = json::text_hash(&text);
        for at in 0..text.len() {
            for b in 0..=255u8 {
                if b != text[at] {
                    let mut other = text.clone();
                    other[at] = b;
                    assert_ne!(json::text_hash(&other), hash, "byte {at} as {b}");
                }
            }
        }
        assert_ne!(json::text_hash(b"ab"), json::text_hash(b"ab\0"));
    }
}
