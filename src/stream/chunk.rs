//! Typing of UI-message-stream chunks: one JSON object per event, told apart by its `type`.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::sse::{SseDecoder, SseEventRef};
use crate::error::{Error, ErrorCode, Result};

/// One chunk of an AI SDK UI message stream, as far as toolgate needs to know it.
///
/// Field names are the wire names in snake case (`toolCallId` is `tool_call_id`). Unknown chunk
/// types (including `reasoning-*`) never become a `Chunk`: they are skipped.
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    /// `start {messageId?}`: a new assistant message.
    Start { message_id: Option<String> },
    /// `start-step`.
    StartStep,
    /// `finish-step`.
    FinishStep,
    /// `text-start {id}`.
    TextStart { id: String },
    /// `text-delta {id, delta}`.
    TextDelta { id: String, delta: String },
    /// `text-end {id}`.
    TextEnd { id: String },
    /// `tool-input-start {toolCallId, toolName}`.
    ToolInputStart {
        tool_call_id: String,
        tool_name: String,
    },
    /// `tool-input-delta {toolCallId, inputTextDelta}`.
    ToolInputDelta {
        tool_call_id: String,
        input_text_delta: String,
    },
    /// `tool-input-available {toolCallId, toolName, input}`.
    ToolInputAvailable {
        tool_call_id: String,
        tool_name: String,
        input: Value,
    },
    /// `tool-output-available {toolCallId, output}`.
    ToolOutputAvailable { tool_call_id: String, output: Value },
    /// `tool-output-error {toolCallId, errorText}`.
    ToolOutputError {
        tool_call_id: String,
        error_text: String,
    },
    /// `tool-output-denied {toolCallId}`.
    ToolOutputDenied { tool_call_id: String },
    /// `tool-approval-request {approvalId, toolCallId}` (AI SDK v6+).
    ToolApprovalRequest {
        approval_id: String,
        tool_call_id: String,
    },
    /// `data-tool-call-approval {id?, data: {...}}` (Sidenet, Mastra).
    ToolCallApproval(Box<ToolCallApproval>),
    /// Any other `data-*` part. `name` is the type without its `data-` prefix (`"run"` for
    /// `data-run`); `data` is the part's `data` as sent.
    Data {
        name: String,
        id: Option<String>,
        data: Value,
    },
    /// `finish {finishReason?}`.
    Finish { finish_reason: Option<String> },
    /// `error {errorText}`: the server reports a failure in the stream.
    Error { error_text: String },
    /// `abort`.
    Abort,
    /// `data: [DONE]`, the AI SDK's end-of-stream marker.
    Done,
}

/// The `data` of a `data-tool-call-approval` chunk, plus the part-level `id`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallApproval {
    /// The part-level `id` (Mastra sends one), not the `data`'s.
    pub id: Option<String>,
    pub run_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    /// The sentence for the card's headline.
    pub reason: Option<String>,
    /// The proposed arguments as sent; `{}` when absent or null.
    pub args: Value,
    pub agent_version_id: Option<String>,
    pub thread_id: Option<String>,
    /// Mastra's `state` (e.g. `"suspended"`); ignored when it is not a string.
    pub state: Option<String>,
    /// Mastra's `resumeSchema`: sent as a JSON-encoded string, decoded here when it parses (else
    /// kept as the string); any other JSON value is kept as is.
    pub resume_schema: Option<Value>,
}

/// An incremental decoder from the bytes of an event stream to typed chunks.
///
/// ```
/// use toolgate::stream::{Chunk, ChunkDecoder};
/// let mut decoder = ChunkDecoder::new();
/// let mut out = Vec::new();
/// decoder.feed(b"data: {\"type\":\"text-delta\",\"id\":\"t\",\"delta\":\"Hel", &mut out);
/// decoder.feed(b"lo\"}\n\ndata: [DONE]\n\n", &mut out);
/// assert_eq!(
///     out,
///     vec![
///         Ok(Chunk::TextDelta { id: "t".into(), delta: "Hello".into() }),
///         Ok(Chunk::Done),
///     ]
/// );
/// ```
#[derive(Debug, Clone, Default)]
pub struct ChunkDecoder {
    sse: SseDecoder,
}

impl ChunkDecoder {
    /// A decoder with the default cap on one event (8 MiB).
    pub fn new() -> Self {
        ChunkDecoder {
            sse: SseDecoder::new(),
        }
    }

    /// A decoder that reports an event larger than `max` bytes as an error and skips it.
    pub fn with_max_event_bytes(max: usize) -> Self {
        ChunkDecoder {
            sse: SseDecoder::with_max_event_bytes(max),
        }
    }

    /// Feeds bytes as they arrive. Each chunk completed by them is pushed to `out`; an unknown
    /// chunk type pushes nothing; a malformed event pushes an `Err` with code `stream_error`, and
    /// decoding goes on with the next event.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Result<Chunk>>) {
        self.sse
            .feed_with(bytes, &mut |ev: Result<SseEventRef<'_>>| {
                push_event(ev, out)
            });
    }

    /// Ends the stream: an event left without its final blank line is still decoded (see
    /// [`SseDecoder::finish_with`]). The decoder can then be fed a new stream.
    pub fn finish(&mut self, out: &mut Vec<Result<Chunk>>) {
        self.sse
            .finish_with(&mut |ev: Result<SseEventRef<'_>>| push_event(ev, out));
    }

    /// The last event ID seen, for `Last-Event-ID` on a reconnect.
    pub fn last_event_id(&self) -> Option<&str> {
        self.sse.last_event_id()
    }

    /// The reconnection time the server asked for with `retry:`.
    pub fn retry_ms(&self) -> Option<u64> {
        self.sse.retry_ms()
    }

    /// The event-level decoder underneath.
    pub fn sse(&self) -> &SseDecoder {
        &self.sse
    }
}

fn push_event(ev: Result<SseEventRef<'_>>, out: &mut Vec<Result<Chunk>>) {
    match ev {
        Ok(ev) => {
            if ev.data.trim_matches(is_json_ws).is_empty() {
                return; // an empty data event: a keep-alive
            }
            match parse_chunk_str(ev.data) {
                Ok(Some(chunk)) => out.push(Ok(chunk)),
                Ok(None) => {}
                Err(err) => out.push(Err(err)),
            }
        }
        Err(err) => out.push(Err(err)),
    }
}

fn is_json_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// Types one chunk from its JSON text (the data of one event, or one element of a collected
/// `chunks` array). `[DONE]` is [`Chunk::Done`].
///
/// `Ok(None)` for a well-formed chunk of a type toolgate does not know. `Err` with code
/// `stream_error` when the text is not a JSON object, has no string `type`, or a known type lacks
/// a required field or has one of the wrong type (the message names the type and the field, and
/// `path` points at it).
pub fn parse_chunk_str(text: &str) -> Result<Option<Chunk>> {
    // Positions in errors are those of `text` as given, so it is parsed untrimmed.
    let trimmed = text.trim_matches(is_json_ws);
    if trimmed == "[DONE]" {
        return Ok(Some(Chunk::Done));
    }
    if !trimmed.starts_with('{') {
        return Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => stream_error("chunk is not a JSON object"),
            Err(err) => json_error(&err),
        });
    }
    let envelope: Envelope<'_> = serde_json::from_str(text).map_err(|err| json_error(&err))?;
    build(&envelope)
}

/// Types one chunk already parsed as JSON (e.g. an element of the `chunks` array that
/// `POST /v1/agents/{id}/run` returns). Same rules as [`parse_chunk_str`]; the string
/// `"[DONE]"` is [`Chunk::Done`].
pub fn parse_chunk_value(value: &Value) -> Result<Option<Chunk>> {
    match value {
        Value::Object(map) => build(map),
        Value::String(s) if s == "[DONE]" => Ok(Some(Chunk::Done)),
        _ => Err(stream_error("chunk is not a JSON object")),
    }
}

fn stream_error(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::StreamError, message)
}

fn json_error(err: &serde_json::Error) -> Error {
    let mut e = stream_error(format!("chunk is not valid JSON: {err}"));
    if err.line() > 0 {
        e = e.at(err.line(), err.column());
    }
    e
}

/// The top-level fields of a chunk, each kept as raw JSON text borrowed from the input: one pass
/// over the text, and nothing typed until the `type` is known (so a field of an unknown type can
/// have any shape).
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "raw")]
    ty: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw")]
    delta: Option<&'a RawValue>,
    #[serde(rename = "messageId", borrow, default, deserialize_with = "raw")]
    message_id: Option<&'a RawValue>,
    #[serde(rename = "toolCallId", borrow, default, deserialize_with = "raw")]
    tool_call_id: Option<&'a RawValue>,
    #[serde(rename = "toolName", borrow, default, deserialize_with = "raw")]
    tool_name: Option<&'a RawValue>,
    #[serde(rename = "inputTextDelta", borrow, default, deserialize_with = "raw")]
    input_text_delta: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw")]
    input: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw")]
    output: Option<&'a RawValue>,
    #[serde(rename = "errorText", borrow, default, deserialize_with = "raw")]
    error_text: Option<&'a RawValue>,
    #[serde(rename = "approvalId", borrow, default, deserialize_with = "raw")]
    approval_id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw")]
    data: Option<&'a RawValue>,
    #[serde(rename = "finishReason", borrow, default, deserialize_with = "raw")]
    finish_reason: Option<&'a RawValue>,
}

/// `Some` even for `null`, so that a present `null` is told apart from an absent field.
fn raw<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

/// One field of a chunk, from either source.
#[derive(Clone, Copy)]
enum Field<'a> {
    Absent,
    Raw(&'a RawValue),
    Val(&'a Value),
}

/// What a field holds, for a string field.
enum Str<'a> {
    Absent,
    Null,
    Text(Cow<'a, str>),
    WrongType,
}

impl<'a> Field<'a> {
    fn string(self) -> Str<'a> {
        match self {
            Field::Absent => Str::Absent,
            Field::Val(Value::Null) => Str::Null,
            Field::Val(Value::String(s)) => Str::Text(Cow::Borrowed(s)),
            Field::Val(_) => Str::WrongType,
            Field::Raw(raw) => {
                let text = raw.get();
                if text == "null" {
                    return Str::Null;
                }
                if !text.starts_with('"') {
                    return Str::WrongType;
                }
                // The common case: no escapes, so the string is the text between the quotes.
                if let Some(inner) = text.get(1..text.len().saturating_sub(1)) {
                    if !inner.contains('\\') {
                        return Str::Text(Cow::Borrowed(inner));
                    }
                }
                match serde_json::from_str::<String>(text) {
                    Ok(s) => Str::Text(Cow::Owned(s)),
                    Err(_) => Str::WrongType,
                }
            }
        }
    }

    /// The field as a JSON value; `None` when absent (a present `null` is `Some(Null)`).
    fn value(self) -> Option<Value> {
        match self {
            Field::Absent => None,
            Field::Val(v) => Some(v.clone()),
            // The text was validated as JSON when the envelope was read.
            Field::Raw(raw) => serde_json::from_str(raw.get()).ok(),
        }
    }
}

trait Fields {
    fn field(&self, name: &str) -> Field<'_>;
}

impl Fields for Envelope<'_> {
    fn field(&self, name: &str) -> Field<'_> {
        let raw = match name {
            "type" => self.ty,
            "id" => self.id,
            "delta" => self.delta,
            "messageId" => self.message_id,
            "toolCallId" => self.tool_call_id,
            "toolName" => self.tool_name,
            "inputTextDelta" => self.input_text_delta,
            "input" => self.input,
            "output" => self.output,
            "errorText" => self.error_text,
            "approvalId" => self.approval_id,
            "data" => self.data,
            "finishReason" => self.finish_reason,
            _ => None,
        };
        raw.map_or(Field::Absent, Field::Raw)
    }
}

impl Fields for Map<String, Value> {
    fn field(&self, name: &str) -> Field<'_> {
        self.get(name).map_or(Field::Absent, Field::Val)
    }
}

/// Reads the fields of one chunk of type `ty`, naming the type and field in its errors.
struct Reader<'f, F: ?Sized> {
    fields: &'f F,
    ty: &'f str,
    /// `""` for top-level fields, `"data."` inside `data`.
    prefix: &'static str,
}

impl<F: Fields + ?Sized> Reader<'_, F> {
    fn missing(&self, name: &str) -> Error {
        stream_error(format!(
            "`{}` chunk: required field `{}{name}` is missing",
            self.ty, self.prefix
        ))
        .with_path(format!("$.{}{name}", self.prefix))
    }

    fn wrong(&self, name: &str, expected: &str) -> Error {
        stream_error(format!(
            "`{}` chunk: field `{}{name}` must be {expected}",
            self.ty, self.prefix
        ))
        .with_path(format!("$.{}{name}", self.prefix))
    }

    fn req_str(&self, name: &str) -> Result<String> {
        match self.fields.field(name).string() {
            Str::Text(s) => Ok(s.into_owned()),
            Str::Absent | Str::Null => Err(self.missing(name)),
            Str::WrongType => Err(self.wrong(name, "a string")),
        }
    }

    fn opt_str(&self, name: &str) -> Result<Option<String>> {
        match self.fields.field(name).string() {
            Str::Text(s) => Ok(Some(s.into_owned())),
            Str::Absent | Str::Null => Ok(None),
            Str::WrongType => Err(self.wrong(name, "a string")),
        }
    }

    /// A field whose value may be any JSON, `null` included, but must be present.
    fn req_value(&self, name: &str) -> Result<Value> {
        self.fields
            .field(name)
            .value()
            .ok_or_else(|| self.missing(name))
    }
}

fn build<F: Fields + ?Sized>(fields: &F) -> Result<Option<Chunk>> {
    let ty = match fields.field("type").string() {
        Str::Text(ty) => ty,
        Str::Absent | Str::Null => {
            return Err(stream_error("chunk has no `type`").with_path("$.type"));
        }
        Str::WrongType => {
            return Err(stream_error("chunk `type` must be a string").with_path("$.type"));
        }
    };
    let r = Reader {
        fields,
        ty: &ty,
        prefix: "",
    };
    let chunk = match &*ty {
        "text-delta" => Chunk::TextDelta {
            id: r.req_str("id")?,
            delta: r.req_str("delta")?,
        },
        "text-start" => Chunk::TextStart {
            id: r.req_str("id")?,
        },
        "text-end" => Chunk::TextEnd {
            id: r.req_str("id")?,
        },
        "start" => Chunk::Start {
            message_id: r.opt_str("messageId")?,
        },
        "start-step" => Chunk::StartStep,
        "finish-step" => Chunk::FinishStep,
        "tool-input-start" => Chunk::ToolInputStart {
            tool_call_id: r.req_str("toolCallId")?,
            tool_name: r.req_str("toolName")?,
        },
        "tool-input-delta" => Chunk::ToolInputDelta {
            tool_call_id: r.req_str("toolCallId")?,
            input_text_delta: r.req_str("inputTextDelta")?,
        },
        "tool-input-available" => Chunk::ToolInputAvailable {
            tool_call_id: r.req_str("toolCallId")?,
            tool_name: r.req_str("toolName")?,
            input: r.req_value("input")?,
        },
        "tool-output-available" => Chunk::ToolOutputAvailable {
            tool_call_id: r.req_str("toolCallId")?,
            output: r.req_value("output")?,
        },
        "tool-output-error" => Chunk::ToolOutputError {
            tool_call_id: r.req_str("toolCallId")?,
            error_text: r.req_str("errorText")?,
        },
        "tool-output-denied" => Chunk::ToolOutputDenied {
            tool_call_id: r.req_str("toolCallId")?,
        },
        "tool-approval-request" => Chunk::ToolApprovalRequest {
            approval_id: r.req_str("approvalId")?,
            tool_call_id: r.req_str("toolCallId")?,
        },
        "finish" => Chunk::Finish {
            finish_reason: r.opt_str("finishReason")?,
        },
        "error" => Chunk::Error {
            error_text: r.req_str("errorText")?,
        },
        "abort" => Chunk::Abort,
        "data-tool-call-approval" => Chunk::ToolCallApproval(Box::new(tool_call_approval(&r)?)),
        other => match other.strip_prefix("data-") {
            Some(name) => Chunk::Data {
                name: name.to_owned(),
                id: r.opt_str("id")?,
                data: r.req_value("data")?,
            },
            None => return Ok(None),
        },
    };
    Ok(Some(chunk))
}

fn tool_call_approval<F: Fields + ?Sized>(r: &Reader<'_, F>) -> Result<ToolCallApproval> {
    let id = r.opt_str("id")?;
    let data = match r.req_value("data")? {
        Value::Object(map) => map,
        _ => return Err(r.wrong("data", "an object")),
    };
    let d = Reader {
        fields: &data,
        ty: r.ty,
        prefix: "data.",
    };
    let args = match data.get("args") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v) => v.clone(),
    };
    let state = match data.get("state") {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    };
    let resume_schema = match data.get("resumeSchema") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            Some(serde_json::from_str::<Value>(s).unwrap_or_else(|_| Value::String(s.clone())))
        }
        Some(v) => Some(v.clone()),
    };
    Ok(ToolCallApproval {
        id,
        run_id: d.req_str("runId")?,
        tool_call_id: d.req_str("toolCallId")?,
        tool_name: d.req_str("toolName")?,
        reason: d.opt_str("reason")?,
        args,
        agent_version_id: d.opt_str("agentVersionId")?,
        thread_id: d.opt_str("threadId")?,
        state,
        resume_schema,
    })
}
