//! Small JSON helpers shared by the core modules: turning `serde_json` errors into [`Error`]s with a
//! line, a column and a path; describing a value's type for messages; checking UTF-8 without copying.

use serde_json::Value;

use crate::error::Error;

/// A `parse_error` from a `serde_json` error, with the line and column when serde_json knows them
/// (it reports 0 for errors that happened outside any input text). The message is serde_json's own,
/// without its trailing " at line L column C" (those travel in the fields instead).
pub(crate) fn from_serde(err: &serde_json::Error) -> Error {
    let full = err.to_string();
    let (line, column) = (err.line(), err.column());
    let message = if line > 0 {
        let suffix = format!(" at line {line} column {column}");
        match full.strip_suffix(suffix.as_str()) {
            Some(stripped) => stripped.to_owned(),
            None => full,
        }
    } else {
        full
    };
    let message = if err.is_eof() {
        format!("unexpected end of input: {message}")
    } else if err.is_syntax() {
        format!("invalid JSON: {message}")
    } else {
        message
    };
    let error = Error::parse(message);
    if line > 0 {
        error.at(line, column)
    } else {
        error
    }
}

/// The input as `&str` without copying; invalid UTF-8 is a `parse_error` pointing at the first bad byte
/// (1-based line, 1-based byte column, like serde_json).
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, Error> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(err) => {
            let at = err.valid_up_to();
            let before = bytes.get(..at).unwrap_or_default();
            let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
            let line_start = before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let column = at - line_start + 1;
            let message = if err.error_len().is_none() {
                "unexpected end of input: incomplete UTF-8 sequence".to_owned()
            } else {
                format!("invalid UTF-8 at byte {at}")
            };
            Err(Error::parse(message).at(line, column))
        }
    }
}

/// "a string", "an array", ... for messages such as "expected an object, got a string".
pub(crate) fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Like [`describe`], from the first character of a raw JSON value.
pub(crate) fn describe_raw(raw: &str) -> &'static str {
    match raw.as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't') | Some(b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

/// `true` for `None`, empty and whitespace-only strings.
pub(crate) fn is_blank(s: Option<&str>) -> bool {
    s.map_or(true, |s| s.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_errors_lose_the_position_suffix_but_keep_the_position() {
        let err = serde_json::from_str::<Value>("{\n  \"a\": tru }").unwrap_err();
        let e = from_serde(&err);
        assert_eq!(e.code, crate::error::ErrorCode::ParseError);
        assert_eq!((e.line, e.column), (Some(2), Some(11)));
        assert_eq!(e.message, "invalid JSON: expected ident");
        let err = serde_json::from_str::<Value>("[1,").unwrap_err();
        assert!(from_serde(&err)
            .message
            .starts_with("unexpected end of input: "));
    }

    #[test]
    fn utf8_errors_point_at_the_first_bad_byte() {
        assert_eq!(utf8(b"ok").unwrap(), "ok");
        let e = utf8(b"ab\ncd\xffef").unwrap_err();
        assert_eq!((e.line, e.column), (Some(2), Some(3)));
        assert_eq!(e.message, "invalid UTF-8 at byte 5");
        let e = utf8("é".as_bytes().get(..1).unwrap()).unwrap_err();
        assert_eq!((e.line, e.column), (Some(1), Some(1)));
        assert!(e.message.starts_with("unexpected end of input"));
    }

    #[test]
    fn descriptions() {
        assert_eq!(describe_raw("{}"), "an object");
        assert_eq!(describe_raw("-1"), "a number");
        assert_eq!(describe_raw("false"), "a boolean");
        assert_eq!(describe(&Value::Null), "null");
        assert!(is_blank(Some(" \t")) && is_blank(None) && !is_blank(Some(" x ")));
    }
}
