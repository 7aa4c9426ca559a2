//! Native integration tests of the pure core: thread parsing, pending detection by the tail rule, the
//! decision set and its wire form, against the JSON fixtures in `tests/fixtures/neuron/`.

use toolgate::json::{ToJson, Value};
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

/// A toolgate value as written by toolgate and read back.
fn tv<T: ToJson + ?Sized>(value: &T) -> Value {
    Value::parse(&value.to_json_string()).expect("toolgate writes valid JSON")
}
use toolgate::approval::{
    pending_approvals_bytes, pending_approvals_str, pending_approvals_value, Approval, GatedTool,
    Suspension,
};
use toolgate::decisions::{Decision, Decisions};
use toolgate::error::{Error, ErrorCode};
use toolgate::thread::{
    parse_thread_bytes, parse_thread_str, parse_thread_value, Content, Message, MessageKind, Thread,
};

/// The fixtures, compiled in (the same tests run in wasm, where there is no file system): their
/// names in `FIXTURES` and their text by `fixture(name)`.
macro_rules! fixtures {
    ($($file:literal),* $(,)?) => {
        const FIXTURES: &[&str] = &[$($file),*];

        fn fixture(name: &str) -> String {
            match name {
                $($file => include_str!(concat!("fixtures/neuron/", $file)).to_owned(),)*
                _ => panic!("no fixture {name}"),
            }
        }
    };
}

fixtures!(
    "seed.json",
    "conversation.json",
    "bare-array.json",
    "approval-null-absent.json",
    "optional-fields.json",
    "unknown-fields.json",
    "stale-pending.json",
    "escaped-unicode.json",
    "numeric-id.json",
    "empty.json",
    "tail-decided.json",
    "interleaved.json",
);

fn thread(name: &str) -> Thread {
    parse_thread_str(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn suspension(name: &str) -> Suspension {
    pending_approvals_str(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn ids(tools: &[GatedTool]) -> Vec<&str> {
    tools.iter().map(|t| t.call_id.as_str()).collect()
}

fn parse_err(result: Result<impl std::fmt::Debug, Error>) -> Error {
    match result {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------------------------------------------
// The seed document's acceptance test.

#[test]
fn seed_acceptance() {
    let s = suspension("seed.json");
    assert!(s.suspended);
    assert_eq!(ids(&s.pending), ["toolu_01A2B3C4D5E6F7"]);
    assert_eq!(ids(&s.decided), ["toolu_08G9H0I1J2K3L4"]);
    assert_eq!(s.message_id.as_deref(), Some("msg_7488585683808067584"));
    assert_eq!(s.resume_token.as_deref(), Some("workflow_6650a1b2c3d4e"));

    let mut decisions = Decisions::new(&s).unwrap();
    assert!(!decisions.is_complete());
    assert_eq!(decisions.undecided(), ["toolu_01A2B3C4D5E6F7"]);
    decisions.approve("toolu_01A2B3C4D5E6F7").unwrap();
    assert!(decisions.is_complete());
    assert_eq!(
        decisions.to_json_string().unwrap(),
        r#"{"decisions":{"toolu_01A2B3C4D5E6F7":"approve","toolu_08G9H0I1J2K3L4":["reject","Do not email the whole team"]}}"#
    );
}

#[test]
fn seed_gated_tools_in_detail() {
    let s = suspension("seed.json");
    let pending = &s.pending[0];
    assert_eq!(
        pending,
        &GatedTool {
            call_id: "toolu_01A2B3C4D5E6F7".into(),
            name: "delete_file".into(),
            description: Some("Delete a file from the filesystem".into()),
            inputs: json!({ "path": "C:/old_logs.txt" }),
            approval: Approval::Pending,
            approval_reason: Some("Deleting a file is irreversible".into()),
            reject_reason: None,
            run_id: None,
            agent_version_id: None,
            expires_at: None,
            position: 0,
        }
    );
    let decided = &s.decided[0];
    assert_eq!(decided.approval, Approval::Rejected);
    assert_eq!(
        decided.reject_reason.as_deref(),
        Some("Do not email the whole team")
    );
    assert_eq!(
        decided.inputs,
        json!({ "to": "team@example.com", "subject": "Logs cleanup" })
    );
    assert_eq!(decided.position, 1);
}

#[test]
fn suspension_serializes_camel_case_with_nulls() {
    let s = suspension("seed.json");
    let value = tv(&s);
    assert_eq!(
        value,
        json!({
            "suspended": true,
            "messageId": "msg_7488585683808067584",
            "resumeToken": "workflow_6650a1b2c3d4e",
            "pending": [{
                "callId": "toolu_01A2B3C4D5E6F7",
                "name": "delete_file",
                "description": "Delete a file from the filesystem",
                "inputs": { "path": "C:/old_logs.txt" },
                "approval": "pending",
                "approvalReason": "Deleting a file is irreversible",
                "rejectReason": null
            }],
            "decided": [{
                "callId": "toolu_08G9H0I1J2K3L4",
                "name": "send_email",
                "description": "Send an email to a recipient",
                "inputs": { "to": "team@example.com", "subject": "Logs cleanup" },
                "approval": "rejected",
                "approvalReason": "Outbound email reaches people outside this workspace",
                "rejectReason": "Do not email the whole team"
            }]
        })
    );
    let empty = tv(&Suspension::default());
    assert_eq!(
        empty,
        json!({ "suspended": false, "messageId": null, "resumeToken": null, "pending": [], "decided": [] })
    );
}

#[test]
fn sidenet_fields_serialize_only_when_set() {
    let tool = GatedTool {
        call_id: "c".into(),
        name: "n".into(),
        inputs: json!({}),
        run_id: Some("run_1".into()),
        agent_version_id: Some("av_2".into()),
        ..GatedTool::default()
    };
    assert_eq!(
        tv(&tool),
        json!({
            "callId": "c", "name": "n", "description": null, "inputs": {}, "approval": "pending",
            "approvalReason": null, "rejectReason": null, "runId": "run_1", "agentVersionId": "av_2"
        })
    );
}

// ---------------------------------------------------------------------------------------------------
// Every entry point agrees, and round trips lose nothing.

#[test]
fn all_entry_points_agree_on_every_fixture() {
    for name in FIXTURES {
        let text = fixture(name);
        let value = Value::parse(&text).unwrap();
        let from_str = pending_approvals_str(&text).unwrap();
        assert_eq!(
            pending_approvals_bytes(text.as_bytes()).unwrap(),
            from_str,
            "{name}"
        );
        assert_eq!(pending_approvals_value(&value).unwrap(), from_str, "{name}");
        let t = parse_thread_str(&text).unwrap();
        assert_eq!(Suspension::from_thread(&t), from_str, "{name}");
        assert_eq!(parse_thread_bytes(text.as_bytes()).unwrap(), t, "{name}");
        assert_eq!(parse_thread_value(value).unwrap(), t, "{name}");
    }
}

#[test]
fn round_trip_keeps_every_message_verbatim() {
    for name in FIXTURES {
        let text = fixture(name);
        let original: serde_json::Value = serde_json::from_str(&text).unwrap();
        let t = parse_thread_str(&text).unwrap();
        let out: serde_json::Value = serde_json::from_str(&t.to_json_string()).unwrap();
        let (expected_messages, expected_id) = match &original {
            serde_json::Value::Array(items) => (
                serde_json::Value::Array(items.clone()),
                serde_json::Value::Null,
            ),
            serde_json::Value::Object(map) => {
                let id = match map.get("id") {
                    Some(serde_json::Value::Number(n)) => serde_json::Value::String(n.to_string()),
                    Some(other) => other.clone(),
                    None => serde_json::Value::Null,
                };
                (map["messages"].clone(), id)
            }
            _ => unreachable!(),
        };
        assert_eq!(out["messages"], expected_messages, "{name}");
        assert_eq!(out["id"], expected_id, "{name}");
        assert_eq!(out.as_object().unwrap().len(), 2, "{name}");
        // Each message alone serializes as its original object, and re-parses to the same message.
        for (i, m) in t.messages.iter().enumerate() {
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&m.to_json_string()).unwrap(),
                expected_messages[i]
            );
            let again = Message::parse_str(&m.to_json_string()).unwrap();
            assert_eq!(&again, m);
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Fixture by fixture.

#[test]
fn full_conversation() {
    let t = thread("conversation.json");
    assert_eq!(t.id.as_deref(), Some("thread_conv"));
    let kinds: Vec<MessageKind> = t.messages.iter().map(Message::kind).collect();
    assert_eq!(
        kinds,
        [
            MessageKind::Text,
            MessageKind::Text,
            MessageKind::ToolCall,
            MessageKind::ToolCallResult,
            MessageKind::Text
        ]
    );
    let roles: Vec<Option<&str>> = t.messages.iter().map(Message::role).collect();
    assert_eq!(
        roles,
        [
            Some("user"),
            Some("assistant"),
            Some("assistant"),
            Some("user"),
            Some("assistant")
        ]
    );
    let msg_ids: Vec<Option<String>> = t.messages.iter().map(Message::id).collect();
    assert_eq!(
        msg_ids,
        ["m1", "m2", "m3", "m4", "m5"].map(|s| Some(s.to_owned()))
    );

    assert_eq!(
        t.messages[0].content(),
        Content::Text("Buy two tickets for the concert and check the weather.")
    );
    assert_eq!(t.messages[2].content(), Content::None);
    match t.messages[4].content() {
        Content::Blocks(blocks) => assert_eq!(blocks[0]["type"], "text"),
        other => panic!("expected blocks, got {other:?}"),
    }
    assert!(t.messages[4].tools().is_empty());
    assert_eq!(
        t.messages[4].get("usage"),
        Some(&json!({ "input_tokens": 812, "output_tokens": 41 }))
    );

    let call = t.messages[2].tools();
    assert_eq!(call.len(), 2);
    assert_eq!(call[0].call_id(), "call_weather");
    assert_eq!(call[0].approval(), None);
    assert!(!call[0].is_gated());
    assert_eq!(call[0].approval_reason(), None);
    assert_eq!(call[1].approval(), Some(Approval::Approved));
    assert!(call[1].is_gated(), "an approved tool was gated");
    assert_eq!(call[1].approval_reason(), Some("Amount above 100"));
    assert_eq!(call[1].inputs()["amount"], json!(240));
    assert_eq!(call[1].result(), None);

    let results = t.messages[3].tools();
    assert_eq!(results[0].result(), Some(&json!("Sunny, 24°C")));
    assert_eq!(
        results[1].result(),
        Some(&json!({ "order": "ord_991", "total": 240.5 }))
    );

    let s = suspension("conversation.json");
    assert_eq!(s, Suspension::default());
}

#[test]
fn bare_array_document() {
    let t = thread("bare-array.json");
    assert_eq!(t.id, None);
    assert_eq!(t.messages.len(), 2);
    assert_eq!(t.messages[1].content(), Content::Text(""));
    let s = suspension("bare-array.json");
    assert!(s.suspended);
    assert_eq!(ids(&s.pending), ["call_rm"]);
    assert!(s.decided.is_empty());
    assert_eq!(s.message_id, None);
    assert_eq!(s.resume_token, None);
    assert_eq!(
        s.pending[0].inputs,
        json!({ "path": "/tmp/x", "recursive": true })
    );
    let out = tv(&t);
    assert_eq!(out["id"], Value::Null);
}

#[test]
fn approval_null_and_absent_are_both_ungated_and_inputs_normalize() {
    let t = thread("approval-null-absent.json");
    let tail = t.last().unwrap();
    let tools = tail.tools();
    assert_eq!(tools.len(), 7);
    assert_eq!(tools[0].approval(), None);
    assert_eq!(tools[1].approval(), None);
    assert!(tools[0].as_object().contains_key("approval"));
    assert!(!tools[1].as_object().contains_key("approval"));
    // Typed view: always an object; raw: kept as is.
    for tool in &tools[..6] {
        assert!(tool.inputs().is_empty(), "{}", tool.call_id());
    }
    assert_eq!(tools[1].as_object()["inputs"], json!([]));
    assert_eq!(tools[4].as_object()["inputs"], Value::Null);
    assert!(!tools[3].as_object().contains_key("inputs"));
    assert_eq!(
        Value::Object(tools[6].inputs().into_owned()),
        json!({ "0": "a.txt", "1": "b.txt" })
    );
    assert_eq!(tools[2].description(), None);

    let s = suspension("approval-null-absent.json");
    assert!(s.suspended);
    assert_eq!(
        ids(&s.pending),
        [
            "t_pending_empty_array",
            "t_pending_absent",
            "t_pending_null"
        ]
    );
    assert_eq!(ids(&s.decided), ["t_approved_obj", "t_rejected_list"]);
    for tool in s.pending.iter().chain(&s.decided[..1]) {
        assert_eq!(tool.inputs, json!({}));
    }
    assert_eq!(s.decided[1].inputs, json!({ "0": "a.txt", "1": "b.txt" }));
    assert_eq!(s.message_id.as_deref(), Some("msg_na"));

    // The blank rejectReason on the tail reads as a bare reject.
    let mut d = Decisions::new(&s).unwrap();
    assert_eq!(
        d.get("t_rejected_list").unwrap(),
        Some(Decision::Reject(None))
    );
    for id in ["t_null", "t_absent"] {
        assert_eq!(
            d.approve(id).unwrap_err().code,
            ErrorCode::UnknownCallId,
            "{id}"
        );
    }
    d.approve("t_pending_null").unwrap();
    assert_eq!(
        d.to_json_string().unwrap(),
        r#"{"decisions":{"t_pending_null":"approve","t_approved_obj":"approve","t_rejected_list":"reject"}}"#
    );
}

#[test]
fn optional_fields_present_and_absent() {
    let t = thread("optional-fields.json");
    assert_eq!(t.messages[0].id(), None);
    assert_eq!(t.messages[0].resume_token(), None);
    assert_eq!(t.messages[1].id().as_deref(), Some("msg_old"));
    assert_eq!(t.messages[1].resume_token(), Some("workflow_old"));

    let old = t.messages[1].tools();
    assert_eq!(
        old[0].parameters(),
        Some(&json!([{ "name": "x", "type": "string" }]))
    );
    assert_eq!(old[0].deferred(), None);
    let new = t.messages[3].tools();
    assert_eq!(new[0].parameters(), None);
    assert_eq!(new[0].deferred(), Some(&json!(true)));
    assert_eq!(new[1].deferred(), Some(&json!(false)));
    assert_eq!(new[1].description(), None);
    assert_eq!(new[1].approval_reason(), None);

    let s = suspension("optional-fields.json");
    assert!(s.suspended);
    assert_eq!(ids(&s.pending), ["new_1", "new_2"]);
    assert_eq!(s.message_id, None);
    assert_eq!(s.resume_token, None);
    assert_eq!(s.pending[1].description, None);
    assert_eq!(
        s.pending[0].description.as_deref(),
        Some("Deploy to production")
    );
    // old_1 is on an older message: not part of this suspension.
    let mut d = Decisions::new(&s).unwrap();
    assert_eq!(
        d.approve("old_1").unwrap_err().code,
        ErrorCode::UnknownCallId
    );
}

#[test]
fn unknown_fields_and_types_are_tolerated_and_kept() {
    let t = thread("unknown-fields.json");
    let kinds: Vec<MessageKind> = t.messages.iter().map(Message::kind).collect();
    assert_eq!(
        kinds,
        [
            MessageKind::Text,
            MessageKind::Unknown("reasoning".into()),
            MessageKind::Unknown("citation".into()),
            MessageKind::Text,
            MessageKind::ToolCall
        ]
    );
    assert_eq!(t.messages[2].role(), None);
    assert!(t.messages[1].tools().is_empty());
    assert_eq!(
        t.messages[3].content(),
        Content::Other(&json!({ "kind": "structured", "value": 1 }))
    );
    assert_eq!(t.messages[1].get("signature"), Some(&json!("sig_abc")));
    let tail = t.last().unwrap();
    assert_eq!(tail.id().as_deref(), Some("7001"));
    assert_eq!(
        tail.tools()[0].as_object()["expiresAt"],
        json!("2025-01-01T01:00:00Z")
    );

    let s = suspension("unknown-fields.json");
    assert!(s.suspended);
    assert_eq!(s.message_id.as_deref(), Some("7001"));
    assert_eq!(
        s.pending[0].inputs,
        json!({ "amount": 9999, "nested": { "deep": [1, { "k": "v" }] } })
    );
    // Neuron 4's deadline is the card's, as the server wrote it; absent, no key.
    assert_eq!(
        s.pending[0].expires_at.as_deref(),
        Some("2025-01-01T01:00:00Z")
    );
    let card: serde_json::Value =
        serde_json::from_str(&ToJson::to_json_string(&s.pending[0])).unwrap();
    assert_eq!(card["expiresAt"], serde_json::json!("2025-01-01T01:00:00Z"));
    let seed = suspension("seed.json");
    let card: serde_json::Value =
        serde_json::from_str(&ToJson::to_json_string(&seed.pending[0])).unwrap();
    assert_eq!(card.get("expiresAt"), None);
}

#[test]
fn pending_on_an_older_message_does_not_suspend() {
    let t = thread("stale-pending.json");
    let s = Suspension::from_thread(&t);
    assert_eq!(s, Suspension::default());
    assert_eq!(suspension("stale-pending.json"), Suspension::default());
    // The same message, were it the tail, would suspend.
    let older = Suspension::from_message(&t.messages[1]);
    assert!(older.suspended);
    assert_eq!(ids(&older.pending), ["stale_1"]);
    assert_eq!(
        Decisions::new(&s).unwrap_err().code,
        ErrorCode::NotSuspended
    );
}

/// Keys are data, whatever they spell: a key another JSON library reserves for itself (serde_json's
/// raw-value and number markers) is an ordinary key in a tool's inputs and in a message, kept and
/// written back as it came.
#[test]
fn keys_other_libraries_reserve_are_ordinary_data() {
    let text = r#"{"id":"t","messages":[{"__id":"m1","role":"assistant","type":"tool_call",
        "$serde_json::private::RawValue":1e999,"content":[],"tools":[{"callId":"c1","name":"wipe",
        "inputs":{"$serde_json::private::RawValue":"{\"a\":1}","$serde_json::private::Number":"7"},
        "result":null,"approval":"pending"}]}]}"#;
    let s = pending_approvals_str(text).unwrap();
    assert!(s.suspended);
    assert_eq!(ids(&s.pending), ["c1"]);
    let inputs = s.pending[0].inputs.as_object().unwrap();
    assert_eq!(
        inputs.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "$serde_json::private::RawValue",
            "$serde_json::private::Number"
        ]
    );
    assert_eq!(
        inputs
            .get("$serde_json::private::RawValue")
            .and_then(Value::as_str),
        Some(r#"{"a":1}"#)
    );
    let t = parse_thread_str(text).unwrap();
    let m = &t.messages[0];
    assert_eq!(
        m.get("$serde_json::private::RawValue")
            .and_then(Value::as_number)
            .map(|n| n.as_str()),
        Some("1e999")
    );
    assert_eq!(parse_thread_str(&t.to_json_string()).unwrap(), t);
    assert_eq!(Suspension::from_thread(&t), s);
}

#[test]
fn escaped_keys_and_unicode() {
    let text = fixture("escaped-unicode.json");
    assert!(text.contains(r#""mess\u0061ges""#));
    let t = thread("escaped-unicode.json");
    assert_eq!(t.id.as_deref(), Some("thread_été"));
    assert_eq!(
        t.messages[0].content(),
        Content::Text(
            "Supprime le fichier « résumé.txt » 🗑\u{fe0f} s’il te plaît\n\"vite\"\\ merci"
        )
    );
    let tail = t.last().unwrap();
    assert_eq!(tail.kind(), MessageKind::ToolCall);
    assert_eq!(tail.id().as_deref(), Some("msg_ü"));
    assert_eq!(tail.content(), Content::Text("日本語のテキスト"));

    let s = suspension("escaped-unicode.json");
    assert!(s.suspended);
    assert_eq!(ids(&s.pending), ["call_éè"]);
    assert_eq!(s.message_id.as_deref(), Some("msg_ü"));
    assert_eq!(
        s.pending[0].approval_reason.as_deref(),
        Some("Irréversible 😱")
    );
    assert_eq!(
        s.pending[0].inputs,
        json!({ "path": "C:\\Users\\Zoë\\résumé.txt", "note": "tab\there" })
    );
    assert_eq!(s.decided[0].reject_reason.as_deref(), Some("Non, merci 🙏"));

    let mut d = Decisions::new(&s).unwrap();
    d.reject("call_éè", Some("Pas \"ça\"\n— non")).unwrap();
    let body = d.to_json_string().unwrap();
    let back = Value::parse(&body).unwrap();
    assert_eq!(
        back,
        json!({ "decisions": {
            "call_éè": ["reject", "Pas \"ça\"\n— non"],
            "call_ok": ["reject", "Non, merci 🙏"]
        }})
    );
}

#[test]
fn numeric_ids_become_decimal_strings() {
    let t = thread("numeric-id.json");
    assert_eq!(t.id.as_deref(), Some("42"));
    assert_eq!(t.messages[0].id().as_deref(), Some("1001"));
    let out = tv(&t);
    assert_eq!(out["id"], json!("42"));
    assert_eq!(out["messages"][0]["__id"], json!(1001));

    for (doc, id) in [
        (r#"{"id":-7,"messages":[]}"#, "-7"),
        (r#"{"id":1.5,"messages":[]}"#, "1.5"),
        (
            r#"{"id":18446744073709551615,"messages":[]}"#,
            "18446744073709551615",
        ),
        (r#"{"id":"x","messages":[],"id":"y"}"#, "y"),
    ] {
        assert_eq!(
            parse_thread_str(doc).unwrap().id.as_deref(),
            Some(id),
            "{doc}"
        );
        let value = Value::parse(doc).unwrap();
        assert_eq!(
            parse_thread_value(value).unwrap().id.as_deref(),
            Some(id),
            "{doc}"
        );
    }
}

#[test]
fn empty_thread() {
    let t = thread("empty.json");
    assert_eq!(t, Thread::default());
    assert_eq!(suspension("empty.json"), Suspension::default());
    assert_eq!(ToJson::to_json_string(&t), r#"{"id":null,"messages":[]}"#);
    assert_eq!(pending_approvals_str("[]").unwrap(), Suspension::default());
    assert_eq!(
        pending_approvals_str(" \n{ \"messages\" : [ ] }\n ").unwrap(),
        Suspension::default()
    );
}

#[test]
fn fully_decided_tail_is_not_suspended_but_reports_decided() {
    let s = suspension("tail-decided.json");
    assert!(!s.suspended);
    assert!(s.pending.is_empty());
    assert_eq!(ids(&s.decided), ["d1", "d3"]);
    assert_eq!(s.message_id.as_deref(), Some("msg_done"));
    assert_eq!(s.decided[1].reject_reason.as_deref(), Some("b is on leave"));
    assert_eq!(
        Decisions::new(&s).unwrap_err().code,
        ErrorCode::NotSuspended
    );
}

#[test]
fn tail_that_is_a_tool_call_result_or_text_is_not_suspended() {
    let doc = r#"{"messages":[
        {"__id":"a","role":"assistant","type":"tool_call","tools":[{"callId":"c","approval":"pending"}]},
        {"__id":"b","role":"user","type":"tool_call_result","tools":[{"callId":"c","approval":"pending","result":"x"}]}
    ]}"#;
    let s = pending_approvals_str(doc).unwrap();
    assert_eq!(s, Suspension::default());
    let doc = r#"[{"__id":"x","role":"assistant","type":"other","tools":[{"callId":"c","approval":"pending"}]}]"#;
    assert_eq!(pending_approvals_str(doc).unwrap(), Suspension::default());
    let doc = r#"[{"role":"assistant","type":"tool_call","tools":[]}]"#;
    assert_eq!(pending_approvals_str(doc).unwrap(), Suspension::default());
}

#[test]
fn interleaved_tail_keeps_tail_order() {
    let s = suspension("interleaved.json");
    assert_eq!(ids(&s.pending), ["z_first", "w_fourth"]);
    assert_eq!(ids(&s.decided), ["y_second", "v_fifth"]);
    let gated: Vec<&str> = s.gated().iter().map(|t| t.call_id.as_str()).collect();
    assert_eq!(gated, ["z_first", "y_second", "w_fourth", "v_fifth"]);
    assert_eq!(s.tool("w_fourth").map(|t| t.name.as_str()), Some("d"));
    assert!(s.tool("x_ungated").is_none());
}

// ---------------------------------------------------------------------------------------------------
// Truncated input: every prefix fails cleanly.

fn assert_prefix_fails(label: &str, prefix: Result<(), Error>, valid_json: bool) {
    match prefix {
        Err(e) => {
            assert_eq!(e.code, ErrorCode::ParseError, "{label}: {e}");
            assert!(!e.message.is_empty(), "{label}");
            if !valid_json {
                assert!(e.line.is_some() && e.column.is_some(), "{label}: {e}");
            }
        }
        Ok(()) => assert!(valid_json, "{label}: a truncated document parsed"),
    }
}

#[test]
fn every_prefix_of_every_fixture_fails_cleanly() {
    for name in FIXTURES {
        let text = fixture(name);
        let full = parse_thread_str(&text).unwrap();
        for i in 0..text.len() {
            if !text.is_char_boundary(i) {
                continue;
            }
            let prefix = &text[..i];
            // A prefix that is itself a JSON document (essentially never, for these) may parse.
            let valid_json = serde_json::from_str::<serde_json::Value>(prefix).is_ok();
            let label = format!("{name}[..{i}]");
            assert_prefix_fails(&label, parse_thread_str(prefix).map(|_| ()), valid_json);
            assert_prefix_fails(
                &label,
                pending_approvals_str(prefix).map(|_| ()),
                valid_json,
            );
            if valid_json {
                // Only the full document minus trailing whitespace: it must mean the same thread.
                assert_eq!(prefix.trim_end(), text.trim_end(), "{label}");
                assert_eq!(parse_thread_str(prefix).unwrap(), full, "{label}");
            }
        }
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            let prefix = &bytes[..i];
            let valid_json = serde_json::from_slice::<serde_json::Value>(prefix).is_ok();
            let label = format!("{name} bytes[..{i}]");
            assert_prefix_fails(&label, parse_thread_bytes(prefix).map(|_| ()), valid_json);
            assert_prefix_fails(
                &label,
                pending_approvals_bytes(prefix).map(|_| ()),
                valid_json,
            );
        }
    }
}

#[test]
fn a_prefix_that_is_valid_json_is_handled() {
    // "[]" is a valid document and a prefix of "[] " and of "[]x"; a bare number prefix is not a thread.
    assert_eq!(parse_thread_str("[]").unwrap(), Thread::default());
    let e = parse_err(parse_thread_str("1"));
    assert_eq!(e.code, ErrorCode::ParseError);
    assert_eq!(e.path.as_deref(), Some("$"));
    let e = parse_err(pending_approvals_str("[]x"));
    assert_eq!(e.code, ErrorCode::ParseError);
    assert_eq!((e.line, e.column), (Some(1), Some(3)));
}

// ---------------------------------------------------------------------------------------------------
// Malformed documents.

#[test]
fn malformed_json_reports_line_and_column() {
    let doc = "{\n  \"messages\": [\n    {\"role\": \"user\" \"content\": \"x\"}\n  ]\n}";
    for e in [
        parse_err(parse_thread_str(doc)),
        parse_err(pending_approvals_str(doc)),
        parse_err(parse_thread_bytes(doc.as_bytes())),
        parse_err(pending_approvals_bytes(doc.as_bytes())),
    ] {
        assert_eq!(e.code, ErrorCode::ParseError);
        assert_eq!(e.line, Some(3), "{e}");
        assert_eq!(e.column, Some(21), "{e}");
        assert_eq!(e.path.as_deref(), Some("$.messages[0]"));
        assert!(e.message.starts_with("invalid JSON"), "{e}");
        assert!(!e.message.contains("at line"), "{e}");
    }
    let e = parse_err(parse_thread_str(""));
    assert!(e.message.starts_with("unexpected end of input"), "{e}");
    let e = parse_err(pending_approvals_str(r#"{"messages":[]} {}"#));
    assert_eq!(e.path.as_deref(), Some("$"));
    assert!(e.message.contains("trailing characters"), "{e}");
}

#[test]
fn non_utf8_bytes_are_parse_errors() {
    let cases: [&[u8]; 4] = [
        b"{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}",
        b"{\"junk\":\"\xc3\x28\",\"messages\":[]}",
        b"{\n\"messages\":[],\n\"x\":\"ok\xe2\x82\"}",
        b"\xef\xbb\xbf{\"messages\":[]}",
    ];
    for bytes in cases {
        for e in [
            parse_err(parse_thread_bytes(bytes)),
            parse_err(pending_approvals_bytes(bytes)),
        ] {
            assert_eq!(e.code, ErrorCode::ParseError, "{e}");
            assert!(e.line.is_some(), "{e}");
        }
    }
    let e = parse_err(pending_approvals_bytes(cases[0]));
    assert_eq!((e.line, e.column), (Some(1), Some(40)));
    let e = parse_err(pending_approvals_bytes(cases[2]));
    assert_eq!((e.line, e.column), (Some(3), Some(8)));
}

/// (document, path, a piece of the message); both parse_thread and pending_approvals must report it.
const MALFORMED: &[(&str, &str, &str)] = &[
    (r#""hello""#, "$", "string"),
    ("42", "$", "array of messages"),
    ("null", "$", "null"),
    ("true", "$", "boolean"),
    ("{}", "$", "\"messages\" array"),
    (r#"{"id":"x"}"#, "$", "\"messages\" array"),
    (r#"{"messages":{}}"#, "$.messages", "array"),
    (r#"{"messages":null}"#, "$.messages", "null"),
    (r#"{"messages":"[]"}"#, "$.messages", "string"),
    (r#"{"id":true,"messages":[]}"#, "$.id", "boolean"),
    (
        r#"{"id":{},"messages":[]}"#,
        "$.id",
        "a string, a number or null",
    ),
    (
        r#"{"messages":[1]}"#,
        "$.messages[0]",
        "must be an object, got a number",
    ),
    (
        r#"[{"role":"user"},"x"]"#,
        "$[1]",
        "must be an object, got a string",
    ),
    (r#"[{"role":"user"},null]"#, "$[1]", "got null"),
    (
        r#"{"messages":[{"role":5}]}"#,
        "$.messages[0].role",
        "role must be a string",
    ),
    (
        r#"{"messages":[{"role":null}]}"#,
        "$.messages[0].role",
        "got null",
    ),
    (
        r#"{"messages":[{"type":3}]}"#,
        "$.messages[0].type",
        "type must be a string",
    ),
    (
        r#"{"messages":[{"__id":{}}]}"#,
        "$.messages[0].__id",
        "__id must be",
    ),
    (
        r#"{"messages":[{"type":"tool_call"}]}"#,
        "$.messages[0].tools",
        "needs a tools array",
    ),
    (
        r#"{"messages":[{"type":"tool_call","tools":{}}]}"#,
        "$.messages[0].tools",
        "tools must be an array",
    ),
    (
        r#"{"messages":[{"type":"tool_call","tools":[1]}]}"#,
        "$.messages[0].tools[0]",
        "a tool must be an object",
    ),
    (
        r#"{"messages":[{"type":"tool_call","tools":[{"approval":"pending"}]}]}"#,
        "$.messages[0].tools[0].callId",
        "a gated tool needs a callId",
    ),
    (
        r#"{"messages":[{"type":"tool_call","tools":[{"callId":null,"approval":"approved"}]}]}"#,
        "$.messages[0].tools[0].callId",
        "a gated tool needs a callId",
    ),
    (
        r#"{"messages":[{"type":"tool_call","tools":[{"callId":"a"},{"callId":5}]}]}"#,
        "$.messages[0].tools[1].callId",
        "callId must be a string",
    ),
    (
        r#"{"messages":[{"type":"tool_call","tools":[{"callId":"a","approval":"maybe"}]}]}"#,
        "$.messages[0].tools[0].approval",
        "got \"maybe\"",
    ),
    (
        r#"{"messages":[{"type":"tool_call","tools":[{"callId":"a","approval":"Pending"}]}]}"#,
        "$.messages[0].tools[0].approval",
        "got \"Pending\"",
    ),
    (
        r#"{"messages":[{"type":"tool_call","tools":[{"callId":"a","approval":true}]}]}"#,
        "$.messages[0].tools[0].approval",
        "got a boolean",
    ),
    (
        r#"{"messages":[{"type":"tool_call","tools":[{"callId":"a","inputs":"x=1"}]}]}"#,
        "$.messages[0].tools[0].inputs",
        "inputs must be an object",
    ),
    (
        r#"{"messages":[{"type":"tool_call_result","tools":[{"callId":"a","approval":"ok"}]}]}"#,
        "$.messages[0].tools[0].approval",
        "approval must be",
    ),
    (
        r#"[{"role":"user"},{"role":"user"},{"role":"user"},{"type":"tool_call","tools":[{"callId":"a","approval":"yes"}]}]"#,
        "$[3].tools[0].approval",
        "approval must be",
    ),
    (
        r#"{"messages":[{"role":"user"},{"role":"user"},{"role":"user"},{"type":"tool_call","tools":[{"callId":"a","approval":"yes"}]}]}"#,
        "$.messages[3].tools[0].approval",
        "approval must be",
    ),
];

#[test]
fn malformed_documents_report_the_path() {
    for (doc, path, needle) in MALFORMED {
        let value = Value::parse(doc).unwrap();
        for (entry, e) in [
            ("parse_thread_str", parse_err(parse_thread_str(doc))),
            (
                "parse_thread_bytes",
                parse_err(parse_thread_bytes(doc.as_bytes())),
            ),
            (
                "parse_thread_value",
                parse_err(parse_thread_value(value.clone())),
            ),
            (
                "pending_approvals_str",
                parse_err(pending_approvals_str(doc)),
            ),
            (
                "pending_approvals_bytes",
                parse_err(pending_approvals_bytes(doc.as_bytes())),
            ),
            (
                "pending_approvals_value",
                parse_err(pending_approvals_value(&value)),
            ),
        ] {
            assert_eq!(e.code, ErrorCode::ParseError, "{entry} {doc}: {e}");
            assert_eq!(e.path.as_deref(), Some(*path), "{entry} {doc}: {e}");
            assert!(e.message.contains(needle), "{entry} {doc}: {e}");
        }
    }
}

#[test]
fn pending_approvals_does_not_inspect_older_messages_beyond_their_shape() {
    // An old message breaking a thread rule: parse_thread refuses, pending detection (tail only) answers.
    let doc = r#"{"messages":[{"type":"tool_call"},{"role":"assistant","content":"ok"}]}"#;
    let e = parse_err(parse_thread_str(doc));
    assert_eq!(e.path.as_deref(), Some("$.messages[0].tools"));
    assert_eq!(pending_approvals_str(doc).unwrap(), Suspension::default());
    let value = Value::parse(doc).unwrap();
    assert_eq!(
        pending_approvals_value(&value).unwrap(),
        Suspension::default()
    );
}

#[test]
fn duplicate_messages_keys_take_the_last() {
    let doc = r#"{"messages":[{"type":"tool_call","tools":[{"callId":"a","approval":"pending"}]}],"messages":[]}"#;
    assert_eq!(pending_approvals_str(doc).unwrap(), Suspension::default());
    assert!(parse_thread_str(doc).unwrap().messages.is_empty());
    let value = Value::parse(doc).unwrap();
    assert_eq!(
        pending_approvals_value(&value).unwrap(),
        Suspension::default()
    );
}

#[test]
fn message_from_value_paths_start_at_root() {
    let e = parse_err(Message::from_value(
        json!({ "type": "tool_call", "tools": [{ "callId": "a", "approval": 1 }] }),
    ));
    assert_eq!(e.path.as_deref(), Some("$.tools[0].approval"));
    let e = parse_err(Message::from_value(json!([])));
    assert_eq!(e.path.as_deref(), Some("$"));
    let e = parse_err(Message::parse_str("{"));
    assert!(e.line.is_some());
}

// ---------------------------------------------------------------------------------------------------
// Decisions.

#[test]
fn decision_wire_forms() {
    assert_eq!(Decision::Approve.to_wire(), json!("approve"));
    assert_eq!(Decision::Reject(None).to_wire(), json!("reject"));
    assert_eq!(
        Decision::Reject(Some("too risky".into())).to_wire(),
        json!(["reject", "too risky"])
    );
    // A blank reason, however it got there, is a bare reject on the wire.
    assert_eq!(
        Decision::Reject(Some(" \t\n".into())).to_wire(),
        json!("reject")
    );
    assert_eq!(
        ToJson::to_json_string(&Decision::Reject(Some("".into()))),
        r#""reject""#
    );
    assert_eq!(
        ToJson::to_json_string(&Decision::Reject(Some("no".into()))),
        r#"["reject","no"]"#
    );

    assert_eq!(
        Decision::from_wire(&json!("approve")).unwrap(),
        Decision::Approve
    );
    assert_eq!(
        Decision::from_wire(&json!("reject")).unwrap(),
        Decision::Reject(None)
    );
    assert_eq!(
        Decision::from_wire(&json!(["reject", " why not "])).unwrap(),
        Decision::Reject(Some(" why not ".into()))
    );
    assert_eq!(
        Decision::from_wire(&json!(["reject", "  "])).unwrap(),
        Decision::Reject(None)
    );
    for bad in [
        json!("Approve"),
        json!("approved"),
        json!("rejected"),
        json!(["reject"]),
        json!(["reject", 1]),
        json!(["reject", null]),
        json!(["approve", "ok"]),
        json!(["reject", "a", "b"]),
        json!({ "reject": "x" }),
        json!(null),
        json!(true),
        json!([]),
    ] {
        let e = Decision::from_wire(&bad).unwrap_err();
        assert_eq!(e.code, ErrorCode::ParseError, "{bad}");
    }
    for d in [
        Decision::Approve,
        Decision::Reject(None),
        Decision::Reject(Some("r".into())),
    ] {
        assert_eq!(Decision::from_wire(&d.to_wire()).unwrap(), d);
    }
}

#[test]
fn reject_reason_blank_is_bare_and_otherwise_verbatim() {
    assert_eq!(Decision::reject(None), Decision::Reject(None));
    assert_eq!(Decision::reject(Some("")), Decision::Reject(None));
    assert_eq!(Decision::reject(Some(" \t\r\n ")), Decision::Reject(None));
    assert_eq!(
        Decision::reject(Some("  keep my spaces ")),
        Decision::Reject(Some("  keep my spaces ".into()))
    );

    let mut d = Decisions::new(&suspension("seed.json")).unwrap();
    d.reject("toolu_01A2B3C4D5E6F7", Some("   ")).unwrap();
    assert_eq!(
        d.get("toolu_01A2B3C4D5E6F7").unwrap(),
        Some(Decision::Reject(None))
    );
    assert_eq!(
        d.to_json_string().unwrap(),
        r#"{"decisions":{"toolu_01A2B3C4D5E6F7":"reject","toolu_08G9H0I1J2K3L4":["reject","Do not email the whole team"]}}"#
    );
}

#[test]
fn unknown_call_ids_are_refused_by_name() {
    let mut d = Decisions::new(&suspension("interleaved.json")).unwrap();
    let before = d.clone();
    for id in ["nope", "x_ungated", "", "Z_FIRST"] {
        for e in [
            d.approve(id).unwrap_err(),
            d.reject(id, Some("r")).unwrap_err(),
            d.clear(id).unwrap_err(),
            d.get(id).unwrap_err(),
        ] {
            assert_eq!(e.code, ErrorCode::UnknownCallId, "{id}");
            assert!(e.message.contains(&format!("{id:?}")), "{e}");
        }
    }
    assert_eq!(d, before, "failed calls change nothing");
}

#[test]
fn not_suspended_and_empty_decisions() {
    for name in [
        "conversation.json",
        "empty.json",
        "tail-decided.json",
        "stale-pending.json",
    ] {
        let e = Decisions::new(&suspension(name)).unwrap_err();
        assert_eq!(e.code, ErrorCode::NotSuspended, "{name}");
        assert_eq!(e.code.as_str(), "not_suspended");
    }
    let d = Decisions::new(&suspension("bare-array.json")).unwrap();
    assert_eq!(d.payload().unwrap_err().code, ErrorCode::EmptyDecisions);
    let e = d.to_json_string().unwrap_err();
    assert_eq!(e.code, ErrorCode::EmptyDecisions);
    assert_eq!(e.code.as_str(), "empty_decisions");
}

#[test]
fn tail_decisions_are_revisable_last_write_wins() {
    let s = suspension("seed.json");
    let mut d = Decisions::new(&s).unwrap();
    assert_eq!(d.message_id(), Some("msg_7488585683808067584"));
    let rejected = "toolu_08G9H0I1J2K3L4";
    let pending = "toolu_01A2B3C4D5E6F7";
    // The tail's own decision is already effective and already in the payload.
    assert_eq!(
        d.get(rejected).unwrap(),
        Some(Decision::Reject(Some("Do not email the whole team".into())))
    );
    assert_eq!(d.get(pending).unwrap(), None);
    assert_eq!(d.local().count(), 0);
    assert_eq!(
        d.to_json_string().unwrap(),
        r#"{"decisions":{"toolu_08G9H0I1J2K3L4":["reject","Do not email the whole team"]}}"#
    );

    d.approve(rejected).unwrap();
    assert_eq!(d.get(rejected).unwrap(), Some(Decision::Approve));
    d.reject(pending, Some("first")).unwrap();
    d.approve(pending).unwrap();
    d.reject(pending, Some("second")).unwrap();
    assert_eq!(
        d.to_json_string().unwrap(),
        r#"{"decisions":{"toolu_01A2B3C4D5E6F7":["reject","second"],"toolu_08G9H0I1J2K3L4":"approve"}}"#
    );
    let local: Vec<(&str, &Decision)> = d.local().collect();
    assert_eq!(
        local,
        [
            (pending, &Decision::Reject(Some("second".into()))),
            (rejected, &Decision::Approve)
        ]
    );

    // Clearing the revision brings the tail's decision back; clearing a pending draft undecides it.
    d.clear(rejected).unwrap();
    assert_eq!(
        d.get(rejected).unwrap(),
        Some(Decision::Reject(Some("Do not email the whole team".into())))
    );
    d.clear(pending).unwrap();
    d.clear(pending).unwrap(); // clearing twice is harmless
    assert_eq!(d.get(pending).unwrap(), None);
    assert_eq!(d.local().count(), 0);
    assert_eq!(d.undecided(), [pending]);
    d.set(pending, Decision::Reject(Some("  ".into()))).unwrap();
    assert_eq!(d.get(pending).unwrap(), Some(Decision::Reject(None)));
    d.set(pending, Decision::Approve).unwrap();
    assert_eq!(d.get(pending).unwrap(), Some(Decision::Approve));
}

#[test]
fn completeness_and_undecided_follow_tail_order() {
    let s = suspension("interleaved.json");
    let mut d = Decisions::new(&s).unwrap();
    let all: Vec<&str> = d.call_ids().collect();
    assert_eq!(all, ["z_first", "y_second", "w_fourth", "v_fifth"]);
    assert!(!d.is_complete());
    assert_eq!(d.undecided(), ["z_first", "w_fourth"]);
    d.approve("w_fourth").unwrap();
    assert_eq!(d.undecided(), ["z_first"]);
    assert!(!d.is_complete());
    d.reject("z_first", None).unwrap();
    assert!(d.is_complete());
    assert!(d.undecided().is_empty());
    d.clear("w_fourth").unwrap();
    assert!(!d.is_complete());
    assert_eq!(d.undecided(), ["w_fourth"]);
}

#[test]
fn payload_keys_keep_tail_order_not_sorted_order() {
    let s = suspension("interleaved.json");
    let mut d = Decisions::new(&s).unwrap();
    // Decide out of order; the callIds are reverse-alphabetical in the tail.
    d.approve("w_fourth").unwrap();
    d.reject("z_first", Some("not now")).unwrap();
    let payload = d.payload().unwrap();
    assert_eq!(payload.len(), 4);
    assert!(!payload.is_empty());
    let keys: Vec<&str> = payload.iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["z_first", "y_second", "w_fourth", "v_fifth"]);
    assert_eq!(payload.get("y_second"), Some(&Decision::Reject(None)));
    assert_eq!(payload.get("x_ungated"), None);
    assert_eq!(
        ToJson::to_json_string(&payload),
        r#"{"z_first":["reject","not now"],"y_second":"reject","w_fourth":"approve","v_fifth":"approve"}"#
    );
    assert_eq!(
        d.to_json_string().unwrap(),
        r#"{"decisions":{"z_first":["reject","not now"],"y_second":"reject","w_fourth":"approve","v_fifth":"approve"}}"#
    );
    // Partial: only what is decided is sent (the pending z_first is left out once cleared).
    d.clear("z_first").unwrap();
    assert_eq!(
        d.to_json_string().unwrap(),
        r#"{"decisions":{"y_second":"reject","w_fourth":"approve","v_fifth":"approve"}}"#
    );
}

#[test]
fn repeated_call_ids_on_the_tail_are_kept_once() {
    let doc = r#"[{"type":"tool_call","tools":[
        {"callId":"a","approval":"pending"},
        {"callId":"a","approval":"approved"},
        {"callId":"b","approval":"pending"}]}]"#;
    let s = pending_approvals_str(doc).unwrap();
    let mut d = Decisions::new(&s).unwrap();
    let all: Vec<&str> = d.call_ids().collect();
    assert_eq!(all, ["a", "b"]);
    d.approve("b").unwrap();
    assert_eq!(d.undecided(), ["a"]);
    assert_eq!(
        d.to_json_string().unwrap(),
        r#"{"decisions":{"b":"approve"}}"#
    );
}

#[test]
fn error_codes_are_stable() {
    assert_eq!(ErrorCode::ParseError.as_str(), "parse_error");
    assert_eq!(ErrorCode::UnknownCallId.as_str(), "unknown_call_id");
    assert_eq!(ErrorCode::InvalidState.to_string(), "invalid_state");
    let e = parse_err(parse_thread_str(r#"{"messages":[1]}"#));
    assert_eq!(
        e.to_string(),
        "parse_error: a message must be an object, got a number at $.messages[0]"
    );
}

/// Bytes are checked for UTF-8 by skipping ASCII a block at a time (16 bytes with SIMD in wasm, 8
/// natively) and asking std about each run of non-ASCII bytes. A document is accepted exactly when
/// std accepts its bytes: text mixing ASCII, every width of valid sequence, and cut, overlong,
/// surrogate and stray bytes, generated, and each piece at every offset inside full blocks. (This
/// file also runs compiled to wasm, where the SIMD path is the one taken.)
#[test]
fn bytes_are_accepted_exactly_when_they_are_utf8() {
    let pieces: &[&[u8]] = &[
        b"a",
        b"abcdefghijklmnop",
        "\u{e9}".as_bytes(),
        "\u{20ac}".as_bytes(),
        "\u{1f600}".as_bytes(),
        b"\xff",
        b"\x80",
        b"\xc3",
        b"\xe2\x82",
        b"\xf0\x9f\x98",
        b"\xc0\xaf",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"\x7f",
    ];
    let check = |content: &[u8]| {
        let mut doc = br#"{"messages":[{"role":"user","content":""#.to_vec();
        doc.extend_from_slice(content);
        doc.extend_from_slice(br#""}]}"#);
        let valid = std::str::from_utf8(&doc).is_ok();
        assert_eq!(parse_thread_bytes(&doc).is_ok(), valid, "{doc:?}");
        assert_eq!(pending_approvals_bytes(&doc).is_ok(), valid, "{doc:?}");
    };
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..5_000 {
        let mut content = Vec::new();
        for _ in 0..next() % 12 {
            let piece = pieces[(next() % pieces.len() as u64) as usize];
            for _ in 0..1 + next() % 20 {
                content.extend_from_slice(piece);
            }
        }
        check(&content);
    }
    for pad in 0..40 {
        for piece in pieces {
            for twice in [false, true] {
                // ASCII after the piece too, so that it also sits inside full 16-byte blocks.
                let mut content = vec![b'x'; pad];
                content.extend_from_slice(piece);
                if twice {
                    content.extend_from_slice(b"0123456789abcdefg");
                    content.extend_from_slice(piece);
                }
                content.extend_from_slice(&[b'y'; 40]);
                check(&content);
            }
        }
    }
}

#[test]
fn tools_that_are_not_gated_may_have_no_call_id() {
    // Providers that give calls no id: a read in the history and one beside the gated call on the
    // tail, with `callId` null or absent. The thread loads, the views list them with `""`, and the
    // gated call is decided as usual.
    let doc = json!({"id": "t", "messages": [
        {"__id": "m1", "role": "user", "content": "look, then delete"},
        {"__id": "m2", "role": "assistant", "type": "tool_call",
         "tools": [{"callId": null, "name": "read_file", "inputs": {"path": "a"}, "approval": null}]},
        {"__id": "m3", "role": "user", "type": "tool_call_result",
         "tools": [{"name": "read_file", "inputs": {"path": "a"}, "result": "x"}]},
        {"__id": "m4", "role": "assistant", "type": "tool_call", "tools": [
            {"name": "list_dir", "inputs": {}},
            {"callId": "c1", "name": "delete_file", "inputs": {"path": "a"}, "approval": "pending"}
        ]}
    ]})
    .to_string();
    let t = parse_thread_str(&doc).expect("loads");
    assert_eq!(t.messages.len(), 4);
    let read: Vec<&str> = t.messages[1].tools().iter().map(|c| c.call_id()).collect();
    assert_eq!(read, [""]);
    assert_eq!(t.messages[2].tools().len(), 1);
    let tail: Vec<&str> = t
        .last()
        .unwrap()
        .tools()
        .iter()
        .map(|c| c.call_id())
        .collect();
    assert_eq!(tail, ["", "c1"]);
    let s = Suspension::from_thread(&t);
    assert!(s.suspended);
    assert_eq!(ids(&s.pending), ["c1"]);
    assert_eq!(pending_approvals_str(&doc).expect("the tail alone"), s);
    let mut d = Decisions::new(&s).unwrap();
    d.approve("c1").unwrap();
    assert_eq!(
        d.to_json_string().unwrap(),
        r#"{"decisions":{"c1":"approve"}}"#
    );
    assert_eq!(d.approve("").unwrap_err().code, ErrorCode::UnknownCallId);
}

/// `check_thread_str` (behind `parseThread`, which builds the messages with `JSON.parse`) checks a
/// document exactly as `parse_thread_str` does: the same id, the same bare-array reading and the
/// same error, code, path and position.
#[test]
fn checking_a_thread_agrees_with_parsing_it() {
    use toolgate::thread::check_thread_str;
    let docs = [
        r#"{"id":"t1","messages":[{"role":"user","content":"hi"}]}"#,
        r#"{"messages":[],"id":"t2"}"#,
        r#"{"messages":[]}"#,
        r#"[{"role":"user","content":"bare"}]"#,
        "[]",
        r#"{"id":7,"messages":[]}"#,
        r#"{"id":"t","messages":[1]}"#,
        r#"{"id":"t","messages":{}}"#,
        r#"{"id":"t"}"#,
        r#"{"id":"t","messages":[{"role":"user","content":"x"}"#,
        r#"{"id":"t","messages":[{"type":"tool_call","tools":[{"name":"x","approval":"pending"}]}]}"#,
        "not json",
        "",
    ];
    for doc in docs {
        let parsed = parse_thread_str(doc).map(|t| {
            let bare = doc.trim_start().starts_with('[');
            (t.id, bare)
        });
        let checked = check_thread_str(doc);
        match (&parsed, &checked) {
            (Ok(p), Ok(c)) => assert_eq!(p, c, "{doc}"),
            (Err(p), Err(c)) => {
                assert_eq!(p.code, c.code, "{doc}");
                assert_eq!(p.message, c.message, "{doc}");
                assert_eq!(p.path, c.path, "{doc}");
            }
            _ => panic!("{doc}: parse {parsed:?}, check {checked:?}"),
        }
    }
    assert_eq!(
        check_thread_str(r#"{"id":"t1","messages":[]}"#).map_err(|e| e.code),
        Ok((Some("t1".to_owned()), false))
    );
    assert_eq!(check_thread_str("[]").map_err(|e| e.code), Ok((None, true)));
}

#[test]
fn a_message_gives_back_its_original_object() {
    let t = parse_thread_str(
        r#"{"id":"t","messages":[{"role":"user","content":"hi","__id":"m1","extra":{"k":[1,2]}}]}"#,
    )
    .expect("thread");
    let m = t.messages.into_iter().next().expect("one message");
    let copy = m.clone();
    assert_eq!(
        m.into_value(),
        json!({"role":"user","content":"hi","__id":"m1","extra":{"k":[1,2]}})
    );
    // Shared with a copy: the copy keeps its object.
    assert_eq!(copy.get("extra"), Some(&json!({"k":[1,2]})));
}

/// A tail that repeats a callId, one of its tools decided and another pending: the call is
/// undecided (the pending tool has no decision), so the set is not complete, and no approval the
/// person never gave is sent for it.
#[test]
fn a_pending_tool_sharing_its_call_id_with_a_decided_one_is_not_decided() {
    let tail = r#"{"role":"assistant","type":"tool_call","tools":[
        {"callId":"a","name":"send_email","inputs":{},"approval":"approved"},
        {"callId":"a","name":"delete_file","inputs":{},"approval":"pending"}]}"#;
    let s = pending_approvals_str(&format!("[{tail}]")).expect("parses");
    assert!(s.suspended);
    assert_eq!(s.pending.len(), 1);
    let mut d = Decisions::new(&s).expect("decisions");
    assert!(!d.is_complete(), "a pending tool is counted as decided");
    assert_eq!(d.undecided(), vec!["a"]);
    assert!(d.to_json_string().is_err(), "sent {:?}", d.to_json_string());
    // Decided by the person: one decision for the callId.
    d.reject("a", Some("no")).expect("reject");
    assert_eq!(
        d.to_json_string().expect("payload"),
        r#"{"decisions":{"a":["reject","no"]}}"#
    );
    // Both tools recording the same decision: decided.
    let same = tail.replace(r#""approval":"pending""#, r#""approval":"approved""#);
    let s = pending_approvals_str(&format!("[{same}]")).expect("parses");
    if s.suspended {
        let d = Decisions::new(&s).expect("decisions");
        assert!(d.is_complete());
    }
}
