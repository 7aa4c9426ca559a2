//! Unit tests of the framing layer; the recorded-stream tests are in `tests/stream.rs`.

use super::*;
use crate::error::ErrorCode;
use crate::prelude::*;

fn events(input: &[&[u8]]) -> Vec<Result<SseEvent, ErrorCode>> {
    capped(DEFAULT_MAX_EVENT_BYTES, input)
}

/// The events of `pieces` fed in turn to a decoder capped at `cap` bytes an event.
fn capped(cap: usize, pieces: &[&[u8]]) -> Vec<Result<SseEvent, ErrorCode>> {
    let mut d = SseDecoder::with_max_event_bytes(cap);
    let mut out = Vec::new();
    for p in pieces {
        d.feed(p, &mut out);
    }
    d.finish(&mut out);
    out.into_iter().map(|r| r.map_err(|e| e.code)).collect()
}

fn ev(data: &str) -> Result<SseEvent, ErrorCode> {
    Ok(SseEvent {
        event: None,
        data: data.to_owned(),
        id: None,
    })
}

#[test]
fn data_lines_join_with_lf() {
    assert_eq!(
        events(&[b"data: a\ndata:b\ndata:  c\n\n"]),
        vec![ev("a\nb\n c")]
    );
}

#[test]
fn all_line_endings() {
    assert_eq!(
        events(&[b"data: 1\r\n\r\ndata: 2\r\rdata: 3\n\n"]),
        vec![ev("1"), ev("2"), ev("3")]
    );
}

#[test]
fn cr_then_lf_across_feeds_is_one_line_end() {
    // If the LF were a second line end, "data: 1" would be dispatched before "data: 2" joined it.
    assert_eq!(
        events(&[b"data: 1\r", b"\ndata: 2\r", b"\n\r", b"\n"]),
        vec![ev("1\n2")]
    );
    // An empty feed between them changes nothing.
    assert_eq!(
        events(&[b"data: 1\r", b"", b"\ndata: 2\n\n"]),
        vec![ev("1\n2")]
    );
}

#[test]
fn lone_cr_at_end_of_feed_then_other_byte() {
    assert_eq!(
        events(&[b"data: 1\r", b"\rdata: 2\n\n"]),
        vec![ev("1"), ev("2")]
    );
}

#[test]
fn comments_and_unknown_fields_ignored() {
    assert_eq!(
        events(&[b": keep-alive\n\n:\nfoo: bar\ndata: x\nbaz\n\n"]),
        vec![ev("x")]
    );
}

#[test]
fn field_without_colon_and_empty_data() {
    // `data` with no colon is a data line with an empty value.
    assert_eq!(
        events(&[b"data\n\ndata:\ndata:\n\n"]),
        vec![ev(""), ev("\n")]
    );
}

#[test]
fn event_and_id_fields() {
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    d.feed(b"event: ping\nid: 7\ndata: x\n\nid\n\n", &mut out);
    assert_eq!(
        out,
        vec![Ok(SseEvent {
            event: Some("ping".into()),
            data: "x".into(),
            id: Some("7".into()),
        })]
    );
    // The `id` with an empty value cleared the last event ID, even without data.
    assert_eq!(d.last_event_id(), None);
    d.feed(b"id: 8\n", &mut out);
    assert_eq!(
        d.last_event_id(),
        None,
        "not committed before the blank line"
    );
    d.feed(b"\n", &mut out);
    assert_eq!(d.last_event_id(), Some("8"));
    d.feed(b"id: a\0b\ndata: y\n\n", &mut out);
    assert_eq!(d.last_event_id(), Some("8"), "an id with NUL is ignored");
    assert_eq!(out.len(), 2);
    assert_eq!(
        out.get(1).cloned(),
        Some(Ok(SseEvent {
            event: None,
            data: "y".into(),
            id: Some("8".into()),
        }))
    );
}

#[test]
fn retry_field() {
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    d.feed(b"retry: 1500\n\nretry: 12x\n\n", &mut out);
    assert_eq!(d.retry_ms(), Some(1500));
    d.feed(b"retry: 99999999999999999999999\n\n", &mut out);
    assert_eq!(d.retry_ms(), Some(u64::MAX));
    assert!(out.is_empty());
}

#[test]
fn retry_saturates_exactly_at_u64_max() {
    for (text, want) in [
        ("18446744073709551610", 18446744073709551610),
        ("18446744073709551615", u64::MAX),
        ("18446744073709551616", u64::MAX),
        ("18446744073709551619", u64::MAX),
        ("18446744073709551620", u64::MAX),
        ("1844674407370955161", 1844674407370955161),
        ("1844674407370955162", 1844674407370955162),
        ("00000000000000000000000000042", 42),
    ] {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        d.feed(format!("retry: {text}\n\n").as_bytes(), &mut out);
        assert_eq!(d.retry_ms(), Some(want), "{text}");
    }
}

#[test]
fn bom_skipped_once_even_split() {
    assert_eq!(
        events(&[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"]),
        vec![ev("x")]
    );
    // A second BOM is not skipped: it makes the field name "\u{feff}data", unknown.
    assert_eq!(events(&[b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n"]), vec![]);
}

#[test]
fn bom_prefix_that_is_not_a_bom() {
    // EF BB followed by something else: the held bytes are line bytes (here an invalid UTF-8 line
    // of an unknown field, ignored), and the stream continues.
    assert_eq!(events(&[b"\xEF\xBB", b"x\ndata: y\n\n"]), vec![ev("y")]);
    // A stream that is only a BOM prefix.
    assert_eq!(events(&[b"\xEF"]), vec![]);
}

#[test]
fn utf8_split_inside_a_character() {
    let bytes = "data: é😀\n\n".as_bytes();
    for cut in 0..=bytes.len() {
        let (a, b) = bytes.split_at(cut);
        assert_eq!(events(&[a, b]), vec![ev("é😀")], "cut at {cut}");
    }
}

#[test]
fn invalid_utf8_is_one_error_and_stream_goes_on() {
    assert_eq!(
        events(&[b"data: \xFF\xFE\ndata: ok\n\ndata: next\n\n"]),
        vec![Err(ErrorCode::StreamError), ev("next")]
    );
    // Invalid UTF-8 in a comment is ignored.
    assert_eq!(events(&[b": \xFF\ndata: a\n\n"]), vec![ev("a")]);
}

#[test]
fn oversized_event_then_resync() {
    let mut d = SseDecoder::with_max_event_bytes(16);
    let mut out = Vec::new();
    d.feed(b"data: 0123456789\ndata: 0123456789\n", &mut out);
    d.feed(b"data: more\nid: 5\n\ndata: ok\n\n", &mut out);
    let codes: Vec<_> = out.into_iter().map(|r| r.map_err(|e| e.code)).collect();
    assert_eq!(codes, vec![Err(ErrorCode::StreamError), ev("ok")]);
    assert_eq!(
        d.last_event_id(),
        None,
        "lines of the skipped event are dropped"
    );
}

#[test]
fn oversized_partial_line_is_not_buffered() {
    let mut d = SseDecoder::with_max_event_bytes(64);
    let mut out = Vec::new();
    d.feed(b"data: ", &mut out);
    for _ in 0..1000 {
        d.feed(b"xxxxxxxxxxxxxxxx", &mut out);
    }
    assert!(d.line_capacity() <= 128);
    d.feed(b"\n\ndata: ok\n\n", &mut out);
    let codes: Vec<_> = out.into_iter().map(|r| r.map_err(|e| e.code)).collect();
    assert_eq!(codes, vec![Err(ErrorCode::StreamError), ev("ok")]);
}

#[test]
fn cap_does_not_depend_on_where_feeds_split() {
    // Found by the `stream` fuzz target: the cap counted a line still being read whole (field
    // name included, any field), but a complete line only by its data value, so a line near the
    // cap overflowed or not depending on where the bytes were split.
    let input: &[u8] = b"data: 0123456789\nevent: a-rather-long-event-name\n\ndata: ok\n\n";
    let run = |pieces: &[&[u8]]| capped(24, pieces);
    let whole = run(&[input]);
    assert_eq!(whole, vec![Err(ErrorCode::StreamError), ev("ok")]);
    for cut in 0..=input.len() {
        let (a, b) = input.split_at(cut);
        assert_eq!(run(&[a, b]), whole, "cut {cut}");
    }
    // `data: ` plus a value that fits the cap only without its field name.
    let input: &[u8] = b"data: 0123456789012345678\n\ndata: ok\n\n";
    let whole = run(&[input]);
    for cut in 0..=input.len() {
        let (a, b) = input.split_at(cut);
        assert_eq!(run(&[a, b]), whole, "cut {cut}");
    }
}

#[test]
fn long_comment_is_not_buffered() {
    let mut d = SseDecoder::with_max_event_bytes(64);
    let mut out = Vec::new();
    d.feed(b":", &mut out);
    for _ in 0..1000 {
        d.feed(b"padding padding ", &mut out);
    }
    d.feed(b"\ndata: ok\n\n", &mut out);
    assert!(d.line_capacity() <= 128);
    assert_eq!(
        out,
        vec![Ok(SseEvent {
            event: None,
            data: "ok".into(),
            id: None
        })]
    );
}

#[test]
fn finish_dispatches_pending_event() {
    assert_eq!(events(&[b"data: a\n"]), vec![ev("a")]);
    assert_eq!(events(&[b"data: a"]), vec![ev("a")]);
    assert_eq!(events(&[b"data: a\r"]), vec![ev("a")]);
    assert_eq!(
        events(&[b"data: a\n\ndata: b\ndata: c"]),
        vec![ev("a"), ev("b\nc")]
    );
    assert_eq!(events(&[b"id: 1\n"]), vec![]);
    assert_eq!(events(&[b": comment"]), vec![]);
}

#[test]
fn finish_resets_for_a_new_stream_keeping_id_and_retry() {
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    d.feed(b"id: 3\nretry: 10\ndata: a\n\ndata: partial", &mut out);
    d.finish(&mut out);
    assert_eq!(out.len(), 2);
    assert_eq!(d.last_event_id(), Some("3"));
    assert_eq!(d.retry_ms(), Some(10));
    out.clear();
    d.feed(b"\xEF\xBB\xBFdata: b\n\n", &mut out);
    assert_eq!(
        out,
        vec![Ok(SseEvent {
            event: None,
            data: "b".into(),
            id: Some("3".into())
        })]
    );
}

#[test]
fn feed_with_borrows() {
    let mut d = SseDecoder::new();
    let mut seen = Vec::new();
    d.feed_with(b"event: e\ndata: x\n\n", &mut |ev| {
        if let Ok(ev) = ev {
            seen.push((ev.event.map(str::to_owned), ev.data.to_owned()));
        }
    });
    assert_eq!(seen, vec![(Some("e".to_owned()), "x".to_owned())]);
}

#[test]
fn chunk_fast_path_and_escapes() {
    assert_eq!(
        parse_chunk_str(r#"{"type":"text-delta","id":"t","delta":"a\"b\u00e9"}"#),
        Ok(Some(Chunk::TextDelta {
            id: "t".into(),
            delta: "a\"bé".into()
        }))
    );
    assert_eq!(
        parse_chunk_str(r#" { "delta" : "x" , "id":"t" , "type" : "text-delta" } "#),
        Ok(Some(Chunk::TextDelta {
            id: "t".into(),
            delta: "x".into()
        }))
    );
}

#[test]
fn chunk_sizes_stay_small() {
    assert!(
        core::mem::size_of::<Chunk>() <= 96,
        "{}",
        core::mem::size_of::<Chunk>()
    );
}

#[test]
fn bom_handling_does_not_depend_on_where_feeds_split() {
    let inputs: [&[u8]; 7] = [
        b"\xEF\xBB\xBFdata: a\n\n",
        b"\xEF\xBBdata: a\n\ndata: b\n\n",
        b"\xEFdata: b\n\ndata: c\n\n",
        b"\xEF\xBB\xBF\xEFdata: a\n\ndata: d\n\n",
        b"\xEF\xBB\n\ndata: z\n\n",
        b"\xEF\xBB\xBF\r\ndata: y\r\n\r\n",
        b"data: \xEF\xBB\xBF\n\n",
    ];
    for input in inputs {
        let whole = events(&[input]);
        for i in 0..=input.len() {
            for j in i..=input.len() {
                let (a, rest) = input.split_at(i);
                let (b, c) = rest.split_at(j - i);
                assert_eq!(events(&[a, b, c]), whole, "{input:?} cut at {i}, {j}");
            }
        }
    }
}

#[test]
fn invalid_utf8_without_data_is_no_event() {
    // A block with no data line is never dispatched, so its undecodable `event` or `id` is not an
    // error either; the id is not taken (the last one stays).
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    d.feed(
        b"id: 1\ndata: a\n\nevent: \xFF\n\nid: \xC3\n\ndata: b\n\n",
        &mut out,
    );
    let got: Vec<_> = out.into_iter().map(|r| r.map_err(|e| e.code)).collect();
    let with_id = |data: &str| {
        Ok(SseEvent {
            event: None,
            data: data.into(),
            id: Some("1".into()),
        })
    };
    assert_eq!(got, vec![with_id("a"), with_id("b")]);
    // With data, an undecodable `event` or `id` makes the event one error.
    assert_eq!(
        events(&[b"event: \xFF\ndata: x\n\nid: \xC3\ndata: y\n\ndata: z\n\n"]),
        vec![
            Err(ErrorCode::StreamError),
            Err(ErrorCode::StreamError),
            ev("z")
        ]
    );
}

#[test]
fn empty_event_field_resets_the_type() {
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    d.feed(
        b"event:\ndata: x\n\nevent: a\nevent:\ndata: y\n\n",
        &mut out,
    );
    let types: Vec<_> = out
        .into_iter()
        .map(|r| r.map(|e| e.event).map_err(|e| e.code))
        .collect();
    assert_eq!(types, vec![Ok(None), Ok(None)]);
}

#[test]
fn the_default_cap_is_8_mib() {
    assert_eq!(DEFAULT_MAX_EVENT_BYTES, 8_388_608);
    assert_eq!(SseDecoder::new().max_event_bytes(), 8_388_608);
    assert_eq!(SseDecoder::with_max_event_bytes(5).max_event_bytes(), 5);
}

#[test]
fn an_event_exactly_at_the_cap_is_kept_one_byte_more_is_not() {
    // The cap counts the event's data and the line being read, whole: `data: 0123456789` is 16.
    let run = |pieces: &[&[u8]]| capped(16, pieces);
    for (input, want) in [
        (&b"data: 0123456789\n\n"[..], vec![ev("0123456789")]),
        // Data held ("ab" and its LF: 3) and the next line (10): 13, within the cap.
        (&b"data: ab\ndata: 0123\n\n"[..], vec![ev("ab\n0123")]),
        (
            &b"data: 01234567890\n\ndata: ok\n\n"[..],
            vec![Err(ErrorCode::StreamError), ev("ok")],
        ),
    ] {
        assert_eq!(run(&[input]), want);
        // Split anywhere (a line still being read is counted the same way).
        for cut in 0..=input.len() {
            let (a, b) = input.split_at(cut);
            assert_eq!(run(&[a, b]), want, "cut {cut}");
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(run(&bytes), want, "byte by byte");
    }
}

#[test]
fn buffered_len_counts_the_line_and_the_event_held() {
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    assert_eq!(d.buffered_len(), 0);
    d.feed(b"data: ab", &mut out);
    assert_eq!(d.buffered_len(), 8, "the line being read");
    d.feed(b"\ndata: c", &mut out);
    // The data held so far ("ab" and the LF that joins it to a next data line), and the line.
    assert_eq!(
        d.buffered_len(),
        3 + 7,
        "the event's data and the next line"
    );
    d.feed(b"\n\n", &mut out);
    assert_eq!(d.buffered_len(), 0);
    assert_eq!(out.len(), 1);
}

#[test]
fn large_buffers_are_released_after_their_event_small_ones_kept() {
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    // A 200 KiB line fed in pieces (buffered), then its event.
    d.feed(b"data: ", &mut out);
    let piece = [b'x'; 1024];
    for _ in 0..200 {
        d.feed(&piece, &mut out);
    }
    d.feed(b"\n\n", &mut out);
    assert_eq!(out.len(), 1);
    assert!(
        d.line_capacity() <= sse::KEEP_CAPACITY,
        "{}",
        d.line_capacity()
    );
    assert!(
        d.data_capacity() <= sse::KEEP_CAPACITY,
        "{}",
        d.data_capacity()
    );
    // A small line and event: their buffers are kept for the next.
    d.feed(b"data: sm", &mut out);
    d.feed(b"all\n\n", &mut out);
    assert_eq!(out.len(), 2);
    assert!(d.line_capacity() > 0, "kept for reuse");
    assert!(d.data_capacity() > 0, "kept for reuse");
}

#[test]
fn an_empty_retry_is_ignored() {
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    d.feed(b"retry:\n\n", &mut out);
    assert_eq!(d.retry_ms(), None);
    d.feed(b"retry: 5\n\nretry:\n\nretry: \n\n", &mut out);
    assert_eq!(d.retry_ms(), Some(5));
}
