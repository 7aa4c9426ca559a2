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
//! - on `tool_call` and `tool_call_result` messages, `tools` is an array of objects, each with a string
//!   `callId`, an `approval` that is `"pending"`, `"approved"`, `"rejected"`, null or absent, and
//!   `inputs` that is an object, an array, null or absent.
//!
//! Malformed JSON is a `parse_error` with the line and column (as serde_json would report them).

use std::borrow::Cow;

use crate::approval::Approval;
use crate::error::{Error, Result};
use crate::json::{self, Map, Obj, Parser, Syntax, ToJson, Value};

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

/// Builds a thread from an already parsed JSON value.
pub fn parse_thread_value(value: Value) -> Result<Thread> {
    match value {
        Value::Array(items) => Ok(Thread {
            id: None,
            messages: messages_from_values(items, "$")?,
        }),
        Value::Object(mut map) => {
            let id = match map.remove("id") {
                None => None,
                Some(v) => id_from_value(&v).map_err(|got| {
                    Error::parse(format!(
                        "the thread id must be a string, a number or null, got {got}"
                    ))
                    .with_path("$.id")
                })?,
            };
            let messages = match map.remove("messages") {
                Some(Value::Array(items)) => messages_from_values(items, "$.messages")?,
                Some(other) => {
                    return Err(Error::parse(format!(
                        "messages must be an array, got {}",
                        json::describe(&other)
                    ))
                    .with_path("$.messages"))
                }
                None => return Err(missing_messages()),
            };
            Ok(Thread { id, messages })
        }
        other => Err(Error::parse(format!(
            "a thread must be an object with a \"messages\" array or an array of messages, got {}",
            json::describe(&other)
        ))
        .with_path("$")),
    }
}

fn missing_messages() -> Error {
    Error::parse("a thread object needs a \"messages\" array").with_path("$")
}

fn messages_from_values(items: Vec<Value>, base: &str) -> Result<Vec<Message>> {
    let mut messages = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        messages.push(Message::from_value_at(item, || format!("{base}[{index}]"))?);
    }
    Ok(messages)
}

/// `Ok(None)` for null, the decimal string for a number, the string itself; `Err(description)` else.
fn id_from_value(value: &Value) -> std::result::Result<Option<String>, &'static str> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        Value::Number(n) => Ok(Some(n.as_str().to_owned())),
        other => Err(json::describe(other)),
    }
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
/// Writes exactly its original object (keys in their original order).
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    raw: Map,
}

impl ToJson for Message {
    fn write_json(&self, out: &mut String) {
        self.raw.write_json(out);
    }
}

impl Message {
    /// Validates one message (see the module docs); error paths start at `$`.
    pub fn from_value(value: Value) -> Result<Message> {
        Message::from_value_at(value, || "$".to_owned())
    }

    /// Parses one message from text.
    pub fn parse_str(input: &str) -> Result<Message> {
        Message::from_value(Value::parse(input)?)
    }

    /// Validates one message; `base` gives the message's path, built only on error.
    pub(crate) fn from_value_at(value: Value, base: impl FnOnce() -> String) -> Result<Message> {
        match value {
            Value::Object(raw) => match check(&raw) {
                Ok(()) => Ok(Message { raw }),
                Err(invalid) => {
                    let mut path = base();
                    path.push_str(&invalid.rel);
                    Err(Error::parse(invalid.message).with_path(path))
                }
            },
            other => Err(Error::parse(format!(
                "a message must be an object, got {}",
                json::describe(&other)
            ))
            .with_path(base())),
        }
    }

    /// `{}`: a message with no field at all.
    pub(crate) fn empty() -> Message {
        Message { raw: Map::new() }
    }

    /// The original JSON object.
    pub fn as_object(&self) -> &Map {
        &self.raw
    }

    /// The original JSON object, as a value.
    pub fn into_value(self) -> Value {
        Value::Object(self.raw)
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
        match self.kind() {
            MessageKind::ToolCall | MessageKind::ToolCallResult => match self.raw.get("tools") {
                Some(Value::Array(tools)) => tools
                    .iter()
                    .enumerate()
                    .filter_map(|(index, tool)| {
                        let raw = tool.as_object()?;
                        let call_id = raw.get("callId")?.as_str()?;
                        Some(ToolCall {
                            raw,
                            call_id,
                            index,
                        })
                    })
                    .collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
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

    /// `callId`.
    pub fn call_id(&self) -> &'a str {
        self.call_id
    }

    /// `name`, if a string.
    pub fn name(&self) -> Option<&'a str> {
        self.str_field("name")
    }

    /// `description`, if a string.
    pub fn description(&self) -> Option<&'a str> {
        self.str_field("description")
    }

    /// `inputs`, always an object: `{}` for absent, null or `[]`; a non-empty array (a PHP list) becomes
    /// an object keyed `"0"`, `"1"`, ... The message itself keeps the original form.
    pub fn inputs(&self) -> Cow<'a, Map> {
        match self.raw.get("inputs") {
            Some(Value::Object(map)) => Cow::Borrowed(map),
            Some(Value::Array(items)) => Cow::Owned(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (json::u64_string(i as u64), v.clone()))
                    .collect(),
            ),
            _ => Cow::Owned(Map::new()),
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
    pub fn approval_reason(&self) -> Option<&'a str> {
        self.str_field("approvalReason")
    }

    /// `rejectReason` (the human to the model: why not), if a string.
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

    fn str_field(&self, key: &str) -> Option<&'a str> {
        self.raw.get(key).and_then(Value::as_str)
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

/// A validation failure inside a message: the path relative to the message and a human message.
struct Invalid {
    rel: String,
    message: String,
}

fn invalid(rel: impl Into<String>, message: impl Into<String>) -> Invalid {
    Invalid {
        rel: rel.into(),
        message: message.into(),
    }
}

fn check(raw: &Map) -> std::result::Result<(), Invalid> {
    if let Some(role) = raw.get("role") {
        if !role.is_string() {
            return Err(invalid(
                ".role",
                format!("role must be a string, got {}", json::describe(role)),
            ));
        }
    }
    match raw.get("type") {
        None | Some(Value::Null) | Some(Value::String(_)) => {}
        Some(other) => {
            return Err(invalid(
                ".type",
                format!("type must be a string, got {}", json::describe(other)),
            ))
        }
    }
    match raw.get("__id") {
        None | Some(Value::Null) | Some(Value::String(_)) | Some(Value::Number(_)) => {}
        Some(other) => {
            return Err(invalid(
                ".__id",
                format!(
                    "__id must be a string, a number or null, got {}",
                    json::describe(other)
                ),
            ))
        }
    }
    match kind_of(raw) {
        MessageKind::ToolCall => check_tools(raw, "tool_call"),
        MessageKind::ToolCallResult => check_tools(raw, "tool_call_result"),
        _ => Ok(()),
    }
}

fn check_tools(raw: &Map, kind: &str) -> std::result::Result<(), Invalid> {
    let tools = match raw.get("tools") {
        Some(Value::Array(tools)) => tools,
        Some(other) => {
            return Err(invalid(
                ".tools",
                format!("tools must be an array, got {}", json::describe(other)),
            ))
        }
        None => {
            return Err(invalid(
                ".tools",
                format!("a {kind} message needs a tools array"),
            ))
        }
    };
    for (i, tool) in tools.iter().enumerate() {
        let Some(tool) = tool.as_object() else {
            return Err(invalid(
                format!(".tools[{i}]"),
                format!("a tool must be an object, got {}", json::describe(tool)),
            ));
        };
        match tool.get("callId") {
            Some(Value::String(_)) => {}
            Some(other) => {
                return Err(invalid(
                    format!(".tools[{i}].callId"),
                    format!("callId must be a string, got {}", json::describe(other)),
                ))
            }
            None => {
                return Err(invalid(
                    format!(".tools[{i}].callId"),
                    "a tool needs a callId",
                ))
            }
        }
        match tool.get("approval") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if Approval::parse(s).is_some() => {}
            Some(other) => {
                let got = match other {
                    Value::String(s) => s.to_json_string(),
                    other => json::describe(other).to_owned(),
                };
                return Err(invalid(
                    format!(".tools[{i}].approval"),
                    format!(
                        "approval must be \"pending\", \"approved\", \"rejected\" or null, got {got}"
                    ),
                ));
            }
        }
        match tool.get("inputs") {
            None | Some(Value::Null) | Some(Value::Object(_)) | Some(Value::Array(_)) => {}
            Some(other) => {
                return Err(invalid(
                    format!(".tools[{i}].inputs"),
                    format!("inputs must be an object, got {}", json::describe(other)),
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

impl Walked<'_> {
    /// The path of message `index`, e.g. `$.messages[3]` or `$[3]`.
    pub(crate) fn message_path(&self, index: usize) -> String {
        message_path(self.bare, index)
    }
}

pub(crate) fn message_path(bare: bool, index: usize) -> String {
    let mut path = String::from(if bare { "$[" } else { "$.messages[" });
    path.push_str(&json::u64_string(index as u64));
    path.push(']');
    path
}

/// Where the walk is, for the path of an error.
#[derive(Debug, Clone, Copy)]
enum Loc {
    Root,
    Id,
    Messages,
    Message(usize),
}

/// Why the walk stopped: a syntax error (positioned, with the path of where the walk was), or an
/// error of ours with its own path.
enum Stop {
    Syntax(Syntax, Loc),
    Shape(Error),
}

struct Walker<'a> {
    p: Parser<'a>,
    mode: Mode,
    bare: bool,
    loc: Loc,
}

impl Walker<'_> {
    fn syntax(&self, s: Syntax) -> Stop {
        Stop::Syntax(s, self.loc)
    }
}

/// Walks a thread document once: checks the JSON and the thread's shape, and builds every message
/// (`Mode::All`) or keeps only the last one's raw text (`Mode::Tail`).
pub(crate) fn walk(input: &str, mode: Mode) -> Result<Walked<'_>> {
    let mut w = Walker {
        p: Parser::new(input),
        mode,
        bare: false,
        loc: Loc::Root,
    };
    let result = walk_root(&mut w).and_then(|walked| {
        w.loc = Loc::Root;
        w.p.end().map_err(|s| w.syntax(s))?;
        Ok(walked)
    });
    result.map_err(|stop| match stop {
        Stop::Shape(error) => error,
        Stop::Syntax(s, loc) => {
            let path = match loc {
                Loc::Root => "$".to_owned(),
                Loc::Id => "$.id".to_owned(),
                Loc::Messages => "$.messages".to_owned(),
                Loc::Message(i) => message_path(w.bare, i),
            };
            json::to_error(input, s).with_path(path)
        }
    })
}

fn walk_root<'a>(w: &mut Walker<'a>) -> std::result::Result<Walked<'a>, Stop> {
    match w.p.ws() {
        Some(b'[') => {
            w.bare = true;
            walk_messages(w)
        }
        Some(b'{') => {
            w.p.enter().map_err(|s| w.syntax(s))?;
            let mut id = None;
            let mut messages = None;
            let mut key = w.p.object_first().map_err(|s| w.syntax(s))?;
            while let Some(k) = key {
                match &*k {
                    "id" => {
                        w.loc = Loc::Id;
                        let value = w.p.parse_value().map_err(|s| w.syntax(s))?;
                        id = id_from_value(&value).map_err(|got| {
                            let mut m =
                                "the thread id must be a string, a number or null, got ".to_owned();
                            m.push_str(got);
                            Stop::Shape(Error::parse(m).with_path("$.id"))
                        })?;
                    }
                    "messages" => {
                        w.loc = Loc::Messages;
                        match w.p.ws() {
                            Some(b'[') => messages = Some(walk_messages(w)?),
                            first => {
                                w.p.skip_value().map_err(|s| w.syntax(s))?;
                                let mut m = "messages must be an array, got ".to_owned();
                                m.push_str(json::describe_byte(first));
                                return Err(Stop::Shape(Error::parse(m).with_path("$.messages")));
                            }
                        }
                    }
                    _ => w.p.skip_value().map_err(|s| w.syntax(s))?,
                }
                w.loc = Loc::Root;
                key = w.p.object_next().map_err(|s| w.syntax(s))?;
            }
            match messages {
                Some(mut walked) => {
                    walked.id = id;
                    Ok(walked)
                }
                None => Err(Stop::Shape(missing_messages())),
            }
        }
        first => {
            // A scalar document: valid JSON first, then the wrong shape.
            w.p.skip_value().map_err(|s| w.syntax(s))?;
            let mut m = "a thread must be an object with a \"messages\" array or an array of messages, got "
                .to_owned();
            m.push_str(json::describe_byte(first));
            Err(Stop::Shape(Error::parse(m).with_path("$")))
        }
    }
}

/// The messages array (at its `[`).
fn walk_messages<'a>(w: &mut Walker<'a>) -> std::result::Result<Walked<'a>, Stop> {
    let bare = w.bare;
    let mut walked = Walked {
        id: None,
        bare,
        count: 0,
        tail: None,
        messages: Vec::new(),
    };
    let mut index = 0usize;
    w.loc = Loc::Message(0);
    w.p.enter().map_err(|s| w.syntax(s))?;
    let mut more = w.p.array_first().map_err(|s| w.syntax(s))?;
    while more {
        w.loc = Loc::Message(index);
        match w.mode {
            Mode::Tail => {
                let first = w.p.ws();
                let start = w.p.pos();
                w.p.skip_value().map_err(|s| w.syntax(s))?;
                if first != Some(b'{') {
                    let mut m = "a message must be an object, got ".to_owned();
                    m.push_str(json::describe_byte(first));
                    return Err(Stop::Shape(
                        Error::parse(m).with_path(message_path(bare, index)),
                    ));
                }
                walked.tail = Some(w.p.slice(start, w.p.pos()));
            }
            Mode::All | Mode::Check => {
                let value = w.p.parse_value().map_err(|s| w.syntax(s))?;
                let message = Message::from_value_at(value, || message_path(bare, index))
                    .map_err(Stop::Shape)?;
                if w.mode == Mode::All {
                    walked.messages.push(message);
                }
            }
        }
        index += 1;
        w.loc = Loc::Message(index);
        more = w.p.array_next().map_err(|s| w.syntax(s))?;
    }
    walked.count = index;
    Ok(walked)
}
