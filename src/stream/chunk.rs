//! Typing of UI-message-stream chunks: one JSON object per event, told apart by its `type`.

use super::sse::{SseDecoder, SseEventRef};
use crate::error::{Error, ErrorCode, Result};
use crate::json::{Map, Value};
use crate::prelude::*;

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
    /// `tool-output-available {toolCallId, output}` (an `output` left out, as a tool that
    /// returned nothing gets from some servers, is `null`).
    ToolOutputAvailable { tool_call_id: String, output: Value },
    /// `tool-output-error {toolCallId, errorText}`.
    ToolOutputError {
        tool_call_id: String,
        error_text: String,
    },
    /// `tool-output-denied {toolCallId}`.
    ToolOutputDenied { tool_call_id: String },
    /// `tool-approval-request {approvalId, toolCallId, reason?, isAutomatic?}` (AI SDK v6+; an
    /// automatic one was decided by the server's own policy, with no person asked).
    ToolApprovalRequest {
        approval_id: String,
        tool_call_id: String,
        reason: Option<String>,
        automatic: bool,
    },
    /// `tool-input-error {toolCallId, toolName, input?, errorText}`: the model's call could not be
    /// read (invalid input, unknown tool); it will not run. (Its `input`, often the raw text that
    /// did not parse, is not kept.)
    ToolInputError(Box<ToolInputError>),
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

/// A `tool-input-error` chunk: the model's call could not be read (invalid input, unknown tool);
/// it will not run.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInputError {
    pub tool_call_id: String,
    pub tool_name: String,
    /// What the model sent (`null` when absent): the arguments that failed the tool's schema, or
    /// the raw text that did not parse.
    pub input: Value,
    pub error_text: String,
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
    /// The proposed arguments as sent; `null` when absent (the client then shows the input the
    /// stream's `tool-input-available` announced for the call, else `{}`).
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
        self.feed_with(bytes, &mut |item| out.push(item));
    }

    /// [`Self::feed`], each item handed to `sink` as it is decoded (no list built).
    pub(crate) fn feed_with(&mut self, bytes: &[u8], sink: &mut dyn FnMut(Result<Chunk>)) {
        self.sse
            .feed_with(bytes, &mut |ev: Result<SseEventRef<'_>>| {
                push_event(ev, sink)
            });
    }

    /// Ends the stream: an event left without its final blank line is still decoded (see
    /// [`SseDecoder::finish_with`]). The decoder can then be fed a new stream.
    pub fn finish(&mut self, out: &mut Vec<Result<Chunk>>) {
        self.finish_with(&mut |item| out.push(item));
    }

    /// [`Self::finish`], each item handed to `sink` as it is decoded (no list built).
    pub(crate) fn finish_with(&mut self, sink: &mut dyn FnMut(Result<Chunk>)) {
        self.sse
            .finish_with(&mut |ev: Result<SseEventRef<'_>>| push_event(ev, sink));
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

/// One decoded event to `out` (shared by `feed_with` and `finish_with`; inlined into their two
/// closures, which then have the same code and are merged into one function by wasm-opt).
fn push_event(ev: Result<SseEventRef<'_>>, out: &mut dyn FnMut(Result<Chunk>)) {
    match ev {
        Ok(ev) => {
            if trim_json_ws(ev.data).is_empty() {
                return; // an empty data event: a keep-alive
            }
            match parse_chunk_str(ev.data) {
                Ok(Some(chunk)) => out(Ok(chunk)),
                Ok(None) => {}
                Err(err) => out(Err(err)),
            }
        }
        Err(err) => out(Err(err)),
    }
}

/// `s` without its leading and trailing JSON whitespace (all ASCII, so trimmed byte-wise).
fn trim_json_ws(s: &str) -> &str {
    let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let mut bytes = s.as_bytes();
    while let [first, rest @ ..] = bytes {
        if !ws(first) {
            break;
        }
        bytes = rest;
    }
    while let [rest @ .., last] = bytes {
        if !ws(last) {
            break;
        }
        bytes = rest;
    }
    // SAFETY: only ASCII bytes were cut from either end of a `str`, so what is left is whole
    // UTF-8 sequences.
    unsafe { core::str::from_utf8_unchecked(bytes) }
}

/// Types one chunk from its JSON text (the data of one event, or one element of a collected
/// `chunks` array). `[DONE]` is [`Chunk::Done`].
///
/// `Ok(None)` for a well-formed chunk of a type toolgate does not know. `Err` with code
/// `stream_error` when the text is not a JSON object, has no string `type`, or a known type lacks
/// a required field or has one of the wrong type (the message names the type and the field, and
/// `path` points at it). A repeated field is read as `JSON.parse` reads it: the last value.
pub fn parse_chunk_str(text: &str) -> Result<Option<Chunk>> {
    // Positions in errors are those of `text` as given, so it is parsed untrimmed.
    let trimmed = trim_json_ws(text);
    if trimmed == "[DONE]" {
        return Ok(Some(Chunk::Done));
    }
    match Value::parse(text) {
        Ok(Value::Object(map)) => build(&map),
        Ok(_) => Err(stream_error("chunk is not a JSON object")),
        Err(err) => {
            let mut message = "chunk is not valid JSON: ".to_owned();
            message.push_str(
                err.message
                    .strip_prefix("invalid JSON: ")
                    .unwrap_or(&err.message),
            );
            let mut e = stream_error(message);
            e.line = err.line;
            e.column = err.column;
            Err(e)
        }
    }
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

/// What a field holds, for a string field.
enum Str<'a> {
    Absent,
    Null,
    Text(&'a str),
    WrongType,
}

fn string_field<'a>(fields: &'a Map, name: &str) -> Str<'a> {
    match fields.get(name) {
        None => Str::Absent,
        Some(Value::Null) => Str::Null,
        Some(Value::String(s)) => Str::Text(s),
        Some(_) => Str::WrongType,
    }
}

/// Reads the fields of one chunk of type `ty`, naming the type and field in its errors.
///
/// The readers never fail: a missing or ill-typed field records an error (the first one wins, so
/// fields are reported in the order they are read) and reads as empty. [`build`] checks for an
/// error once, after building the chunk: one error path instead of one per field.
struct Reader<'f> {
    fields: &'f Map,
    ty: &'f str,
    /// `""` for top-level fields, `"data."` inside `data`.
    prefix: &'static str,
    error: Option<Error>,
}

impl Reader<'_> {
    /// Records "`<type>` chunk: <what>field `<prefix><name>` <how>", at `$.<prefix><name>`,
    /// unless an earlier field already failed.
    #[inline(never)]
    fn fail(&mut self, name: &str, missing: bool, expected: &str) {
        if self.error.is_some() {
            return;
        }
        let mut m = "`".to_owned();
        let (what, how) = if missing {
            ("required ", "is missing")
        } else {
            ("", "must be ")
        };
        m.push_str(self.ty);
        m.push_str("` chunk: ");
        m.push_str(what);
        m.push_str("field `");
        m.push_str(self.prefix);
        m.push_str(name);
        m.push_str("` ");
        m.push_str(how);
        m.push_str(expected);
        let mut path = "$.".to_owned();
        path.push_str(self.prefix);
        path.push_str(name);
        self.error = Some(stream_error(m).with_path(path));
    }

    /// A string field; `required`: absent or null is an error.
    #[inline(never)]
    fn str_field(&mut self, name: &str, required: bool) -> Option<String> {
        match string_field(self.fields, name) {
            Str::Text(s) => return Some(s.to_owned()),
            Str::Absent | Str::Null => {
                if required {
                    self.fail(name, true, "");
                }
            }
            Str::WrongType => self.fail(name, false, "a string"),
        }
        None
    }

    fn req_str(&mut self, name: &str) -> String {
        self.str_field(name, true).unwrap_or_default()
    }

    #[inline(always)]
    fn opt_str(&mut self, name: &str) -> Option<String> {
        self.str_field(name, false)
    }
}

/// The chunk types toolgate knows (besides `data-*`), in the order `build` matches them
/// (`json::index_of`'s list: no table of pointers and lengths beside the names).
const TYPES: &str = "text-delta|text-start|text-end|start|start-step|finish-step|\
                     tool-input-start|tool-input-delta|tool-input-available|\
                     tool-output-available|tool-output-error|tool-output-denied|\
                     tool-approval-request|finish|error|abort|data-tool-call-approval|\
                     tool-input-error";

fn build(fields: &Map) -> Result<Option<Chunk>> {
    let ty = match string_field(fields, "type") {
        Str::Text(ty) => ty,
        // One error built for both.
        other => {
            let m = match other {
                Str::WrongType => "chunk `type` must be a string",
                _ => "chunk has no `type`",
            };
            return Err(stream_error(m).with_path("$.type"));
        }
    };
    let mut r = Reader {
        fields,
        ty,
        prefix: "",
        error: None,
    };
    // One loop over a table instead of seventeen string comparisons.
    let chunk = match crate::json::index_of(TYPES, ty) {
        // text-delta
        Some(0) => Chunk::TextDelta {
            id: r.req_str("id"),
            delta: r.req_str("delta"),
        },
        // text-start
        Some(1) => Chunk::TextStart {
            id: r.req_str("id"),
        },
        // text-end
        Some(2) => Chunk::TextEnd {
            id: r.req_str("id"),
        },
        // start
        Some(3) => Chunk::Start {
            message_id: r.opt_str("messageId"),
        },
        // start-step
        Some(4) => Chunk::StartStep,
        // finish-step
        Some(5) => Chunk::FinishStep,
        // tool-input-start
        Some(6) => Chunk::ToolInputStart {
            tool_call_id: r.req_str("toolCallId"),
            tool_name: r.req_str("toolName"),
        },
        // tool-input-delta
        Some(7) => Chunk::ToolInputDelta {
            tool_call_id: r.req_str("toolCallId"),
            input_text_delta: r.req_str("inputTextDelta"),
        },
        // tool-input-available
        Some(8) => Chunk::ToolInputAvailable {
            tool_call_id: r.req_str("toolCallId"),
            tool_name: r.req_str("toolName"),
            // Absent is `null` (the AI SDK's schema reads it as `unknown`, which may be absent:
            // a server that writes `input: undefined` leaves the key out).
            input: value_or_null(r.fields, "input"),
        },
        // tool-output-available
        Some(9) => Chunk::ToolOutputAvailable {
            tool_call_id: r.req_str("toolCallId"),
            output: value_or_null(r.fields, "output"),
        },
        // tool-output-error
        Some(10) => Chunk::ToolOutputError {
            tool_call_id: r.req_str("toolCallId"),
            error_text: r.req_str("errorText"),
        },
        // tool-output-denied
        Some(11) => Chunk::ToolOutputDenied {
            tool_call_id: r.req_str("toolCallId"),
        },
        // tool-approval-request
        Some(12) => Chunk::ToolApprovalRequest {
            approval_id: r.req_str("approvalId"),
            tool_call_id: r.req_str("toolCallId"),
            reason: r.opt_str("reason"),
            automatic: matches!(r.fields.get("isAutomatic"), Some(Value::Bool(true))),
        },
        // finish
        Some(13) => Chunk::Finish {
            finish_reason: r.opt_str("finishReason"),
        },
        // error
        Some(14) => Chunk::Error {
            error_text: r.req_str("errorText"),
        },
        // abort
        Some(15) => Chunk::Abort,
        // data-tool-call-approval; Mastra sends it again with `resumed: true` when an approved
        // call resumes: no request, the server took the call up (read as one, the card opened
        // again and the decision went twice).
        Some(16) if resumed(r.fields) => return Ok(None),
        Some(16) => Chunk::ToolCallApproval(Box::new(tool_call_approval(&mut r))),
        // tool-input-error
        Some(17) => Chunk::ToolInputError(Box::new(ToolInputError {
            tool_call_id: r.req_str("toolCallId"),
            tool_name: r.req_str("toolName"),
            input: value_or_null(r.fields, "input"),
            error_text: r.req_str("errorText"),
        })),
        _ => match ty.strip_prefix("data-") {
            Some(name) => Chunk::Data {
                name: name.to_owned(),
                id: r.opt_str("id"),
                data: value_or_null(r.fields, "data"),
            },
            None => return Ok(None),
        },
    };
    match r.error {
        Some(err) => Err(err),
        None => Ok(Some(chunk)),
    }
}

/// Whether a `data-tool-call-approval` chunk says its call resumed (`data.resumed: true`).
fn resumed(fields: &Map) -> bool {
    let data = fields.get("data").and_then(Value::as_object);
    matches!(data.and_then(|d| d.get("resumed")), Some(Value::Bool(true)))
}

/// A tool's inputs as the views and cards show them (and a `data-tool-call-approval`'s `args`):
/// always an object, as a Neuron tool's (`ToolCall::inputs`): a list keyed `"0"`, `"1"`, ...;
/// `{}` for anything else (absent, null, or the raw text of an input that did not parse, which
/// the AI SDK keeps as a string: the part in `raw` keeps it).
pub(crate) fn inputs_of(input: Option<&Value>) -> Value {
    Value::Object(match input {
        Some(Value::Object(map)) => map.clone(),
        Some(Value::Array(items)) => crate::thread::list_inputs(items),
        _ => Map::new(),
    })
}

/// A field's value as sent, `null` when absent.
#[inline(never)]
fn value_or_null(fields: &Map, name: &str) -> Value {
    match fields.get(name) {
        Some(v) => v.clone(),
        None => Value::Null,
    }
}

fn tool_call_approval(r: &mut Reader<'_>) -> ToolCallApproval {
    let id = r.opt_str("id");
    let empty = Map::new();
    let data = match r.fields.get("data") {
        Some(Value::Object(map)) => map,
        other => {
            let missing = other.is_none();
            r.fail("data", missing, if missing { "" } else { "an object" });
            &empty
        }
    };
    let args = value_or_null(data, "args");
    let state = data.get("state").and_then(Value::as_str).map(str::to_owned);
    let resume_schema = match data.get("resumeSchema") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            Some(Value::parse(s).unwrap_or_else(|_| Value::String(s.clone())))
        }
        Some(v) => Some(v.clone()),
    };
    let mut d = Reader {
        fields: data,
        ty: r.ty,
        prefix: "data.",
        error: r.error.take(),
    };
    let approval = ToolCallApproval {
        id,
        run_id: d.req_str("runId"),
        tool_call_id: d.req_str("toolCallId"),
        tool_name: d.req_str("toolName"),
        reason: d.opt_str("reason"),
        args,
        agent_version_id: d.opt_str("agentVersionId"),
        thread_id: d.opt_str("threadId"),
        state,
        resume_schema,
    };
    r.error = d.error;
    approval
}
