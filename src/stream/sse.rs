//! Byte-level server-sent-event framing. See the module docs of [`crate::stream`] for the rules.

use crate::error::{Error, ErrorCode, Result};
use crate::json::{str_of, write_u64};
use crate::prelude::*;

/// Where decoded events go (one compiled copy of the decoder for every kind of sink).
type Sink<'s> = &'s mut dyn FnMut(Result<SseEventRef<'_>>);

/// The default cap on one event: 8 MiB of data (plus the line being read).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// A buffer larger than this is released after its event instead of being kept for reuse.
pub(crate) const KEEP_CAPACITY: usize = 64 * 1024;

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// One dispatched event, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the event had one (the spec's default type is `"message"`).
    pub event: Option<String>,
    /// The data lines of the event joined with `\n`.
    pub data: String,
    /// The last event ID in force when this event was dispatched (`None` when empty).
    pub id: Option<String>,
}

/// One dispatched event, borrowed from the decoder (see [`SseDecoder::feed_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEventRef<'a> {
    /// The `event:` field, when the event had one.
    pub event: Option<&'a str>,
    /// The data lines of the event joined with `\n`.
    pub data: &'a str,
    /// The last event ID in force when this event was dispatched (`None` when empty).
    pub id: Option<&'a str>,
}

impl SseEventRef<'_> {
    /// An owned copy.
    pub fn to_owned_event(&self) -> SseEvent {
        SseEvent {
            event: self.event.map(str::to_owned),
            data: self.data.to_owned(),
            id: self.id.map(str::to_owned),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bom {
    /// At the start of the stream, with this many bytes of a BOM seen so far (0..=2).
    Pending(u8),
    /// Past the start of the stream.
    Done,
}

/// An incremental server-sent-event decoder: feed it bytes as they arrive, split anywhere.
///
/// Each byte fed is looked at a constant number of times: the decoder keeps the incomplete line
/// and the data of the incomplete event, never re-scans them, and reuses its buffers.
#[derive(Debug, Clone)]
pub struct SseDecoder {
    max_event_bytes: usize,
    bom: Bom,
    /// The previous feed ended with CR: an LF at the start of the next one belongs to it.
    pending_cr: bool,
    /// The bytes of the incomplete line (empty while the line is being discarded).
    line: Vec<u8>,
    /// The incomplete line is being discarded (a comment, or a line of an oversized event).
    line_discard: bool,
    /// The incomplete line has at least one byte (it may be discarded, so `line` can be empty).
    line_started: bool,
    /// The data buffer of the event being read; each data line is followed by `\n` here.
    data: String,
    /// At least one `data` field was seen in the event being read.
    has_data: bool,
    /// The `event` field of the event being read.
    event_type: Option<String>,
    /// The event being read had a line that is not UTF-8: it is reported as an error.
    bad_utf8: bool,
    /// The event being read grew past the cap: its lines are skipped until the blank line.
    oversized: bool,
    /// The spec's "last event ID buffer": set by `id` fields, never reset by a dispatch.
    id_buffer: String,
    /// The last event ID of the last dispatched event (what a reconnect sends).
    last_event_id: String,
    retry_ms: Option<u64>,
}

impl Default for SseDecoder {
    fn default() -> Self {
        SseDecoder::new()
    }
}

impl SseDecoder {
    /// A decoder with the default cap on one event ([`DEFAULT_MAX_EVENT_BYTES`]).
    pub fn new() -> Self {
        SseDecoder::with_max_event_bytes(DEFAULT_MAX_EVENT_BYTES)
    }

    /// A decoder that reports an event larger than `max` bytes as an error and skips it.
    pub fn with_max_event_bytes(max: usize) -> Self {
        SseDecoder {
            max_event_bytes: max,
            bom: Bom::Pending(0),
            pending_cr: false,
            line: Vec::new(),
            line_discard: false,
            line_started: false,
            data: String::new(),
            has_data: false,
            event_type: None,
            bad_utf8: false,
            oversized: false,
            id_buffer: String::new(),
            last_event_id: String::new(),
            retry_ms: None,
        }
    }

    /// The cap on one event, in bytes.
    pub fn max_event_bytes(&self) -> usize {
        self.max_event_bytes
    }

    /// The last event ID of the last dispatched event, for `Last-Event-ID` on a reconnect.
    /// `None` when no event carried an id, or the last `id` field was empty.
    pub fn last_event_id(&self) -> Option<&str> {
        if self.last_event_id.is_empty() {
            None
        } else {
            Some(&self.last_event_id)
        }
    }

    /// The reconnection time the server asked for with the last valid `retry:` field.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// The bytes held for the incomplete line and event (bounded by the cap on one event).
    pub fn buffered_len(&self) -> usize {
        self.line.len() + self.data.len()
    }

    #[cfg(test)]
    pub(crate) fn line_capacity(&self) -> usize {
        self.line.capacity()
    }

    #[cfg(test)]
    pub(crate) fn data_capacity(&self) -> usize {
        self.data.capacity()
    }

    /// Feeds bytes; each complete event is pushed to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Result<SseEvent>>) {
        self.feed_with(bytes, &mut |ev: Result<SseEventRef<'_>>| {
            out.push(ev.map(|e| e.to_owned_event()))
        });
    }

    /// Ends the stream; see [`SseDecoder::finish_with`].
    pub fn finish(&mut self, out: &mut Vec<Result<SseEvent>>) {
        self.finish_with(&mut |ev: Result<SseEventRef<'_>>| {
            out.push(ev.map(|e| e.to_owned_event()))
        });
    }

    /// Feeds bytes; each complete event is handed to `sink` as it is found, borrowed from the
    /// decoder's buffers (no copy of the data is made).
    pub fn feed_with<F>(&mut self, bytes: &[u8], sink: &mut F)
    where
        F: FnMut(Result<SseEventRef<'_>>),
    {
        self.feed_dyn(bytes, sink);
    }

    /// [`Self::feed_with`], compiled once.
    fn feed_dyn(&mut self, mut bytes: &[u8], sink: Sink<'_>) {
        if let Bom::Pending(seen) = self.bom {
            // What is left of the BOM, against as much of it as this feed holds.
            let rest = BOM.get(usize::from(seen)..).unwrap_or_default();
            let n = rest.len().min(bytes.len());
            if bytes.get(..n) == rest.get(..n) {
                if n < rest.len() {
                    // All of this feed was a prefix of the rest of a BOM.
                    self.bom = Bom::Pending(seen + n as u8);
                    return;
                }
                self.bom = Bom::Done;
                bytes = bytes.get(n..).unwrap_or_default();
            } else {
                // Not a BOM: the bytes held back are ordinary line bytes (no CR or LF among
                // them), followed by this feed's.
                self.held_bom(seen, sink);
            }
        }
        self.scan(bytes, sink);
    }

    /// Ends the stream.
    ///
    /// Per the spec an event not closed by a blank line is discarded at the end of the stream, but
    /// many servers omit the final blank line. This decoder takes an incomplete last line as
    /// complete and dispatches a pending event if it has data. The decoder is then reset for a new
    /// stream; [`last_event_id`](SseDecoder::last_event_id) and [`retry_ms`](SseDecoder::retry_ms)
    /// are kept for the reconnect.
    pub fn finish_with<F>(&mut self, sink: &mut F)
    where
        F: FnMut(Result<SseEventRef<'_>>),
    {
        self.finish_dyn(sink);
    }

    /// [`Self::finish_with`], compiled once.
    fn finish_dyn(&mut self, sink: Sink<'_>) {
        if let Bom::Pending(seen) = self.bom {
            // The stream was a bare prefix of a BOM: those bytes are line bytes.
            self.held_bom(seen, sink);
        }
        if self.line_started {
            self.end_line(&[], sink);
        }
        self.dispatch(sink);
        // Ready for a new stream, as a new decoder with the same cap, but keeping the last event
        // ID (dispatch made the ID buffer equal to it) and the retry time; dispatch already
        // reset the event's own state, and left its data buffer empty, as `end_line` left the
        // line's (each at most `KEEP_CAPACITY` bytes of capacity kept).
        self.bom = Bom::Pending(0);
        self.pending_cr = false;
        self.line_discard = false;
        self.line_started = false;
    }

    /// The `seen` bytes held back as a BOM's start were line bytes: past the start, they are read.
    fn held_bom(&mut self, seen: u8, sink: Sink<'_>) {
        self.bom = Bom::Done;
        self.scan(BOM.get(..usize::from(seen)).unwrap_or_default(), sink);
    }

    /// Splits `bytes` into lines; the only loop over the fed bytes.
    fn scan(&mut self, mut bytes: &[u8], sink: Sink<'_>) {
        if let (true, Some((&first, rest))) = (self.pending_cr, bytes.split_first()) {
            // The first byte after a CR that ended the last feed (an empty feed leaves it pending).
            self.pending_cr = false;
            if first == b'\n' {
                bytes = rest;
            }
        }
        while !bytes.is_empty() {
            match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(pos) => {
                    let (line, rest) = bytes.split_at(pos);
                    self.end_line(line, sink);
                    // `rest` starts with the CR or LF.
                    let is_cr = rest.first() == Some(&b'\r');
                    let mut after = rest.get(1..).unwrap_or(&[]);
                    if is_cr {
                        match after.first() {
                            Some(&b'\n') => after = after.get(1..).unwrap_or(&[]),
                            Some(_) => {}
                            None => self.pending_cr = true,
                        }
                    }
                    bytes = after;
                }
                None => {
                    self.push_partial(bytes, sink);
                    break;
                }
            }
        }
    }

    /// Keeps the bytes of a line whose end has not arrived yet.
    fn push_partial(&mut self, bytes: &[u8], sink: Sink<'_>) {
        if !self.line_started {
            self.line_started = true;
            // A comment or a line of an oversized event is never buffered.
            self.line_discard = self.oversized || bytes.first() == Some(&b':');
        }
        if self.line_discard {
            return;
        }
        if self.data.len() + self.line.len() + bytes.len() > self.max_event_bytes {
            self.overflow(sink);
            self.line_discard = true;
            return;
        }
        self.line.extend_from_slice(bytes);
    }

    /// A line ends; `tail` is its part from the current feed (the rest is in `self.line`).
    fn end_line(&mut self, tail: &[u8], sink: Sink<'_>) {
        let started = self.line_started;
        let discard = self.line_discard;
        self.line_started = false;
        self.line_discard = false;
        if !started && tail.is_empty() {
            // A blank line: dispatch.
            self.dispatch(sink);
            return;
        }
        if discard || self.oversized {
            return;
        }
        // The same cap as on a line still being read (`push_partial`), so that where the feeds
        // split never changes what is decoded: a complete line counts whole, whatever its field.
        let first = self.line.first().or(tail.first());
        if first != Some(&b':')
            && self.data.len() + self.line.len() + tail.len() > self.max_event_bytes
        {
            self.overflow(sink);
            return;
        }
        if self.line.is_empty() {
            self.process_line(tail);
        } else {
            let mut line = core::mem::take(&mut self.line);
            line.extend_from_slice(tail);
            self.process_line(&line);
            line.clear();
            self.line = line;
            self.shrink_line();
        }
    }

    fn shrink_line(&mut self) {
        if self.line.capacity() > KEEP_CAPACITY {
            self.line = Vec::new();
        }
    }

    /// Interprets one complete, non-blank line of a non-oversized event, within the cap.
    #[allow(clippy::manual_contains)] // see the `id` field
    fn process_line(&mut self, line: &[u8]) {
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return, // a comment
            Some(colon) => {
                let name = line.get(..colon).unwrap_or(&[]);
                let mut value = line.get(colon + 1..).unwrap_or(&[]);
                if let Some((&b' ', rest)) = value.split_first() {
                    value = rest;
                }
                (name, value)
            }
            None => (line, &[][..]),
        };
        // The three fields whose value is text, told apart after one UTF-8 check.
        enum Text {
            Data,
            Event,
            Id,
        }
        let field = match name {
            // No cap to check: `end_line` checked the whole line against it, and the value and
            // its `\n` are shorter than the line.
            // A data line that is not UTF-8 still makes an event (reported, not dispatched).
            b"data" => {
                self.has_data = true;
                Text::Data
            }
            b"event" => Text::Event,
            // Not `contains(&0)`: for bytes that is core's `memchr`, linked for this alone.
            b"id" if value.iter().any(|&b| b == 0) => return,
            b"id" => Text::Id,
            b"retry" if !value.is_empty() => {
                let mut ms: u64 = 0;
                for &d in value {
                    if !d.is_ascii_digit() {
                        return; // not all digits: ignored
                    }
                    // Not `saturating_mul`: on wasm32 its overflow check is a 128-bit multiply.
                    ms = if ms > u64::MAX / 10 {
                        u64::MAX
                    } else {
                        (ms * 10).saturating_add(u64::from(d.wrapping_sub(b'0')))
                    };
                }
                self.retry_ms = Some(ms);
                return;
            }
            _ => return,
        };
        let Some(text) = str_of(value) else {
            self.bad_utf8 = true;
            return;
        };
        match field {
            Text::Data => {
                self.data.push_str(text);
                self.data.push('\n');
            }
            // An empty value resets the type: the event is a `message` again.
            Text::Event => {
                self.event_type = if text.is_empty() {
                    None
                } else {
                    Some(text.to_owned())
                }
            }
            Text::Id => {
                self.id_buffer.clear();
                self.id_buffer.push_str(text);
            }
        }
    }

    /// The event being read is too large: report it once and skip to the next blank line (its
    /// data and the line being read are dropped).
    fn overflow(&mut self, sink: Sink<'_>) {
        self.line.clear();
        self.shrink_line();
        if !self.oversized {
            self.oversized = true;
            let mut m = "event larger than ".to_owned();
            write_u64(&mut m, self.max_event_bytes as u64);
            m.push_str(" bytes: skipped up to the next blank line");
            sink(Err(Error::new(ErrorCode::StreamError, m)));
        }
        self.drop_data();
    }

    /// Empties the event's data (at most `KEEP_CAPACITY` bytes of capacity kept).
    fn drop_data(&mut self) {
        self.data.clear();
        self.has_data = false;
        if self.data.capacity() > KEEP_CAPACITY {
            self.data = String::new();
        }
    }

    /// A blank line (or the end of the stream): dispatch the event being read, then reset it.
    fn dispatch(&mut self, sink: Sink<'_>) {
        // `clone_from` would do the same through code of its own; `push_str` is linked anyway.
        self.last_event_id.clear();
        self.last_event_id.push_str(&self.id_buffer);
        // Only an event that would be dispatched is reported: a block without data is nothing.
        if !self.has_data || self.oversized {
            // Nothing to dispatch.
        } else if self.bad_utf8 {
            sink(Err(Error::new(
                ErrorCode::StreamError,
                "event is not valid UTF-8: skipped",
            )));
        } else {
            // Each data line was followed by `\n`: the last one is not part of the data.
            let bytes = self.data.as_bytes();
            let bytes = bytes
                .get(..bytes.len().saturating_sub(1))
                .unwrap_or_default();
            // SAFETY: `data` is a `String` that ends with the ASCII `\n` cut here (or is empty).
            let data = unsafe { core::str::from_utf8_unchecked(bytes) };
            sink(Ok(SseEventRef {
                event: self.event_type.as_deref(),
                data,
                id: self.last_event_id(),
            }));
        }
        self.drop_data();
        self.event_type = None;
        self.bad_utf8 = false;
        self.oversized = false;
    }
}
