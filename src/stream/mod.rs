//! Incremental decoding of server-sent-event chat streams (the Sidenet dialect, in the style of
//! the AI SDK UI message stream).
//!
//! Two layers, both sans-IO: bytes go in as they arrive, in pieces split anywhere (inside a line,
//! inside a UTF-8 character, between the CR and LF of one line end), and decoded items come out.
//!
//! - [`SseDecoder`] frames events;
//! - [`ChunkDecoder`] wraps it and types each event's data as a [`Chunk`].
//!
//! # Framing (WHATWG `text/event-stream`)
//!
//! - A line ends with LF, CRLF or a lone CR. A CR that ends one feed and an LF that starts the next
//!   make one line end.
//! - A UTF-8 byte order mark at the very start of the stream is skipped, once.
//! - A line starting with `:` is a comment (e.g. `: keep-alive`) and is ignored.
//! - Otherwise a line is `name:value`, one space after the colon removed if present; a line with
//!   no colon is a field `name` with an empty value.
//! - `data`: the value is appended to the event's data; several data lines are joined with `\n`.
//!   `event`: the event's type (an empty value resets it: `None`, the spec's `message`). `id`: the
//!   last event ID (ignored if it contains NUL); it is kept across events and is what a reconnect
//!   sends ([`SseDecoder::last_event_id`]). `retry`: a reconnection time in ms, if all ASCII digits
//!   ([`SseDecoder::retry_ms`]). Other fields are ignored.
//! - A blank line dispatches the event, if it had at least one data line (an event with an empty
//!   `data:` line is dispatched with empty data); a block without one is nothing, not even an error.
//! - UTF-8 is decoded per complete line, so a character split across feeds is fine. An event whose
//!   `data`, `event` or `id` value is not valid UTF-8 is reported as one `stream_error` item and
//!   skipped (the spec would decode it with U+FFFD); an `id` that is not UTF-8 is not taken, with or
//!   without data (the last event ID stays). Comments, other fields and `retry` are not decoded, so
//!   their bytes never make an error.
//! - An event larger than the configured cap (default 8 MiB, counting its data and the line being
//!   read) is reported as one `stream_error` item as soon as it overflows; its remaining lines are
//!   dropped unbuffered up to the next blank line, where decoding resumes.
//! - End of stream ([`SseDecoder::finish_with`]): the spec discards an event not closed by a blank
//!   line, but many servers omit it. Here an incomplete last line is taken as complete, and a
//!   pending event with data is dispatched. A truncated JSON chunk then surfaces as an error
//!   instead of vanishing. The event's `id` is taken with it (and an `id` line of a block without
//!   data too), so after a stream cut short inside an event, [`SseDecoder::last_event_id`] names
//!   that incomplete event, not the last complete one (the client itself never reconnects with
//!   `Last-Event-ID`: a broken stream is recovered from the thread).
//!
//! # Chunks
//!
//! The data of each event is one JSON object with a string `type` (see [`Chunk`] for the types
//! known), or `[DONE]`, which becomes [`Chunk::Done`]. An event whose data is empty or only
//! whitespace is a keep-alive and yields nothing. The `event:` name is not looked at. A chunk
//! whose `type` is unknown yields nothing. A malformed one (not JSON, not an object, no string
//! `type`, or a known type missing a required field or with a field of the wrong type) yields an
//! `Err` with code `stream_error` whose message names the type and field, and decoding goes on
//! with the next event. [`parse_chunk_str`] and [`parse_chunk_value`] apply the same typing to
//! collected output (`{"chunks": [...]}`).
//!
//! # Cost
//!
//! Each fed byte is scanned once; the incomplete line and the incomplete event are buffered and
//! never re-scanned, so the cost of a feed is proportional to its size plus the size of the events
//! it completes. A chunk is read in one pass that keeps every top-level field as borrowed raw JSON
//! text; only the fields of its type are then decoded (a `text-delta` costs that one pass and two
//! small strings). [`SseDecoder::feed_with`] hands events out borrowed, without copying their data.

mod chunk;
mod sse;

pub(crate) use chunk::inputs_of;
pub use chunk::{
    parse_chunk_str, parse_chunk_value, Chunk, ChunkDecoder, ToolCallApproval, ToolInputError,
};
pub use sse::{SseDecoder, SseEvent, SseEventRef, DEFAULT_MAX_EVENT_BYTES};

#[cfg(test)]
mod tests;
