//! Errors with stable string codes.
//!
//! Every failure the library can report is an [`Error`]: a stable machine code ([`ErrorCode`], whose
//! string form is part of the public API and crosses to JS as `error.code`), a human message, and, where
//! it helps, the place in the input where it went wrong (a JSON path such as `$.messages[3].tools[0]`,
//! or a line and column).

use crate::prelude::*;
use core::fmt;

/// The stable codes. Their string forms (`as_str`) never change once released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The input is not JSON, or not the shape of a thread / message / chunk.
    ParseError,
    /// An operation that needs a suspended thread was given one that is not suspended.
    NotSuspended,
    /// A callId that is not gated on the suspended tail.
    UnknownCallId,
    /// A decision payload with nothing in it.
    EmptyDecisions,
    /// An argument of the wrong type or value (e.g. an options object).
    InvalidArgument,
    /// A command that the client's current state does not allow.
    InvalidState,
    /// `send` while the conversation is suspended: the composer is locked.
    InputLocked,
    /// A request is already in flight for this thread.
    Busy,
    /// The server refused the operation with HTTP 409.
    Conflict,
    /// The server answered with an unexpected HTTP status.
    HttpStatus,
    /// The request never got an answer (connection refused, dropped, reset).
    Network,
    /// The request took longer than the configured timeout.
    Timeout,
    /// The server answered 401.
    Unauthorized,
    /// The paused run was abandoned by the server (grace window passed).
    Expired,
    /// A malformed chunk in an event stream.
    StreamError,
    /// The request was aborted by the caller.
    Aborted,
}

impl ErrorCode {
    /// Every code, for documentation and exhaustive tests.
    pub const ALL: [ErrorCode; 16] = [
        ErrorCode::ParseError,
        ErrorCode::NotSuspended,
        ErrorCode::UnknownCallId,
        ErrorCode::EmptyDecisions,
        ErrorCode::InvalidArgument,
        ErrorCode::InvalidState,
        ErrorCode::InputLocked,
        ErrorCode::Busy,
        ErrorCode::Conflict,
        ErrorCode::HttpStatus,
        ErrorCode::Network,
        ErrorCode::Timeout,
        ErrorCode::Unauthorized,
        ErrorCode::Expired,
        ErrorCode::StreamError,
        ErrorCode::Aborted,
    ];

    /// The stable string form, e.g. `"parse_error"`.
    pub const fn as_str(self) -> &'static str {
        crate::json::nth(CODES, self as usize)
    }
}

/// The codes' string forms, in declaration order (`json::nth`).
const CODES: &str = "parse_error|not_suspended|unknown_call_id|empty_decisions|invalid_argument|\
                     invalid_state|input_locked|busy|conflict|http_status|network|timeout|\
                     unauthorized|expired|stream_error|aborted";

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error: a stable code, a message for humans, and where in the input it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: ErrorCode,
    pub message: String,
    /// A JSON path into the input, e.g. `$.messages[2].tools[0].callId`.
    pub path: Option<String>,
    /// 1-based line and column in the input text, when known.
    pub line: Option<usize>,
    pub column: Option<usize>,
}

impl Error {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error::of(code, message.into())
    }

    /// [`Error::new`], not generic: one copy of the construction.
    #[inline(never)]
    fn of(code: ErrorCode, message: String) -> Self {
        Error {
            code,
            message,
            path: None,
            line: None,
            column: None,
        }
    }

    pub fn with_path(self, path: impl Into<String>) -> Self {
        self.path_of(path.into())
    }

    /// [`Error::with_path`], not generic: one copy of the move.
    #[inline(never)]
    fn path_of(mut self, path: String) -> Self {
        self.path = Some(path);
        self
    }

    // Not inlined: one copy of the move.
    #[inline(never)]
    pub fn at(mut self, line: usize, column: usize) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
    }

    pub fn parse(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::ParseError, message)
    }
}

/// `code: message[ at path][ (line l, column c)]`, written piece by piece (no integer formatting
/// from `core::fmt`).
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = self.code.as_str().to_owned();
        s.push_str(": ");
        s.push_str(&self.message);
        if let Some(path) = &self.path {
            s.push_str(" at ");
            s.push_str(path);
        }
        if let (Some(line), Some(column)) = (self.line, self.column) {
            s.push_str(" (line ");
            crate::json::write_u64(&mut s, line as u64);
            s.push_str(", column ");
            crate::json::write_u64(&mut s, column as u64);
            s.push(')');
        }
        f.write_str(&s)
    }
}

impl core::error::Error for Error {}

pub type Result<T, E = Error> = core::result::Result<T, E>;
