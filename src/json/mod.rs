//! toolgate's own JSON: a small value model ([`Value`], an order-preserving [`Map`], [`Number`]s kept
//! as their source text), a strict parser with serde_json's error messages and positions and a depth
//! limit, a non-allocating skipper for walks that keep only part of a document, and a writer.
//!
//! Also the helpers the core modules share: checking UTF-8 without copying, describing a value's
//! type for messages.

mod parse;
mod value;
mod write;

pub(crate) use value::Keys;
pub use value::{Map, Number, Value};
pub use write::ToJson;

pub(crate) use parse::{to_error, Fail, Parser};
pub(crate) use write::ToJsonDyn;
pub(crate) use write::{u64_string, write_str, write_u64, write_value, Obj};

use crate::error::Error;
use crate::prelude::*;

/// The input as `&str` without copying; invalid UTF-8 is a `parse_error` pointing at the first bad byte
/// (1-based line, 1-based byte column, like serde_json).
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, Error> {
    let Some((at, incomplete)) = utf8_error(bytes) else {
        // SAFETY: `utf8_error` found no error, so `bytes` is valid UTF-8 (see its proof).
        return Ok(unsafe { core::str::from_utf8_unchecked(bytes) });
    };
    // One copy of the text, whichever it is.
    let mut message = if incomplete {
        "unexpected end of input: incomplete UTF-8 sequence"
    } else {
        "invalid UTF-8 at byte "
    }
    .to_owned();
    if !incomplete {
        write_u64(&mut message, at as u64);
    }
    // Just past the first bad byte (never a line feed), as for a syntax error there.
    Err(parse::error_at(bytes, at + 1, message))
}

/// `bytes` as `&str` when it is valid UTF-8 (what `core::str::from_utf8(bytes).ok()` gives, with
/// the crate's own check: core's validator is not linked in).
pub(crate) fn str_of(bytes: &[u8]) -> Option<&str> {
    match utf8_error(bytes) {
        // SAFETY: `utf8_error` found no error, so `bytes` is valid UTF-8 (see its proof).
        None => Some(unsafe { core::str::from_utf8_unchecked(bytes) }),
        Some(_) => None,
    }
}

/// `None` when `bytes` is valid UTF-8; else what `core::str::from_utf8` reports: the length of the
/// valid prefix, and whether the input ends inside a sequence (`error_len() == None`). ASCII is
/// skipped a block at a time (16 bytes with wasm SIMD, 8 elsewhere); each other sequence is checked
/// against the well-formed byte sequences of the Unicode standard (table 3-7), as core does: the
/// lead byte fixes the length and the range of the second byte (no overlong forms, surrogates or
/// code points past U+10FFFF), later bytes are continuation bytes (0x80-0xBF). The error is at the
/// sequence's lead byte; the input "ends inside a sequence" when it runs out while every byte of
/// the sequence so far was right (core's `error_len() == None`). A test compares it with core.
pub(crate) fn utf8_error(bytes: &[u8]) -> Option<(usize, bool)> {
    let mut i = 0;
    loop {
        i = ascii_end(bytes, i);
        let lead = *bytes.get(i)?;
        let (len, low, high) = match lead {
            0xC2..=0xDF => (2, 0x80, 0xBF),
            0xE0 => (3, 0xA0, 0xBF),
            0xE1..=0xEC | 0xEE..=0xEF => (3, 0x80, 0xBF),
            0xED => (3, 0x80, 0x9F),
            0xF0 => (4, 0x90, 0xBF),
            0xF1..=0xF3 => (4, 0x80, 0xBF),
            0xF4 => (4, 0x80, 0x8F),
            _ => return Some((i, false)),
        };
        let (mut low, mut high) = (low, high);
        for k in 1..len {
            let Some(&b) = bytes.get(i + k) else {
                return Some((i, true));
            };
            if b < low || b > high {
                return Some((i, false));
            }
            (low, high) = (0x80, 0xBF);
        }
        i += len;
    }
}

/// The index of the first non-ASCII byte at or after `i` (or the length).
fn ascii_end(bytes: &[u8], mut i: usize) -> usize {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    while let Some(chunk) = bytes.get(i..i + 16) {
        use core::arch::wasm32::{u8x16_bitmask, v128, v128_load};
        // SAFETY: `chunk` is 16 readable bytes; `v128_load` allows any alignment.
        let high = u8x16_bitmask(unsafe { v128_load(chunk.as_ptr().cast::<v128>()) });
        if high != 0 {
            return i + high.trailing_zeros() as usize;
        }
        i += 16;
    }
    // With SIMD only a tail of under 16 bytes is left: byte by byte is enough.
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    while let Some(chunk) = bytes.get(i..i + 8) {
        let Ok(array) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let high = u64::from_le_bytes(array) & 0x8080_8080_8080_8080;
        if high != 0 {
            return i + (high.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(b) = bytes.get(i) {
        if !b.is_ascii() {
            break;
        }
        i += 1;
    }
    i
}

/// The `n`th (from 0) of the `|`-separated names of `list` (`""` past the last). The wire forms
/// of the crate's enums and its other lists of names are kept this way: one text, where a
/// `match` to string literals (or an array of them) puts a table of pointers and lengths beside
/// the names, which gzip barely shrinks (about 0.2 KiB of the wasm, gzipped, in all).
pub(crate) const fn nth(list: &'static str, n: usize) -> &'static str {
    let mut rest = list.as_bytes();
    let mut n = n;
    // Past `n` separators.
    while n > 0 {
        match rest {
            [b'|', tail @ ..] => {
                n -= 1;
                rest = tail;
            }
            [_, tail @ ..] => rest = tail,
            [] => break,
        }
    }
    // The name: up to the next separator.
    let mut len = 0;
    let mut tail = rest;
    while let [b, t @ ..] = tail {
        if *b == b'|' {
            break;
        }
        len += 1;
        tail = t;
    }
    // SAFETY: the first `len` bytes of `rest`, which holds them (they were counted in it); and
    // `list` is a `&str` cut there only just before or after a `|` (ASCII) or at its end: whole
    // UTF-8 sequences.
    unsafe { core::str::from_utf8_unchecked(core::slice::from_raw_parts(rest.as_ptr(), len)) }
}

/// The index of `name` among the `|`-separated names of `list` (a name that holds a `|` is
/// never found).
pub(crate) fn index_of(list: &'static str, name: &str) -> Option<usize> {
    // One pass over the list (a chunk of a type toolgate skips, read for every such chunk of a
    // stream, walks it once); the lists have no empty name.
    list.as_bytes()
        .split(|b| *b == b'|')
        .position(|t| t == name.as_bytes() && !t.is_empty())
}

/// A string as a JSON string literal, for messages: `"id"`.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::new();
    write_str(&mut out, s);
    out
}

/// "a string", "an array", ... for messages such as "expected an object, got a string".
pub(crate) fn describe(value: &Value) -> &'static str {
    let n = match value {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    };
    nth(KINDS, n)
}

/// What [`describe`] says of each kind of value, in `Value`'s order (`nth`).
const KINDS: &str = "null|a boolean|a number|a string|an array|an object";

/// Like [`describe`], from the first byte of a JSON value.
pub(crate) fn describe_byte(first: Option<u8>) -> &'static str {
    let n = match first {
        Some(b'{') => 5,
        Some(b'[') => 4,
        Some(b'"') => 3,
        Some(b't') | Some(b'f') => 1,
        Some(b'n') => 0,
        _ => 2,
    };
    nth(KINDS, n)
}

/// `true` for `None`, empty and whitespace-only strings: what `s.trim().is_empty()` says (the
/// same set as `char::is_whitespace`, Unicode's White_Space, spelled out: smaller than core's
/// table lookup), without `str::trim`'s two-ended walk. A test checks every char.
pub(crate) fn is_blank(s: Option<&str>) -> bool {
    let Some(s) = s else { return true };
    // Each char's code point from its UTF-8 bytes (`s` is valid UTF-8: a lead byte below 0xE0 has
    // one continuation byte, below 0xF0 two); no blank char takes four.
    let mut b = s.as_bytes();
    loop {
        let (c, len) = match *b {
            [] => return true,
            [x, ..] if x < 0x80 => (u32::from(x), 1),
            [x, y, ..] if x < 0xE0 => (u32::from(x & 0x1F) << 6 | u32::from(y & 0x3F), 2),
            [x, y, z, ..] if x < 0xF0 => (
                u32::from(x & 0x0F) << 12 | u32::from(y & 0x3F) << 6 | u32::from(z & 0x3F),
                3,
            ),
            _ => return false,
        };
        if !matches!(
            c,
            0x09..=0x0D
                | 0x20
                | 0x85
                | 0xA0
                | 0x1680
                | 0x2000..=0x200A
                | 0x2028
                | 0x2029
                | 0x202F
                | 0x205F
                | 0x3000
        ) {
            return false;
        }
        b = b.get(len..).unwrap_or_default();
    }
}

/// A 64-bit hash of `bytes`, a word at a time. Each step is a bijection of the state for a given
/// word, so two texts of one length that differ in one word never hash alike; any other two, by
/// chance, one time in 2^64.
pub(crate) fn text_hash(bytes: &[u8]) -> u64 {
    let step = |h: u64, w: u64| (h.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    let mut h = bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        h = step(h, u64::from_le_bytes(w.try_into().unwrap_or_default()));
    }
    for &b in words.remainder() {
        h = step(h, u64::from(b));
    }
    h
}

/// `map[key] = value` for a string value (one copy of the string's allocation for every call
/// site).
#[inline(never)]
pub(crate) fn put_str(map: &mut Map, key: &str, value: &str) {
    put(map, key, Value::from(value));
}

/// `map[key] = value` (one copy of the key's allocation for every call site); the key copied
/// only when it is new.
#[inline(never)]
pub(crate) fn put(map: &mut Map, key: &str, value: Value) {
    match map.get_mut(key) {
        Some(slot) => *slot = value,
        None => map.append(key.to_owned(), value),
    }
}

#[cfg(test)]
mod tests;
