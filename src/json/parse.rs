//! A strict RFC 8259 parser over `&str`: builds [`Value`]s, or skips values without allocating
//! (for walks that keep only part of a document). Errors carry serde_json's messages and its
//! positions (1-based line, 1-based byte column of the byte where parsing gave up).
//!
//! Nesting is bounded: a 128th level of arrays or objects is an error ("recursion limit
//! exceeded", as in serde_json), never a stack overflow.

use crate::prelude::*;
use alloc::borrow::Cow;

use super::value::{Map, Number, Value};
use crate::error::{Error, ErrorCode};

/// The nesting at which parsing stops (serde_json's limit: 127 levels are fine, 128 are not).
pub(crate) const MAX_DEPTH: u32 = 128;

/// What went wrong, with serde_json's wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Code {
    EofList,
    EofObject,
    EofString,
    EofValue,
    ExpectedColon,
    ExpectedListCommaOrEnd,
    ExpectedObjectCommaOrEnd,
    ExpectedIdent,
    ExpectedValue,
    InvalidEscape,
    InvalidNumber,
    ControlChar,
    KeyMustBeString,
    TrailingComma,
    TrailingCharacters,
    RecursionLimit,
}

impl Code {
    pub(crate) fn message(self) -> &'static str {
        crate::json::nth(MESSAGES, self as usize)
    }

    pub(crate) fn is_eof(self) -> bool {
        matches!(
            self,
            Code::EofList | Code::EofObject | Code::EofString | Code::EofValue
        )
    }
}

/// The messages of the syntax errors, in declaration order (`json::nth`).
const MESSAGES: &str = "EOF while parsing a list|EOF while parsing an object|\
                        EOF while parsing a string|EOF while parsing a value|expected `:`|\
                        expected `,` or `]`|expected `,` or `}`|expected ident|expected value|\
                        invalid escape|invalid number|\
                        control character (\\u0000-\\u001F) found while parsing a string|\
                        key must be a string|trailing comma|trailing characters|\
                        recursion limit exceeded";

/// A syntax error: its code and serde_json's position index (just past the offending byte, or the
/// input length at end of input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Syntax {
    pub(crate) code: Code,
    pub(crate) at: usize,
}

/// A failed parse; what failed is kept in the parser ([`Parser::syntax`]), so results carry no
/// error payload (a `PResult<()>` is a bool, a `PResult<Value>` no larger than a `Value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fail;

pub(crate) type PResult<T> = Result<T, Fail>;

/// Bytes that end the fast scan of a string: `"`, `\` and control characters.
#[inline(always)]
fn special(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// The end of the run of ordinary string bytes (none of them `special`) of `bytes` from `i`:
/// sixteen bytes at a time with wasm SIMD while none of them is special, then byte by byte. The
/// parser's string scan, and `write_str`'s (the bytes it escapes are the special ones).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub(super) fn scan(bytes: &[u8], mut i: usize) -> usize {
    use core::arch::wasm32::{
        u8x16_bitmask, u8x16_eq, u8x16_lt, u8x16_splat, v128, v128_load, v128_or,
    };
    while let Some(chunk) = bytes.get(i..i + 16) {
        // SAFETY: `chunk` is 16 readable bytes; `v128_load` allows any alignment.
        let v = unsafe { v128_load(chunk.as_ptr().cast::<v128>()) };
        let hits = v128_or(
            v128_or(
                u8x16_eq(v, u8x16_splat(b'"')),
                u8x16_eq(v, u8x16_splat(b'\\')),
            ),
            u8x16_lt(v, u8x16_splat(0x20)),
        );
        let mask = u8x16_bitmask(hits);
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 16;
    }
    while let Some(&b) = bytes.get(i) {
        if special(b) {
            break;
        }
        i += 1;
    }
    i
}

/// The end of the run of ordinary string bytes (none of them `special`) of `bytes` from `i`:
/// eight bytes at a time while none of them is special, then byte by byte.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
pub(super) fn scan(bytes: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let Ok(array) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let v = u64::from_le_bytes(array);
        let quote = v ^ (ONES * u64::from(b'"'));
        let backslash = v ^ (ONES * u64::from(b'\\'));
        let found = (v.wrapping_sub(ONES * 0x20) & !v)
            | (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash);
        let mask = found & HIGH;
        if mask != 0 {
            // The lowest flagged byte is exact (borrows only flag bytes above a real hit).
            return i + (mask.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&b) = bytes.get(i) {
        if special(b) {
            break;
        }
        i += 1;
    }
    i
}

/// The (line, column) of a position index, as serde_json counts them.
pub(crate) fn line_column(bytes: &[u8], at: usize) -> (usize, usize) {
    let before = bytes.get(..at.min(bytes.len())).unwrap_or_default();
    // One pass: the line feeds before `at`, and where the last line starts.
    let (mut line, mut start) = (1, 0);
    for (i, &b) in before.iter().enumerate() {
        if b == b'\n' {
            line += 1;
            start = i + 1;
        }
    }
    (line, before.len() - start)
}

/// A `parse_error` for a syntax error in `text`: "invalid JSON: ..." or "unexpected end of input:
/// ...", with the line and column.
pub(crate) fn to_error(text: &str, s: Syntax) -> Error {
    let prefix = if s.code.is_eof() {
        "unexpected end of input: "
    } else {
        "invalid JSON: "
    };
    let mut message = String::from(prefix);
    message.push_str(s.code.message());
    error_at(text.as_bytes(), s.at, message)
}

/// A `parse_error` with `message` at the line and column of position index `at` in `bytes`.
#[inline(never)]
pub(crate) fn error_at(bytes: &[u8], at: usize, message: String) -> Error {
    let (line, column) = line_column(bytes, at);
    Error {
        code: ErrorCode::ParseError,
        message,
        path: None,
        line: Some(line),
        column: Some(column),
    }
}

/// Parses a whole document.
pub(crate) fn parse_document(text: &str) -> crate::error::Result<Value> {
    let mut p = Parser::new(text);
    if let Ok(v) = p.parse_value() {
        if p.end().is_ok() {
            return Ok(v);
        }
    }
    Err(to_error(text, p.syntax()))
}

/// `Cow::into_owned`, spelled out: the copy goes through the `to_owned` the rest of the crate
/// links, where `into_owned` brings its own.
fn owned(s: Cow<'_, str>) -> String {
    match s {
        Cow::Borrowed(s) => s.to_owned(),
        Cow::Owned(s) => s,
    }
}

pub(crate) struct Parser<'a> {
    text: &'a str,
    pos: usize,
    depth: u32,
    /// The syntax error, once a method returned [`Fail`].
    error: Syntax,
    /// The entries of the objects being built, innermost last: each object's are moved out at
    /// its end into a list of exactly their number (`split_off` allocates for what it moves;
    /// tests/memory.rs would see it change). A list grown one push at a time keeps up to twice
    /// the room it holds, and a thread is mostly small objects: messages, tools, inputs.
    entries: Vec<(String, Value)>,
}

impl<'a> Parser<'a> {
    pub(crate) fn new(text: &'a str) -> Parser<'a> {
        Parser {
            text,
            pos: 0,
            depth: 0,
            error: Syntax {
                code: Code::EofValue,
                at: 0,
            },
            entries: Vec::new(),
        }
    }

    /// A parser over `text` that starts at `pos`, `depth` levels deep: a walk resumed where it
    /// stopped, on text that holds what came before `pos` and more after it.
    pub(crate) fn resume(text: &'a str, pos: usize, depth: u32) -> Parser<'a> {
        Parser {
            pos,
            depth,
            ..Parser::new(text)
        }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// The text between two positions.
    ///
    /// Every position the parser reaches is a char boundary: it moves past ASCII bytes only, but
    /// for a string's scan, which stops at an ASCII byte (`"`, `\`, a control) or the end.
    pub(crate) fn slice(&self, from: usize, to: usize) -> &'a str {
        debug_assert!(self.text.is_char_boundary(from) && self.text.is_char_boundary(to));
        let bytes = self.text.as_bytes().get(from..to).unwrap_or_default();
        // SAFETY: `from` and `to` are char boundaries of `text` (see above), so `bytes` is whole
        // UTF-8 sequences.
        unsafe { core::str::from_utf8_unchecked(bytes) }
    }

    fn byte(&self, i: usize) -> Option<u8> {
        self.text.as_bytes().get(i).copied()
    }

    /// The syntax error after a method returned [`Fail`].
    pub(crate) fn syntax(&self) -> Syntax {
        self.error
    }

    /// Fails at the byte `at_byte` (serde_json's position is just past it).
    fn err(&mut self, code: Code, at_byte: usize) -> Fail {
        self.fail(code, at_byte + 1)
    }

    /// Fails at the end of the input.
    fn eof(&mut self, code: Code) -> Fail {
        self.fail(code, self.text.len())
    }

    fn fail(&mut self, code: Code, at: usize) -> Fail {
        self.error = Syntax { code, at };
        Fail
    }

    /// Skips whitespace; the next byte, if any.
    pub(crate) fn ws(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.pos) {
            if matches!(b, b' ' | b'\n' | b'\t' | b'\r') {
                self.pos += 1;
            } else {
                return Some(b);
            }
        }
        None
    }

    /// Nothing but whitespace until the end.
    pub(crate) fn end(&mut self) -> PResult<()> {
        match self.ws() {
            None => Ok(()),
            Some(_) => Err(self.err(Code::TrailingCharacters, self.pos)),
        }
    }

    /// Consumes the `[` or `{` at the current position, one level deeper.
    pub(crate) fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth >= MAX_DEPTH {
            return Err(self.err(Code::RecursionLimit, self.pos));
        }
        self.pos += 1;
        Ok(())
    }

    /// Call after the closing `]` or `}` was consumed.
    pub(crate) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// After `[` (`first`): `true` when an element follows; after an element: `true` when `,`
    /// and another element follow. `false` when the array ended (`]` consumed).
    pub(crate) fn array_item(&mut self, first: bool) -> PResult<bool> {
        // What is wrong at the current byte: one error made for both.
        let code = match self.ws() {
            None => return Err(self.eof(Code::EofList)),
            Some(b']') => {
                self.pos += 1;
                self.leave();
                return Ok(false);
            }
            Some(_) if first => return Ok(true),
            Some(b',') => {
                self.pos += 1;
                match self.ws() {
                    None => return Err(self.eof(Code::EofValue)),
                    Some(b']') => Code::TrailingComma,
                    Some(_) => return Ok(true),
                }
            }
            Some(_) => Code::ExpectedListCommaOrEnd,
        };
        Err(self.err(code, self.pos))
    }

    /// After `{` (`first`): the first key (its `:` consumed); after a member's value: the next
    /// key. `None` when the object ended (`}` consumed).
    pub(crate) fn object_member(&mut self, first: bool) -> PResult<Option<Cow<'a, str>>> {
        self.object_key(first, true)
    }

    /// The first (`first`) or next key of an object, its `:` consumed; `None` at `}`. Without
    /// `keep` the key is only checked, never copied.
    fn object_key(&mut self, first: bool, keep: bool) -> PResult<Option<Cow<'a, str>>> {
        // What is wrong at the current byte, if anything: one error made for all of them.
        let wrong = match self.ws() {
            None => return Err(self.eof(Code::EofObject)),
            Some(b'}') => {
                self.pos += 1;
                self.leave();
                return Ok(None);
            }
            Some(b'"') if first => None,
            Some(b',') if !first => {
                self.pos += 1;
                match self.ws() {
                    None => return Err(self.eof(Code::EofValue)),
                    Some(b'"') => None,
                    Some(b'}') => Some(Code::TrailingComma),
                    Some(_) => Some(Code::KeyMustBeString),
                }
            }
            Some(_) if first => Some(Code::KeyMustBeString),
            Some(_) => Some(Code::ExpectedObjectCommaOrEnd),
        };
        if let Some(code) = wrong {
            return Err(self.err(code, self.pos));
        }
        let key = self.string(keep)?;
        match self.ws() {
            None => Err(self.eof(Code::EofObject)),
            Some(b':') => {
                self.pos += 1;
                Ok(Some(key))
            }
            Some(_) => Err(self.err(Code::ExpectedColon, self.pos)),
        }
    }

    /// Parses one value.
    pub(crate) fn parse_value(&mut self) -> PResult<Value> {
        self.value(true)
    }

    /// Checks one value and moves past it, allocating nothing.
    pub(crate) fn skip_value(&mut self) -> PResult<()> {
        self.value(false).map(drop)
    }

    /// One value. Without `keep` it is only checked (a string's `\u` escapes only for their hex
    /// digits, as serde_json skips them), nothing is allocated, and the result is a placeholder.
    fn value(&mut self, keep: bool) -> PResult<Value> {
        match self.ws() {
            None => Err(self.eof(Code::EofValue)),
            Some(b'{') => {
                self.enter()?;
                let start = self.entries.len();
                // One call for the first key and the next ones.
                let mut first = true;
                while let Some(k) = self.object_key(first, keep)? {
                    first = false;
                    let value = self.value(keep)?;
                    if keep {
                        self.entries.push((owned(k), value));
                    }
                }
                Ok(Value::Object(Map::from_entries(
                    self.entries.split_off(start),
                )))
            }
            Some(b'[') => {
                self.enter()?;
                let mut items = Vec::new();
                // One call for the first element and the next ones.
                let mut first = true;
                while self.array_item(first)? {
                    first = false;
                    let value = self.value(keep)?;
                    if keep {
                        items.push(value);
                    }
                }
                Ok(Value::Array(items))
            }
            Some(b'"') => {
                let s = self.string(keep)?;
                Ok(if keep {
                    Value::String(owned(s))
                } else {
                    Value::Null
                })
            }
            Some(b @ (b't' | b'f' | b'n')) => {
                // One call for the three literals; the value made once the word is checked.
                let word: &[u8] = match b {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                self.literal(word)?;
                Ok(if b == b'n' {
                    Value::Null
                } else {
                    Value::Bool(b == b't')
                })
            }
            Some(b'-' | b'0'..=b'9') => {
                let n = self.number()?;
                Ok(if keep {
                    Value::Number(Number::from_valid(n))
                } else {
                    Value::Null
                })
            }
            Some(_) => Err(self.err(Code::ExpectedValue, self.pos)),
        }
    }

    fn literal(&mut self, word: &[u8]) -> PResult<()> {
        for &expected in word {
            match self.byte(self.pos) {
                None => return Err(self.eof(Code::EofValue)),
                Some(b) if b == expected => self.pos += 1,
                Some(_) => return Err(self.err(Code::ExpectedIdent, self.pos)),
            }
        }
        Ok(())
    }

    fn digits(&mut self) -> PResult<()> {
        match self.byte(self.pos) {
            None => return Err(self.eof(Code::EofValue)),
            Some(b'0'..=b'9') => self.pos += 1,
            Some(_) => return Err(self.err(Code::InvalidNumber, self.pos)),
        }
        while let Some(b'0'..=b'9') = self.byte(self.pos) {
            self.pos += 1;
        }
        Ok(())
    }

    /// A number's text: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn number(&mut self) -> PResult<&'a str> {
        let start = self.pos;
        if self.byte(self.pos) == Some(b'-') {
            self.pos += 1;
        }
        match self.byte(self.pos) {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.byte(self.pos) {
                    return Err(self.err(Code::InvalidNumber, self.pos));
                }
            }
            _ => self.digits()?,
        }
        if self.byte(self.pos) == Some(b'.') {
            self.pos += 1;
            self.digits()?;
        }
        if let Some(b'e' | b'E') = self.byte(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.byte(self.pos) {
                self.pos += 1;
            }
            self.digits()?;
        }
        Ok(self.slice(start, self.pos))
    }

    /// Four hex digits at `at` (serde_json reports a bad one after all four).
    fn hex4(&mut self, at: usize) -> PResult<u16> {
        if at + 4 > self.text.len() {
            return Err(self.eof(Code::EofString));
        }
        let mut n: u16 = 0;
        for i in at..at + 4 {
            let digit = match self.byte(i) {
                Some(b @ b'0'..=b'9') => b - b'0',
                Some(b @ b'a'..=b'f') => b - b'a' + 10,
                Some(b @ b'A'..=b'F') => b - b'A' + 10,
                _ => return Err(self.err(Code::InvalidEscape, at + 3)),
            };
            n = (n << 4) | u16::from(digit);
        }
        Ok(n)
    }

    /// A string (at its opening quote), borrowed when it has no escapes. Without `keep` it is only
    /// checked (`\u` escapes for their hex digits alone) and never copied.
    pub(crate) fn string(&mut self, keep: bool) -> PResult<Cow<'a, str>> {
        let start = self.pos + 1;
        let mut i = start;
        // Once an escape is met (and `keep`): the unescaped text so far.
        let mut out: Option<String> = None;
        // What is wrong, and where (see `fail`): one error made for all of them (but `\u`'s).
        let (code, at) = loop {
            let run = scan(self.text.as_bytes(), i);
            if let Some(out) = &mut out {
                out.push_str(self.slice(i, run));
            }
            i = run;
            match self.byte(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok(match out {
                        Some(mut out) => {
                            // Grown by doubling: up to twice the text's length kept for good.
                            out.shrink_to_fit();
                            Cow::Owned(out)
                        }
                        None => Cow::Borrowed(self.slice(start, i)),
                    });
                }
                None => break (Code::EofString, self.text.len()),
                Some(b'\\') => {}
                Some(_) => break (Code::ControlChar, i + 1),
            }
            // At a backslash: the character and the escape's length.
            let (c, len) = match self.byte(i + 1) {
                None => break (Code::EofString, self.text.len()),
                Some(b'"') => ('"', 2),
                Some(b'\\') => ('\\', 2),
                Some(b'/') => ('/', 2),
                Some(b'b') => ('\u{8}', 2),
                Some(b'f') => ('\u{c}', 2),
                Some(b'n') => ('\n', 2),
                Some(b'r') => ('\r', 2),
                Some(b't') => ('\t', 2),
                Some(b'u') if keep => {
                    let (c, next) = self.unicode_escape(i)?;
                    (c, next - i)
                }
                Some(b'u') => {
                    self.hex4(i + 2)?;
                    (' ', 6)
                }
                Some(_) => break (Code::InvalidEscape, i + 2),
            };
            if keep {
                out.get_or_insert_with(|| {
                    let mut s = String::with_capacity(i - start + 16);
                    s.push_str(self.slice(start, i));
                    s
                })
                .push(c);
            }
            i += len;
        };
        Err(self.fail(code, at))
    }

    /// A `\uXXXX` escape (or a surrogate pair of them) at `i` (the backslash): the character and
    /// the position after it. A lone surrogate reads as U+FFFD, as a browser's `TextEncoder` writes
    /// the string `JSON.parse` makes of it: JS servers write them (`JSON.stringify` of a text cut
    /// inside a pair, a streamed delta ending in half an emoji), and one must not make a whole
    /// thread or reply unreadable.
    fn unicode_escape(&mut self, i: usize) -> PResult<(char, usize)> {
        let n = self.hex4(i + 2)?;
        let (mut c, mut after) = (u32::from(n), i + 6);
        if matches!(n, 0xD800..=0xDBFF)
            && self.byte(after) == Some(b'\\')
            && self.byte(after + 1) == Some(b'u')
        {
            // Any other escape after a leading surrogate is read on its own, next.
            let n2 = self.hex4(after + 2)?;
            if matches!(n2, 0xDC00..=0xDFFF) {
                c = ((c - 0xD800) << 10 | (u32::from(n2) - 0xDC00)) + 0x1_0000;
                after += 6;
            }
        }
        // A surrogate alone is no `char`: U+FFFD. (One conversion for both.)
        Ok((char::from_u32(c).unwrap_or('\u{FFFD}'), after))
    }
}
