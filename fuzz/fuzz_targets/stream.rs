//! `ChunkDecoder` (and the `SseDecoder` under it) fed arbitrary bytes split at arbitrary points
//! yields exactly what it yields when fed the whole input at once, with the same last event id and
//! retry; also with a small event cap. Never a panic.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use toolgate::stream::{ChunkDecoder, SseDecoder};

#[derive(Debug)]
struct Input {
    bytes: Vec<u8>,
    cuts: Vec<usize>,
    cap: Option<usize>,
    twice: bool,
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let ncuts = u.int_in_range(0..=16u8)?;
        let mut cuts = Vec::new();
        for _ in 0..ncuts {
            cuts.push(u.arbitrary::<u16>()? as usize);
        }
        let cap = if u.arbitrary::<bool>()? {
            Some(u.int_in_range(1..=256usize)?)
        } else {
            None
        };
        let twice = u.arbitrary()?;
        let n = u.len();
        let bytes = u.bytes(n)?.to_vec();
        Ok(Input {
            bytes,
            cuts,
            cap,
            twice,
        })
    }
}

fn pieces<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| {
            if bytes.is_empty() {
                0
            } else {
                c % (bytes.len() + 1)
            }
        })
        .collect();
    points.sort_unstable();
    let mut out = Vec::new();
    let mut at = 0;
    for p in points {
        out.push(&bytes[at..p]);
        at = p;
    }
    out.push(&bytes[at..]);
    out
}

fuzz_target!(|input: Input| {
    let make = || match input.cap {
        Some(cap) => ChunkDecoder::with_max_event_bytes(cap),
        None => ChunkDecoder::new(),
    };
    let split = pieces(&input.bytes, &input.cuts);
    let rounds = if input.twice { 2 } else { 1 };

    let mut whole = make();
    let mut parts = make();
    for _ in 0..rounds {
        let mut a = Vec::new();
        whole.feed(&input.bytes, &mut a);
        let mut b = Vec::new();
        for p in &split {
            parts.feed(p, &mut b);
        }
        assert_eq!(a, b, "chunks differ before finish");
        whole.finish(&mut a);
        parts.finish(&mut b);
        assert_eq!(a, b, "chunks differ");
        assert_eq!(whole.last_event_id(), parts.last_event_id());
        assert_eq!(whole.retry_ms(), parts.retry_ms());
        for c in a.iter().flatten() {
            let _ = format!("{c:?}");
        }
        for e in a.iter().filter_map(|r| r.as_ref().err()) {
            assert_eq!(e.code.as_str(), "stream_error");
        }
    }

    // The event layer alone.
    let mut whole = match input.cap {
        Some(cap) => SseDecoder::with_max_event_bytes(cap),
        None => SseDecoder::new(),
    };
    let mut parts = whole.clone();
    let mut a = Vec::new();
    whole.feed(&input.bytes, &mut a);
    whole.finish(&mut a);
    let mut b = Vec::new();
    for p in &split {
        parts.feed(p, &mut b);
    }
    parts.finish(&mut b);
    assert_eq!(a, b, "sse events differ");
    assert_eq!(whole.buffered_len(), 0);
    assert_eq!(parts.buffered_len(), 0);
});
