//! The Neuron dialect: request bodies, reply parsing and the dialect-neutral message view.
//!
//! - `GET {thread}` → `{"id": ..., "messages": [...]}` (or a bare array of messages);
//! - `POST {chat}` with `{"message": "<text>"}` (a new turn) or `{"decisions": {...}}` (a resume) →
//!   `{"status": "awaiting_approval" | "completed", "message": <the thread's last message>}`;
//! - `409 {"status": "conflict", "error": "..."}` when the history refuses the operation; other errors
//!   carry `{"error": "..."}` when the server says why.

use crate::decisions::Decision;
use crate::error::{Error, Result};
use crate::json::{self, Map, Obj, ToJson, Value};
use crate::prelude::*;
use crate::thread::{self, Content, Message};

use super::snapshot::{MessageKindView, MessageView, ToolStatus, ToolView};

/// What the run did, per the chat reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChatStatus {
    AwaitingApproval,
    Completed,
}

/// A successful chat reply.
#[derive(Debug)]
pub(crate) enum ChatReply {
    /// `message`: the thread's last message; `None` when the reply has none (Laravel's JSON
    /// turn answers `{"status": "awaiting_approval", "approvals": [...]}`): read the thread.
    Ok {
        status: ChatStatus,
        message: Option<Message>,
    },
    /// `{"status": "conflict"}` in a 2xx body: handled like HTTP 409.
    Conflict(Option<String>),
}

/// The body of a new turn.
pub(crate) fn message_body(text: &str) -> String {
    let mut out = String::new();
    let mut o = Obj::new(&mut out);
    o.field("message", &text);
    o.end();
    out
}

/// Parses a 2xx chat reply.
pub(crate) fn parse_chat_reply(body: &[u8]) -> Result<ChatReply> {
    let text = json::utf8(body)?;
    let value = Value::parse(text)?;
    let Value::Object(mut map) = value else {
        return Err(thread::got_error(
            "a chat reply must be an object",
            json::describe(&value),
            "$",
        ));
    };
    // Read by reference: the object is dropped at one place, whichever way that went.
    reply_of(&mut map)
}

/// [`parse_chat_reply`] of the object parsed (the message moved out).
fn reply_of(map: &mut Map) -> Result<ChatReply> {
    let status = match map.get("status") {
        Some(Value::String(s)) if s == "awaiting_approval" => ChatStatus::AwaitingApproval,
        Some(Value::String(s)) if s == "completed" => ChatStatus::Completed,
        Some(Value::String(s)) if s == "conflict" => {
            return Ok(ChatReply::Conflict(
                map.get("error").and_then(Value::as_str).map(str::to_owned),
            ))
        }
        Some(other) => {
            let mut m = "status must be \"awaiting_approval\" or \"completed\", got ".to_owned();
            other.write_json(&mut m);
            return Err(Error::parse(m).with_path("$.status"));
        }
        None => return Err(Error::parse("a chat reply needs a status").with_path("$.status")),
    };
    // Its error's path made in the error arm (no closure to pass).
    let message = match map.remove("message") {
        Some(value) => match Message::checked(value) {
            Ok(message) => Some(message),
            Err(e) => return Err(thread::under("$.message".to_owned(), e)),
        },
        None => None,
    };
    Ok(ChatReply::Ok { status, message })
}

/// The server's explanation in an error body (`{"error": "..."}` or `{"message": "..."}`), if any.
pub(crate) fn error_text(body: &[u8]) -> Option<String> {
    let Ok(Value::Object(map)) = Value::parse(json::str_of(body)?) else {
        return None;
    };
    // Two lookups in turn (not a loop over an array of keys: its by-value iterator is library
    // code).
    let text = |key: &str| match map.get(key) {
        Some(Value::String(s)) if !json::is_blank(Some(s)) => Some(s.clone()),
        Some(Value::Object(inner)) => match inner.get("message") {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    };
    match text("error") {
        Some(text) => Some(text),
        None => text("message"),
    }
}

/// The user message the server records for a new turn, as the client shows it until the next load
/// (`None` only if the thread model ever refused a `{role, content}` object).
#[allow(clippy::vec_init_then_push)]
pub(crate) fn user_message(text: &str) -> Option<Message> {
    // Two distinct keys: no look-up as `insert` would make. Pushed one by one: `vec![..]` builds
    // its boxed array in place, more code here than two `push` calls.
    let mut entries = Vec::new();
    entries.push(("role".to_owned(), Value::from("user")));
    entries.push(("content".to_owned(), Value::from(text)));
    let raw = Map::from_entries(entries);
    // No error is built for a refusal (which the caller would drop).
    Message::try_from_map(raw).ok()
}

/// The text of a message's content: the string itself, or the `text` of its blocks joined by newlines.
pub(crate) fn text_of(message: &Message) -> String {
    match message.content() {
        Content::None | Content::Other(_) => String::new(),
        Content::Text(s) => s.to_owned(),
        Content::Blocks(blocks) => {
            let mut out = String::new();
            for block in blocks {
                let text = match block {
                    Value::String(s) => Some(s.as_str()),
                    // `{"type":"text","text":..}`, or neuron-ai's own content block
                    // `{"type":"text","content":..}` (its history's current form).
                    Value::Object(map) => {
                        map.get("text")
                            .and_then(Value::as_str)
                            .or_else(|| match map.get("type") {
                                Some(Value::String(t)) if t == "text" => {
                                    map.get("content").and_then(Value::as_str)
                                }
                                _ => None,
                            })
                    }
                    _ => None,
                };
                if let Some(text) = text {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(text);
                }
            }
            out
        }
    }
}

/// The pause's message with the decisions the server accepted written on its pending tools as the
/// server records them (`approval`; `rejectReason` for a rejection with a reason): what the thread
/// shows until its next read, when the reply to them carried only the agent's next message (a
/// client without `reloadAfterPost` reads none). Other tools are left as they are.
pub(crate) fn with_decisions(message: &Message, sent: &[(String, Decision)]) -> Message {
    let mut raw = message.as_object().clone();
    if let Some(Value::Array(tools)) = raw.get_mut("tools") {
        for tool in tools {
            let Value::Object(t) = tool else { continue };
            if t.get("approval").and_then(Value::as_str) != Some("pending") {
                continue;
            }
            let id = t.get("callId").and_then(Value::as_str);
            let Some((_, decision)) = sent.iter().find(|(c, _)| id == Some(c)) else {
                continue;
            };
            let approval = match decision {
                Decision::Approve => "approved",
                Decision::Reject(_) => "rejected",
            };
            json::put_str(t, "approval", approval);
            if let Some(reason) = decision.reason() {
                json::put_str(t, "rejectReason", reason);
            }
        }
    }
    // Still a valid message (only approvals changed, to valid ones).
    Message::try_from_map(raw).unwrap_or_else(|_| message.clone())
}

/// `true` for a user message (role `user`, no tool type).
pub(crate) fn is_user_text(view: &MessageView) -> bool {
    view.is_user() && view.kind == MessageKindView::Text
}

/// What [`Message::kind`] says of a message, as a view: read in place (`kind` copies an unknown
/// `type` into its answer).
fn kind_view(message: &Message) -> MessageKindView {
    match message.get("type") {
        Some(Value::String(t)) => match t.as_str() {
            "tool_call" => MessageKindView::ToolCall,
            "tool_call_result" => MessageKindView::ToolResult,
            _ => MessageKindView::Other,
        },
        _ => MessageKindView::Text,
    }
}

/// The dialect-neutral view of one message.
pub(crate) fn message_view(index: usize, message: &Message) -> MessageView {
    let kind = kind_view(message);
    let is_result = kind == MessageKindView::ToolResult;
    let mut tools = Vec::new();
    // Walked in place: no list of the tools' views built first.
    message.each_tool(&mut |tool| {
        let approval = tool.approval();
        let result = tool.result().cloned();
        let status = match approval {
            Some(crate::approval::Approval::Pending) => ToolStatus::Pending,
            Some(crate::approval::Approval::Rejected) => ToolStatus::Rejected,
            Some(crate::approval::Approval::Approved) if !is_result => ToolStatus::Approved,
            _ if is_result || result.is_some() => ToolStatus::Done,
            _ => ToolStatus::Called,
        };
        tools.push(ToolView {
            call_id: tool.call_id().to_owned(),
            name: tool.name().unwrap_or_default().to_owned(),
            inputs: Value::Object(tool.owned_inputs()),
            // The raw tool's own `result` (the tools are the raw ones, in order: every one is an
            // object), which the conversion to JS takes from the raw message.
            raw_result: true,
            result,
            approval,
            approval_reason: tool.approval_reason().map(str::to_owned),
            reject_reason: tool.reject_reason().map(str::to_owned),
            status,
        });
    });
    MessageView {
        id: message.id(),
        index,
        role: message.role().map(str::to_owned),
        kind,
        text: text_of(message),
        tools,
        raw: message.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::{is_user_text, kind_view, message_view};
    use crate::client::snapshot::MessageKindView;
    use crate::thread::{Message, MessageKind};

    #[test]
    fn kind_view_says_what_kind_says() {
        for (text, user) in [
            (r#"{"role":"user","content":"hi"}"#, true),
            (r#"{"role":"user","type":null,"content":"hi"}"#, true),
            (r#"{"role":"assistant","content":"hi"}"#, false),
            (r#"{"role":"user","type":"note","content":"hi"}"#, false),
            (r#"{"type":"tool_call","tools":[]}"#, false),
            (
                r#"{"role":"user","type":"tool_call_result","tools":[]}"#,
                false,
            ),
        ] {
            let message = Message::parse_str(text).expect("message");
            let expected = match message.kind() {
                MessageKind::Text => MessageKindView::Text,
                MessageKind::ToolCall => MessageKindView::ToolCall,
                MessageKind::ToolCallResult => MessageKindView::ToolResult,
                MessageKind::Unknown(_) => MessageKindView::Other,
            };
            assert_eq!(kind_view(&message), expected, "{text}");
            assert_eq!(is_user_text(&message_view(0, &message)), user, "{text}");
        }
    }
}
