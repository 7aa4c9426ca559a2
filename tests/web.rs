//! Browser tests of the JS surface, run by wasm-bindgen-test-runner in headless Chromium
//! (`scripts/test-browser.sh`). They call the exported functions with real JS values and check what
//! a JS caller sees: plain objects (never `Map`s), `null` where the wire has null, errors with
//! `name === "ToolgateError"` and a stable `code`, and all three input kinds.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, JsString, Object, Reflect, Uint8Array, JSON};
use toolgate::wasm::{is_toolgate_error, parse_thread, pending_approvals, JsDecisions};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

#[path = "support/web.rs"]
mod support;
use support::*;

wasm_bindgen_test_configure!(run_in_browser);

const SEED: &str = include_str!("fixtures/neuron/seed.json");
const CONVERSATION: &str = include_str!("fixtures/neuron/conversation.json");

fn stringify(v: &JsValue) -> String {
    JSON::stringify(v).map(String::from).unwrap_or_default()
}

/// A JS array of strings (e.g. `Decisions.undecided`), checked to be a real array.
fn strings(v: &JsValue) -> Vec<String> {
    assert!(js_sys::Array::is_array(v), "an array: {}", stringify(v));
    js_sys::Array::from(v)
        .iter()
        .map(|s| s.as_string().expect("a string"))
        .collect()
}

fn is_plain_object(v: &JsValue) -> bool {
    let object_prototype: JsValue = Object::get_prototype_of(&Object::new()).into();
    v.is_object() && JsValue::from(Object::get_prototype_of(v)) == object_prototype
}

fn js_parse(text: &str) -> JsValue {
    JSON::parse(text).unwrap_or(JsValue::UNDEFINED)
}

fn error_code(e: &JsValue) -> String {
    get(e, "code").as_string().unwrap_or_default()
}

#[wasm_bindgen_test]
fn pending_approvals_from_string_bytes_and_object_agree() {
    let from_str = pending_approvals(JsValue::from_str(SEED), JsValue::UNDEFINED).unwrap();
    let bytes = Uint8Array::from(SEED.as_bytes());
    let from_bytes = pending_approvals(bytes.into(), JsValue::UNDEFINED).unwrap();
    let from_obj = pending_approvals(js_parse(SEED), JsValue::UNDEFINED).unwrap();
    assert_eq!(stringify(&from_str), stringify(&from_bytes));
    assert_eq!(stringify(&from_str), stringify(&from_obj));

    assert_eq!(get(&from_str, "suspended"), JsValue::TRUE);
    assert_eq!(
        path(&from_str, &["pending", "0", "callId"])
            .as_string()
            .as_deref(),
        Some("toolu_01A2B3C4D5E6F7")
    );
    assert_eq!(
        path(&from_str, &["decided", "0", "callId"])
            .as_string()
            .as_deref(),
        Some("toolu_08G9H0I1J2K3L4")
    );
    assert_eq!(
        path(&from_str, &["decided", "0", "rejectReason"])
            .as_string()
            .as_deref(),
        Some("Do not email the whole team")
    );
}

#[wasm_bindgen_test]
fn results_are_plain_objects_with_null_not_undefined() {
    let s = pending_approvals(JsValue::from_str(SEED), JsValue::UNDEFINED).unwrap();
    assert!(is_plain_object(&s));
    assert!(Array::is_array(&get(&s, "pending")));
    let tool = path(&s, &["pending", "0"]);
    assert!(is_plain_object(&tool));
    assert!(is_plain_object(&get(&tool, "inputs")));
    assert_eq!(
        path(&tool, &["inputs", "path"]).as_string().as_deref(),
        Some("C:/old_logs.txt")
    );
    // rejectReason is null on the wire: null here, not undefined.
    assert!(get(&tool, "rejectReason").is_null());
    assert!(Reflect::has(&tool, &"rejectReason".into()).unwrap());
    // Sidenet-only fields are absent on Neuron threads.
    assert!(!Reflect::has(&tool, &"runId".into()).unwrap());

    let thread = parse_thread(JsValue::from_str(CONVERSATION)).unwrap();
    assert!(is_plain_object(&thread));
    let messages = get(&thread, "messages");
    assert!(Array::is_array(&messages));
    let first = path(&thread, &["messages", "0"]);
    assert!(is_plain_object(&first));
    // A parse followed by JSON.stringify loses nothing (compared as JSON values).
    let original: serde_json::Value = serde_json::from_str(CONVERSATION).unwrap();
    let round: serde_json::Value = serde_json::from_str(&stringify(&messages)).unwrap();
    assert_eq!(original["messages"], round);
    assert_eq!(
        get(&thread, "id").as_string(),
        original["id"].as_str().map(str::to_owned)
    );
}

#[wasm_bindgen_test]
fn decisions_build_the_exact_wire_payload() {
    let s = pending_approvals(JsValue::from_str(SEED), JsValue::UNDEFINED).unwrap();
    let mut d = JsDecisions::new(s).unwrap();
    assert!(!d.is_complete());
    assert_eq!(
        strings(&d.undecided().unwrap()),
        vec!["toolu_01A2B3C4D5E6F7".to_string()]
    );
    d.approve("toolu_01A2B3C4D5E6F7".into()).unwrap();
    assert!(d.is_complete());
    assert_eq!(
        stringify(&d.to_json().unwrap()),
        r#"{"decisions":{"toolu_01A2B3C4D5E6F7":"approve","toolu_08G9H0I1J2K3L4":["reject","Do not email the whole team"]}}"#
    );
    assert_eq!(
        d.get("toolu_01A2B3C4D5E6F7".into())
            .unwrap()
            .as_string()
            .as_deref(),
        Some("approve")
    );
    d.reject("toolu_08G9H0I1J2K3L4".into(), "   ".into())
        .unwrap();
    assert_eq!(
        d.get("toolu_08G9H0I1J2K3L4".into())
            .unwrap()
            .as_string()
            .as_deref(),
        Some("reject")
    );
    d.clear("toolu_01A2B3C4D5E6F7".into()).unwrap();
    assert!(d.get("toolu_01A2B3C4D5E6F7".into()).unwrap().is_null());

    // Also from a thread input directly.
    let d2 = JsDecisions::new(JsValue::from_str(SEED)).unwrap();
    assert_eq!(strings(&d2.undecided().unwrap()).len(), 1);
}

#[wasm_bindgen_test]
fn errors_are_toolgate_errors_with_codes() {
    let s = pending_approvals(JsValue::from_str(SEED), JsValue::UNDEFINED).unwrap();
    let mut d = JsDecisions::new(s).unwrap();
    let e = d.approve("toolu_nope".into()).unwrap_err();
    assert!(e.is_instance_of::<js_sys::Error>());
    assert_eq!(
        get(&e, "name").as_string().as_deref(),
        Some("ToolgateError")
    );
    assert_eq!(error_code(&e), "unknown_call_id");
    assert!(is_toolgate_error(&e));
    assert!(!is_toolgate_error(&js_sys::Error::new("other").into()));
    assert!(!is_toolgate_error(&JsValue::from_str("x")));
    // A callId or a reason that is not a string: invalid_argument, as on ApprovalClient.
    let e = d.approve(JsValue::from(42)).unwrap_err();
    assert_eq!(error_code(&e), "invalid_argument");
    let e = d
        .reject("toolu_01A2B3C4D5E6F7".into(), JsValue::from(1))
        .unwrap_err();
    assert_eq!(error_code(&e), "invalid_argument");

    let e = d.to_json().map(|_| ()).and_then(|_| {
        let empty = JsDecisions::new(JsValue::from_str(SEED)).unwrap();
        empty.to_json().map(|_| ())
    });
    // The seed's tail already has a decision, so the payload is never empty there.
    assert!(e.is_ok());

    let idle = r#"{"messages":[{"role":"user","content":"hi"}]}"#;
    let e = JsDecisions::new(JsValue::from_str(idle)).err().unwrap();
    assert_eq!(error_code(&e), "not_suspended");

    let e = pending_approvals(
        JsValue::from_str("{\"messages\": [\n  {\"role\": }"),
        JsValue::UNDEFINED,
    )
    .unwrap_err();
    assert_eq!(error_code(&e), "parse_error");
    assert_eq!(get(&e, "line").as_f64(), Some(2.0));
    assert!(get(&e, "column").as_f64().is_some());
    let e = pending_approvals(JsValue::from_str(r#"{"messages": {}}"#), JsValue::UNDEFINED)
        .unwrap_err();
    assert_eq!(error_code(&e), "parse_error");
    assert_eq!(get(&e, "path").as_string().as_deref(), Some("$.messages"));
    let e = pending_approvals(
        js_parse(
            r#"{"messages": [{"type":"tool_call","tools":[{"callId":"a","approval":"maybe"}]}]}"#,
        ),
        JsValue::UNDEFINED,
    )
    .unwrap_err();
    assert_eq!(error_code(&e), "parse_error");
    assert_eq!(
        get(&e, "path").as_string().as_deref(),
        Some("$.messages[0].tools[0].approval")
    );
    let e = parse_thread(JsValue::from(42)).unwrap_err();
    assert_eq!(error_code(&e), "parse_error");
    let e = parse_thread(Uint8Array::from(&[0xff, 0xfe, b'{'][..]).into()).unwrap_err();
    assert_eq!(error_code(&e), "parse_error");
}

#[wasm_bindgen_test]
fn no_input_traps_the_module() {
    // Every prefix of a fixture, as a string and as bytes: an error, never a trap.
    let seed = SEED.trim_end();
    for end in 0..seed.len() {
        if !seed.is_char_boundary(end) {
            continue;
        }
        let prefix = &seed[..end];
        let e = pending_approvals(JsValue::from_str(prefix), JsValue::UNDEFINED).unwrap_err();
        assert_eq!(error_code(&e), "parse_error", "prefix {end}");
        let e = parse_thread(Uint8Array::from(prefix.as_bytes()).into()).unwrap_err();
        assert_eq!(error_code(&e), "parse_error", "prefix {end}");
    }
    // Odd JS values.
    for v in [
        JsValue::UNDEFINED,
        JsValue::NULL,
        JsValue::TRUE,
        JsString::from("").into(),
        js_sys::Function::new_no_args("return 1").into(),
        js_parse("[[1]]"),
        js_parse(r#"{"messages":[null]}"#),
    ] {
        let e = pending_approvals(v.clone(), JsValue::UNDEFINED).unwrap_err();
        assert_eq!(error_code(&e), "parse_error");
        assert!(parse_thread(v).is_err());
    }
    // The module still works after all that.
    assert!(pending_approvals(JsValue::from_str(SEED), JsValue::UNDEFINED).is_ok());
}

/// The value a JS expression evaluates to.
fn js_eval(expr: &str) -> JsValue {
    js_sys::Function::new_no_args(&format!("return {expr}"))
        .call0(&JsValue::NULL)
        .expect(expr)
}

/// A value whose reading throws (a getter, a revoked proxy, a detached buffer) is a `parse_error`,
/// for every function that takes a thread, and no exception unwinds through the module: one that
/// did left its stack behind, and a few thousand of them made the module trap.
#[wasm_bindgen_test]
fn values_that_throw_when_read_are_parse_errors() {
    let values = [
        "{ get messages() { throw new Error('boom'); } }",
        "{ messages: Object.defineProperty([], 0, { get() { throw new Error('boom'); } }) }",
        "(() => { const p = Proxy.revocable({}, {}); p.revoke(); return p.proxy; })()",
        "(() => { const u = new TextEncoder().encode('{\"messages\":[]}'); \
          structuredClone(u.buffer, { transfer: [u.buffer] }); return u; })()",
    ];
    for expr in values {
        let v = js_eval(expr);
        let e = pending_approvals(v.clone(), JsValue::UNDEFINED).unwrap_err();
        assert_eq!(error_code(&e), "parse_error", "pendingApprovals({expr})");
        let e = parse_thread(v.clone()).unwrap_err();
        assert_eq!(error_code(&e), "parse_error", "parseThread({expr})");
        let e = JsDecisions::new(v).err().expect("an error");
        assert_eq!(error_code(&e), "parse_error", "new Decisions({expr})");
    }
    let v = js_eval(values[0]);
    for _ in 0..3000 {
        assert!(pending_approvals(v.clone(), JsValue::UNDEFINED).is_err());
    }
    assert!(pending_approvals(JsValue::from_str(SEED), JsValue::UNDEFINED).is_ok());
}

/// Bytes made in another realm (a frame; a test environment whose `TextEncoder` is not the page's)
/// are bytes too, not a parsed value without `messages`.
#[wasm_bindgen_test]
fn bytes_from_another_realm_are_read_as_bytes() {
    let frame = js_eval(
        "(() => { const f = document.createElement('iframe'); document.body.append(f); return f; })()",
    );
    let realm = get(&frame, "contentWindow");
    let encode: js_sys::Function =
        js_sys::Function::new_with_args("w, text", "return new w.TextEncoder().encode(text)");
    let bytes = encode
        .call2(&JsValue::NULL, &realm, &s(SEED))
        .expect("encode");
    let view = js_sys::Function::new_with_args(
        "w, b",
        "return b instanceof w.Uint8Array && !(b instanceof Uint8Array)",
    );
    assert_eq!(
        view.call2(&JsValue::NULL, &realm, &bytes).expect("check"),
        JsValue::TRUE
    );
    let expected =
        stringify(&pending_approvals(JsValue::from_str(SEED), JsValue::UNDEFINED).expect("string"));
    let buffer = get(&bytes, "buffer");
    for input in [&bytes, &buffer] {
        assert_eq!(
            stringify(
                &pending_approvals(input.clone(), JsValue::UNDEFINED).expect("pendingApprovals")
            ),
            expected
        );
        assert!(parse_thread(input.clone()).is_ok());
        assert!(JsDecisions::new(input.clone()).is_ok());
    }
    js_sys::Reflect::get(&frame, &s("remove"))
        .expect("remove")
        .unchecked_into::<js_sys::Function>()
        .call0(&frame)
        .expect("remove the frame");
}

/// `parseThread` takes a fast path (`JSON.parse`, then the shape checked in JS) and falls back on
/// the crate's own parser whenever that path sees anything off. Both must agree: every document
/// here goes through `parseThread` as a string, as bytes and as a parsed value, and through the
/// crate's native `parse_thread_str`; a valid one gives `JSON.parse`'s objects and the same id, an
/// invalid one the same `parse_error` path.
#[wasm_bindgen_test]
fn parse_thread_fast_path_agrees_with_the_crates_parser() {
    let tool = |t: &str| format!(r#"{{"messages":[{{"type":"tool_call","tools":[{t}]}}]}}"#);
    let msg =
        |m: &str| format!(r#"{{"id":"t1","messages":[{{"role":"user","content":"x"}},{m}]}}"#);
    let mut docs: Vec<String> = vec![
        SEED.to_owned(),
        CONVERSATION.to_owned(),
        "[]".to_owned(),
        r#"[{"role":"user","content":"hi"}]"#.to_owned(),
        r#"{"messages":[]}"#.to_owned(),
        r#"{"id":null,"messages":[]}"#.to_owned(),
        r#"{"id":"a","messages":[],"id":"b"}"#.to_owned(),
        r#"{"id":12345678901234567890,"messages":[]}"#.to_owned(),
        r#"{"id":-1.5e3,"messages":[]}"#.to_owned(),
        r#"{"id":true,"messages":[]}"#.to_owned(),
        r#"{"id":{},"messages":[]}"#.to_owned(),
        r#"{"messages":{}}"#.to_owned(),
        r#"{"messages":null}"#.to_owned(),
        r#"{"id":"x"}"#.to_owned(),
        "{}".to_owned(),
        "42".to_owned(),
        "\"text\"".to_owned(),
        "null".to_owned(),
        "[1]".to_owned(),
        "[[]]".to_owned(),
        "[null]".to_owned(),
        "\u{feff}[]".to_owned(),
        "[] x".to_owned(),
        "[\"\\ud800\"]".to_owned(),
        r#"{"messages":[{"type":"tool_call","tools":[{"callId":"a","approval":"pending","inputs":{"n":1.50,"big":12345678901234567890}}]}]}"#.to_owned(),
        r#"{"messages":[{"x":1},{"type":"tool_call","tools":[{"callId":"a","approval":"maybe"}]}]}"#.to_owned(),
        r#"{"messages":[{"type":"tool_call","tools":[{"callId":"a","approval":"maybe"}]},{"x":1}]}"#.to_owned(),
        r#"{"messages":[{"type":"something_new","x":1}]}"#.to_owned(),
    ];
    for m in [
        r#"{"role":5}"#,
        r#"{"role":null}"#,
        r#"{"type":null,"content":"x"}"#,
        r#"{"type":7}"#,
        r#"{"type":["tool_call"]}"#,
        r#"{"__id":"m1"}"#,
        r#"{"__id":17}"#,
        r#"{"__id":null}"#,
        r#"{"__id":true}"#,
        r#"{"__id":[]}"#,
        r#"{"type":"tool_call"}"#,
        r#"{"type":"tool_call","tools":{}}"#,
        r#"{"type":"tool_call_result","tools":[]}"#,
        r#"{"type":"tool_call_result","tools":"x"}"#,
        r#"{"type":"tool_call","tools":[],"resume_token":"r"}"#,
    ] {
        docs.push(msg(m));
    }
    for t in [
        r#"{"callId":"a"}"#,
        r#"{"callId":"a","approval":null,"inputs":null}"#,
        r#"{"callId":"a","approval":"pending","inputs":{}}"#,
        r#"{"callId":"a","approval":"approved","inputs":[]}"#,
        r#"{"callId":"a","approval":"rejected","inputs":{"x":[1,{"y":null}]}}"#,
        r#"{"callId":"a","approval":"Pending"}"#,
        r#"{"callId":"a","approval":true}"#,
        r#"{"callId":"a","inputs":"{}"}"#,
        r#"{"callId":"a","inputs":3}"#,
        r#"{"callId":7}"#,
        r#"{"callId":null}"#,
        r#"{"name":"no_call_id"}"#,
        r#"[]"#,
        r#"null"#,
        r#""a""#,
        r#"{"callId":"a"},{"callId":"b","approval":"nope"}"#,
    ] {
        docs.push(tool(t));
    }
    for doc in &docs {
        // pendingApprovals reads a string with JSON.parse and bytes with the crate's scanner: the
        // same suspension or the same error path.
        let p_str = pending_approvals(JsValue::from_str(doc), JsValue::UNDEFINED);
        let p_bytes =
            pending_approvals(Uint8Array::from(doc.as_bytes()).into(), JsValue::UNDEFINED);
        match (&p_str, &p_bytes) {
            (Ok(a), Ok(b)) => assert_eq!(stringify(a), stringify(b), "{doc}"),
            (Err(a), Err(b)) => {
                assert_eq!(error_code(a), "parse_error", "{doc}");
                assert_eq!(
                    get(a, "path").as_string(),
                    get(b, "path").as_string(),
                    "{doc}"
                );
            }
            _ => panic!("pendingApprovals: string and bytes disagree on {doc}"),
        }
        let native = toolgate::thread::parse_thread_str(doc);
        let as_string = parse_thread(JsValue::from_str(doc));
        let as_bytes = parse_thread(Uint8Array::from(doc.as_bytes()).into());
        match &native {
            Ok(thread) => {
                let expected = js_parse(doc);
                let expected_messages = if Array::is_array(&expected) {
                    expected
                } else {
                    get(&expected, "messages")
                };
                let id = thread.id.clone();
                for (how, got) in [("string", &as_string), ("bytes", &as_bytes)] {
                    let got = got
                        .as_ref()
                        .unwrap_or_else(|e| panic!("{how}: {doc}: {}", stringify(e)));
                    assert_eq!(get(got, "id").as_string(), id, "{how}: {doc}");
                    assert!(get(got, "id").as_string().is_some() || get(got, "id").is_null());
                    assert_eq!(
                        stringify(&get(got, "messages")),
                        stringify(&expected_messages),
                        "{how}: {doc}"
                    );
                }
                if !doc.contains("\\ud800") && !doc.starts_with('\u{feff}') {
                    let as_value = parse_thread(js_parse(doc)).unwrap();
                    assert_eq!(
                        stringify(&get(&as_value, "messages")),
                        stringify(&expected_messages),
                        "value: {doc}"
                    );
                }
            }
            Err(error) => {
                for (how, got) in [("string", &as_string), ("bytes", &as_bytes)] {
                    let e = got
                        .as_ref()
                        .err()
                        .unwrap_or_else(|| panic!("{how} accepted what the crate rejects: {doc}"));
                    assert_eq!(error_code(e), "parse_error", "{how}: {doc}");
                    assert_eq!(
                        get(e, "path").as_string(),
                        error.path,
                        "{how}: {doc}: {}",
                        stringify(e)
                    );
                }
            }
        }
    }
}

/// The crate's string scanner reads sixteen bytes at a time in wasm (SIMD) and eight natively:
/// every special byte (`"`, `\`, a control character) at every offset around those blocks must
/// still be found. `JSON.parse` is the oracle for the text and the position of an error.
#[wasm_bindgen_test]
fn the_string_scanner_finds_special_bytes_at_every_offset() {
    for special in [
        "\\\"", "\\\\", "\\n", "\\u00e9", "é", "😀", "\t", "\u{1}", "\\x",
    ] {
        for pad in 0..40 {
            let before = "a".repeat(pad);
            let after = "b".repeat(40 - pad);
            let doc = format!(
                r#"{{"messages":[{{"role":"user","content":"{before}{special}{after}"}}]}}"#
            );
            let native = toolgate::thread::parse_thread_str(&doc);
            match JSON::parse(&doc) {
                Ok(expected) => {
                    let thread = native.unwrap_or_else(|e| panic!("{doc}: {e:?}"));
                    let content = thread.messages[0]
                        .get("content")
                        .and_then(|v| v.as_str())
                        .map(str::to_owned);
                    let expected = path(&expected, &["messages", "0", "content"]).as_string();
                    assert_eq!(content, expected, "{doc}");
                    let s = pending_approvals(JsValue::from_str(&doc), JsValue::UNDEFINED).unwrap();
                    assert_eq!(get(&s, "suspended").as_bool(), Some(false));
                }
                Err(_) => {
                    let e = native.err().unwrap_or_else(|| panic!("accepted: {doc}"));
                    assert_eq!(e.column, Some(40 + pad + usize::from(special == "\\x")));
                    let e =
                        pending_approvals(JsValue::from_str(&doc), JsValue::UNDEFINED).unwrap_err();
                    assert_eq!(error_code(&e), "parse_error");
                }
            }
        }
    }
}

/// Nesting deeper than the crate's limit (128) is an error where the crate's parser reads the
/// document (bytes given to `pendingApprovals`, the native API) and is read as `JSON.parse` reads
/// it where `JSON.parse` does (`parseThread`, `pendingApprovals` of a string): the limit guards the
/// crate's own recursion, which those paths do not use. The tail is always read by the crate.
#[wasm_bindgen_test]
fn nesting_limit_applies_where_the_crate_parses() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let doc = format!(r#"{{"messages":[{{"x":{deep}}},{{"role":"user","content":"hi"}}]}}"#);
    assert!(toolgate::thread::parse_thread_str(&doc).is_err());
    let e =
        pending_approvals(Uint8Array::from(doc.as_bytes()).into(), JsValue::UNDEFINED).unwrap_err();
    assert_eq!(error_code(&e), "parse_error");
    let s = pending_approvals(JsValue::from_str(&doc), JsValue::UNDEFINED).unwrap();
    assert_eq!(get(&s, "suspended").as_bool(), Some(false));
    let t = parse_thread(JsValue::from_str(&doc)).unwrap();
    assert_eq!(Array::from(&get(&t, "messages")).length(), 2);
    // In the tail, the crate's limit holds on every path.
    let doc = format!(r#"{{"messages":[{{"role":"user","content":"hi"}},{{"x":{deep}}}]}}"#);
    let e = pending_approvals(JsValue::from_str(&doc), JsValue::UNDEFINED).unwrap_err();
    assert_eq!(error_code(&e), "parse_error");
}

/// `new Decisions(suspension)` reads what it needs of a `Suspension` object: the order of
/// `pending` then `decided`, each tool's tail decision, `suspended` from `pending` being non-empty
/// (whatever its tools' approvals), and the exact error for a malformed one.
#[wasm_bindgen_test]
fn decisions_read_a_suspension_object() {
    // What `new Decisions` gives for a suspension object: `(undecided, toJSON after approving
    // every undecided tool)` or `(code, "message")`.
    fn read(json: &str) -> (String, String) {
        let source = js_parse(json);
        assert!(source.is_object(), "{json}");
        match JsDecisions::new(source) {
            Ok(mut d) => {
                let undecided = strings(&d.undecided().unwrap());
                for id in &undecided {
                    d.approve(JsValue::from_str(id)).unwrap();
                }
                (undecided.join(","), stringify(&d.to_json().unwrap()))
            }
            Err(e) => (error_code(&e), get(&e, "message").as_string().unwrap()),
        }
    }
    let cases: &[(&str, (&str, &str))] = &[
        (
            r#"{"suspended":true,"messageId":7,"pending":[{"callId":"b","approval":"pending","rejectReason":"x"}],
                "decided":[{"callId":"a","approval":"rejected","rejectReason":"no"},
                {"callId":"c","approval":"rejected","rejectReason":5},{"callId":"b","approval":"approved"},
                {"callId":"d","approval":"approved","inputs":"not an object"}]}"#,
            (
                "b",
                r#"{"decisions":{"b":"approve","a":["reject","no"],"c":"reject","d":"approve"}}"#,
            ),
        ),
        (
            r#"{"suspended":false,"pending":[{"callId":"a","approval":"approved"}],"decided":[]}"#,
            ("", r#"{"decisions":{"a":"approve"}}"#),
        ),
        (
            r#"{"suspended":true,"pending":[],"decided":[{"callId":"a","approval":"pending"}]}"#,
            (
                "not_suspended",
                "not_suspended: the thread is not suspended: no tool on its last message awaits approval",
            ),
        ),
        (
            r#"{"suspended":true,"pending":[]}"#,
            (
                "parse_error",
                r#"parse_error: a suspension needs a "decided" array at $.decided"#,
            ),
        ),
        (
            r#"{"suspended":true,"pending":{},"decided":"x"}"#,
            (
                "parse_error",
                r#"parse_error: a suspension needs a "pending" array at $.pending"#,
            ),
        ),
        (
            r#"{"suspended":true,"pending":[{"callId":"a","approval":"pending"},null],"decided":[]}"#,
            (
                "parse_error",
                "parse_error: a gated tool needs a string callId at $.pending[1]",
            ),
        ),
        (
            r#"{"suspended":true,"pending":[{"callId":"a","approval":"pending"}],
                "decided":[{"callId":"b","approval":["approved"]}]}"#,
            (
                "parse_error",
                r#"parse_error: approval must be "pending", "approved" or "rejected" at $.decided[0].approval"#,
            ),
        ),
        (
            r#"{"suspended":true,"pending":[{"callId":1,"approval":"maybe"}],"decided":[]}"#,
            (
                "parse_error",
                "parse_error: a gated tool needs a string callId at $.pending[0]",
            ),
        ),
    ];
    for (json, (a, b)) in cases {
        assert_eq!(read(json), (a.to_string(), b.to_string()), "{json}");
    }
    // What JSON cannot hold, or the crate's parser refuses in `JSON.stringify`'s output, is an
    // error at `$` first.
    let source = js_parse(r#"{"suspended":true,"pending":[{"callId":"a"}]}"#);
    Reflect::set(&source, &"big".into(), &js_sys::BigInt::from(1).into()).unwrap();
    let e = JsDecisions::new(source).err().unwrap();
    assert_eq!(error_code(&e), "parse_error");
    assert_eq!(get(&e, "path").as_string().as_deref(), Some("$"));
    // A lone surrogate reads as U+FFFD, as everywhere in the crate's JSON.
    let source = js_parse(r#"{"suspended":true,"pending":[{"approval":"pending"}],"decided":[]}"#);
    let lone = JsString::from_char_code1(0xd800);
    Reflect::set(&path(&source, &["pending", "0"]), &"callId".into(), &lone).unwrap();
    let mut d = JsDecisions::new(source).unwrap();
    d.approve("\u{FFFD}".into()).unwrap();
    assert!(d.is_complete());
}

/// `pendingApprovals` of a `Uint8Array` reads it a window at a time (1 MiB, `WINDOW` in
/// src/wasm/input.rs): wasm memory, which never shrinks, grows by less than 2 MiB for a thread of
/// over 20 MB (larger when memory already was, so that a copy of the whole document could not fit
/// in what the module has: with one, memory grows by the document's size). The budget: the
/// buffer, which stays at the window's size while what it keeps between windows (the last
/// message and the cut one, under 4 KiB each here) is less than half of it; the tail built and
/// the result's JSON (a few KiB); the allocator's rounding to whole 64 KiB pages. Measured: 1.06
/// MiB (17 pages); 26 MiB with a window as large as the document. The document is built in JS,
/// outside wasm memory.
#[wasm_bindgen_test]
fn pending_approvals_of_bytes_keeps_wasm_memory_bounded() {
    // Warm up: the allocator's first growth and the glue's own buffers are not this test's.
    pending_approvals(Uint8Array::from(SEED.as_bytes()).into(), JsValue::UNDEFINED).unwrap();
    let before = memory_bytes();
    let size = before.max(15e6) + 1e6;
    let make = js_sys::Function::new_with_args(
        "size, tail",
        "const m = JSON.stringify({ role: 'user', content: 'Un message, \"cité\", 日本語 😀\\n'.repeat(30) });
         const parts = [];
         let n = 0;
         for (let i = 0; n < size; i++) { const s = m.replace('Un', 'Un ' + i); parts.push(s); n += s.length + 1; }
         return new TextEncoder().encode('{\"id\":\"t\",\"messages\":[' + parts.join(',') + ',' + tail + ']}');",
    );
    let tail = r#"{"type":"tool_call","tools":[{"callId":"c1","approval":"pending"}]}"#;
    let bytes = make
        .call2(&JsValue::NULL, &size.into(), &tail.into())
        .unwrap();
    let len = get(&bytes, "length").as_f64().unwrap();
    assert!(len > 20e6 && len > before, "{len} bytes");
    assert_eq!(memory_bytes(), before, "the document is not in wasm memory");
    let s = pending_approvals(bytes, JsValue::UNDEFINED).unwrap();
    assert_eq!(get(&s, "suspended"), JsValue::TRUE);
    let grown = memory_bytes() - before;
    assert!(
        grown < f64::from(2u32 << 20),
        "wasm memory grew by {grown} bytes for a {len}-byte document ({before} before)"
    );
}

// `pendingApprovals(input, { check: "tail" })`: the document read backwards from its end to its
// last message, and only that read. Against the full read (`check` absent), on the fixtures, on
// generated threads full of what could mislead a backwards scan, and on every kind of damage.

fn tail() -> JsValue {
    js_parse(r#"{"check":"tail"}"#)
}

/// What a `pendingApprovals` call returned, as text: the suspension, or the error's message
/// (code, detail, path, line and column).
fn outcome(r: Result<JsValue, JsValue>) -> Result<String, String> {
    r.map(|v| stringify(&v))
        .map_err(|e| get(&e, "message").as_string().unwrap_or_default())
}

/// Both checks of one document, from a string and from bytes: `(all, tail)` each.
fn both_ways(doc: &str) -> [(Result<String, String>, Result<String, String>); 2] {
    let bytes = || JsValue::from(Uint8Array::from(doc.as_bytes()));
    [
        (
            outcome(pending_approvals(s(doc), JsValue::UNDEFINED)),
            outcome(pending_approvals(s(doc), tail())),
        ),
        (
            outcome(pending_approvals(bytes(), JsValue::UNDEFINED)),
            outcome(pending_approvals(bytes(), tail())),
        ),
    ]
}

#[wasm_bindgen_test]
fn tail_check_agrees_with_the_full_read_on_the_fixtures() {
    let fixtures = [
        SEED,
        CONVERSATION,
        include_str!("fixtures/neuron/approval-null-absent.json"),
        include_str!("fixtures/neuron/bare-array.json"),
        include_str!("fixtures/neuron/empty.json"),
        include_str!("fixtures/neuron/escaped-unicode.json"),
        include_str!("fixtures/neuron/interleaved.json"),
        include_str!("fixtures/neuron/numeric-id.json"),
        include_str!("fixtures/neuron/optional-fields.json"),
        include_str!("fixtures/neuron/stale-pending.json"),
        include_str!("fixtures/neuron/tail-decided.json"),
        include_str!("fixtures/neuron/unknown-fields.json"),
    ];
    for doc in fixtures {
        for (all, tail) in both_ways(doc) {
            assert!(all.is_ok(), "{all:?}");
            assert_eq!(tail, all, "{doc}");
        }
        // Before the first `{` only JSON's white space: a BOM or another space is an error.
        for start in ["\u{feff}", "\u{a0}", "\u{2028}"] {
            for (all, tail) in both_ways(&format!("{start}{doc}")) {
                assert!(all.is_err(), "{start:?}");
                assert_eq!(tail, all, "{start:?}");
            }
        }
    }
    // And on a parsed value (read as the full check does).
    let value = || js_parse(SEED);
    assert_eq!(
        outcome(pending_approvals(value(), tail())),
        outcome(pending_approvals(value(), JsValue::UNDEFINED))
    );
}

#[wasm_bindgen_test]
fn tail_check_options() {
    for check in [r#"{}"#, r#"{"check":"all"}"#, "null"] {
        let r = pending_approvals(s(SEED), js_parse(check)).unwrap();
        assert_eq!(get(&r, "suspended"), JsValue::TRUE, "{check}");
    }
    for check in [r#"{"check":"tails"}"#, r#"{"check":true}"#] {
        let e = pending_approvals(s(SEED), js_parse(check)).unwrap_err();
        assert_eq!(error_code(&e), "invalid_argument", "{check}");
        assert_eq!(get(&e, "path").as_string().as_deref(), Some("check"));
    }
    // Options that are no object (the mode given bare, instead of `{ check: "tail" }`).
    for options in [r#""tail""#, "1", "true"] {
        let e = pending_approvals(s(SEED), js_parse(options)).unwrap_err();
        assert_eq!(error_code(&e), "invalid_argument", "{options}");
        assert!(get(&e, "path").is_null(), "{options}");
    }
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

/// A JSON string literal made of what could mislead a backwards scan: escaped quotes after runs
/// of backslashes, brackets, commas and colons, text that looks like JSON, raw and escaped unicode.
fn tricky(r: &mut Rng) -> String {
    let pieces = [
        "plain",
        r#"\""#,
        r#"\\"#,
        r#"\\\""#,
        r#"\\\\"#,
        r#"{"#,
        r#"}"#,
        r#"["#,
        r#"]"#,
        r#", "#,
        r#":"#,
        r#"\n\t"#,
        r#"\u00e9\/"#,
        "é漢😀",
        r#"\"}]}"#,
        r#"{\"messages\":[{\"a\":\"\\\"}]}"#,
        r#"\"approval\":\"pending\""#,
    ];
    let mut out = String::from("\"");
    for _ in 0..r.below(6) {
        out.push_str(r.pick(&pieces));
    }
    out.push('"');
    out
}

/// A JSON value for tool inputs, results and extra members: nested, with tricky strings.
fn value(r: &mut Rng, depth: usize) -> String {
    match if depth > 2 { r.below(3) } else { r.below(6) } {
        0 => tricky(r),
        1 => r
            .pick(&["0", "-1.5e3", "true", "false", "null", "12"])
            .into(),
        2 => "[]".into(),
        3 => format!("[{}, {}]", value(r, depth + 1), value(r, depth + 1)),
        4 => format!(
            r#"{{ "k": {}, "nested": {{"x":{}}} }}"#,
            value(r, depth + 1),
            value(r, depth + 1)
        ),
        _ => format!(r#"{{"rows":[{},{}]}}"#, value(r, depth + 1), tricky(r)),
    }
}

fn message(r: &mut Rng, i: usize, tail: bool) -> String {
    let ws = if r.below(2) == 0 { "" } else { "\n  " };
    if r.below(3) == 0 && !tail {
        return format!(
            r#"{{{ws}"__id":"m{i}",{ws}"role":"user",{ws}"content":{}}}"#,
            tricky(r)
        );
    }
    let mut tools = Vec::new();
    for t in 0..1 + r.below(3) {
        let approval = r.pick(&[r#""pending""#, r#""approved""#, r#""rejected""#, "null"]);
        tools.push(format!(
            r#"{{"callId":"c{i}_{t}","name":"tool{t}","inputs":{{"a":{}}},"result":{},"approval":{approval},"approvalReason":{},"rejectReason":null}}"#,
            value(r, 0),
            value(r, 0),
            tricky(r)
        ));
    }
    format!(
        r#"{{{ws}"__id":"m{i}",{ws}"role":"assistant","type":"tool_call","content":[],{ws}"tools":[{}]}}"#,
        tools.join(",")
    )
}

/// A generated thread: the document, and where its last message starts (its length when it has
/// none). `any`: of any shape, else of the shape the tail check reads (`{ ..., "messages": [...] }`).
fn thread(r: &mut Rng, any: bool) -> (String, usize) {
    let n = r.below(5);
    let sep = if r.below(2) == 0 { "," } else { " ,\n " };
    let mut head = String::new();
    let bare = any && r.below(4) == 0;
    if bare {
        head.push_str(" [");
    } else {
        head.push('{');
        if r.below(2) == 0 {
            head.push_str(&format!(r#""id":{},"#, tricky(r)));
        }
        head.push_str(r#" "messages" : ["#);
    }
    for i in 0..n.saturating_sub(1) {
        head.push_str(&message(r, i, false));
        head.push_str(sep);
    }
    let last = if n > 0 {
        message(r, n, true)
    } else {
        String::new()
    };
    let start = if n > 0 { head.len() } else { usize::MAX };
    let mut doc = head + &last + "]";
    if any && !bare {
        for _ in 0..r.below(3) {
            // (Anything but an array: the tail check needs the document to end with `messages`,
            // and reads it whole when it does not.)
            doc.push_str(&format!(
                r#", "extra{}":{{"v":{}}}"#,
                r.below(9),
                value(r, 0)
            ));
        }
        if r.below(3) == 0 {
            doc.push_str(r#","id":"t1""#);
        }
    }
    if !bare {
        doc.push('}');
    }
    doc.push_str(r.pick(&["", "\n", " \r\n\t"]));
    let start = start.min(doc.len());
    (doc, start)
}

#[wasm_bindgen_test]
fn tail_check_agrees_with_the_full_read_on_generated_threads() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..400 {
        let any = r.below(4) != 0;
        let (doc, start) = thread(&mut r, any);
        // The same document with its start broken: the full read throws, and where the document
        // has the shape the tail check reads, the tail check does not read it (so it found the
        // last message where it is, and read nothing before).
        let at = doc.len() - doc.trim_start().len() + 1;
        let broken = format!("{}@{}", &doc[..at], &doc[at..]);
        for ((all, tail), (broken_all, broken_tail)) in
            both_ways(&doc).into_iter().zip(both_ways(&broken))
        {
            assert!(all.is_ok(), "{all:?} {doc}");
            assert_eq!(tail, all, "{doc}");
            assert!(broken_all.is_err(), "{broken}");
            // (With no message, any empty array could end the document: read whole.)
            if ends_as_read(&doc) && doc.trim_start().starts_with('{') && start < doc.len() {
                assert_eq!(broken_tail, all, "{broken}");
            } else {
                assert_eq!(broken_tail, broken_all, "{broken}");
            }
        }
    }
}

/// Whether a text ends as the tail check reads a document: `]` and `}`, with white space only
/// after and between them.
fn ends_as_read(text: &str) -> bool {
    text.trim_end()
        .strip_suffix('}')
        .map(str::trim_end)
        .is_some_and(|t| t.ends_with(']'))
}

/// On a damaged document the tail check reports what the full read reports, unless the damage is
/// before the last message, which it does not read, or leaves a text that ends as a whole one
/// would: a character replaced, removed or added anywhere, and the document cut at every length.
#[wasm_bindgen_test]
fn tail_check_on_damaged_threads() {
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    let (mut unread, mut looks_whole, mut same) = (0, 0, 0);
    let mut check = |doc: &str, at: usize, start: usize, whole: bool| {
        for (all, tail) in both_ways(doc) {
            if tail == all {
                same += 1;
                continue;
            }
            assert!(
                all.is_err() && (at < start || whole),
                "damage at {at}, last message at {start}: {all:?} / {tail:?}\n{doc}"
            );
            if at < start {
                unread += 1;
            } else {
                looks_whole += 1;
            }
        }
    };
    for k in 0..200 {
        let (doc, start) = thread(&mut r, k % 3 == 0);
        let chars: Vec<(usize, char)> = doc.char_indices().collect();
        for _ in 0..12 {
            let (at, c) = chars[r.below(chars.len())];
            let with = r.pick(&["\"", "\\", "{", "}", "[", "]", ",", ":", " ", "a", "1", ""]);
            let mut damaged = doc.clone();
            match r.below(3) {
                0 => damaged.replace_range(at..at + c.len_utf8(), with),
                1 => damaged.insert_str(at, with),
                _ => damaged.replace_range(at..at + c.len_utf8(), ""),
            }
            // (A document that did not end as the tail check reads one, and now does.)
            let whole = !ends_as_read(&doc) && ends_as_read(&damaged);
            check(&damaged, at, start, whole);
        }
        // Cut at every character of the last 60 and at a few others: unnoticed only where what is
        // left ends as a whole document would.
        for (k, &(at, _)) in chars.iter().enumerate().rev() {
            if k + 60 < chars.len() && r.below(20) != 0 {
                continue;
            }
            check(&doc[..at], at, start, ends_as_read(&doc[..at]));
        }
    }
    assert!(
        // (A cut that reads as whole needs an inner object with a `role` key of its own, which
        // the generated tool calls have not: `tail_check_limits` shows one.)
        unread > 0 && same > 10 * (unread + looks_whole),
        "{unread} / {looks_whole} / {same}"
    );
}

/// What the tail check cannot see: damage before the last message; a document cut short right
/// after an object whose last member is an array of objects with a `role` key (in the last
/// message), which reads as a whole document; and an array after `messages` whose last object has
/// a `role` key, which it takes for the last message.
#[wasm_bindgen_test]
fn tail_check_limits() {
    let doc = r#"{"messages":[{"role":"user","content":"hi"}],"seen":[{"role":"assistant","type":"tool_call","tools":[{"callId":"c","approval":"pending"}]}]}"#;
    let [(all, tail), _] = both_ways(doc);
    assert_eq!(get(&js_parse(&all.unwrap()), "suspended"), JsValue::FALSE);
    assert_eq!(get(&js_parse(&tail.unwrap()), "suspended"), JsValue::TRUE);
    let doc =
        r#"{"messages":[{"role":"user","content":"hi"} oops,{"role":"assistant","content":"x"}]}"#;
    let [(all, tail), _] = both_ways(doc);
    assert!(all.is_err());
    assert_eq!(tail.as_deref().map(|_| ()), Ok(()));
    let doc = r#"{"messages":[{"role":"assistant","type":"tool_call","tools":[{"callId":"c","result":{"messages":[{"role":"tool"}]}}]}]}"#;
    let cut = &doc[..doc.len() - 5];
    let [(all, tail), _] = both_ways(cut);
    assert!(all.is_err());
    assert!(tail.is_ok(), "{tail:?}");
}

/// An array after `messages` whose last object is no message (no `role` key of its own), as a
/// server's `"approvals": [{ "id", "name", "reason" }]` beside the thread, or an empty one, makes
/// the tail check read the whole document: the same answer as the full read, where it took that
/// object (or none) for the last message and answered "not suspended".
#[wasm_bindgen_test]
fn tail_check_reads_whole_what_ends_with_another_array() {
    let pause = r#"{"__id":"m2","role":"assistant","type":"tool_call","tools":[{"callId":"c1","name":"delete_file","inputs":{},"approval":"pending"}]}"#;
    for after in [
        r#","status":"awaiting_approval","approvals":[{"id":"c1","name":"delete_file","reason":"role"}]"#,
        r#","approvals":[{"id":"c1","detail":{"role":"admin"},"note":"\"role\": x"}]"#,
        r#","approvals":[]"#,
        r#","approvals":[ ] "#,
    ] {
        let doc =
            format!(r#"{{"id":"t","messages":[{{"role":"user","content":"x"}},{pause}]{after}}}"#);
        for (all, tail) in both_ways(&doc) {
            assert_eq!(
                get(&js_parse(&all.clone().unwrap()), "suspended"),
                JsValue::TRUE
            );
            assert_eq!(tail, all, "{doc}");
        }
    }
    // A thread with no messages reads the same either way.
    for (all, tail) in both_ways(r#"{"id":"t","messages":[]}"#) {
        assert_eq!(
            get(&js_parse(&all.clone().unwrap()), "suspended"),
            JsValue::FALSE
        );
        assert_eq!(tail, all);
    }
}

/// Bytes stay bytes in the tail check, read as the full read reads them: a number as written (a
/// numeric `__id` is the message id), not as `JSON.parse` would round or rewrite it.
#[wasm_bindgen_test]
fn tail_check_reads_bytes_as_the_full_read_does() {
    for id in ["1.0", "-0", "1e2", "12345678901234567890"] {
        let doc = format!(
            r#"{{"messages":[{{"__id":{id},"role":"assistant","type":"tool_call","tools":[{{"callId":"c","approval":"pending"}}]}}]}}"#
        );
        for (all, tail) in both_ways(&doc) {
            assert!(all.is_ok(), "{all:?}");
            assert_eq!(tail, all, "{doc}");
        }
    }
}

/// White space before the document is JSON's alone: a BOM, a no-break space or a vertical tab
/// there, which the full read refuses, makes the tail check read the whole document too.
#[wasm_bindgen_test]
fn tail_check_white_space_is_json_white_space() {
    for lead in [
        "\u{feff}", "\u{a0}", "\u{b}", "\u{c}", "\u{2028}", "\u{3000}",
    ] {
        let doc = format!(r#"{lead} {{"messages":[{{"role":"user"}}]}}"#);
        for (all, tail) in both_ways(&doc) {
            assert!(all.is_err(), "{doc:?}");
            assert_eq!(tail, all, "{doc:?}");
        }
    }
}
