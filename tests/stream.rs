//! The stream decoder against recorded streams (`tests/fixtures/streams/*.sse`), fed whole, split
//! at every byte position, one byte at a time, and in random pieces: always the same chunks.

use toolgate::json::Value;
// In wasm the same tests run under wasm-bindgen-test (scripts/test-browser.sh, headless Chromium).
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// serde_json's `json!`, as a toolgate value (through its text).
macro_rules! json {
    ($($t:tt)+) => {
        Value::parse(&serde_json::json!($($t)+).to_string()).expect("json")
    };
}
use toolgate::error::{Error, ErrorCode};
use toolgate::stream::{
    parse_chunk_str, parse_chunk_value, Chunk, ChunkDecoder, SseDecoder, ToolCallApproval,
    ToolInputError,
};

/// The recorded streams, compiled in (the same tests run in wasm, where there is no file system):
/// their names in `FIXTURES` and their bytes by `fixture(name)`.
macro_rules! fixtures {
    ($($file:literal),* $(,)?) => {
        const FIXTURES: &[&str] = &[$($file),*];

        fn fixture(name: &str) -> Vec<u8> {
            match name {
                $($file => include_bytes!(concat!("fixtures/streams/", $file)).to_vec(),)*
                _ => panic!("no fixture {name}"),
            }
        }
    };
}

fixtures!(
    "text-reply.sse",
    "approval-pause.sse",
    "approval-ai-sdk-crlf.sse",
    "keepalive-multiline.sse",
    "unknown-types.sse",
    "malformed-middle.sse",
    "continuation-no-final-blank.sse",
);

type Out = Vec<Result<Chunk, Error>>;

fn decode_pieces<'a>(pieces: impl IntoIterator<Item = &'a [u8]>) -> Out {
    let mut decoder = ChunkDecoder::new();
    let mut out = Vec::new();
    for piece in pieces {
        decoder.feed(piece, &mut out);
    }
    decoder.finish(&mut out);
    out
}

fn decode(bytes: &[u8]) -> Out {
    decode_pieces([bytes])
}

/// A small deterministic PRNG (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The same stream with every line end rewritten as CRLF, or as lone CR.
fn with_line_ends(bytes: &[u8], end: &[u8]) -> Vec<u8> {
    let text = std::str::from_utf8(bytes).expect("fixtures are UTF-8");
    let normalized = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut out = Vec::new();
    for (i, line) in normalized.split('\n').enumerate() {
        if i > 0 {
            out.extend_from_slice(end);
        }
        out.extend_from_slice(line.as_bytes());
    }
    out
}

fn variants(bytes: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(bytes);
    vec![
        ("as recorded", bytes.to_vec()),
        ("LF", with_line_ends(bytes, b"\n")),
        ("CRLF", with_line_ends(bytes, b"\r\n")),
        ("CR", with_line_ends(bytes, b"\r")),
        ("BOM", bom),
    ]
}

/// The check every fixture goes through.
fn assert_split_invariant(name: &str, bytes: &[u8], expected: &Out) {
    for (variant, bytes) in variants(bytes) {
        let whole = decode(&bytes);
        assert_eq!(&whole, expected, "{name} ({variant}) fed whole");
        for cut in 0..=bytes.len() {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(
                &decode_pieces([a, b]),
                expected,
                "{name} ({variant}) split at {cut}"
            );
        }
        assert_eq!(
            &decode_pieces(bytes.chunks(1)),
            expected,
            "{name} ({variant}) one byte at a time"
        );
    }
}

fn delta(id: &str, d: &str) -> Result<Chunk, Error> {
    Ok(Chunk::TextDelta {
        id: id.into(),
        delta: d.into(),
    })
}

fn text_start(id: &str) -> Result<Chunk, Error> {
    Ok(Chunk::TextStart { id: id.into() })
}

fn text_end(id: &str) -> Result<Chunk, Error> {
    Ok(Chunk::TextEnd { id: id.into() })
}

fn text_of(out: &Out) -> String {
    out.iter()
        .filter_map(|c| match c {
            Ok(Chunk::TextDelta { delta, .. }) => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

fn expected_text_reply() -> Out {
    vec![
        Ok(Chunk::Start {
            message_id: Some("msg_01".into()),
        }),
        Ok(Chunk::StartStep),
        text_start("txt_0"),
        delta("txt_0", "Hello"),
        delta("txt_0", ", \"world\""),
        delta("txt_0", "! 👋 "),
        delta("txt_0", "Ça va? "),
        delta("txt_0", "café 😀"),
        delta("txt_0", "\n日本語 — 🇫🇷"),
        delta("txt_0", " tab\there, back\\slash."),
        delta("txt_0", ""),
        text_end("txt_0"),
        Ok(Chunk::FinishStep),
        Ok(Chunk::Finish {
            finish_reason: Some("stop".into()),
        }),
        Ok(Chunk::Done),
    ]
}

#[test]
fn text_reply() {
    let bytes = fixture("text-reply.sse");
    let expected = expected_text_reply();
    assert_eq!(
        text_of(&expected),
        "Hello, \"world\"! 👋 Ça va? café 😀\n日本語 — 🇫🇷 tab\there, back\\slash."
    );
    assert_split_invariant("text-reply", &bytes, &expected);
}

fn refund_args() -> Value {
    json!({"order_id": "4821", "amount": 120, "currency": "EUR"})
}

fn expected_approval_pause() -> Out {
    vec![
        Ok(Chunk::StartStep),
        Ok(Chunk::ToolInputStart {
            tool_call_id: "call_a17f3b".into(),
            tool_name: "issue_refund".into(),
        }),
        Ok(Chunk::ToolInputDelta {
            tool_call_id: "call_a17f3b".into(),
            input_text_delta: "{\"order_id\":\"4821\",".into(),
        }),
        Ok(Chunk::ToolInputDelta {
            tool_call_id: "call_a17f3b".into(),
            input_text_delta: "\"amount\":120,\"currency\":\"EUR\"}".into(),
        }),
        Ok(Chunk::ToolInputAvailable {
            tool_call_id: "call_a17f3b".into(),
            tool_name: "issue_refund".into(),
            input: refund_args(),
        }),
        Ok(Chunk::Data {
            name: "run".into(),
            id: None,
            data: json!({"runId": "run_6d20a95c", "agentVersionId": "av_9", "threadId": "th_42"}),
        }),
        Ok(Chunk::ToolCallApproval(Box::new(ToolCallApproval {
            id: Some("run_6d20a95c::call_a17f3b".into()),
            run_id: "run_6d20a95c".into(),
            tool_call_id: "call_a17f3b".into(),
            tool_name: "issue_refund".into(),
            reason: Some("Refund €120 to Maya Chen for order #4821".into()),
            args: refund_args(),
            agent_version_id: Some("av_9".into()),
            thread_id: Some("th_42".into()),
            state: Some("suspended".into()),
            resume_schema: Some(json!({
                "type": "object",
                "properties": {"approved": {"type": "boolean"}},
                "required": ["approved"]
            })),
        }))),
        Ok(Chunk::Done),
    ]
}

#[test]
fn approval_pause_sidenet_mastra_form() {
    let bytes = fixture("approval-pause.sse");
    let expected = expected_approval_pause();
    // The tool input deltas concatenate to the input that then becomes available.
    let input_text: String = expected
        .iter()
        .filter_map(|c| match c {
            Ok(Chunk::ToolInputDelta {
                input_text_delta, ..
            }) => Some(input_text_delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(Value::parse(&input_text).ok(), Some(refund_args()));
    // A paused stream has no finish chunk.
    assert!(!expected
        .iter()
        .any(|c| matches!(c, Ok(Chunk::Finish { .. }))));
    assert_split_invariant("approval-pause", &bytes, &expected);
}

fn expected_ai_sdk() -> Out {
    vec![
        Ok(Chunk::Start {
            message_id: Some("msg_02".into()),
        }),
        Ok(Chunk::StartStep),
        Ok(Chunk::ToolInputStart {
            tool_call_id: "call_1".into(),
            tool_name: "send_email".into(),
        }),
        Ok(Chunk::ToolInputAvailable {
            tool_call_id: "call_1".into(),
            tool_name: "send_email".into(),
            input: json!({
                "to": "maya@example.com",
                "subject": "Your refund",
                "body": "Hi Maya,\r\nDone."
            }),
        }),
        Ok(Chunk::ToolApprovalRequest {
            approval_id: "appr_1".into(),
            tool_call_id: "call_1".into(),
            reason: None,
            automatic: false,
        }),
        Ok(Chunk::FinishStep),
        Ok(Chunk::Finish {
            finish_reason: Some("tool-calls".into()),
        }),
        Ok(Chunk::Done),
    ]
}

#[test]
fn approval_request_ai_sdk_form_with_crlf() {
    let bytes = fixture("approval-ai-sdk-crlf.sse");
    assert!(
        bytes.windows(2).any(|w| w == b"\r\n"),
        "the fixture must keep its CRLF line ends (check .gitattributes / core.autocrlf)"
    );
    assert!(!bytes.windows(2).any(|w| w == b"}\n"));
    assert_split_invariant("approval-ai-sdk-crlf", &bytes, &expected_ai_sdk());
}

fn expected_keepalive_multiline() -> Out {
    vec![
        text_start("t1"),
        delta("t1", "multi"),
        delta("t1", " line\nevents"),
        text_end("t1"),
    ]
}

#[test]
fn keepalives_comments_and_multiline_data() {
    let bytes = fixture("keepalive-multiline.sse");
    assert_split_invariant(
        "keepalive-multiline",
        &bytes,
        &expected_keepalive_multiline(),
    );
    let mut decoder = ChunkDecoder::new();
    let mut out = Vec::new();
    decoder.feed(&bytes, &mut out);
    assert_eq!(decoder.last_event_id(), Some("3"));
    assert_eq!(decoder.retry_ms(), Some(3000));
    // The SSE layer sees the event name and the joined data lines.
    let mut sse = SseDecoder::new();
    let mut events = Vec::new();
    sse.feed(&bytes, &mut events);
    let first = events.first().and_then(|e| e.as_ref().ok()).expect("event");
    assert_eq!(first.event.as_deref(), Some("message"));
    assert_eq!(first.id.as_deref(), Some("1"));
    assert_eq!(first.data, "{\"type\":\"text-start\",\n \"id\":\"t1\"}");
    assert_eq!(events.len(), 6, "two keep-alive data events are events too");
}

fn expected_unknown_types() -> Out {
    vec![
        Ok(Chunk::Start { message_id: None }),
        // (Read since the client shows a call that could not be read as a failed tool.)
        Ok(Chunk::ToolInputError(Box::new(ToolInputError {
            tool_call_id: "c".into(),
            tool_name: "n".into(),
            input: Value::from("{"),
            error_text: "bad".into(),
        }))),
        Ok(Chunk::Data {
            name: "weather".into(),
            id: Some("w1".into()),
            data: json!({"city": "Lyon", "tempC": 21.5}),
        }),
        Ok(Chunk::Data {
            name: "notice".into(),
            id: None,
            data: Value::Null,
        }),
        text_start("t"),
        delta("t", "ok"),
        text_end("t"),
        Ok(Chunk::Finish {
            finish_reason: None,
        }),
        Ok(Chunk::Done),
    ]
}

#[test]
fn unknown_chunk_types_are_skipped_without_error() {
    let bytes = fixture("unknown-types.sse");
    assert_split_invariant("unknown-types", &bytes, &expected_unknown_types());
}

/// Errors compared by code and path; messages checked separately.
fn shape(out: &Out) -> Vec<Result<Chunk, (ErrorCode, Option<String>)>> {
    out.iter()
        .map(|r| match r {
            Ok(c) => Ok(c.clone()),
            Err(e) => Err((e.code, e.path.clone())),
        })
        .collect()
}

#[test]
fn malformed_chunks_are_errors_and_the_stream_goes_on() {
    let bytes = fixture("malformed-middle.sse");
    let out = decode(&bytes);
    let err = |path: Option<&str>| Err((ErrorCode::StreamError, path.map(str::to_owned)));
    let ok = |c: Chunk| Ok(c);
    assert_eq!(
        shape(&out),
        vec![
            ok(Chunk::TextStart { id: "t".into() }),
            ok(Chunk::TextDelta {
                id: "t".into(),
                delta: "before".into()
            }),
            err(None),                      // not json
            err(None),                      // an array
            err(None),                      // a string
            err(Some("$.delta")),           // text-delta without delta
            err(Some("$.delta")),           // text-delta with a numeric delta
            err(Some("$.type")),            // no type
            err(Some("$.type")),            // numeric type
            err(Some("$.data.toolCallId")), // approval without toolCallId
            err(Some("$.data")),            // approval with a string data
            // tool-input-available without input: `null`, as the AI SDK reads it
            ok(Chunk::ToolInputAvailable {
                tool_call_id: "c".into(),
                tool_name: "n".into(),
                input: Value::Null,
            }),
            err(None), // truncated JSON
            ok(Chunk::TextDelta {
                id: "t".into(),
                delta: " after".into()
            }),
            ok(Chunk::ToolOutputError {
                tool_call_id: "c".into(),
                error_text: "boom".into()
            }),
            ok(Chunk::Error {
                error_text: "upstream failed".into()
            }),
            ok(Chunk::Abort),
            ok(Chunk::Done),
        ]
    );
    let messages: Vec<&str> = out
        .iter()
        .filter_map(|r| r.as_ref().err())
        .map(|e| e.message.as_str())
        .collect();
    let has = |i: usize, parts: &[&str]| {
        let m = messages.get(i).copied().unwrap_or_default();
        assert!(parts.iter().all(|p| m.contains(p)), "message {i}: {m:?}");
    };
    has(0, &["not valid JSON"]);
    has(1, &["not a JSON object"]);
    has(2, &["not a JSON object"]);
    has(3, &["text-delta", "delta", "missing"]);
    has(4, &["text-delta", "delta", "string"]);
    has(5, &["type"]);
    has(6, &["type", "string"]);
    has(
        7,
        &["data-tool-call-approval", "data.toolCallId", "missing"],
    );
    has(8, &["data-tool-call-approval", "data", "object"]);
    has(9, &["not valid JSON"]);
    assert!(out
        .iter()
        .filter_map(|r| r.as_ref().err())
        .all(|e| e.code == ErrorCode::StreamError));
    // A JSON syntax error carries its line and column inside the event data (serde_json reports
    // the column of the character where it gave up).
    let first = out.iter().find_map(|r| r.as_ref().err()).expect("an error");
    assert_eq!((first.line, first.column), (Some(1), Some(2)));
    assert_split_invariant("malformed-middle", &bytes, &out);
}

fn expected_continuation() -> Out {
    vec![
        Ok(Chunk::Data {
            name: "run".into(),
            id: None,
            data: json!({"runId": "run_7", "agentVersionId": "av_9", "threadId": "th_42"}),
        }),
        Ok(Chunk::ToolOutputAvailable {
            tool_call_id: "call_a17f3b".into(),
            output: json!({"refundId": "rf_1", "status": "issued"}),
        }),
        Ok(Chunk::ToolOutputDenied {
            tool_call_id: "call_zz".into(),
        }),
        Ok(Chunk::StartStep),
        text_start("t2"),
        delta("t2", "Refund issued."),
        text_end("t2"),
        Ok(Chunk::FinishStep),
        Ok(Chunk::Finish {
            finish_reason: Some("stop".into()),
        }),
    ]
}

#[test]
fn continuation_without_final_blank_line_is_dispatched_at_finish() {
    let bytes = fixture("continuation-no-final-blank.sse");
    assert_split_invariant("continuation", &bytes, &expected_continuation());
    // Without finish() the last event is still pending.
    let mut decoder = ChunkDecoder::new();
    let mut out = Vec::new();
    decoder.feed(&bytes, &mut out);
    assert_eq!(out.len(), expected_continuation().len() - 1);
    decoder.finish(&mut out);
    assert_eq!(out, expected_continuation());
}

#[test]
fn random_pieces_give_the_same_chunks() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for name in FIXTURES {
        let bytes = fixture(name);
        for (variant, bytes) in variants(&bytes) {
            let expected = decode(&bytes);
            for round in 0..200 {
                let max_piece = 1 + rng.below(40);
                let mut pieces = Vec::new();
                let mut rest = &bytes[..];
                while !rest.is_empty() {
                    // Empty pieces included: feeding nothing must change nothing.
                    let n = rng.below(max_piece + 1).min(rest.len());
                    let (a, b) = rest.split_at(n);
                    pieces.push(a);
                    rest = b;
                }
                assert_eq!(
                    decode_pieces(pieces.iter().copied()),
                    expected,
                    "{name} ({variant}) round {round}"
                );
            }
        }
    }
}

#[test]
fn every_fixture_decodes_as_recorded() {
    // Ties the table of fixtures to the explicit expectations above.
    let all: Vec<(&str, Out)> = vec![
        ("text-reply.sse", expected_text_reply()),
        ("approval-pause.sse", expected_approval_pause()),
        ("approval-ai-sdk-crlf.sse", expected_ai_sdk()),
        ("keepalive-multiline.sse", expected_keepalive_multiline()),
        ("unknown-types.sse", expected_unknown_types()),
        ("continuation-no-final-blank.sse", expected_continuation()),
    ];
    for (name, expected) in all {
        assert!(FIXTURES.contains(&name));
        assert_eq!(decode(&fixture(name)), expected, "{name}");
    }
}

#[test]
fn str_and_value_parsing_agree_on_every_recorded_event() {
    for name in FIXTURES {
        let mut sse = SseDecoder::new();
        let mut events = Vec::new();
        sse.feed(&fixture(name), &mut events);
        sse.finish(&mut events);
        for event in events.iter().flatten() {
            let Ok(value) = Value::parse(&event.data) else {
                continue;
            };
            let from_str = parse_chunk_str(&event.data);
            let from_value = parse_chunk_value(&value);
            match (&from_str, &from_value) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{name}: {}", event.data),
                (Err(a), Err(b)) => {
                    assert_eq!((a.code, &a.path, &a.message), (b.code, &b.path, &b.message))
                }
                _ => panic!("{name}: {} gave {from_str:?} vs {from_value:?}", event.data),
            }
        }
    }
}

#[test]
fn collected_output_reuses_the_typing() {
    // What POST /v1/agents/{id}/run returns for a paused run.
    let body: Value = Value::parse(
        r#"{"chunks":[
            {"type":"start","messageId":"m"},
            {"type":"tool-input-available","toolCallId":"c1","toolName":"delete_record","input":{"id":7}},
            {"type":"reasoning-delta","id":"r","delta":"x"},
            {"type":"data-tool-call-approval","data":{"runId":"run_1","toolCallId":"c1","toolName":"delete_record","args":null}}
        ]}"#,
    )
    .expect("json");
    let chunks: Vec<_> = body
        .get("chunks")
        .expect("chunks")
        .as_array()
        .expect("array")
        .iter()
        .map(parse_chunk_value)
        .collect();
    assert_eq!(chunks.len(), 4);
    assert_eq!(chunks[2], Ok(None));
    let Ok(Some(Chunk::ToolCallApproval(approval))) = &chunks[3] else {
        panic!("{:?}", chunks[3]);
    };
    assert_eq!(approval.run_id, "run_1");
    assert_eq!(
        approval.args,
        Value::Null,
        "null args: unknown, filled in by the client"
    );
    assert_eq!(approval.reason, None);
    assert_eq!(approval.resume_schema, None);
    assert_eq!(parse_chunk_value(&json!("[DONE]")), Ok(Some(Chunk::Done)));
    assert_eq!(
        parse_chunk_value(&json!([1])).map_err(|e| e.code),
        Err(ErrorCode::StreamError)
    );
    assert_eq!(parse_chunk_str(" [DONE] "), Ok(Some(Chunk::Done)));
}

#[test]
fn approval_tolerates_missing_args_and_odd_extras() {
    let chunk = parse_chunk_str(
        r#"{"type":"data-tool-call-approval","data":{"runId":"r","toolCallId":"c","toolName":"t",
            "state":{"not":"a string"},"resumeSchema":"not json {","future":1}}"#,
    );
    let Ok(Some(Chunk::ToolCallApproval(a))) = chunk else {
        panic!("{chunk:?}");
    };
    assert_eq!(a.args, Value::Null, "absent args: unknown");
    assert_eq!(a.state, None);
    assert_eq!(a.resume_schema, Some(json!("not json {")));
    assert_eq!(a.id, None);
    // A documented optional field of the wrong type is an error: it would misroute the answer.
    let err = parse_chunk_str(
        r#"{"type":"data-tool-call-approval","data":{"runId":"r","toolCallId":"c","toolName":"t","agentVersionId":5}}"#,
    )
    .expect_err("ill-typed agentVersionId");
    assert_eq!(err.code, ErrorCode::StreamError);
    assert_eq!(err.path.as_deref(), Some("$.data.agentVersionId"));
    // resumeSchema given as an object stays an object.
    let chunk = parse_chunk_str(
        r#"{"type":"data-tool-call-approval","data":{"runId":"r","toolCallId":"c","toolName":"t","resumeSchema":{"type":"object"}}}"#,
    );
    let Ok(Some(Chunk::ToolCallApproval(a))) = chunk else {
        panic!("{chunk:?}");
    };
    assert_eq!(a.resume_schema, Some(json!({"type": "object"})));
    // Mastra's notice that an approved call resumed (`resumed: true`) is no request: nothing.
    let resumed = r#"{"type":"data-tool-call-approval","id":"c","data":{"runId":"r","toolCallId":"c","toolName":"t","resumed":true}}"#;
    assert_eq!(parse_chunk_str(resumed), Ok(None));
    let chunk = parse_chunk_str(&resumed.replace("true", "false"));
    assert!(
        matches!(chunk, Ok(Some(Chunk::ToolCallApproval(_)))),
        "{chunk:?}"
    );
}

#[test]
fn null_versus_absent() {
    // A present null output is a value, and so is an absent one (a tool that returned nothing,
    // as some servers write it); an absent `toolCallId` is an error.
    for text in [
        r#"{"type":"tool-output-available","toolCallId":"c","output":null}"#,
        r#"{"type":"tool-output-available","toolCallId":"c"}"#,
    ] {
        assert_eq!(
            parse_chunk_str(text),
            Ok(Some(Chunk::ToolOutputAvailable {
                tool_call_id: "c".into(),
                output: Value::Null
            }))
        );
    }
    assert!(parse_chunk_str(r#"{"type":"tool-output-available","output":1}"#).is_err());
    // Optional strings may be null.
    assert_eq!(
        parse_chunk_str(r#"{"type":"finish","finishReason":null}"#),
        Ok(Some(Chunk::Finish {
            finish_reason: None
        }))
    );
    assert!(parse_chunk_str(r#"{"type":"finish","finishReason":1}"#).is_err());
    // `data` of a `data-*` chunk may be absent, as the AI SDK's schema (`unknown`) has it.
    assert_eq!(
        parse_chunk_str(r#"{"type":"data-progress","id":"p"}"#),
        Ok(Some(Chunk::Data {
            name: "progress".into(),
            id: Some("p".into()),
            data: Value::Null,
        }))
    );
    // A repeated field is read as `JSON.parse` (and so the AI SDK's client) reads it: the last
    // value. A chunk of a type toolgate skips yields nothing whatever it repeats.
    assert_eq!(
        parse_chunk_str(r#"{"type":"text-start","id":"a","id":"b"}"#),
        Ok(Some(Chunk::TextStart { id: "b".into() }))
    );
    assert_eq!(
        parse_chunk_str(r#"{"type":"text-start","type":"text-end","id":"a"}"#),
        Ok(Some(Chunk::TextEnd { id: "a".into() }))
    );
    let unknown = r#"{"type":"reasoning-delta","id":"r1","delta":"a","delta":"b"}"#;
    assert_eq!(parse_chunk_str(unknown), Ok(None));
    let mut out = Vec::new();
    let mut d = ChunkDecoder::new();
    d.feed(format!("data: {unknown}\n\n").as_bytes(), &mut out);
    d.finish(&mut out);
    assert!(out.is_empty(), "{out:?}");
}

#[test]
fn cr_and_lf_split_across_feeds() {
    let out = decode_pieces([
        &b"data: {\"type\":\"text-start\",\"id\":\"a\"}\r"[..],
        b"\n\r",
        b"\ndata: {\"type\":\"text-end\",\"id\":\"a\"}\r",
        b"\r",
    ]);
    assert_eq!(out, vec![text_start("a"), text_end("a")]);
}

#[test]
fn bom_only_at_the_start() {
    let out = decode_pieces([&b"\xEF\xBB"[..], b"\xBFdata: {\"type\":\"abort\"}\n\n"]);
    assert_eq!(out, vec![Ok(Chunk::Abort)]);
}

#[test]
fn oversized_event_is_one_error_then_resync() {
    let big = "x".repeat(5000);
    let stream = format!(
        "data: {{\"type\":\"text-delta\",\"id\":\"t\",\"delta\":\"{big}\"}}\n\ndata: {{\"type\":\"abort\"}}\n\n"
    );
    let bytes = stream.as_bytes();
    let run = |pieces: &[&[u8]]| {
        let mut decoder = ChunkDecoder::with_max_event_bytes(1024);
        assert_eq!(decoder.sse().max_event_bytes(), 1024);
        let mut out = Vec::new();
        for p in pieces {
            decoder.feed(p, &mut out);
        }
        decoder.finish(&mut out);
        assert!(decoder.sse().buffered_len() == 0);
        out.into_iter()
            .map(|r| r.map_err(|e| e.code))
            .collect::<Vec<_>>()
    };
    let expected = vec![Err(ErrorCode::StreamError), Ok(Chunk::Abort)];
    assert_eq!(run(&[bytes]), expected);
    for cut in (0..bytes.len()).step_by(97) {
        let (a, b) = bytes.split_at(cut);
        assert_eq!(run(&[a, b]), expected, "cut {cut}");
    }
    let pieces: Vec<&[u8]> = bytes.chunks(7).collect();
    assert_eq!(run(&pieces), expected);
    // The default cap lets it through.
    assert_eq!(decode(bytes).len(), 2);
}

#[test]
fn invalid_utf8_event_is_an_error_and_the_stream_goes_on() {
    let stream = b"data: {\"type\":\"text-delta\",\"id\":\"t\",\"delta\":\"\xC3\x28\"}\n\ndata: {\"type\":\"abort\"}\n\n";
    for cut in 0..=stream.len() {
        let (a, b) = stream.split_at(cut);
        let out = decode_pieces([a, b]);
        assert_eq!(out.len(), 2, "cut {cut}");
        assert_eq!(
            out.first().and_then(|r| r.as_ref().err()).map(|e| e.code),
            Some(ErrorCode::StreamError)
        );
        assert_eq!(out.get(1), Some(&Ok(Chunk::Abort)));
    }
}

#[test]
fn finish_behaviour() {
    // A truncated last event surfaces as an error, not silence.
    let out = decode(b"data: {\"type\":\"text-delta\",\"id\":\"t\",\"del");
    assert_eq!(out.len(), 1);
    assert!(out[0].is_err());
    // finish() with nothing pending yields nothing; the decoder is reusable after it.
    let mut decoder = ChunkDecoder::new();
    let mut out = Vec::new();
    decoder.finish(&mut out);
    assert!(out.is_empty());
    decoder.feed(b"data: {\"type\":\"abort\"}", &mut out);
    assert!(out.is_empty());
    decoder.finish(&mut out);
    decoder.feed(b"data: [DONE]\n\n", &mut out);
    assert_eq!(out, vec![Ok(Chunk::Abort), Ok(Chunk::Done)]);
}

#[test]
fn ten_thousand_deltas_keep_buffers_flat() {
    let mut decoder = ChunkDecoder::new();
    let mut out = Vec::new();
    let mut text = String::new();
    decoder.feed(
        b"data: {\"type\":\"text-start\",\"id\":\"t\"}\n\n",
        &mut out,
    );
    for i in 0..10_000 {
        let piece = format!("w{i} ");
        text.push_str(&piece);
        let event =
            format!("data: {{\"type\":\"text-delta\",\"id\":\"t\",\"delta\":\"{piece}\"}}\n\n");
        let (a, b) = event.as_bytes().split_at(i % event.len());
        decoder.feed(a, &mut out);
        decoder.feed(b, &mut out);
        assert_eq!(decoder.sse().buffered_len(), 0);
    }
    assert_eq!(out.len(), 10_001);
    assert_eq!(text_of(&out), text);
}
