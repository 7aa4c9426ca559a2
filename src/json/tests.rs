//! The parser and writer against serde_json as the oracle.

use super::*;

fn serde(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    serde_json::from_str(text)
}

/// Same verdict as serde_json, the same position on errors, the same value on success.
fn agree(text: &str) {
    let ours = Value::parse(text);
    let theirs = serde(text);
    match (&ours, &theirs) {
        (Ok(v), Ok(t)) => {
            let back: serde_json::Value = serde_json::from_str(&v.to_json_string()).unwrap();
            assert_eq!(&back, t, "{text:?}");
        }
        (Err(e), Err(t)) => {
            assert_eq!(
                (e.line, e.column),
                (Some(t.line()), Some(t.column())),
                "{text:?}: {e} vs {t}"
            );
            let msg = t.to_string();
            let core = e.message.split(": ").nth(1).unwrap_or_default();
            assert!(msg.starts_with(core), "{text:?}: {e} vs {t}");
        }
        // On purpose: a lone surrogate escape reads as U+FFFD (`lone_surrogates_read_as_u_fffd`).
        (Ok(_), Err(t))
            if t.to_string().contains("surrogate")
                || t.to_string().contains("end of hex escape") => {}
        _ => panic!("{text:?}: {ours:?} vs {theirs:?}"),
    }
    // The skipper agrees with the parser.
    let mut p = Parser::new(text);
    let skipped = p.skip_value().and_then(|()| p.end());
    assert_eq!(skipped.is_ok(), ours.is_ok(), "{text:?}");
}

#[test]
fn lone_surrogates_read_as_u_fffd() {
    for (text, want) in [
        (r#""\ud83d""#, "\u{FFFD}"),
        (r#""\ude00""#, "\u{FFFD}"),
        (r#""\ud83dx""#, "\u{FFFD}x"),
        (r#""\ud83d\n""#, "\u{FFFD}\n"),
        (r#""\ud83d\u0041""#, "\u{FFFD}A"),
        (r#""\ud83d\ud83d\ude00""#, "\u{FFFD}\u{1F600}"),
        (r#""\ude00\ud83d""#, "\u{FFFD}\u{FFFD}"),
        (r#""a\ud83d""#, "a\u{FFFD}"),
        (r#""\ud83d\ude00""#, "\u{1F600}"),
    ] {
        let value = Value::parse(text).ok();
        assert_eq!(value.as_ref().and_then(Value::as_str), Some(want), "{text}");
    }
    // What follows a leading surrogate is still read, errors and all.
    for bad in [
        r#""\ud83d\u12g4""#,
        r#""\ud83d\x""#,
        r#""\ud83d"#,
        r#""\ud83d\u00"#,
    ] {
        assert!(Value::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn agrees_with_serde_json() {
    let cases = [
        "",
        " ",
        "null",
        "true",
        "false",
        "tru",
        "nul",
        "nulx",
        "0",
        "-0",
        "01",
        "-",
        "1.",
        "1.5",
        "1e5",
        "1E+5",
        "1e-5",
        "1e",
        "-1.25e-3",
        "12345678901234567890123",
        "\"\"",
        "\"abc\"",
        "\"a\\nb\"",
        "\"\\u00e9\"",
        "\"\\ud83d\\ude00\"",
        "\"\\ud83d\"",
        "\"\\ude00\"",
        "\"\\ud83dx\"",
        "\"\\ud83d\\n\"",
        "\"\\x\"",
        "\"\\u12g4\"",
        "\"a\u{1}b\"",
        "\"abc",
        "\"ab\\",
        "[]",
        "[1,2]",
        "[1,]",
        "[1 2]",
        "[",
        "[1",
        "[1,",
        "{}",
        "{\"a\":1}",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{\"a\":}",
        "{1:2}",
        "{",
        "{\"a\"",
        "{\"a\":1",
        "{\"a\":1,",
        "{\"a\":1 \"b\":2}",
        "[]x",
        "[] ",
        "\n\n  [1,\n  2,\n  x]",
        "{\"a\":[{\"b\":null}]}",
        "{\"a\":1,\"a\":2}",
        "\"é\"",
        "[\"é\", tru]",
        "{\n  \"a\": tru }",
        "not json",
        "[1,2,3]",
        "\"\\/\\b\\f\\r\\t\\\"\\\\\"",
        "{\"k\\u0061\":true}",
        "[-]",
        "[0x1]",
        "[.5]",
        "[1.e3]",
        "[+1]",
        "[\u{7f}]",
        "\"\u{7f}\"",
        "{,\"a\":1}",
        "{,}",
        "{\"a\":1,,\"b\":2}",
        "[,1]",
        "[1,,2]",
        "\"\\u00E9\"",
        "\"\\uD83D\\uDE00\"",
        "\"\\uDBFF\\uDFFF\"",
        "\"\\uD800\\uDC00\"",
        "\"\\uabcd\\uABCD\\u0F0f\"",
        "\"\\u00eG\"",
        "\"\\u00E\"",
        "{\"\\uD83D\\uDE00\":[\"\\u00C9\"]}",
    ];
    for text in cases {
        agree(text);
    }
}

#[test]
fn depth_limit_matches_serde_json() {
    for depth in [1, 126, 127, 128, 129, 5000] {
        let text = "[".repeat(depth) + &"]".repeat(depth);
        agree(&text);
        let text = "{\"a\":".repeat(depth) + "1" + &"}".repeat(depth);
        agree(&text);
    }
    // Unclosed deep nesting: an error, never a stack overflow.
    let e = Value::parse(&"[".repeat(100_000)).unwrap_err();
    assert!(e.message.contains("recursion limit"), "{e}");
}

#[test]
fn numbers_keep_their_text_and_strings_escape_like_serde_json() {
    let v = Value::parse(r#"{"n":1.50,"big":123456789012345678901234567890,"e":1E+2}"#).unwrap();
    assert_eq!(
        v.to_json_string(),
        r#"{"n":1.50,"big":123456789012345678901234567890,"e":1E+2}"#
    );
    assert_eq!(
        v.get("n").and_then(Value::as_number).map(Number::as_str),
        Some("1.50")
    );
    let s: String = (0u8..0x80).map(char::from).collect::<String>() + "é\u{2028}😀";
    let ours = Value::from(s.as_str()).to_json_string();
    assert_eq!(ours, serde_json::to_string(&s).unwrap());
    assert_eq!(Value::parse(&ours).unwrap(), Value::from(s.as_str()));
}

#[test]
fn objects_keep_order_and_compare_as_json() {
    let a = Value::parse(r#"{"b":1,"a":[true,null]}"#).unwrap();
    let b = Value::parse(r#"{"a":[true,null],"b":1}"#).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.to_json_string(), r#"{"b":1,"a":[true,null]}"#);
    assert_ne!(a, Value::parse(r#"{"a":[true,null],"b":2}"#).unwrap());
    // A repeated key: the last wins.
    let d = Value::parse(r#"{"a":1,"a":2}"#).unwrap();
    assert_eq!(
        d.get("a").and_then(Value::as_number).map(Number::as_str),
        Some("2")
    );
    let mut m = d.as_object().cloned().unwrap();
    assert_eq!(
        m.remove("a")
            .and_then(|v| v.as_number().cloned())
            .map(|n| n.to_string()),
        Some("2".into())
    );
    assert!(m.is_empty());
    // Found by the `thread_parse` fuzz target: equality is that of the last-wins view, like
    // `get`, so a document with a repeated key equals its de-duplicated form (serde_json's).
    assert_eq!(d, Value::parse(r#"{"a":2}"#).unwrap());
    assert_eq!(Value::parse(r#"{"a":2}"#).unwrap(), d);
    assert_ne!(d, Value::parse(r#"{"a":1}"#).unwrap());
    let e = Value::parse(r#"{"x":0,"":1,"":"hello"}"#).unwrap();
    assert_eq!(e, Value::parse(r#"{"":"hello","x":0}"#).unwrap());
    assert_ne!(e, Value::parse(r#"{"":"hello"}"#).unwrap());
    assert_ne!(e, Value::parse(r#"{"":"hello","x":0,"y":0}"#).unwrap());
}

/// `0..n` in an order of its own (a fixed pseudo-random shuffle).
fn shuffled(n: usize) -> Vec<usize> {
    let mut items: Vec<usize> = (0..n).collect();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    for i in (1..n).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        items.swap(i, (state % (i as u64 + 1)) as usize);
    }
    items
}

/// Whether `a == b`, and what `counter` (one of `value`'s test counters) counted meanwhile.
fn counting(
    counter: &'static std::thread::LocalKey<core::cell::Cell<usize>>,
    a: &Value,
    b: &Value,
) -> (bool, usize) {
    counter.with(|n| n.set(0));
    let equal = a == b;
    (equal, counter.with(|n| n.get()))
}

#[test]
fn comparing_nested_objects_compares_each_value_once() {
    // Equal objects nested `depth` deep, once plain and once with every key repeated (the last
    // entry the one that counts): a comparison compares each pair of entries at most once, where
    // it compared each level twice per level above it (2^depth comparisons: 0.2 s at 22 levels,
    // hours at 40).
    let count = |a: &Value, b: &Value| counting(&value::COMPARED, a, b);
    for depth in [1, 5, 20, 120] {
        let plain = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
        let repeated = format!("{}1{}", r#"{"a":0,"a":"#.repeat(depth), "}".repeat(depth));
        let parse = |text: &str| Value::parse(text).unwrap();
        assert_eq!(count(&parse(&plain), &parse(&plain)), (true, depth + 1));
        // The same keys in the same order: the entries pairwise, the earlier `"a":0` too.
        assert_eq!(
            count(&parse(&repeated), &parse(&repeated)),
            (true, 2 * depth + 1)
        );
        // The repeated form equals the plain one, either way round: its last entries alone.
        assert_eq!(count(&parse(&repeated), &parse(&plain)), (true, depth + 1));
        assert_eq!(count(&parse(&plain), &parse(&repeated)), (true, depth + 1));
        // A difference at the bottom is still found.
        let other = parse(&plain.replace(":1}", ":2}"));
        assert_eq!(count(&parse(&plain), &other), (false, depth + 1));
    }
}

#[test]
fn comparing_wide_objects_takes_time_linear_in_their_keys_in_any_order() {
    // Two copies of one serialization (the same keys in the same order) compare entry by entry;
    // other orders find each key through a hash table of one object's keys (`Keys`), a few
    // probes a key, where looking each key up scanned the entries (n²/2 key comparisons: 1.3 s
    // for 20,000 keys in reverse order). The same answers either way; a key's earlier entry
    // counts for nothing.
    let lookups = |a: &Value, b: &Value| counting(&value::LOOKED_UP, a, b);
    let probes = |a: &Value, b: &Value| counting(&value::PROBED, a, b);
    let object = |keys: &mut dyn Iterator<Item = usize>, bump: Option<usize>| {
        let body: Vec<String> = keys
            .map(|i| format!(r#""key{i}":{}"#, if Some(i) == bump { i + 1 } else { i }))
            .collect();
        Value::parse(&format!("{{{}}}", body.join(","))).unwrap()
    };
    for n in [1, 7, 2000, 20_000] {
        let a = object(&mut (0..n), None);
        assert_eq!(lookups(&a, &object(&mut (0..n), None)), (true, 0));
        assert_eq!(probes(&a, &object(&mut (0..n), None)), (true, 0));
        assert_eq!(lookups(&a, &object(&mut (0..n), Some(n / 2))), (false, 0));
        for order in [
            &mut (0..n).rev() as &mut dyn Iterator<Item = usize>,
            &mut shuffled(n).into_iter(),
        ] {
            let b = object(order, None);
            let (equal, probed) = probes(&a, &b);
            // a's keys put in a table, then b's looked up in it: 2n searches in a table at most
            // half full, a few slots each.
            assert!(equal && probed <= 4 * n, "{n}: {probed}");
            assert_eq!(lookups(&a, &b), (true, 0));
        }
        let mut rest = (0..n).filter(|&i| i != n / 3);
        let fewer = object(&mut rest, None);
        assert!(!probes(&a, &fewer).0 && !probes(&fewer, &a).0);
        let mut renamed = (0..n).rev().map(|i| if i == n / 3 { n } else { i });
        assert!(!lookups(&a, &object(&mut renamed, None)).0);
        assert!(!lookups(&a, &object(&mut (0..n).rev(), Some(n / 2))).0);
    }
    // In another order, a repeated key of either side counts by its last entry.
    let y = Value::parse(r#"{"b":2,"a":3}"#).unwrap();
    assert_eq!(y, Value::parse(r#"{"a":3,"b":9,"b":2}"#).unwrap());
    assert_eq!(Value::parse(r#"{"a":3,"b":9,"b":2}"#).unwrap(), y);
    assert_ne!(y, Value::parse(r#"{"a":3,"b":2,"b":9}"#).unwrap());
    assert_ne!(Value::parse(r#"{"a":3,"b":2,"b":9}"#).unwrap(), y);
    // As many entries, fewer keys.
    let a = Value::parse(r#"{"a":1,"a":2}"#).unwrap();
    assert_ne!(a, Value::parse(r#"{"b":1,"a":2}"#).unwrap());
    assert_eq!(a, Value::parse(r#"{"a":2}"#).unwrap());
    // An earlier entry of a repeated key that differs does not count, in the same order or not.
    let x = Value::parse(r#"{"a":1,"b":2,"a":3}"#).unwrap();
    assert_eq!(x, Value::parse(r#"{"a":9,"b":2,"a":3}"#).unwrap());
    assert_eq!(x, Value::parse(r#"{"b":2,"a":3}"#).unwrap());
    assert_ne!(x, Value::parse(r#"{"a":1,"b":2,"a":4}"#).unwrap());
    assert_ne!(x, Value::parse(r#"{"a":1,"c":2,"a":3}"#).unwrap());
}

#[test]
fn number_as_u64_stops_exactly_at_u64_max() {
    for (text, want) in [
        ("0", Some(0)),
        ("007", Some(7)),
        ("1844674407370955161", Some(1844674407370955161)),
        ("18446744073709551610", Some(18446744073709551610)),
        ("18446744073709551615", Some(u64::MAX)),
        ("18446744073709551616", None),
        ("18446744073709551620", None),
        ("184467440737095516150", None),
        ("-1", None),
        ("1.0", None),
        ("1e3", None),
    ] {
        let n = Number::from_valid(text);
        assert_eq!(n.as_u64(), want, "{text}");
        assert_eq!(n.as_u64(), text.parse::<u64>().ok(), "{text}");
    }
}

#[test]
fn u64_text() {
    for n in [0u64, 7, 10, 99, 1234567890, u64::MAX] {
        assert_eq!(u64_string(n), n.to_string());
    }
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
fn utf8_agrees_with_core() {
    // Cut sequences followed by ASCII (invalid) or by the end (incomplete), in long ASCII runs
    // (the block scan) and short ones.
    let pad = "x".repeat(37);
    let cases: [&[u8]; 9] = [
        b"\xe2\x82",
        b"\xe2\x82a",
        b"a\xe2\x82\xac\xf0\x9f",
        b"\xf0\x9f\x98\x80\xf0\x9f\x98",
        b"\xc3\xa9\xc3",
        b"\xc3\xa9\xc3 ",
        b"\xed\xa0\x80",
        b"\xc0\x80",
        b"\xc3\xa9\xe2\x82\xac",
    ];
    for case in cases {
        for input in [
            case.to_vec(),
            [pad.as_bytes(), case, pad.as_bytes()].concat(),
        ] {
            let ours = utf8(&input);
            match core::str::from_utf8(&input) {
                Ok(s) => assert_eq!(ours.unwrap(), s),
                Err(err) => {
                    let e = ours.unwrap_err();
                    if err.error_len().is_none() {
                        assert!(
                            e.message.starts_with("unexpected end of input"),
                            "{input:?}"
                        );
                    } else {
                        let at = err.valid_up_to().to_string();
                        assert!(e.message.ends_with(&at), "{input:?}: {}", e.message);
                    }
                }
            }
        }
    }
}

#[test]
fn descriptions() {
    assert_eq!(describe_byte(Some(b'{')), "an object");
    assert_eq!(describe_byte(Some(b'-')), "a number");
    assert_eq!(describe_byte(Some(b'f')), "a boolean");
    assert_eq!(describe_byte(Some(b't')), "a boolean");
    assert_eq!(describe_byte(Some(b'[')), "an array");
    assert_eq!(describe_byte(Some(b'"')), "a string");
    assert_eq!(describe_byte(Some(b'n')), "null");
    assert_eq!(describe_byte(None), "a number");
    assert_eq!(describe(&Value::Null), "null");
    assert!(is_blank(Some(" \t")) && is_blank(None) && !is_blank(Some(" x ")));
}

/// The name lists (`nth`, `index_of`) give each name at its index, `""` past the last, and find
/// only whole names.
#[test]
fn name_lists() {
    const LIST: &str = "a|bc||d";
    let names: Vec<&str> = (0..6).map(|i| nth(LIST, i)).collect();
    assert_eq!(names, ["a", "bc", "", "d", "", ""]);
    assert_eq!(nth("", 0), "");
    assert_eq!(nth("é|ü", 1), "ü");
    assert_eq!(index_of("a|bc|d", "a"), Some(0));
    assert_eq!(index_of("a|bc|d", "d"), Some(2));
    for missing in ["", "b", "c", "bc|d", "a|", "x"] {
        assert_eq!(index_of("a|bc|d", missing), None, "{missing:?}");
    }
    for (value, text) in [
        (Value::Null, "null"),
        (Value::Bool(true), "a boolean"),
        (Value::from(1), "a number"),
        (Value::from("x"), "a string"),
        (Value::Array(Vec::new()), "an array"),
        (Value::Object(Map::new()), "an object"),
    ] {
        assert_eq!(describe(&value), text);
    }
}

/// The wire forms kept as name lists, every one of them.
#[test]
fn wire_forms() {
    use crate::approval::Approval;
    use crate::client::{MessageKindView, Phase, ToolStatus};
    use crate::error::ErrorCode;
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        codes,
        [
            "parse_error",
            "not_suspended",
            "unknown_call_id",
            "empty_decisions",
            "invalid_argument",
            "invalid_state",
            "input_locked",
            "busy",
            "conflict",
            "http_status",
            "network",
            "timeout",
            "unauthorized",
            "expired",
            "stream_error",
            "aborted",
        ]
    );
    let phases = [
        (Phase::Idle, "idle"),
        (Phase::Loading, "loading"),
        (Phase::Sending, "sending"),
        (Phase::Streaming, "streaming"),
        (Phase::AwaitingApproval, "awaiting_approval"),
        (Phase::Submitting, "submitting"),
        (Phase::Completed, "completed"),
        (Phase::Expired, "expired"),
        (Phase::Conflict, "conflict"),
        (Phase::Error, "error"),
    ];
    for (phase, text) in phases {
        assert_eq!(phase.as_str(), text);
    }
    let kinds = [
        (MessageKindView::Text, "text"),
        (MessageKindView::ToolCall, "tool_call"),
        (MessageKindView::ToolResult, "tool_result"),
        (MessageKindView::Other, "other"),
    ];
    for (kind, text) in kinds {
        assert_eq!(kind.as_str(), text);
    }
    let statuses = [
        (ToolStatus::Pending, "pending"),
        (ToolStatus::Approved, "approved"),
        (ToolStatus::Rejected, "rejected"),
        (ToolStatus::Called, "called"),
        (ToolStatus::Done, "done"),
        (ToolStatus::Denied, "denied"),
        (ToolStatus::Error, "error"),
    ];
    for (status, text) in statuses {
        assert_eq!(status.as_str(), text);
    }
    for (approval, text) in [
        (Approval::Pending, "pending"),
        (Approval::Approved, "approved"),
        (Approval::Rejected, "rejected"),
    ] {
        assert_eq!(approval.as_str(), text);
        assert_eq!(Approval::parse(text), Some(approval));
    }
    // Usable in constants, as before.
    const BUSY: &str = ErrorCode::Busy.as_str();
    assert_eq!(BUSY, "busy");
}

/// The syntax errors' messages, serde_json's, each at its code.
#[test]
fn syntax_messages() {
    use super::parse::Code;
    let codes = [
        (Code::EofList, "EOF while parsing a list"),
        (Code::EofObject, "EOF while parsing an object"),
        (Code::EofString, "EOF while parsing a string"),
        (Code::EofValue, "EOF while parsing a value"),
        (Code::ExpectedColon, "expected `:`"),
        (Code::ExpectedListCommaOrEnd, "expected `,` or `]`"),
        (Code::ExpectedObjectCommaOrEnd, "expected `,` or `}`"),
        (Code::ExpectedIdent, "expected ident"),
        (Code::ExpectedValue, "expected value"),
        (Code::InvalidEscape, "invalid escape"),
        (Code::InvalidNumber, "invalid number"),
        (
            Code::ControlChar,
            "control character (\\u0000-\\u001F) found while parsing a string",
        ),
        (Code::KeyMustBeString, "key must be a string"),
        (Code::TrailingComma, "trailing comma"),
        (Code::TrailingCharacters, "trailing characters"),
        (Code::RecursionLimit, "recursion limit exceeded"),
    ];
    for (code, text) in codes {
        assert_eq!(code.message(), text);
    }
}

#[test]
fn is_blank_is_trim_is_empty() {
    for s in [
        "",
        " ",
        "\t\n\u{b}\u{c}\r",
        "\u{85}\u{a0}",
        "\u{1680}\u{2000}\u{200a}",
        "\u{2028}\u{2029}",
        "\u{202f}\u{205f}\u{3000}",
        "\u{200b}",
        "\u{feff}",
        " x ",
        "\u{3000}é\u{3000}",
        "\0",
    ] {
        assert_eq!(is_blank(Some(s)), s.trim().is_empty(), "{s:?}");
    }
}

#[test]
fn is_blank_knows_every_whitespace_char() {
    let mut buf = [0u8; 4];
    for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
        let s: &str = c.encode_utf8(&mut buf);
        assert_eq!(is_blank(Some(s)), c.is_whitespace(), "{c:?}");
    }
}

#[test]
fn error_messages_keep_serde_json_wording() {
    let e = Value::parse("{\n  \"a\": tru }").unwrap_err();
    assert_eq!((e.line, e.column), (Some(2), Some(11)));
    assert_eq!(e.message, "invalid JSON: expected ident");
    assert!(Value::parse("[1,")
        .unwrap_err()
        .message
        .starts_with("unexpected end of input: "));
}

#[test]
fn the_eight_byte_scan_finds_every_special_byte_at_every_offset() {
    for len in 0..24 {
        for at in 0..len {
            for special in ["\\\"", "\\n", "\\u00e9", "\u{1}", "\"", "é"] {
                let body: String = (0..len)
                    .map(|i| {
                        if i == at {
                            special.to_owned()
                        } else {
                            "a".to_owned()
                        }
                    })
                    .collect();
                agree(&format!("\"{body}\""));
                agree(&format!("[\"{body}\",1]"));
            }
        }
    }
}

/// The crate's UTF-8 check gives core's answer (valid prefix, end inside a sequence) on every
/// sequence of up to four bytes drawn from the boundary values of the encoding, and in context.
#[test]
fn utf8_check_agrees_with_core() {
    let edges: &[u8] = &[
        0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1,
        0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF,
    ];
    let n = edges.len();
    let mut buf = Vec::new();
    for len in 0..=4u32 {
        for mut code in 0..n.pow(len) {
            buf.clear();
            for _ in 0..len {
                buf.push(edges[code % n]);
                code /= n;
            }
            for prefix in [&b""[..], b"abcdefghijklmnopq", "é€".as_bytes()] {
                let mut bytes = prefix.to_vec();
                bytes.extend_from_slice(&buf);
                let core = core::str::from_utf8(&bytes);
                let ours = super::utf8_error(&bytes);
                let want = core
                    .as_ref()
                    .err()
                    .map(|e| (e.valid_up_to(), e.error_len().is_none()));
                assert_eq!(ours, want, "{bytes:x?}");
                assert_eq!(super::str_of(&bytes), core.ok(), "{bytes:x?}");
            }
        }
    }
}

/// The public conveniences of `Value` and `Map` (used by callers and tests of the crate, less by
/// the library itself): each gives what its name says.
#[test]
fn value_and_map_conveniences() {
    let v = Value::parse(r#"{"a": 1, "b": [true], "c": "x"}"#).unwrap();
    let Value::Object(map) = &v else {
        panic!("an object")
    };
    let values: Vec<String> = map.values().map(ToJson::to_json_string).collect();
    assert_eq!(values, ["1", "[true]", "\"x\""]);
    let owned: Vec<(String, Value)> = map.clone().into_iter().collect();
    assert_eq!(owned.len(), 3);
    assert_eq!(owned[2], (String::from("c"), Value::from("x")));
    let back: Map = owned.into_iter().collect();
    assert_eq!(&back, map);
    assert_eq!(Value::from(back.clone()), v);
    assert!(v.is_object() && !v.is_array());
    assert!(v["b"].is_array() && !v["b"].is_object());
    assert!(!Value::Null.is_array() && !Value::Null.is_object());
    assert_eq!(Value::from(true).to_json_string(), "true");
    assert_eq!(Value::from(false).to_json_string(), "false");
    assert_eq!(Value::from(42u64).to_json_string(), "42");
    assert_eq!(
        Value::from(vec![Value::from(1u64), Value::Null]).to_json_string(),
        "[1,null]"
    );
    assert!(v["c"] == *"x" && v["c"] != *"y" && Value::Null != *"x");
    assert!(v["c"] == "x" && v["c"] != "y" && Value::from(7u64) != "7");
    assert_eq!(7usize.to_json_string(), "7");
    assert_eq!(Some(7usize).to_json_string(), "7");
}

/// A hand-built value nested deeper than the writer goes is cut at its limit, arrays and objects
/// alike: 513 levels written (depths 0 to 512), `null` below.
#[test]
fn writing_stops_at_its_depth_limit() {
    let mut array = Value::Null;
    let mut object = Value::Null;
    for _ in 0..600 {
        array = Value::Array(vec![array]);
        let mut m = Map::new();
        m.insert(String::from("k"), object);
        object = Value::Object(m);
    }
    let n = super::write::MAX_WRITE_DEPTH + 1;
    assert_eq!(n, 513);
    assert_eq!(
        array.to_json_string(),
        "[".repeat(n) + "null" + &"]".repeat(n)
    );
    assert_eq!(
        object.to_json_string(),
        "{\"k\":".repeat(n) + "null" + &"}".repeat(n)
    );
}
