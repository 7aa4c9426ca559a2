//! Browser tests of the `ApprovalClient` driver (wasm-bindgen-test in headless Chromium), against the
//! real reference endpoint that `scripts/test-browser.sh` starts (`TOOLGATE_ENDPOINT`), and a second
//! one with fault injection on (`TOOLGATE_FAULTY_ENDPOINT`). Every test drives the client exactly as
//! JS would: the exported methods, JS values in, promises awaited. Each test uses a fresh thread id.
#![cfg(target_arch = "wasm32")]

use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;

use js_sys::{Function, Object, JSON};
use toolgate::wasm::{is_toolgate_error, ApprovalClient};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

#[path = "support/web.rs"]
mod support;
use support::*;

wasm_bindgen_test_configure!(run_in_browser);

const FAULTY_ENDPOINT: Option<&str> = option_env!("TOOLGATE_FAULTY_ENDPOINT");
/// Accepts connections and never answers.
const BLACKHOLE_ENDPOINT: Option<&str> = option_env!("TOOLGATE_BLACKHOLE_ENDPOINT");
/// Neuron decisions read as Neuron's incremental and cumulative revisions do (`NEURON_DECISIONS`).
const INCREMENTAL_ENDPOINT: Option<&str> = option_env!("TOOLGATE_INCREMENTAL_ENDPOINT");
const CUMULATIVE_ENDPOINT: Option<&str> = option_env!("TOOLGATE_CUMULATIVE_ENDPOINT");
/// Neuron's newest history, append-only (`NEURON_HISTORY=append-only`): a pause's message keeps its
/// tools pending for good, the outcome is on the `tool_call_result` after it.
const APPEND_ONLY_ENDPOINT: Option<&str> = option_env!("TOOLGATE_APPEND_ONLY_ENDPOINT");
/// A Neuron conflict answered with HTTP 200 `{"status":"conflict"}`, as the seed's own controller
/// does (`NEURON_CONFLICT_STATUS=200`).
const CONFLICT_200_ENDPOINT: Option<&str> = option_env!("TOOLGATE_CONFLICT_200_ENDPOINT");

fn fresh_thread(tag: &str) -> String {
    format!(
        "wc_{tag}_{}_{}",
        js_sys::Date::now() as u64,
        (js_sys::Math::random() * 1e9) as u64
    )
}

/// The options object: `{ baseUrl, threadId, ...extra }` (`extra` is JSON members, may be empty).
fn options(base: &str, thread: &str, extra: &str) -> JsValue {
    let sep = if extra.is_empty() { "" } else { "," };
    JSON::parse(&format!(
        r#"{{"baseUrl":"{base}","threadId":"{thread}"{sep}{extra}}}"#
    ))
    .expect("options JSON")
}

fn client(thread: &str, extra: &str) -> ApprovalClient {
    ApprovalClient::new(options(endpoint(), thread, extra)).expect("client")
}

fn last_text(c: &ApprovalClient) -> String {
    let messages = array(&get(&snap(c), "messages"));
    messages
        .last()
        .map(|m| string(&get(m, "text")))
        .unwrap_or_default()
}

#[wasm_bindgen_test]
async fn two_gated_tools_partial_then_reject_with_reason() {
    let c = client(&fresh_thread("two"), "");
    wait(c.load()).await.expect("load");
    assert_eq!(phase(&c), "idle");
    wait(c.send(s(
        "delete /tmp/old.log and email team@example.com about Logs cleanup",
    )))
    .await
    .expect("send");
    assert_eq!(phase(&c), "awaiting_approval");
    let snapshot = snap(&c);
    assert_eq!(get(&snapshot, "canSend"), JsValue::FALSE);
    assert_eq!(pending(&c).len(), 2);
    let delete = call_id_of(&c, "delete_file");
    let email = call_id_of(&c, "send_email");

    // Partial: approve one, submit; still awaiting the other.
    c.approve(s(&delete)).expect("approve");
    assert_eq!(string(&path(&snap(&c), &["decisions", &delete])), "approve");
    wait(c.submit()).await.expect("partial submit");
    assert_eq!(phase(&c), "awaiting_approval");
    let snapshot = snap(&c);
    assert_eq!(
        string(&path(&snapshot, &["lastSubmission", "status"])),
        "awaiting_approval"
    );
    assert_eq!(pending(&c), vec![(email.clone(), "send_email".to_owned())]);

    // Reject the other with a reason: the run completes and the answer quotes the reason.
    c.reject(s(&email), s("Do not email the whole team"))
        .expect("reject");
    wait(c.submit()).await.expect("final submit");
    assert_eq!(phase(&c), "completed");
    let text = last_text(&c);
    assert!(text.contains("delete_file /tmp/old.log: done."), "{text}");
    assert!(
        text.contains(
            "send_email to team@example.com: rejected — \"Do not email the whole team\"."
        ),
        "{text}"
    );
    assert!(get(&snap(&c), "suspension").is_null());
    assert_eq!(get(&snap(&c), "canSend"), JsValue::TRUE);
}

/// The same partial-then-complete turn against each of Neuron's readings of a decision payload:
/// strict (the reference endpoint), incremental, and cumulative, where a partial set is held aside
/// and the tail keeps showing every call pending until the set is whole; and against the newest,
/// append-only history (strict decisions), whose paused message never changes. The client's
/// cumulative payloads, restating what is decided, are right under all of them; where the tail
/// does not show the first decision after the partial submission (cumulative, append-only) it
/// stays a draft, and is sent again with the second.
#[wasm_bindgen_test]
async fn a_partial_then_complete_turn_under_every_neuron_revision() {
    for (name, base) in [
        ("strict", Some(endpoint())),
        ("incremental", INCREMENTAL_ENDPOINT),
        ("cumulative", CUMULATIVE_ENDPOINT),
        ("append-only", APPEND_ONLY_ENDPOINT),
    ] {
        let Some(base) = base else { continue };
        let c = ApprovalClient::new(options(base, &fresh_thread("rev"), r#""persist":false"#))
            .expect("client");
        wait(c.send(s("delete /tmp/rev.log and email rev@example.com about Rev")))
            .await
            .expect("send");
        let delete = call_id_of(&c, "delete_file");
        let email = call_id_of(&c, "send_email");
        c.approve(s(&delete)).expect("approve");
        wait(c.submit()).await.expect("partial submit");
        assert_eq!(phase(&c), "awaiting_approval", "{name}");
        assert_eq!(
            pending(&c),
            vec![(email.clone(), "send_email".to_owned())],
            "{name}"
        );
        let held = path(&snap(&c), &["decisions", &delete]);
        if name == "cumulative" || name == "append-only" {
            // Not on the tail yet: still a draft, so it goes again with the rest.
            assert_eq!(string(&held), "approve", "{name}");
        } else {
            assert!(held.is_undefined(), "{name}: acknowledged by the tail");
        }
        c.reject(s(&email), s("Not to everyone")).expect("reject");
        wait(c.submit()).await.expect("final submit");
        assert_eq!(phase(&c), "completed", "{name}");
        let text = last_text(&c);
        assert!(
            text.contains("delete_file /tmp/rev.log: done."),
            "{name}: {text}"
        );
        assert!(text.contains("\"Not to everyone\""), "{name}: {text}");
        assert!(get(&snap(&c), "decisions").is_object());
        assert_eq!(
            JSON::stringify(&get(&snap(&c), "decisions"))
                .expect("json")
                .as_string(),
            Some("{}".to_owned()),
            "{name}: no draft left"
        );
    }
}

/// Two pauses in one run, with the history updated in place (the reference endpoint) and
/// append-only, where the first pause's message still shows its call pending when the second
/// comes: only the tail is the pause, and a reload reads it so.
#[wasm_bindgen_test]
async fn chained_deploy_pauses_twice() {
    for (name, base) in [
        ("update", Some(endpoint())),
        ("append-only", APPEND_ONLY_ENDPOINT),
    ] {
        let Some(base) = base else { continue };
        let c = ApprovalClient::new(options(base, &fresh_thread("chain"), r#""persist":false"#))
            .expect("client");
        wait(c.send(s("delete /tmp/cache.db and deploy web")))
            .await
            .expect("send");
        assert_eq!(phase(&c), "awaiting_approval", "{name}");
        assert_eq!(pending(&c).len(), 1, "{name}");
        let delete = call_id_of(&c, "delete_file");
        c.approve(s(&delete)).expect("approve delete");
        wait(c.submit()).await.expect("submit 1");
        // The run went on (run_tests) and paused again, on deploy.
        assert_eq!(phase(&c), "awaiting_approval", "{name}");
        let deploy = call_id_of(&c, "deploy");
        assert_ne!(deploy, delete, "{name}");
        wait(c.load()).await.expect("reload");
        assert_eq!(
            pending(&c),
            vec![(deploy.clone(), "deploy".to_owned())],
            "{name}: the tail's call alone"
        );
        c.approve(s(&deploy)).expect("approve deploy");
        wait(c.submit()).await.expect("submit 2");
        assert_eq!(phase(&c), "completed", "{name}");
        let text = last_text(&c);
        assert!(
            text.contains("delete_file /tmp/cache.db: done."),
            "{name}: {text}"
        );
        assert!(text.contains("run_tests web: done."), "{name}: {text}");
        assert!(text.contains("deploy web: done."), "{name}: {text}");
        assert!(get(&snap(&c), "suspension").is_null(), "{name}");
        assert_eq!(get(&snap(&c), "canSend"), JsValue::TRUE, "{name}");
    }
}

#[wasm_bindgen_test]
async fn reject_all_and_send_unlocks_the_composer() {
    let c = client(&fresh_thread("rejall"), "");
    wait(c.send(s("delete /tmp/a and email a@example.com about A")))
        .await
        .expect("send");
    assert_eq!(phase(&c), "awaiting_approval");
    let delete = call_id_of(&c, "delete_file");
    c.approve(s(&delete)).expect("approve");
    wait(c.reject_all_and_send(s("read /tmp/notes.txt"), s("Not today")))
        .await
        .expect("rejectAllAndSend");
    assert_eq!(phase(&c), "completed");
    let text = last_text(&c);
    assert!(text.contains("read_file /tmp/notes.txt: done."), "{text}");
    // The earlier run's answer quotes the reason for the tool that had no decision.
    let messages = array(&get(&snap(&c), "messages"));
    let all: Vec<String> = messages.iter().map(|m| string(&get(m, "text"))).collect();
    assert!(
        all.iter().any(|t| t.contains("delete_file /tmp/a: done.")
            && t.contains("send_email to a@example.com: rejected — \"Not today\".")),
        "{all:?}"
    );
}

#[wasm_bindgen_test]
async fn a_second_client_sending_while_paused_gets_409_and_the_first_is_locked() {
    let thread = fresh_thread("conflict");
    let a = client(&thread, r#""persist":false"#);
    wait(a.send(s("delete /tmp/conflict.log")))
        .await
        .expect("send");
    assert_eq!(phase(&a), "awaiting_approval");

    // The first client refuses locally: the composer is locked.
    let e = wait(a.send(s("hello"))).await.unwrap_err();
    assert_eq!(code(&e), "input_locked");
    assert!(is_toolgate_error(&e));

    // A second client that never loaded sends: the server answers 409.
    let b = client(&thread, r#""persist":false"#);
    let e = wait(b.send(s("hello from elsewhere"))).await.unwrap_err();
    assert_eq!(code(&e), "conflict");
    let snapshot = snap(&b);
    assert_eq!(string(&get(&snapshot, "phase")), "awaiting_approval");
    assert_eq!(string(&path(&snapshot, &["error", "code"])), "conflict");
    assert_eq!(
        string(&get(&snapshot, "unsentText")),
        "hello from elsewhere"
    );
    assert_eq!(pending(&b), pending(&a));

    // The first client finishes the run.
    let id = call_id_of(&a, "delete_file");
    a.reject(s(&id), JsValue::UNDEFINED).expect("reject");
    wait(a.submit()).await.expect("submit");
    assert_eq!(phase(&a), "completed");
    assert!(last_text(&a).contains("No specific instruction provided."));
}

/// Two clients on one pause: the first's decisions run the tools; the second's, sent after, are
/// refused (a 409, or a 200 `{"status":"conflict"}` as the seed's own controller answers) and
/// reconciled with the thread: the op fails with `conflict`, the draft is listed as dropped, and
/// the second client shows the run the first one finished. A message sent meanwhile by a client
/// that never loaded is refused the same way under either status, its text kept.
#[wasm_bindgen_test]
async fn decisions_sent_after_another_clients_are_a_conflict_under_either_status() {
    for (name, base) in [("409", Some(endpoint())), ("200", CONFLICT_200_ENDPOINT)] {
        let Some(base) = base else { continue };
        let thread = fresh_thread("late");
        let open =
            |t: &str| ApprovalClient::new(options(base, t, r#""persist":false"#)).expect("client");
        let a = open(&thread);
        wait(a.send(s("delete /tmp/late.log"))).await.expect("send");
        let newcomer = open(&thread);
        let e = wait(newcomer.send(s("hello"))).await.unwrap_err();
        assert_eq!(code(&e), "conflict", "{name}");
        assert_eq!(
            string(&get(&snap(&newcomer), "unsentText")),
            "hello",
            "{name}"
        );
        let b = open(&thread);
        wait(b.load()).await.expect("load");
        let id = call_id_of(&b, "delete_file");
        a.approve(s(&id)).expect("approve");
        wait(a.submit()).await.expect("submit");
        assert_eq!(phase(&a), "completed", "{name}");
        b.reject(s(&id), s("keep it")).expect("reject");
        let e = wait(b.submit()).await.unwrap_err();
        assert_eq!(code(&e), "conflict", "{name}");
        let snapshot = snap(&b);
        assert_eq!(string(&get(&snapshot, "phase")), "completed", "{name}");
        assert_eq!(
            json(&get(&snapshot, "droppedDrafts")),
            format!("[\"{id}\"]"),
            "{name}"
        );
        assert!(get(&snapshot, "suspension").is_null(), "{name}");
        assert!(
            last_text(&b).contains("delete_file /tmp/late.log: done."),
            "{name}"
        );
    }
}

#[wasm_bindgen_test]
async fn drafts_survive_a_reload() {
    let thread = fresh_thread("drafts");
    let a = client(&thread, "");
    wait(a.send(s("delete /tmp/r.log and email r@example.com about Hi")))
        .await
        .expect("send");
    let delete = call_id_of(&a, "delete_file");
    let email = call_id_of(&a, "send_email");
    a.approve(s(&delete)).expect("approve");
    a.reject(s(&email), s("Ask me tomorrow")).expect("reject");
    drop(a); // free(): the page reloads

    let b = client(&thread, "");
    wait(b.load()).await.expect("load");
    let snapshot = snap(&b);
    assert_eq!(string(&get(&snapshot, "phase")), "awaiting_approval");
    assert_eq!(string(&path(&snapshot, &["decisions", &delete])), "approve");
    let rejected = path(&snapshot, &["decisions", &email]);
    assert_eq!(
        JSON::stringify(&rejected).map(String::from).ok().as_deref(),
        Some(r#"["reject","Ask me tomorrow"]"#)
    );
    assert_eq!(get(&snapshot, "canSubmit"), JsValue::TRUE);
    let decided = array(&path(&snapshot, &["suspension", "decided"]));
    assert_eq!(decided.len(), 2);
    assert!(decided.iter().all(|t| get(t, "draft") == JsValue::TRUE));

    wait(b.submit()).await.expect("submit");
    assert_eq!(phase(&b), "completed");
    assert!(last_text(&b).contains("rejected — \"Ask me tomorrow\"."));
    drop(b);

    // Nothing left to restore once the decisions went through.
    let c = client(&thread, "");
    wait(c.load()).await.expect("load");
    assert_eq!(phase(&c), "idle");
    assert_eq!(
        Object::keys(get(&snap(&c), "decisions").unchecked_ref::<Object>()).length(),
        0
    );
}

#[wasm_bindgen_test]
async fn snapshot_identity_and_subscriptions() {
    let c = Rc::new(client(&fresh_thread("subs"), ""));
    let s1 = snap(&c);
    assert!(s1 == snap(&c), "the same object until a change");
    assert!(Object::is_frozen(s1.unchecked_ref::<Object>()));
    assert_eq!(get(&s1, "version"), get(&snap(&c), "version"));

    // A listener that reads the snapshot reentrantly, and one that throws.
    let calls = Rc::new(Cell::new(0u32));
    let seen_versions = Rc::new(Cell::new(0.0f64));
    let counting = {
        let calls = calls.clone();
        let seen = seen_versions.clone();
        let c = c.clone();
        Closure::<dyn FnMut()>::new(move || {
            calls.set(calls.get() + 1);
            seen.set(
                get(&c.get_snapshot().expect("reentrant"), "version")
                    .as_f64()
                    .unwrap_or(-1.0),
            );
        })
    };
    let throwing = Function::new_no_args("throw new Error('a listener that throws')");
    let stop_throwing = c.subscribe(throwing.into()).expect("subscribe throwing");
    let stop = c.subscribe(counting.as_ref().clone()).expect("subscribe");
    assert!(stop.is_function());

    wait(c.load()).await.expect("load");
    assert!(calls.get() >= 2, "loading, then loaded: {}", calls.get());
    let s2 = snap(&c);
    assert!(s1 != s2);
    assert_eq!(get(&s2, "version").as_f64(), Some(seen_versions.get()));
    let messages = get(&s2, "messages");
    assert!(Object::is_frozen(messages.unchecked_ref::<Object>()));

    wait(c.send(s("delete /tmp/subs.log and email s@example.com about S")))
        .await
        .expect("send");
    // Wait for the quiet reload to land, then check that a draft keeps the messages array.
    for _ in 0..50 {
        if get(&snap(&c), "syncing") == JsValue::FALSE {
            break;
        }
        sleep(10).await;
    }
    let before = snap(&c);
    let n = calls.get();
    let delete = call_id_of(&c, "delete_file");
    c.approve(s(&delete)).expect("approve");
    assert_eq!(calls.get(), n + 1, "listeners run synchronously");
    let after = snap(&c);
    assert!(before != after);
    assert!(
        get(&before, "messages") == get(&after, "messages"),
        "messages reused while messagesVersion is unchanged"
    );
    assert_eq!(
        get(&before, "messagesVersion"),
        get(&after, "messagesVersion")
    );

    // Unsubscribe (twice is harmless): no more calls.
    let stop: Function = stop.unchecked_into();
    stop.call0(&JsValue::NULL).expect("unsubscribe");
    stop.call0(&JsValue::NULL).expect("unsubscribe again");
    let stop_throwing: Function = stop_throwing.unchecked_into();
    stop_throwing.call0(&JsValue::NULL).expect("unsubscribe");
    let n = calls.get();
    c.clear(s(&delete)).expect("clear");
    assert_eq!(calls.get(), n);
    assert!(snap(&c) != after);

    // A non-function listener is an invalid_argument.
    let e = c.subscribe(JsValue::from(3)).unwrap_err();
    assert_eq!(code(&e), "invalid_argument");
}

fn json(v: &JsValue) -> String {
    JSON::stringify(v).map(String::from).unwrap_or_default()
}

/// Waits (up to a second) for a quiet reload to land.
async fn until_synced(c: &ApprovalClient) {
    for _ in 0..100 {
        if get(&snap(c), "syncing") == JsValue::FALSE {
            return;
        }
        sleep(10).await;
    }
}

/// A turn keeps the objects of the messages before it: only the turn's own messages (and one it
/// changed) are new objects, in both dialects and through Neuron's quiet reloads. What it shows
/// is what a fresh load of the thread shows.
#[wasm_bindgen_test]
async fn a_turn_keeps_the_objects_of_the_messages_before_it() {
    for dialect in ["neuron", "sidenet"] {
        let thread = fresh_thread("keep");
        let extra = format!(r#""dialect":"{dialect}","persist":false"#);
        let c = client(&thread, &extra);
        wait(c.load()).await.expect("load");
        for text in ["hello", "hello again"] {
            wait(c.send(s(text))).await.expect("send");
            until_synced(&c).await;
        }
        let before = array(&get(&snap(&c), "messages"));
        assert!(before.len() >= 4, "{dialect}: {}", before.len());
        wait(c.send(s("one more"))).await.expect("send");
        until_synced(&c).await;
        let after = get(&snap(&c), "messages");
        assert!(Object::is_frozen(after.unchecked_ref::<Object>()));
        let now = array(&after);
        assert_eq!(now.len(), before.len() + 2, "{dialect}: {}", json(&after));
        for (i, m) in before.iter().enumerate() {
            assert!(now[i] == *m, "{dialect}: message {i} is a new object");
        }
        for m in &now[before.len()..] {
            assert!(Object::is_frozen(m.unchecked_ref::<Object>()));
        }
        // (A Sidenet client shows its own messages as it sent them until it loads the thread
        // again: the server gives them ids.)
        wait(c.load()).await.expect("load");
        let fresh = client(&thread, &extra);
        wait(fresh.load()).await.expect("load");
        let loaded = get(&snap(&c), "messages");
        assert_eq!(
            json(&get(&snap(&fresh), "messages")),
            json(&loaded),
            "{dialect}"
        );
        if dialect == "neuron" {
            assert_eq!(json(&loaded), json(&after));
        }
        // A reload of the same thread keeps every object.
        wait(c.load()).await.expect("load");
        let reloaded = array(&get(&snap(&c), "messages"));
        let loaded = array(&loaded);
        assert_eq!(reloaded.len(), loaded.len(), "{dialect}");
        for (i, m) in loaded.iter().enumerate() {
            assert!(
                reloaded[i] == *m,
                "{dialect}: message {i} is new after a reload"
            );
        }
    }
}

#[wasm_bindgen_test]
async fn misuse_is_a_toolgate_error_with_the_core_code() {
    let c = client(&fresh_thread("misuse"), r#""persist":false"#);
    // not_suspended: nothing paused.
    let e = c.approve(s("toolu_x")).unwrap_err();
    assert_eq!(string(&get(&e, "name")), "ToolgateError");
    assert_eq!(code(&e), "not_suspended");
    let e = wait(c.submit()).await.unwrap_err();
    assert_eq!(code(&e), "not_suspended");

    // busy: a second command while the first is in flight (a rejected promise, not a throw).
    let first = c.load();
    let e = wait(c.send(s("hello"))).await.unwrap_err();
    assert_eq!(code(&e), "busy");
    let e = wait(c.load()).await.unwrap_err();
    assert_eq!(code(&e), "busy");
    let e = c.approve(s("toolu_x")).unwrap_err();
    assert_eq!(code(&e), "busy");
    wait(first).await.expect("the first load");

    // invalid_argument: blank text, wrong types.
    let e = wait(c.send(s("   "))).await.unwrap_err();
    assert_eq!(code(&e), "invalid_argument");
    let e = wait(c.send(JsValue::UNDEFINED)).await.unwrap_err();
    assert_eq!(code(&e), "invalid_argument");
    let e = c.approve(JsValue::from(42)).unwrap_err();
    assert_eq!(code(&e), "invalid_argument");

    wait(c.send(s("delete /tmp/misuse.log")))
        .await
        .expect("send");
    // input_locked and unknown_call_id while paused.
    let e = wait(c.send(s("something else"))).await.unwrap_err();
    assert_eq!(code(&e), "input_locked");
    let e = c.approve(s("toolu_not_there")).unwrap_err();
    assert_eq!(code(&e), "unknown_call_id");
    let e = c.reject(s("toolu_not_there"), s("no")).unwrap_err();
    assert_eq!(code(&e), "unknown_call_id");
    let e = c.clear(s("toolu_not_there")).unwrap_err();
    assert_eq!(code(&e), "unknown_call_id");
    let e = c
        .reject(s(&call_id_of(&c, "delete_file")), JsValue::from(1))
        .unwrap_err();
    assert_eq!(code(&e), "invalid_argument");
    // empty_decisions: nothing decided yet.
    let e = wait(c.submit()).await.unwrap_err();
    assert_eq!(code(&e), "empty_decisions");
    // The client still works after all that.
    c.approve(s(&call_id_of(&c, "delete_file")))
        .expect("approve");
    wait(c.submit()).await.expect("submit");
    assert_eq!(phase(&c), "completed");
}

#[wasm_bindgen_test]
fn invalid_options_are_invalid_argument() {
    let bad = [
        JsValue::UNDEFINED,
        JsValue::NULL,
        s("not an object"),
        JsValue::from(1),
        JSON::parse("[]").unwrap(),
        JSON::parse("{}").unwrap(),
        JSON::parse(r#"{"threadId":""}"#).unwrap(),
        JSON::parse(r#"{"threadId":"t","baseUrl":"ftp://x"}"#).unwrap(),
        JSON::parse(r#"{"threadId":"t","retry":{"attempts":"many"}}"#).unwrap(),
        JSON::parse(r#"{"threadId":"t","dialect":"carrier-pigeon"}"#).unwrap(),
        JSON::parse(r#"{"threadId":"t","headers":{"Bad Name":"x"}}"#).unwrap(),
        JSON::parse(r#"{"threadId":"t","routes":{"chat":"no-slash"}}"#).unwrap(),
        // Options that throw when read: a getter, a revoked proxy.
        js_fn(
            "",
            "return { threadId: 't', get fetch() { throw new Error('no'); } }",
        )
        .unchecked_into::<Function>()
        .call0(&JsValue::NULL)
        .unwrap(),
        js_fn(
            "",
            "const p = Proxy.revocable({}, {}); p.revoke(); return p.proxy;",
        )
        .unchecked_into::<Function>()
        .call0(&JsValue::NULL)
        .unwrap(),
    ];
    for options in bad {
        let e = ApprovalClient::new(options.clone())
            .err()
            .unwrap_or_else(|| panic!("accepted {options:?}"));
        assert_eq!(string(&get(&e, "name")), "ToolgateError");
        assert_eq!(code(&e), "invalid_argument", "{options:?}");
    }
    // Good options with every field.
    let ok = options(
        endpoint(),
        "t_ok",
        r#""dialect":"neuron","headers":{"Authorization":"Bearer x"},"routes":{"chat":"/threads/{threadId}/chat","thread":"/threads/{threadId}"},"autoSubmit":true,"persist":false,"timeoutMs":5000,"retry":{"attempts":2,"backoffMs":10,"maxBackoffMs":100}"#,
    );
    assert!(ApprovalClient::new(ok).is_ok());
}

#[wasm_bindgen_test]
async fn free_and_abort_while_in_flight() {
    // free() right after starting a request: the promise rejects with `aborted`, nothing later throws.
    let c = client(&fresh_thread("free1"), "");
    let calls = Rc::new(Cell::new(0u32));
    let listener = {
        let calls = calls.clone();
        Closure::<dyn FnMut()>::new(move || calls.set(calls.get() + 1))
    };
    let stop: Function = c
        .subscribe(listener.as_ref().clone())
        .expect("subscribe")
        .unchecked_into();
    let p = c.send(s("delete /tmp/free.log"));
    let n = calls.get();
    drop(c);
    let e = wait(p).await.unwrap_err();
    assert_eq!(code(&e), "aborted");
    sleep(200).await;
    assert_eq!(calls.get(), n, "no listener call after free");
    stop.call0(&JsValue::NULL).expect("unsubscribe after free");

    // free() with the fetch surely on the wire (a server that never answers), its timeout armed.
    if let Some(hole) = BLACKHOLE_ENDPOINT {
        let c = ApprovalClient::new(options(
            hole,
            &fresh_thread("free2"),
            r#""persist":false,"timeoutMs":150"#,
        ))
        .expect("client");
        let p = c.load();
        sleep(50).await;
        assert_eq!(phase(&c), "loading");
        drop(c);
        let e = wait(p).await.unwrap_err();
        assert_eq!(code(&e), "aborted");
        sleep(300).await; // past the request's timeout: its timer was cleared, nothing fires
    }

    // abort(): the op rejects with `aborted`, the client is usable again.
    let c = client(&fresh_thread("abort"), "");
    let p = c.load();
    c.abort();
    let e = wait(p).await.unwrap_err();
    assert_eq!(code(&e), "aborted");
    assert_eq!(get(&snap(&c), "busy"), JsValue::FALSE);
    wait(c.load()).await.expect("load after abort");
    assert_eq!(get(&snap(&c), "loaded"), JsValue::TRUE);
}

#[wasm_bindgen_test]
async fn auto_submit_and_network_errors() {
    // autoSubmit: the last decision submits at once.
    let c = client(
        &fresh_thread("auto"),
        r#""autoSubmit":true,"persist":false"#,
    );
    wait(c.send(s("delete /tmp/auto.log"))).await.expect("send");
    c.approve(s(&call_id_of(&c, "delete_file")))
        .expect("approve");
    assert_eq!(phase(&c), "submitting");
    for _ in 0..100 {
        if phase(&c) == "completed" {
            break;
        }
        sleep(10).await;
    }
    assert_eq!(phase(&c), "completed");

    // A server that is not there: network error after the retries (a timer drives them).
    let c = ApprovalClient::new(options(
        "http://127.0.0.1:9",
        &fresh_thread("down"),
        r#""persist":false,"retry":{"attempts":3,"backoffMs":5,"maxBackoffMs":10}"#,
    ))
    .expect("client");
    let e = wait(c.load()).await.unwrap_err();
    assert_eq!(code(&e), "network");
    assert_eq!(phase(&c), "error");
    assert_eq!(string(&path(&snap(&c), &["error", "code"])), "network");
}

/// Waits (up to ~2 s) for the client to reach `want`.
async fn until_phase(c: &ApprovalClient, want: &str) {
    for _ in 0..200 {
        if phase(c) == want {
            return;
        }
        sleep(10).await;
    }
    assert_eq!(phase(c), want, "{:?}", snap(c));
}

/// Allowed tools, in both dialects against the endpoint: a pause on allowed tools only goes on
/// without asking (a chained run pauses twice and is never shown as waiting), a pause with
/// another tool waits for the person with the allowed one approved, and a tool no longer
/// allowed is asked for again.
#[wasm_bindgen_test]
async fn allowed_tools_run_without_asking() {
    for dialect in ["neuron", "sidenet"] {
        let extra = format!(r#""dialect":"{dialect}","persist":false"#);
        let c = client(&fresh_thread("allow"), &extra);
        c.allow_tool(s("delete_file")).expect("allow");
        c.allow_tool(s("run_tests")).expect("allow");
        c.allow_tool(s("deploy")).expect("allow");
        let e = c.allow_tool(JsValue::from(1)).unwrap_err();
        assert_eq!(code(&e), "invalid_argument");
        for blank in ["", " "] {
            let e = c.allow_tool(s(blank)).unwrap_err();
            assert_eq!(code(&e), "invalid_argument");
        }
        assert_eq!(
            JSON::stringify(&get(&snap(&c), "allowedTools"))
                .expect("json")
                .as_string()
                .expect("text"),
            r#"["delete_file","run_tests","deploy"]"#
        );
        wait(c.send(s("delete /tmp/cache.db and deploy web")))
            .await
            .expect("send");
        until_phase(&c, "completed").await;
        let text = last_text(&c);
        assert!(
            text.contains("delete_file /tmp/cache.db: done."),
            "{dialect}: {text}"
        );
        assert!(text.contains("deploy web: done."), "{dialect}: {text}");

        // send_email is not allowed: the pause waits, delete_file already approved.
        wait(c.send(s("delete /tmp/b.log and email b@example.com about B")))
            .await
            .expect("send");
        sleep(50).await;
        assert_eq!(phase(&c), "awaiting_approval", "{dialect}");
        // delete_file is decided (approved), so not among the `pending` cards.
        let tools = array(&path(&snap(&c), &["suspension", "tools"]));
        let id_of = |name: &str| {
            tools
                .iter()
                .find(|t| string(&get(t, "name")) == name)
                .map(|t| string(&get(t, "callId")))
                .unwrap_or_else(|| panic!("{dialect}: no {name} card"))
        };
        let (delete, email) = (id_of("delete_file"), id_of("send_email"));
        assert_eq!(pending(&c), vec![(email.clone(), "send_email".to_owned())]);
        assert_eq!(string(&path(&snap(&c), &["decisions", &delete])), "approve");
        assert!(path(&snap(&c), &["decisions", &email]).is_undefined());
        c.reject(s(&email), s("Not now")).expect("reject");
        wait(c.submit()).await.expect("submit");
        until_phase(&c, "completed").await;

        // No longer allowed: asked for again.
        c.disallow_tool(s("delete_file")).expect("disallow");
        wait(c.send(s("delete /tmp/c.log"))).await.expect("send");
        sleep(50).await;
        assert_eq!(phase(&c), "awaiting_approval", "{dialect}");
        assert!(path(&snap(&c), &["decisions", &call_id_of(&c, "delete_file")]).is_undefined());
    }
}

#[wasm_bindgen_test]
async fn a_request_that_never_answers_times_out_and_is_retried() {
    let Some(hole) = BLACKHOLE_ENDPOINT else {
        return;
    };
    let c = ApprovalClient::new(options(
        hole,
        &fresh_thread("timeout"),
        r#""persist":false,"timeoutMs":100,"retry":{"attempts":2,"backoffMs":20,"maxBackoffMs":20}"#,
    ))
    .expect("client");
    let started = js_sys::Date::now();
    let e = wait(c.load()).await.unwrap_err();
    let elapsed = js_sys::Date::now() - started;
    assert_eq!(code(&e), "timeout");
    assert!(
        elapsed >= 200.0,
        "two tries of 100 ms and a backoff: {elapsed} ms"
    );
    assert_eq!(phase(&c), "error");
    assert_eq!(get(&snap(&c), "busy"), JsValue::FALSE);
}

// ------------------------------------------------------------------------------------------------
// A scripted 30-turn conversation against the endpoint with faults on.

#[derive(Debug, Clone, PartialEq)]
enum Expect {
    Approved,
    Rejected(Option<String>),
}

fn faulty_client(thread: &str, retry: &str) -> ApprovalClient {
    let base = FAULTY_ENDPOINT.unwrap_or_else(endpoint);
    ApprovalClient::new(options(
        base,
        thread,
        &format!(r#""persist":false,"timeoutMs":5000,"retry":{retry}"#),
    ))
    .expect("client")
}

/// Loads until a load succeeds.
async fn load_until_ok(c: &ApprovalClient) {
    for _ in 0..30 {
        if wait(c.load()).await.is_ok() {
            return;
        }
        sleep(20).await;
    }
    panic!("could not load the thread: {:?}", snap(c));
}

fn user_texts(c: &ApprovalClient) -> Vec<String> {
    array(&get(&snap(c), "messages"))
        .iter()
        .map(|m| get(m, "raw"))
        .filter(|raw| string(&get(raw, "role")) == "user")
        .map(|raw| string(&get(&raw, "content")))
        .collect()
}

/// How the test decides a tool of turn `turn`.
fn decision_for(name: &str, turn: usize) -> Expect {
    match name {
        "send_email" => Expect::Rejected(Some(format!("No email please, turn {turn}"))),
        "buy_ticket" => Expect::Rejected(None),
        _ => Expect::Approved,
    }
}

fn turn_text(turn: usize) -> String {
    match turn % 6 {
        0 => format!("Hello {turn}, how are you?"),
        1 => format!("delete /tmp/t{turn}.log"),
        2 => format!("delete /tmp/t{turn}.log and email u{turn}@example.com about Report {turn}"),
        3 => format!("read /tmp/r{turn}.txt"),
        4 => format!("buy {} tickets at 50", turn + 3),
        _ => format!("email ops{turn}@example.com about Release {turn} and deploy svc{turn}"),
    }
}

async fn run_turn(c: &ApprovalClient, turn: usize, expected: &mut HashMap<String, Expect>) {
    let text = turn_text(turn);
    // Send until the message is in the thread (never twice: only after a load shows it is not).
    let mut sent = false;
    for _ in 0..20 {
        if wait(c.send(s(&text))).await.is_ok() {
            sent = true;
            break;
        }
        load_until_ok(c).await;
        if user_texts(c).contains(&text) {
            sent = true;
            break;
        }
    }
    assert!(sent, "turn {turn}: could not send");
    // Decide until the run is over, as seen by a successful load.
    let one_at_a_time = turn % 2 == 1;
    for _ in 0..40 {
        load_until_ok(c).await;
        if phase(c) != "awaiting_approval" {
            return;
        }
        let tools = pending(c);
        for (id, name) in tools
            .iter()
            .take(if one_at_a_time { 1 } else { usize::MAX })
        {
            let decision = decision_for(name, turn);
            match &decision {
                Expect::Approved => c.approve(s(id)).expect("approve"),
                Expect::Rejected(reason) => c
                    .reject(s(id), reason.as_deref().map_or(JsValue::NULL, s))
                    .expect("reject"),
            }
            if let Some(previous) = expected.insert(id.clone(), decision.clone()) {
                assert_eq!(previous, decision, "decided {id} differently");
            }
        }
        let _ = wait(c.submit()).await;
    }
    panic!("turn {turn}: the run never completed: {:?}", snap(c));
}

#[wasm_bindgen_test]
async fn thirty_turns_with_faults_apply_every_decision_once() {
    let thread = fresh_thread("faulty");
    let c = faulty_client(
        &thread,
        r#"{"attempts":8,"backoffMs":10,"maxBackoffMs":100}"#,
    );
    let mut expected: HashMap<String, Expect> = HashMap::new();
    for turn in 0..30 {
        run_turn(&c, turn, &mut expected).await;
    }
    assert!(expected.len() >= 20, "{} gated calls", expected.len());

    // Verify against the server's stored history (a fresh client, generous retries).
    let v = faulty_client(
        &thread,
        r#"{"attempts":20,"backoffMs":10,"maxBackoffMs":50}"#,
    );
    load_until_ok(&v).await;
    let messages: Vec<JsValue> = array(&get(&snap(&v), "messages"))
        .iter()
        .map(|m| get(m, "raw"))
        .collect();

    // Every turn's message, in order. The client never re-sends a message it has not seen to be
    // missing, but Chromium itself transparently re-sends a request (even a POST) when a reused
    // keep-alive connection dies before any byte of the answer, which is what the endpoint's
    // after-applying "drop" fault does: a turn without gated tools can then land twice (a paused
    // one cannot: the re-send gets a 409). Such a duplicate is always adjacent.
    let mut users: Vec<String> = messages
        .iter()
        .filter(|m| string(&get(m, "role")) == "user")
        .map(|m| string(&get(m, "content")))
        .collect();
    let before = users.len();
    users.dedup();
    let wanted: Vec<String> = (0..30).map(turn_text).collect();
    assert_eq!(users, wanted);
    if before != users.len() {
        web_sys::console::log_1(&JsValue::from_str(&format!(
            "{} message(s) landed twice (browser re-send on a dropped keep-alive connection)",
            before - users.len()
        )));
    }

    // Every gated call decided exactly as the test decided it; no tool result twice.
    let mut gated_seen: HashMap<String, Expect> = HashMap::new();
    let mut results: HashMap<String, u32> = HashMap::new();
    for m in &messages {
        let kind = string(&get(m, "type"));
        for tool in array(&get(m, "tools")) {
            let id = string(&get(&tool, "callId"));
            let approval = get(&tool, "approval");
            if kind == "tool_call" && !approval.is_null() && !approval.is_undefined() {
                let reason = get(&tool, "rejectReason").as_string();
                let got = match string(&approval).as_str() {
                    "approved" => Expect::Approved,
                    "rejected" => Expect::Rejected(reason),
                    other => panic!("{id} left {other}"),
                };
                assert!(gated_seen.insert(id.clone(), got).is_none(), "{id} twice");
            }
            if kind == "tool_call_result" {
                *results.entry(id.clone()).or_default() += 1;
                let result = string(&get(&tool, "result"));
                match expected.get(&id) {
                    Some(Expect::Approved) | None => {
                        assert!(!result.starts_with("TOOL NOT EXECUTED"), "{id}: {result}")
                    }
                    Some(Expect::Rejected(reason)) => assert!(
                        result.contains(
                            reason
                                .as_deref()
                                .unwrap_or("No specific instruction provided.")
                        ),
                        "{id}: {result}"
                    ),
                }
            }
        }
    }
    assert_eq!(gated_seen, expected);
    for (id, n) in &results {
        assert_eq!(*n, 1, "the result of {id} appears {n} times");
    }
    for id in expected.keys() {
        assert_eq!(results.get(id), Some(&1), "no result for {id}");
    }
    // The client's own view agrees.
    assert_eq!(phase(&c), "completed");
}

// ------------------------------------------------------------------------------------------------
// Sidenet: streamed answers, read chunk by chunk.

#[wasm_bindgen_test]
async fn sidenet_streams_pauses_and_continues() {
    let thread = fresh_thread("sidenet");
    let c = Rc::new(client(&thread, r#""dialect":"sidenet""#));
    // Record the phases and whether a partial streamed message was ever visible.
    let phases = Rc::new(std::cell::RefCell::new(Vec::<String>::new()));
    let saw_streaming = Rc::new(Cell::new(false));
    // The streaming text as each snapshot showed it (the driver appends only the new part).
    let streamed = Rc::new(std::cell::RefCell::new(String::new()));
    let listener = {
        let (c, phases, saw) = (c.clone(), phases.clone(), saw_streaming.clone());
        let streamed = streamed.clone();
        Closure::<dyn FnMut()>::new(move || {
            let snapshot = c.get_snapshot().expect("snapshot");
            let streaming = get(&snapshot, "streaming");
            if !streaming.is_null() {
                saw.set(true);
                *streamed.borrow_mut() = string(&get(&streaming, "text"));
            }
            let p = string(&get(&snapshot, "phase"));
            let mut phases = phases.borrow_mut();
            if phases.last() != Some(&p) {
                phases.push(p);
            }
        })
    };
    let stop: Function = c
        .subscribe(listener.as_ref().clone())
        .expect("subscribe")
        .unchecked_into();

    wait(c.send(s(
        "read /tmp/s.txt and delete /tmp/s.log and email s@example.com about S",
    )))
    .await
    .expect("send");
    assert_eq!(phase(&c), "awaiting_approval", "{:?}", snap(&c));
    assert_eq!(pending(&c).len(), 2, "{:?}", pending(&c));
    assert!(phases.borrow().contains(&"sending".to_owned()));

    // Another client (a reload) finds the same pause through the replay route.
    let b = client(&thread, r#""dialect":"sidenet","persist":false"#);
    wait(b.load()).await.expect("load");
    assert_eq!(phase(&b), "awaiting_approval");
    assert_eq!(pending(&b), pending(&c));
    drop(b);

    let delete = call_id_of(&c, "delete_file");
    let email = call_id_of(&c, "send_email");
    c.approve(s(&delete)).expect("approve");
    c.reject(s(&email), s("Not this one")).expect("reject");
    wait(c.submit()).await.expect("submit");
    assert_eq!(phase(&c), "completed", "{:?}", snap(&c));
    assert!(get(&snap(&c), "streaming").is_null());
    let text = last_text(&c);
    assert!(text.contains("delete_file /tmp/s.log: done."), "{text}");
    assert!(
        text.contains("send_email to s@example.com: not approved by the user."),
        "{text}"
    );
    assert!(
        saw_streaming.get(),
        "a partial message was shown while streaming"
    );
    assert_eq!(
        *streamed.borrow(),
        text,
        "the last streamed text is the landed message's"
    );
    stop.call0(&JsValue::NULL).expect("unsubscribe");
}

/// The constructor reads options in JS (`readOptions` in `src/wasm/fast.js`, smaller than reading
/// them in wasm); `Config::from_json` + `Config::validate` are the same rules in Rust, pinned by the
/// native tests. Both must agree on every input: the same config, or the same error (code,
/// message, path). Every option (and `routes.*`, `retry.*`) with edge values of every type, then
/// seeded mixes of three.
#[wasm_bindgen_test]
fn options_read_in_js_agree_with_config_from_json() {
    use toolgate::client::Config;
    use toolgate::wasm::read_options_for_tests;

    let keys = [
        "dialect",
        "transport",
        "threadId",
        "baseUrl",
        "headers",
        "autoSubmit",
        "persist",
        "reloadAfterPost",
        "timeoutMs",
        "token",
        "agentVersionId",
        "agentId",
        "routes",
        "retry",
        "routes.chat",
        "routes.thread",
        "routes.stream",
        "routes.run",
        "routes.other",
        "retry.attempts",
        "retry.backoffMs",
        "retry.maxBackoffMs",
        "retry.other",
        "other",
    ];
    let long = format!("\"{}\"", "x".repeat(1100));
    let values = [
        "null",
        "true",
        "false",
        "0",
        "1",
        "-1",
        "1.5",
        "4294967295",
        "4294967296",
        "1e20",
        "18446744073709551615",
        "18446744073709551616",
        "\"\"",
        "\" \"",
        "\"x\"",
        "\"neuron\"",
        "\"sidenet\"",
        "\"stream\"",
        "\"collect\"",
        "\"/\"",
        "\"/p\"",
        "\"/threads/{threadId}\"",
        "\"http://h\"",
        "\"https://h/x/\"",
        "\"ftp://x\"",
        "\"a b\"",
        "\"a\\u0000b\"",
        "\"\\u2028\"",
        "\"\\u00a0\"",
        "\"\\ud800\"",
        "\"é\"",
        "[]",
        "{}",
        "[[\"a\",\"b\"]]",
        "[[\"a\"]]",
        "[1]",
        "{\"A\":\"b\"}",
        "{\"Bad Name\":\"x\"}",
        "{\"a\":1}",
        "{\"X-K\":\"v\\n\"}",
        "{\"X-K\":\"é\"}",
        "{\"X-K\":\"€\"}",
        "{\"X-K\":\"\\ud83d\\ude00\"}",
        "\"€\"",
        "{\"chat\":\"/c\"}",
        "{\"attempts\":2}",
        &long,
    ];
    let member = |key: &str, value: &str| match key.split_once('.') {
        Some((group, name)) => format!(r#""{group}":{{"{name}":{value}}}"#),
        None => format!(r#""{key}":{value}"#),
    };
    // (What is not an object never reaches the JSON rules: `invalid_options_are_invalid_argument`.)
    let mut docs = vec!["{}".to_owned()];
    for key in keys {
        for value in values {
            docs.push(format!(r#"{{"threadId":"t",{}}}"#, member(key, value)));
            docs.push(format!(r#"{{"dialect":"sidenet",{}}}"#, member(key, value)));
        }
    }
    let mut seed: u32 = 7;
    let mut next = |n: usize| {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        (seed >> 8) as usize % n
    };
    for _ in 0..1500 {
        let mut members = vec![r#""threadId":"t""#.to_owned()];
        for _ in 0..3 {
            members.push(member(keys[next(keys.len())], values[next(values.len())]));
        }
        docs.push(format!("{{{}}}", members.join(",")));
    }

    let (mut accepted, mut refused) = (0, 0);
    for doc in &docs {
        let options = JSON::parse(doc).expect("test JSON");
        let text = JSON::stringify(&options)
            .ok()
            .and_then(|s| s.as_string())
            .expect("stringify");
        let rust = Config::from_json(&text).and_then(|c| c.validate().map(|()| c));
        match (read_options_for_tests(&options), rust) {
            (Ok(js), Ok(rust)) => {
                assert_eq!(js, rust, "{doc}");
                accepted += 1;
            }
            (Err(e), Err(rust)) => {
                assert_eq!(code(&e), rust.code.as_str(), "{doc}");
                assert_eq!(string(&get(&e, "detail")), rust.message, "{doc}");
                assert_eq!(get(&e, "path").as_string(), rust.path, "{doc}");
                refused += 1;
            }
            (js, rust) => panic!("{doc}: JS read {js:?}, Config::from_json {rust:?}"),
        }
    }
    // The corpus exercises both sides.
    assert!(
        accepted > 300 && refused > 300,
        "{accepted} accepted, {refused} refused"
    );
}

// ------------------------------------------------------------------------------------------------
// What a page's own code can hand the client: a custom `fetch`, a huge `timeoutMs`, a full storage.

/// A JS function from its parameters and body.
fn js_fn(params: &str, body: &str) -> JsValue {
    Function::new_with_args(params, body).into()
}

/// A client whose requests go to `fetch` (JS source of a function).
fn client_with_fetch(thread: &str, extra: &str, fetch: &str) -> ApprovalClient {
    let o = options(endpoint(), thread, extra);
    js_sys::Reflect::set(
        &o,
        &s("fetch"),
        &js_fn("", &format!("return {fetch}"))
            .unchecked_into::<Function>()
            .call0(&JsValue::NULL)
            .expect("fetch"),
    )
    .expect("set fetch");
    ApprovalClient::new(o).expect("client")
}

/// How `p` settles within `ms`: `Some(Ok | Err)`, or `None` when it is still pending.
async fn within(ms: u32, p: impl Into<JsValue>) -> Option<Result<JsValue, JsValue>> {
    let race: Function = js_fn(
        "p, ms",
        "return Promise.race([p.then((ok) => ({ ok }), (err) => ({ err })), \
         new Promise((r) => setTimeout(() => r({ late: true }), ms))])",
    )
    .unchecked_into();
    let outcome = wait(
        race.call2(&JsValue::NULL, &p.into(), &ms.into())
            .expect("race"),
    )
    .await
    .expect("the race resolves");
    if get(&outcome, "late").is_truthy() {
        None
    } else if js_sys::Reflect::has(&outcome, &s("ok")).unwrap_or(false) {
        Some(Ok(get(&outcome, "ok")))
    } else {
        Some(Err(get(&outcome, "err")))
    }
}

/// `setTimeout` fires at once for a delay of 2^31 ms or more: a `timeoutMs` that large (as good as
/// none) must not time every request out at once.
#[wasm_bindgen_test]
async fn a_timeout_of_2_pow_31_ms_or_more_does_not_fire_at_once() {
    for ms in ["2147483648", "4294967296", "9007199254740991"] {
        let c = client(
            &fresh_thread("bigtimeout"),
            &format!(r#""persist":false,"timeoutMs":{ms},"retry":{{"attempts":1}}"#),
        );
        wait(c.load()).await.expect("load");
        assert_eq!(get(&snap(&c), "loaded"), JsValue::TRUE, "timeoutMs {ms}");
    }
}

/// Nor a retry backoff that large: its timer, armed at once again and again, kept the page busy.
/// No delay of 2^31 ms or more ever reaches `setTimeout`.
#[wasm_bindgen_test]
async fn a_backoff_of_2_pow_31_ms_or_more_arms_no_timer_that_fires_at_once() {
    let spy: Function = js_fn(
        "",
        "const real = setTimeout; const delays = []; \
         globalThis.setTimeout = (f, ms, ...a) => (delays.push(ms), real(f, ms, ...a)); \
         return () => ((globalThis.setTimeout = real), delays);",
    )
    .unchecked_into();
    let stop: Function = spy.call0(&JsValue::NULL).expect("spy").unchecked_into();
    let c = client_with_fetch(
        &fresh_thread("bigbackoff"),
        r#""persist":false,"timeoutMs":4294967296,
           "retry":{"attempts":2,"backoffMs":4294967295,"maxBackoffMs":4294967295}"#,
        "async () => { throw new Error('offline'); }",
    );
    let p = c.load();
    sleep(300).await;
    let delays = array(&stop.call0(&JsValue::NULL).expect("stop"));
    let long: Vec<f64> = delays
        .iter()
        .filter_map(JsValue::as_f64)
        .filter(|&ms| ms >= 1e9)
        .collect();
    assert!(
        long.len() <= 2 && long.iter().all(|&ms| ms < 2f64.powi(31)),
        "delays: {long:?}"
    );
    c.abort();
    assert_eq!(code(&wait(p).await.unwrap_err()), "aborted");
}

/// The timeout does not depend on the fetch honouring `init.signal`: a custom fetch that drops it,
/// or a `Response` built in the page (its body not tied to the signal), still times out.
#[wasm_bindgen_test]
async fn the_timeout_holds_when_the_fetch_ignores_the_signal() {
    let extra = r#""persist":false,"timeoutMs":100,"retry":{"attempts":1}"#;
    for fetch in [
        "() => new Promise(() => {})",
        "async () => new Response(new ReadableStream({ start(c) { c.enqueue(new Uint8Array([123])); } }))",
    ] {
        let c = client_with_fetch(&fresh_thread("nosignal"), extra, fetch);
        let outcome = within(3000, c.load()).await;
        let e = outcome.unwrap_or_else(|| panic!("{fetch}: still loading after 3 s")).unwrap_err();
        assert_eq!(code(&e), "timeout", "{fetch}");
        assert_eq!(get(&snap(&c), "busy"), JsValue::FALSE);
    }
}

/// A loaded client of `thread`, paused on `delete_file`, with that call approved: its id too.
async fn paused_with_an_approval(thread: &str) -> (ApprovalClient, String) {
    let a = client(thread, "");
    wait(a.load()).await.expect("load");
    wait(a.send(s("delete /tmp/full.log"))).await.expect("send");
    let id = call_id_of(&a, "delete_file");
    a.approve(s(&id)).expect("approve");
    (a, id)
}

/// `[key, record]`: this thread's drafts record as storage holds it now.
fn stored_record(thread: &str) -> JsValue {
    let key_and_record: Function = js_fn(
        "thread",
        "const key = Object.keys(localStorage).find((k) => k.startsWith('toolgate:') && k.endsWith(thread)); \
         return [key, localStorage.getItem(key)];",
    )
    .unchecked_into();
    key_and_record
        .call1(&JsValue::NULL, &s(thread))
        .expect("key")
}

/// Fills `localStorage` to the last byte, then turns the approval of `id` into a rejection whose
/// draft the storage cannot hold: the number of filler items, for `tg_fill_{0..n}` to be removed.
fn fill_storage_then_reject(a: &ApprovalClient, id: &str) -> JsValue {
    let fill: Function = js_fn(
        "",
        "let n = 0; for (let size = 1 << 20; size >= 1; size >>= 1) for (;;) { \
         try { localStorage.setItem('tg_fill_' + n++, 'x'.repeat(size)); } catch { break; } } return n;",
    )
    .unchecked_into();
    let n = fill.call0(&JsValue::NULL).expect("fill");
    a.reject(
        s(id),
        s("No, keep it: a reason too long for the storage left"),
    )
    .expect("reject");
    n
}

/// A draft change that a full `localStorage` cannot hold leaves no draft stored, never the older
/// one: a reload must not bring back an approval the person has since turned into a rejection.
#[wasm_bindgen_test]
async fn a_draft_that_storage_cannot_hold_leaves_no_older_one() {
    let thread = fresh_thread("fullstorage");
    let (a, id) = paused_with_an_approval(&thread).await;
    let n = fill_storage_then_reject(&a, &id);
    let b = client(&thread, "");
    let restored = wait(b.load())
        .await
        .map(|_| path(&snap(&b), &["decisions", &id]));
    let empty: Function = js_fn(
        "n",
        "for (let i = 0; i < n; i++) localStorage.removeItem('tg_fill_' + i);",
    )
    .unchecked_into();
    empty.call1(&JsValue::NULL, &n).expect("empty");
    let restored = restored.expect("load");
    assert!(
        restored.is_undefined() || restored.is_null(),
        "restored {:?}",
        JSON::stringify(&restored)
    );
}

/// A draft that storage could not hold stays this tab's: the record another tab writes back once
/// told of the removal (here: the record from before, and its `storage` event) does not replace
/// it. It did: the rejection made here turned back into the approval a second later.
#[wasm_bindgen_test]
async fn a_draft_that_storage_cannot_hold_is_not_replaced_by_another_tabs_record() {
    let thread = fresh_thread("fullshared");
    let (a, id) = paused_with_an_approval(&thread).await;
    let kr = stored_record(&thread);
    let n = fill_storage_then_reject(&a, &id);
    // The other tab writes the record it holds (the approval), and this tab hears of it.
    let other_tab: Function = js_fn(
        "n, kr",
        "for (let i = 0; i < n; i++) localStorage.removeItem('tg_fill_' + i); \
         const [key, record] = kr; localStorage.setItem(key, record); \
         window.dispatchEvent(new StorageEvent('storage', { key, newValue: record }));",
    )
    .unchecked_into();
    other_tab.call2(&JsValue::NULL, &n, &kr).expect("other tab");
    sleep(50).await;
    let decision = path(&snap(&a), &["decisions", &id]);
    assert_eq!(
        JSON::stringify(&decision)
            .ok()
            .and_then(|v| v.as_string())
            .as_deref(),
        Some(r#"["reject","No, keep it: a reason too long for the storage left"]"#),
    );
}

/// `free()` from a listener that one of the client's own methods triggered throws wasm-bindgen's
/// ownership error, and the client is freed all the same once that method returns: its op
/// rejects with `aborted` ("the client was freed"), and later calls throw a plain `Error`.
#[wasm_bindgen_test]
async fn free_from_a_listener_of_a_method_throws_and_still_frees() {
    // The client as JS holds it (the exported object, with its `free`), driven from JS.
    let c = JsValue::from(client(&fresh_thread("freelistener"), r#""persist":false"#));
    let run: Function = js_fn(
        "c",
        "const out = {}; \
         c.subscribe(() => { try { c.free(); out.freed = 'returned'; } catch (e) { out.freed = e.message; } }); \
         out.send = c.send('hello'); return out;",
    )
    .unchecked_into();
    let out = run.call1(&JsValue::NULL, &c).expect("run");
    let freed = string(&get(&out, "freed"));
    assert!(
        freed.contains("borrowed"),
        "free() inside the listener: {freed}"
    );
    let e = wait(get(&out, "send")).await.unwrap_err();
    assert_eq!(code(&e), "aborted");
    assert!(
        string(&get(&e, "message")).contains("freed"),
        "{}",
        string(&get(&e, "message"))
    );
    let snapshot: Function = get(&c, "getSnapshot").unchecked_into();
    let e = snapshot.call0(&c).unwrap_err();
    assert!(!is_toolgate_error(&e), "a plain Error after free()");
}

// ------------------------------------------------------------------------------------------------
// The snapshot and the `fetch` option as user code can reach them.

/// The paths (`$.suspension.pending.0`, ...) of the objects in `v` that are not frozen.
fn unfrozen(v: &JsValue) -> Vec<String> {
    let walk: Function = js_fn(
        "v",
        "const bad = []; const walk = (v, p) => { if (v !== Object(v)) return; \
         if (!Object.isFrozen(v)) bad.push(p); \
         for (const [k, w] of Object.entries(v)) walk(w, p + '.' + k); }; \
         walk(v, '$'); return bad;",
    )
    .unchecked_into();
    array(&walk.call1(&JsValue::NULL, v).expect("walk"))
        .iter()
        .map(string)
        .collect()
}

/// `getSnapshot()` from JS that a step calls synchronously: here the abort listener of a custom
/// `fetch`, run by `abort()`'s step as it cancels the request. It returns the last snapshot
/// `getSnapshot()` returned (the step's changes come with the listeners after it), the very same
/// object; before any snapshot was made, it throws `invalid_state`.
#[wasm_bindgen_test]
async fn get_snapshot_inside_a_step_returns_the_last_snapshot() {
    // `out.client` reads its snapshot from the listener: `out.snap`, or the error `out.err`.
    let fetch = "(url, init) => new Promise((_, reject) => init.signal.addEventListener('abort', \
         () => { try { out.snap = out.client.getSnapshot(); } catch (e) { out.err = e; } \
         reject(init.signal.reason); }))";
    let run: Function = js_fn(
        "c, out, read",
        "return (async () => { out.client = c; \
         const p = c.load(); if (read) out.loading = c.getSnapshot(); \
         await new Promise((r) => setTimeout(r, 20)); c.abort(); \
         out.code = await p.then(() => 'ok', (e) => e.code); out.after = c.getSnapshot(); })()",
    )
    .unchecked_into();
    for read in [true, false] {
        let out = Object::new();
        let o = options(endpoint(), &fresh_thread("reentry"), r#""persist":false"#);
        let f = js_fn("out", &format!("return {fetch}"))
            .unchecked_into::<Function>()
            .call1(&JsValue::NULL, &out)
            .expect("fetch");
        js_sys::Reflect::set(&o, &s("fetch"), &f).expect("set fetch");
        let c = JsValue::from(ApprovalClient::new(o).expect("client"));
        let p = run
            .call3(&JsValue::NULL, &c, &out, &JsValue::from_bool(read))
            .expect("run");
        wait(p).await.expect("the run");
        assert_eq!(string(&get(&out, "code")), "aborted");
        let (seen, err) = (get(&out, "snap"), get(&out, "err"));
        if read {
            assert!(err.is_undefined(), "getSnapshot() threw {:?}", err);
            assert!(seen == get(&out, "loading"), "the last snapshot returned");
            assert_eq!(get(&seen, "busy"), JsValue::TRUE);
            assert_eq!(get(&get(&out, "after"), "busy"), JsValue::FALSE);
        } else {
            assert!(seen.is_undefined());
            assert_eq!(code(&err), "invalid_state");
        }
    }
}

/// The snapshot is frozen all the way down (`suspension.pending`, its tools and their inputs, the
/// drafts, every message): a reader that sorts or edits what it got cannot change what the
/// others see. Also each snapshot a Sidenet stream shows while it grows.
#[wasm_bindgen_test]
async fn the_snapshot_is_frozen_all_the_way_down() {
    let c = client(&fresh_thread("deepfreeze"), r#""persist":false"#);
    wait(c.send(s("delete /tmp/a.log and email a@example.com about A")))
        .await
        .expect("send");
    c.approve(s(&call_id_of(&c, "delete_file")))
        .expect("approve");
    let snapshot = snap(&c);
    assert_eq!(array(&path(&snapshot, &["suspension", "pending"])).len(), 1);
    assert!(!array(&get(&snapshot, "messages")).is_empty());
    assert_eq!(unfrozen(&snapshot), Vec::<String>::new());
    let sort: Function = js_fn("s", "s.suspension.tools.sort(() => -1)").unchecked_into();
    assert!(
        sort.call1(&JsValue::NULL, &snapshot).is_err(),
        "sorted in place"
    );

    let c = Rc::new(client(
        &fresh_thread("deepfreeze_stream"),
        r#""dialect":"sidenet","persist":false"#,
    ));
    let bad = Rc::new(std::cell::RefCell::new(Vec::<String>::new()));
    let streamed = Rc::new(Cell::new(0u32));
    let listener = {
        let (c, bad, streamed) = (c.clone(), bad.clone(), streamed.clone());
        Closure::<dyn FnMut()>::new(move || {
            let snapshot = c.get_snapshot().expect("snapshot");
            if !get(&snapshot, "streaming").is_null() {
                streamed.set(streamed.get() + 1);
            }
            bad.borrow_mut().extend(unfrozen(&snapshot));
        })
    };
    let _stop = c.subscribe(listener.as_ref().clone()).expect("subscribe");
    wait(c.send(s("read /tmp/s.txt and delete /tmp/s.log")))
        .await
        .expect("send");
    assert!(streamed.get() > 0, "no streaming snapshot");
    assert_eq!(*bad.borrow(), Vec::<String>::new());
}

/// A tool's result in the snapshot's messages is the very object (or value) the raw message holds
/// there, not a copy, and the views read as before: the same members in the same order, the same
/// values (texts too), nothing added, all frozen. (The conversion writes a result, and a text
/// that is the message's `content`, once, in `raw`.)
#[wasm_bindgen_test]
async fn a_tool_result_in_the_snapshot_is_the_raw_message_s_own() {
    let c = client_with_fetch(
        &fresh_thread("sharedresult"),
        r#""persist":false"#,
        r#"async () => new Response(JSON.stringify({ id: 't', messages: [
            { role: 'user', content: 'hi' },
            { type: 'tool_call_result', role: 'tool', tools: [
              { callId: 'a', name: 'x', result: { rows: [1, { n: 2 }], ok: true } },
              { callId: 'b', name: 'y', result: null },
              { callId: 'c', name: 'z', result: 'text "q" \u00e9' },
              { callId: 'd', name: 'w', inputs: { p: 1 } },
              { callId: 'e', name: 'v', result: [false] },
            ] },
            { role: 'assistant', content: 'a "long" answer\n\u00e9' },
            { role: 'assistant', content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] },
          ] }), { status: 200, headers: { 'content-type': 'application/json' } })"#,
    );
    wait(c.load()).await.expect("load");
    let snapshot = snap(&c);
    let read: Function = js_fn(
        "s",
        "const m = s.messages[1], raw = m.raw.tools; \
         return [JSON.stringify(m.tools), m.tools[0].result === raw[0].result, \
         m.tools[4].result === raw[4].result, \
         s.messages.some((m) => '$' in m || m.tools.some((t) => '$' in t)), \
         JSON.stringify(s.messages.map((m) => m.text))].join(' | ')",
    )
    .unchecked_into();
    let got = string(&read.call1(&JsValue::NULL, &snapshot).expect("read"));
    let tool = |id: &str, name: &str, inputs: &str, result: &str| {
        format!(
            r#"{{"callId":"{id}","name":"{name}","inputs":{inputs},"result":{result},"approval":null,"approvalReason":null,"rejectReason":null,"status":"done"}}"#
        )
    };
    let tools = [
        tool("a", "x", "{}", r#"{"rows":[1,{"n":2}],"ok":true}"#),
        tool("b", "y", "{}", "null"),
        tool("c", "z", "{}", r#""text \"q\" é""#),
        tool("d", "w", r#"{"p":1}"#, "null"),
        tool("e", "v", "{}", "[false]"),
    ];
    let texts = r#"["hi","","a \"long\" answer\né","one\ntwo"]"#;
    assert_eq!(
        got,
        format!("[{}] | true | true | false | {texts}", tools.join(","))
    );
    assert_eq!(unfrozen(&snapshot), Vec::<String>::new());

    // Sidenet: a text that is one part's `text`, a text of two parts, a tool's output.
    let c = client_with_fetch(
        &fresh_thread("sharedtext"),
        r#""dialect":"sidenet","persist":false"#,
        r#"async (url) => /stream/.test(String(url)) ? new Response(null, { status: 204 }) :
          new Response(JSON.stringify({ id: 't', messages: [
            { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hello "you"' }] },
            { id: 'a1', role: 'assistant', parts: [{ type: 'step-start' }, { type: 'text', text: 'one' },
              { type: 'tool-x', toolCallId: 'c1', state: 'output-available', input: { q: 1 }, output: { ok: [1] } }] },
            { id: 'a2', role: 'assistant', parts: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] },
          ] }), { status: 200, headers: { 'content-type': 'application/json' } })"#,
    );
    wait(c.load()).await.expect("load");
    let snapshot = snap(&c);
    let read: Function = js_fn(
        "s",
        "return [JSON.stringify(s.messages.map((m) => m.text)), JSON.stringify(s.messages[1].tools[0].result), \
         s.messages.some((m) => '$' in m)].join(' | ')",
    )
    .unchecked_into();
    let got = string(&read.call1(&JsValue::NULL, &snapshot).expect("read"));
    assert_eq!(
        got,
        r#"["hello \"you\"","one","a\nb"] | {"ok":[1]} | false"#
    );
    assert_eq!(unfrozen(&snapshot), Vec::<String>::new());
}

/// The `fetch` option is read once, when the options are checked: a getter that returns a
/// function only the first time leaves the client with that function.
#[wasm_bindgen_test]
async fn the_fetch_option_is_read_once() {
    let make: Function = js_fn(
        "o",
        "let n = 0; const out = { calls: 0 }; \
         const custom = (url, init) => (out.calls++, fetch(url, init)); \
         Object.defineProperty(o, 'fetch', { enumerable: true, get: () => (n++ ? 'no function' : custom) }); \
         return out;",
    )
    .unchecked_into();
    let o = options(
        endpoint(),
        &fresh_thread("fetchonce"),
        r#""persist":false,"retry":{"attempts":1}"#,
    );
    let out = make.call1(&JsValue::NULL, &o).expect("getter");
    let c = ApprovalClient::new(o).expect("client");
    wait(c.load()).await.expect("load");
    assert!(
        get(&out, "calls").as_f64() >= Some(1.0),
        "the custom fetch was not used"
    );
}

/// Another tab's change to the drafts (the `storage` event, which fires only in the other tabs:
/// dispatched here by hand after the other client wrote) reaches the client: it shows what storage
/// holds for its pause, tells its subscribers, and writes nothing back. `free()` removes its
/// listener; a client without `persist` has none.
#[wasm_bindgen_test]
async fn another_tabs_drafts_arrive_by_the_storage_event() {
    // The storage listeners added (their options: a signal removes each), and the writes.
    let spy: Function = js_fn(
        "",
        "const out = { seen: [], writes: 0 }; \
         const add = window.addEventListener, set = Storage.prototype.setItem; \
         window.addEventListener = function (t, f, o) { if (t === 'storage') out.seen.push(o); return add.call(this, t, f, o); }; \
         Storage.prototype.setItem = function (k, v) { out.writes++; return set.call(this, k, v); }; \
         out.restore = () => { window.addEventListener = add; Storage.prototype.setItem = set; }; \
         return out;",
    )
    .unchecked_into();
    let out = spy.call0(&JsValue::NULL).expect("spy");
    let seen = |n: u32| js_sys::Array::from(&get(&out, "seen")).length() == n;
    let writes = || get(&out, "writes").as_f64().unwrap_or(-1.0);
    let thread = fresh_thread("tabs");
    let off = client(&thread, r#""persist":false"#);
    assert!(seen(0), "no listener without persist");
    let a = client(&thread, "");
    assert!(seen(1));
    wait(a.load()).await.expect("load");
    wait(a.send(s("delete /tmp/tabs.log"))).await.expect("send");
    let id = call_id_of(&a, "delete_file");
    a.approve(s(&id)).expect("approve");
    // The other tab: restores A's draft, turns it into a rejection (it writes).
    let b = client(&thread, "");
    wait(b.load()).await.expect("load");
    assert_eq!(string(&path(&snap(&b), &["decisions", &id])), "approve");
    b.reject(s(&id), s("not now")).expect("reject");
    let notified = Rc::new(Cell::new(0));
    let n = notified.clone();
    let listener = Closure::<dyn Fn()>::new(move || n.set(n.get() + 1));
    a.subscribe(listener.as_ref().clone()).expect("subscribe");
    let before = writes();
    let key: Function = js_fn(
        "thread",
        "return Object.keys(localStorage).find((k) => k.endsWith(':' + thread));",
    )
    .unchecked_into();
    let key = key.call1(&JsValue::NULL, &s(&thread)).expect("key");
    assert!(key.is_string(), "the drafts are stored");
    let event: Function = js_fn(
        "key",
        "window.dispatchEvent(new StorageEvent('storage', { key }));",
    )
    .unchecked_into();
    event.call1(&JsValue::NULL, &key).expect("event");
    assert_eq!(notified.get(), 1, "the subscribers hear of it");
    let decision = path(&snap(&a), &["decisions", &id]);
    assert_eq!(
        JSON::stringify(&decision).ok().and_then(|t| t.as_string()),
        Some(r#"["reject","not now"]"#.to_owned())
    );
    assert_eq!(writes(), before, "nothing written back");
    // B clears it (storage emptied): A has no draft left.
    b.clear(s(&id)).expect("clear");
    event.call1(&JsValue::NULL, &key).expect("event");
    assert!(path(&snap(&a), &["decisions", &id]).is_undefined());
    // (`free()` is the drop of the Rust value.)
    drop((a, b, off));
    let aborted: Function = js_fn(
        "out",
        "return out.seen.map((o) => o.signal.aborted).join();",
    )
    .unchecked_into();
    let aborted = aborted.call1(&JsValue::NULL, &out).expect("aborted");
    let restore: Function = get(&out, "restore").unchecked_into();
    restore.call0(&JsValue::NULL).expect("restore");
    assert_eq!(
        string(&aborted),
        "true,true",
        "free() removes the listeners"
    );
}

/// Another tab's save that arrives while a command is in flight is not taken in then, nor lost:
/// once the command is over the client reads storage again and takes it in.
#[wasm_bindgen_test]
async fn another_tabs_drafts_saved_during_a_command_arrive_after_it() {
    let thread = fresh_thread("tabsbusy");
    let a = client(&thread, "");
    wait(a.load()).await.expect("load");
    wait(a.send(s("delete /tmp/tabsbusy.log")))
        .await
        .expect("send");
    let id = call_id_of(&a, "delete_file");
    a.approve(s(&id)).expect("approve");
    let b = client(&thread, "");
    wait(b.load()).await.expect("load");
    b.reject(s(&id), s("not now")).expect("reject");
    let event: Function = js_fn(
        "thread",
        "const key = Object.keys(localStorage).find((k) => k.endsWith(':' + thread)); \
         window.dispatchEvent(new StorageEvent('storage', { key }));",
    )
    .unchecked_into();
    // A reloads; the other tab's save arrives meanwhile.
    let loading = a.load();
    event.call1(&JsValue::NULL, &s(&thread)).expect("event");
    assert_eq!(
        string(&path(&snap(&a), &["decisions", &id])),
        "approve",
        "not taken in during the command"
    );
    wait(loading).await.expect("load");
    let decision = path(&snap(&a), &["decisions", &id]);
    assert_eq!(
        JSON::stringify(&decision).ok().and_then(|t| t.as_string()),
        Some(r#"["reject","not now"]"#.to_owned()),
        "taken in once the command is over"
    );
}

/// A tab that loads again and finds a pause another tab already shows (and decided on) takes in
/// that tab's drafts, and writes nothing over them: its own record for the pause would have no
/// decision in it, and the other tab would take that in. Both dialects.
#[wasm_bindgen_test]
async fn a_later_load_that_finds_a_new_pause_takes_in_another_tabs_drafts() {
    let stored: Function = js_fn(
        "thread",
        "const key = Object.keys(localStorage).find((k) => k.endsWith(':' + thread)); \
         return key === undefined ? null : localStorage.getItem(key);",
    )
    .unchecked_into();
    for dialect in ["neuron", "sidenet"] {
        let thread = fresh_thread(&format!("later{dialect}"));
        let extra = format!(r#""dialect":"{dialect}""#);
        // B loads before the pause; A sends, the run pauses, A decides.
        let b = client(&thread, &extra);
        wait(b.load()).await.expect("load");
        let a = client(&thread, &extra);
        wait(a.load()).await.expect("load");
        wait(a.send(s("delete /tmp/later.log")))
            .await
            .expect("send");
        let id = call_id_of(&a, "delete_file");
        a.reject(s(&id), s("keep it")).expect("reject");
        let before = stored.call1(&JsValue::NULL, &s(&thread)).expect("stored");
        assert!(
            string(&before).contains("keep it"),
            "{dialect}: A's draft is stored"
        );
        // B loads again (no storage event reaches a client in the same window: B reads storage
        // because it finds a new pause).
        wait(b.load()).await.expect("load");
        let decision = path(&snap(&b), &["decisions", &id]);
        assert_eq!(
            JSON::stringify(&decision).ok().and_then(|t| t.as_string()),
            Some(r#"["reject","keep it"]"#.to_owned()),
            "{dialect}: B shows A's draft"
        );
        let after = stored.call1(&JsValue::NULL, &s(&thread)).expect("stored");
        assert_eq!(
            string(&after),
            string(&before),
            "{dialect}: nothing written over it"
        );
    }
}

/// `headers` as a `Headers` or a `Map` (which JSON would write as `{}`): sent as given. A value
/// `fetch` cannot send (beyond Latin-1) is refused when the client is built.
#[wasm_bindgen_test]
async fn headers_given_as_headers_or_a_map_are_sent() {
    for make in [
        "new Headers({ 'X-Test': 'one', Authorization: 'Bearer x' })",
        "new Map([['X-Test', 'one'], ['Authorization', 'Bearer x']])",
    ] {
        let out = Object::new();
        let o = options(endpoint(), &fresh_thread("hdrs"), r#""persist":false"#);
        let set: Function = js_fn(
            "o, out",
            &format!(
                "o.headers = {make}; o.fetch = (url, init) => {{ \
                 out.test = init.headers.get('x-test'); out.auth = init.headers.get('authorization'); \
                 return Promise.resolve(new Response('{{\"messages\":[]}}', {{ status: 200 }})); }};"
            ),
        )
        .unchecked_into();
        set.call2(&JsValue::NULL, &o, &out).expect("set");
        let c = ApprovalClient::new(o).expect("client");
        wait(c.load()).await.expect("load");
        assert_eq!(string(&get(&out, "test")), "one", "{make}");
        assert_eq!(string(&get(&out, "auth")), "Bearer x", "{make}");
    }
    for extra in [
        r#""headers":{"X-Test":"€"}"#,
        r#""token":"t€""#,
        r#""headers":[["X-Test","😀"]]"#,
    ] {
        let o = options(endpoint(), "t_latin1", extra);
        let e = ApprovalClient::new(o).err().expect("refused");
        assert_eq!(code(&e), "invalid_argument", "{extra}");
    }
    let o = options(endpoint(), "t_latin1", r#""headers":{"X-Test":"café"}"#);
    assert!(ApprovalClient::new(o).is_ok(), "Latin-1 is fine");
}

/// What a custom `fetch` resolves to that has no HTTP status (not a `Response`: a negative, a
/// fractional, a string or an out-of-range status) is a failed request. A negative one was read as
/// one of the request helper's own signals and left the client loading for ever.
#[wasm_bindgen_test]
async fn a_fetch_answer_with_no_http_status_is_a_failure() {
    for dialect in ["neuron", "sidenet"] {
        for status in ["-1", "-2", "-4", "65736", "1.5", "'200'"] {
            let c = client_with_fetch(
                &fresh_thread("nostatus"),
                &format!(
                    r#""dialect":"{dialect}","persist":false,"timeoutMs":2000,"retry":{{"attempts":1}}"#
                ),
                &format!(
                    "async () => ({{ status: {status}, body: null, \
                     arrayBuffer: async () => new ArrayBuffer(0) }})"
                ),
            );
            let e = within(3000, c.load())
                .await
                .unwrap_or_else(|| panic!("{dialect} {status}: still loading after 3 s"))
                .unwrap_err();
            assert_eq!(code(&e), "network", "{dialect} {status}");
            assert_eq!(get(&snap(&c), "busy"), JsValue::FALSE);
        }
    }
}

/// A streamed answer whose chunks are no bytes (a custom `fetch`'s stream of `undefined`, `null`
/// or a string) fails that request as `network`; the client stays usable. An exception inside a
/// step used to leave the client borrowed for good (every later call `invalid_state`, the promise
/// never settled): strings first, then `undefined` and `null`, whose length the step read.
#[wasm_bindgen_test]
async fn a_stream_chunk_that_is_no_bytes_fails_the_request() {
    for chunk in ["undefined", "null", "'text'"] {
        let c = client_with_fetch(
            &fresh_thread("nobytes"),
            r#""dialect":"sidenet","persist":false,"timeoutMs":2000,"retry":{"attempts":1}"#,
            &format!(
                "(url, init) => init.method !== 'POST' ? fetch(url, init) : \
                 new Response(new ReadableStream({{ start(c) {{ c.enqueue({chunk}); c.close(); }} }}), \
                 {{ headers: {{ 'content-type': 'text/event-stream' }} }})"
            ),
        );
        wait(c.load()).await.expect("load");
        let e = within(3000, c.send(s("hello")))
            .await
            .unwrap_or_else(|| panic!("{chunk}: the send never settled"))
            .unwrap_err();
        assert_eq!(code(&e), "network", "{chunk}");
        let snapshot = snap(&c);
        assert_eq!(get(&snapshot, "busy"), JsValue::FALSE, "{chunk}");
        // Usable: a load goes out and lands.
        wait(c.load()).await.expect("load again");
    }
}

/// A whole answer whose body is no bytes (a custom `fetch`'s `arrayBuffer()` giving a string,
/// `undefined` or a number) fails that request as `network`, as a stream chunk does. It was read
/// as bytes all the same (`new Uint8Array('12')` is twelve zeros): an answer of the wrong body.
#[wasm_bindgen_test]
async fn a_whole_answer_that_is_no_bytes_fails_the_request() {
    for body in ["'{}'", "undefined", "12"] {
        let c = client_with_fetch(
            &fresh_thread("nobody"),
            r#""persist":false,"timeoutMs":2000,"retry":{"attempts":1}"#,
            &format!(
                "async () => ({{ status: 200, body: null, arrayBuffer: async () => {body} }})"
            ),
        );
        let e = within(3000, c.load())
            .await
            .unwrap_or_else(|| panic!("{body}: still loading after 3 s"))
            .unwrap_err();
        assert_eq!(code(&e), "network", "{body}");
        assert_eq!(get(&snap(&c), "busy"), JsValue::FALSE, "{body}");
    }
}

/// A stream the client lets go of (here: `abort()` while a reply is being read) whose body cannot
/// be cancelled the usual way (a custom `fetch`'s reader whose `cancel` returns no promise, throws
/// or is missing) leaves the client usable: the command settles `aborted`, and a load goes out and
/// lands. The `TypeError` of `cancel().catch` went through the crate's step and left the client
/// borrowed for good (every later call `invalid_state`, the promise never settled).
#[wasm_bindgen_test]
async fn a_stream_whose_body_cannot_be_cancelled_leaves_the_client_usable() {
    for cancel in ["cancel() {}", "cancel() { throw new Error('no'); }", ""] {
        let c = client_with_fetch(
            &fresh_thread("nocancel"),
            r#""dialect":"sidenet","persist":false,"retry":{"attempts":1}"#,
            &format!(
                "(url, init) => init.method !== 'POST' ? fetch(url, init) : Promise.resolve({{ \
                 status: 200, headers: new Headers({{ 'content-type': 'text/event-stream' }}), \
                 body: {{ getReader: () => ({{ read: () => new Promise(() => {{}}), {cancel} }}) }} }})"
            ),
        );
        wait(c.load()).await.expect("load");
        let p = c.send(s("hello"));
        sleep(50).await;
        c.abort();
        let e = within(3000, p)
            .await
            .unwrap_or_else(|| panic!("{cancel:?}: the send never settled"))
            .unwrap_err();
        assert_eq!(code(&e), "aborted", "{cancel:?}");
        assert_eq!(get(&snap(&c), "busy"), JsValue::FALSE, "{cancel:?}");
        within(3000, c.load())
            .await
            .unwrap_or_else(|| panic!("{cancel:?}: the load never settled"))
            .unwrap_or_else(|e| panic!("{cancel:?}: load again: {:?}", JSON::stringify(&e)));
    }
}

/// A custom `fetch` that ignores the abort signal and answers after the request was let go: its
/// body is cancelled unread, for a stream as for a whole answer (it was left open, or read whole).
#[wasm_bindgen_test]
async fn a_body_that_arrives_after_its_request_was_let_go_is_cancelled() {
    for dialect in ["sidenet", "neuron"] {
        let flag = format!("tgCancelled_{dialect}");
        let c =
            client_with_fetch(
                &fresh_thread("late"),
                &format!(r#""dialect":"{dialect}","persist":false,"retry":{{"attempts":1}}"#),
                &format!(
                "(url, init) => init.method !== 'POST' ? fetch(url, init) : new Promise((ok) => \
                 setTimeout(() => ok(new Response(new ReadableStream({{ \
                   start(c) {{ c.enqueue(new TextEncoder().encode(': keep\\n')); }}, \
                   cancel() {{ globalThis.{flag} = true; }} }}), \
                 {{ headers: {{ 'content-type': '{}' }} }})), 200))",
                if dialect == "sidenet" { "text/event-stream" } else { "application/json" }
            ),
            );
        wait(c.load()).await.expect("load");
        let p = c.send(s("hello"));
        sleep(50).await;
        c.abort();
        assert_eq!(code(&wait(p).await.unwrap_err()), "aborted", "{dialect}");
        sleep(400).await;
        let cancelled = js_sys::Reflect::get(&js_sys::global(), &s(&flag)).expect("flag");
        assert_eq!(
            cancelled,
            JsValue::TRUE,
            "{dialect}: the late body was not cancelled"
        );
    }
}

/// A write that storage took is not read as a failed one whatever `setItem` returns (a patched or
/// shimmed storage returning the map it wrote to): another tab's record written after it is taken
/// in, as always. It was read as a full storage, and this tab's approval held against the record.
#[wasm_bindgen_test]
async fn a_write_is_not_read_as_failed_whatever_set_item_returns() {
    let thread = fresh_thread("setret");
    let a = client(&thread, "");
    wait(a.load()).await.expect("load");
    wait(a.send(s("delete /tmp/full.log"))).await.expect("send");
    let id = call_id_of(&a, "delete_file");
    // The pause's record, as storage holds it before the approval.
    let kr = stored_record(&thread);
    let patch: Function = js_fn(
        "",
        "const set = Storage.prototype.setItem; \
         Storage.prototype.setItem = function (k, v) { set.call(this, k, v); return this; }; \
         return () => { Storage.prototype.setItem = set; };",
    )
    .unchecked_into();
    let restore: Function = patch.call0(&JsValue::NULL).expect("patch").unchecked_into();
    let approved = a.approve(s(&id));
    restore.call0(&JsValue::NULL).expect("restore");
    approved.expect("approve");
    // The other tab writes the pause's record (no draft in it), and this tab hears of it.
    let other_tab: Function = js_fn(
        "kr",
        "const [key, record] = kr; localStorage.setItem(key, record); \
         window.dispatchEvent(new StorageEvent('storage', { key, newValue: record }));",
    )
    .unchecked_into();
    other_tab.call1(&JsValue::NULL, &kr).expect("other tab");
    sleep(50).await;
    let decision = path(&snap(&a), &["decisions", &id]);
    assert!(
        decision.is_undefined(),
        "the other tab's record was not taken in: {:?}",
        JSON::stringify(&decision)
    );
}

/// A listener that throws stops neither the others nor the method, also where `console.error`
/// throws (test setups that fail on console errors make it so): the report of the listener's
/// exception threw through the crate's step, and the method with it (a `free()` from JS then
/// skipped its shutdown; a report step read a healthy request as failed).
#[wasm_bindgen_test]
async fn a_throwing_listener_stops_nothing_where_console_error_throws() {
    let c = client(&fresh_thread("consolethrows"), r#""persist":false"#);
    wait(c.load()).await.expect("load");
    wait(c.send(s("delete /tmp/x.log"))).await.expect("send");
    let id = call_id_of(&c, "delete_file");
    let calls = Rc::new(Cell::new(0u32));
    let counting = {
        let calls = calls.clone();
        Closure::<dyn FnMut()>::new(move || calls.set(calls.get() + 1))
    };
    let throwing = Function::new_no_args("throw new Error('a listener that throws')");
    c.subscribe(throwing.into()).expect("subscribe throwing");
    c.subscribe(counting.as_ref().clone()).expect("subscribe");
    let patch: Function = js_fn(
        "",
        "const error = console.error; \
         console.error = () => { throw new Error('console.error throws'); }; \
         return () => { console.error = error; };",
    )
    .unchecked_into();
    let restore: Function = patch.call0(&JsValue::NULL).expect("patch").unchecked_into();
    // A method's step, then a request's report steps.
    let approved = c.approve(s(&id));
    let submitted = within(3000, c.submit()).await;
    restore.call0(&JsValue::NULL).expect("restore");
    approved.expect("approve");
    submitted
        .expect("the submission never settled")
        .expect("submit");
    assert!(calls.get() >= 2, "the other listener ran: {}", calls.get());
    assert_eq!(get(&snap(&c), "error"), JsValue::NULL);
}

/// A reload that finds the same thread (a `load()`, Neuron's quiet reload after a POST) keeps the
/// snapshot's `messages` array and its `messagesVersion`, as documented ("the same object until
/// the messages change"): a UI memoized on them does no work. Each reload made a new array of the
/// same message objects and counted a new version.
#[wasm_bindgen_test]
async fn a_reload_of_the_same_thread_keeps_the_messages_array() {
    for dialect in ["neuron", "sidenet"] {
        let c = client(
            &fresh_thread("samereload"),
            &format!(r#""dialect":"{dialect}","persist":false"#),
        );
        wait(c.load()).await.expect("load");
        wait(c.send(s("read notes.txt"))).await.expect("send");
        // Neuron's quiet reload after the POST lands first; a first load after a Sidenet turn
        // takes the history's form of the streamed messages (the server stores more of them).
        for _ in 0..100 {
            if get(&snap(&c), "syncing") == JsValue::FALSE {
                break;
            }
            sleep(10).await;
        }
        wait(c.load()).await.expect("load the history");
        let before = snap(&c);
        assert!(array(&get(&before, "messages")).len() >= 2, "{dialect}");
        wait(c.load()).await.expect("reload");
        let after = snap(&c);
        assert!(
            get(&before, "messages") == get(&after, "messages"),
            "{dialect}: a new messages array"
        );
        assert_eq!(
            get(&before, "messagesVersion"),
            get(&after, "messagesVersion"),
            "{dialect}"
        );
        // A turn still changes them.
        wait(c.send(s("read notes.txt"))).await.expect("send again");
        assert!(
            get(&before, "messages") != get(&snap(&c), "messages"),
            "{dialect}"
        );
    }
}

/// A custom `fetch` whose POST answers are the real answer's bytes in pieces of 32, one every
/// `gap` ms, with a stall of `stall` ms after the first piece; `globalThis.tgRequests` counts the
/// requests.
fn trickle(gap: u32, stall: u32) -> String {
    format!(
        "(url, init) => (globalThis.tgRequests = (globalThis.tgRequests || 0) + 1, fetch(url, init)).then(async (r) => {{ if (init.method !== 'POST') return r; \
         const all = new Uint8Array(await r.arrayBuffer()); let at = 0; \
         return new Response(new ReadableStream({{ async pull(c) {{ \
           if (at >= all.length) return c.close(); \
           await new Promise((ok) => setTimeout(ok, at === 32 ? {stall} : {gap})); \
           c.enqueue(all.slice(at, at + 32)); at += 32; }} }}), \
           {{ status: r.status, headers: r.headers }}); }})"
    )
}

/// `timeoutMs` bounds the wait for a stream's headers and each gap between its chunks, not the
/// whole stream: a reply that trickles in for longer than the timeout lands whole, and one that
/// stalls for longer than it after a first chunk times out then, not later.
#[wasm_bindgen_test]
async fn the_timeout_is_per_gap_between_stream_chunks() {
    let extra = r#""dialect":"sidenet","persist":false,"timeoutMs":200,"retry":{"attempts":1}"#;
    let c = client_with_fetch(&fresh_thread("trickle"), extra, &trickle(40, 40));
    wait(c.load()).await.expect("load");
    let requests = || get(&js_sys::global(), "tgRequests").as_f64().unwrap_or(0.0);
    let before = requests();
    let started = js_sys::Date::now();
    let outcome = within(10_000, c.send(s("hello"))).await;
    let elapsed = js_sys::Date::now() - started;
    assert!(
        matches!(outcome, Some(Ok(_))),
        "the trickled reply lands: {outcome:?}"
    );
    assert_eq!(
        requests() - before,
        1.0,
        "one request, never given up and read again"
    );
    assert!(
        elapsed > 400.0,
        "the reply took longer than two timeouts: {elapsed} ms"
    );
    let text = last_text(&c);
    assert!(
        text.starts_with("You said: \"hello\".") && text.ends_with("Try \"delete /tmp/old.log\"."),
        "the whole reply: {text}"
    );

    // The stalled reply: the client gives it up a timeout after its first chunk and reads the
    // run again (a replay, which this fetch passes through whole), long before the stall ends.
    let c = client_with_fetch(&fresh_thread("stall"), extra, &trickle(10, 3_000));
    wait(c.load()).await.expect("load");
    let started = js_sys::Date::now();
    let outcome = within(6_000, c.send(s("hello")))
        .await
        .expect("the stalled send settles");
    let elapsed = js_sys::Date::now() - started;
    assert!(
        (200.0..2_500.0).contains(&elapsed),
        "gave up the stalled stream after its timeout, not at the stall's end: {elapsed} ms, {outcome:?}"
    );
    let text = last_text(&c);
    assert!(
        text.ends_with("Try \"delete /tmp/old.log\"."),
        "the whole reply, read again: {text}"
    );
    assert_eq!(get(&snap(&c), "busy"), JsValue::FALSE);
}

/// A custom `fetch` whose POST answers are streams held open after their end (the bytes of the
/// real answer, then nothing, never closed), counting the streams cancelled and the POSTs.
const HELD_OPEN: &str = "(url, init) => { if (init.method === 'POST') globalThis.tgPosts = \
     (globalThis.tgPosts || 0) + 1; init.signal.addEventListener('abort', () => \
     globalThis.tgOnAbort?.()); return fetch(url, init).then((r) => { if (init.method !== 'POST') \
     return r; const rd = r.body.getReader(); return new Response(new ReadableStream({ \
     async pull(c) { const { done, value } = await rd.read(); if (done) return new Promise(() => {}); \
     c.enqueue(value); }, cancel() { globalThis.tgCancelled = (globalThis.tgCancelled || 0) + 1; } \
     }), { status: r.status, headers: r.headers }); }); }";

/// At `[DONE]` the client lets a Sidenet answer go: a stream the server (or a `Response` built
/// in the page) holds open is cancelled, not left open with a timeout armed again.
#[wasm_bindgen_test]
async fn a_stream_held_open_after_done_is_cancelled() {
    let reset: Function = js_fn(
        "",
        "globalThis.tgCancelled = 0; globalThis.tgOnAbort = null;",
    )
    .unchecked_into();
    reset.call0(&JsValue::NULL).expect("reset");
    let c = client_with_fetch(
        &fresh_thread("heldopen"),
        r#""dialect":"sidenet","persist":false,"timeoutMs":5000,"retry":{"attempts":1}"#,
        HELD_OPEN,
    );
    wait(c.load()).await.expect("load");
    let outcome = within(4000, c.send(s("hello"))).await;
    assert!(matches!(outcome, Some(Ok(_))), "the send ends at [DONE]");
    sleep(100).await;
    let global = js_sys::global();
    assert_eq!(get(&global, "tgCancelled").as_f64(), Some(1.0));
}

/// A request the client lets go (a Sidenet answer at `[DONE]`) aborts its signal with an
/// `AbortError`, as a custom `fetch` expects (`abort()`'s own default, without its cost).
#[wasm_bindgen_test]
async fn a_request_let_go_aborts_its_signal_with_an_abort_error() {
    let reset: Function = js_fn("", "globalThis.tgReasons = [];").unchecked_into();
    reset.call0(&JsValue::NULL).expect("reset");
    let c = client_with_fetch(
        &fresh_thread("reason"),
        r#""dialect":"sidenet","persist":false,"timeoutMs":5000,"retry":{"attempts":1}"#,
        "(url, init) => { init.signal.addEventListener('abort', () => { const r = init.signal.reason; \
         globalThis.tgReasons.push(r instanceof DOMException ? r.name : String(r)); }); \
         return fetch(url, init); }",
    );
    wait(c.load()).await.expect("load");
    wait(c.send(s("hello"))).await.expect("send");
    let reasons: Vec<String> = array(&get(&js_sys::global(), "tgReasons"))
        .iter()
        .map(string)
        .collect();
    assert!(!reasons.is_empty(), "the answer was let go at [DONE]");
    assert!(reasons.iter().all(|r| r == "AbortError"), "{reasons:?}");
}

/// `free()` from JS that a step runs (a custom `fetch`'s abort listener, called as the client
/// lets a held-open stream go at `[DONE]`) frees the client: its submission rejects with
/// `aborted` and nothing more is sent (the second call's continuation went out, the promise
/// never settled, listeners kept being called).
#[wasm_bindgen_test]
async fn free_from_a_fetch_abort_listener_in_a_step_frees_the_client() {
    let c = JsValue::from(client_with_fetch(
        &fresh_thread("freeabort"),
        r#""dialect":"sidenet","persist":false,"timeoutMs":5000,"retry":{"attempts":1}"#,
        HELD_OPEN,
    ));
    let run: Function = js_fn(
        "c",
        "return (async () => { globalThis.tgOnAbort = null; await c.load(); \
         await c.send('delete /tmp/a and email a@b.c about x'); \
         const ids = c.getSnapshot().suspension.undecided; for (const id of ids) c.approve(id); \
         const out = { cards: ids.length, calls: 0 }; let freed = false; \
         c.subscribe(() => { if (freed) out.calls++; }); \
         globalThis.tgOnAbort = () => { globalThis.tgOnAbort = null; freed = true; c.free(); }; \
         const posts = globalThis.tgPosts; const p = c.submit(); \
         out.outcome = await Promise.race([p.then(() => 'ok', (e) => e.code), \
           new Promise((r) => setTimeout(() => r('pending'), 3000))]); \
         await new Promise((r) => setTimeout(r, 300)); \
         out.posts = globalThis.tgPosts - posts; out.freed = freed; return out; })()",
    )
    .unchecked_into();
    let out = wait(run.call1(&JsValue::NULL, &c).expect("run"))
        .await
        .expect("the scenario runs");
    assert_eq!(get(&out, "cards").as_f64(), Some(2.0));
    assert_eq!(get(&out, "freed"), JsValue::TRUE, "freed at [DONE]");
    assert_eq!(string(&get(&out, "outcome")), "aborted");
    assert_eq!(
        get(&out, "posts").as_f64(),
        Some(1.0),
        "nothing sent after free()"
    );
    assert_eq!(
        get(&out, "calls").as_f64(),
        Some(0.0),
        "no listener after free()"
    );
}

/// A 2xx HTML page where a Sidenet stream was asked for (a chat or replay route that is the app's
/// fallback page) fails as `network` saying so, instead of "the stream was cut short": for a
/// message (kept unsent) and for a load's replay. A 4xx page stays an HTTP status error.
#[wasm_bindgen_test]
async fn an_html_page_for_a_stream_says_so() {
    const PAGE: &str =
        "new Response('<!doctype html><html><body><div id=root></div></body></html>', \
         { status: 200, headers: { 'content-type': 'text/html; charset=utf-8' } })";
    let c = client_with_fetch(
        &fresh_thread("htmlpost"),
        r#""dialect":"sidenet","persist":false,"timeoutMs":3000,"retry":{"attempts":1}"#,
        &format!("(url, init) => init.method === 'POST' ? {PAGE} : fetch(url, init)"),
    );
    wait(c.load()).await.expect("load");
    let e = within(3000, c.send(s("hello")))
        .await
        .expect("the send settles")
        .unwrap_err();
    assert_eq!(code(&e), "network");
    let message = get(&e, "message").as_string().unwrap_or_default();
    assert!(message.contains("HTML page"), "{message}");
    assert_eq!(get(&snap(&c), "unsentText"), s("hello"));

    let c = client_with_fetch(
        &fresh_thread("htmlreplay"),
        r#""dialect":"sidenet","persist":false,"timeoutMs":3000,"retry":{"attempts":1}"#,
        &format!("(url, init) => url.includes('/stream') ? {PAGE} : fetch(url, init)"),
    );
    let e = within(3000, c.load())
        .await
        .expect("the load settles")
        .unwrap_err();
    let message = get(&e, "message").as_string().unwrap_or_default();
    assert!(message.contains("HTML page"), "{message}");

    // A 204 labelled text/html (a framework's default) is the replay's "nothing paused".
    let c = client_with_fetch(
        &fresh_thread("html204"),
        r#""dialect":"sidenet","persist":false,"timeoutMs":3000,"retry":{"attempts":1}"#,
        "(url, init) => url.includes('/stream') ? new Response(null, \
         { status: 204, headers: { 'content-type': 'text/html; charset=utf-8' } }) : fetch(url, init)",
    );
    let outcome = within(3000, c.load()).await;
    assert!(matches!(outcome, Some(Ok(_))), "{outcome:?}");

    let c = client_with_fetch(
        &fresh_thread("html404"),
        r#""dialect":"sidenet","persist":false,"timeoutMs":3000,"retry":{"attempts":1}"#,
        "(url, init) => url.includes('/stream') ? new Response('<html></html>', \
         { status: 404, headers: { 'content-type': 'text/html' } }) : fetch(url, init)",
    );
    let e = within(3000, c.load())
        .await
        .expect("the load settles")
        .unwrap_err();
    assert_eq!(code(&e), "http_status");
}

/// The wall clock stepping back (an hour, during a retry's wait) does not hold the client: its
/// deadlines are on a clock that never steps back. On `Date.now` the retry's deadline lay an hour
/// ahead, the load stuck in `loading` (and a submission in `submitting`) until `abort()`.
#[wasm_bindgen_test]
async fn the_wall_clock_stepping_back_does_not_stall_a_retry() {
    let set: Function = js_fn(
        "",
        "globalThis.tgRealNow ??= Date.now; globalThis.tgGets = 0; \
         globalThis.tgClockBack = () => { const real = globalThis.tgRealNow; \
         Date.now = () => real() - 3600000; };",
    )
    .unchecked_into();
    set.call0(&JsValue::NULL).expect("set up");
    let c = client_with_fetch(
        &fresh_thread("clockback"),
        r#""persist":false,"timeoutMs":3000,"retry":{"attempts":3,"backoffMs":200,"maxBackoffMs":200}"#,
        "(url, init) => { if (globalThis.tgGets++ === 0) { setTimeout(globalThis.tgClockBack, 20); \
         return Promise.reject(new TypeError('offline')); } return fetch(url, init); }",
    );
    let outcome = within(2000, c.load()).await;
    js_fn("", "Date.now = globalThis.tgRealNow;")
        .unchecked_into::<Function>()
        .call0(&JsValue::NULL)
        .expect("restore Date.now");
    assert!(
        matches!(outcome, Some(Ok(_))),
        "the retried load lands: {outcome:?}"
    );
    let gets = get(&js_sys::global(), "tgGets").as_f64();
    assert_eq!(gets, Some(2.0));
}

/// A freed client lets go of its core at once. The client's callback holds a `Weak` to its
/// state, which keeps that allocation until JS collects the callback (a later task at the
/// earliest): so what stays until then is the state's small shell, not the core, whose
/// thousands of bytes were held by every freed client before (2,000 of them grew memory by
/// about 5 MB; now by about 400 KB).
#[wasm_bindgen_test]
fn a_freed_client_keeps_little_until_its_callback_is_collected() {
    let make = |i: usize| {
        let thread = format!("freed_{i}");
        let extra = r#""dialect":"sidenet","persist":false"#;
        drop(ApprovalClient::new(options("", &thread, extra)).expect("client"));
    };
    // Warm up: the allocator's first growth is not this test's.
    (0..50).for_each(make);
    let before = memory_bytes();
    (0..2000).for_each(make);
    let grown = memory_bytes() - before;
    assert!(
        grown < f64::from(1u32 << 20),
        "2,000 freed clients grew wasm memory by {grown} bytes"
    );
}
