//! Browser tests of the Sidenet dialect (wasm-bindgen-test in headless Chromium): the `ApprovalClient`
//! driver with `dialect: 'sidenet'`, driven exactly as JS would (exported methods, JS values in,
//! promises awaited), against the reference endpoint's `/v1/` routes that `scripts/test-browser.sh`
//! starts: `TOOLGATE_ENDPOINT` (grace window `TOOLGATE_GRACE_MS`), `TOOLGATE_SLOW_ENDPOINT` (slower
//! chunks), `TOOLGATE_TOKEN_ENDPOINT` (`TOKEN=s3cret`) and `TOOLGATE_FAULTY_ENDPOINT` (drops, 500s).
//!
//! Every test uses fresh thread ids and checks real values: the snapshots, what the server sent (a
//! recorder wrapped around the page's `fetch` keeps every `/v1/` request and the text of its answer)
//! and what the server stored (`GET /v1/threads/{id}`, fetched directly). The recorder can also cut
//! an answer's body just before a given text, as a dropped connection would: the driver's reader
//! then fails mid-stream, exactly as on a real network error.
#![cfg(target_arch = "wasm32")]

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use js_sys::{Array, Function, Object, Promise, Reflect, JSON};
use toolgate::wasm::{is_toolgate_error, ApprovalClient};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

#[path = "support/web.rs"]
mod support;
use support::*;

wasm_bindgen_test_configure!(run_in_browser);

/// The same agent with a longer pause between stream chunks (deltas arrive separately).
const SLOW_ENDPOINT: Option<&str> = option_env!("TOOLGATE_SLOW_ENDPOINT");
/// Requires `Authorization: Bearer s3cret` on every `/v1/` route.
const TOKEN_ENDPOINT: Option<&str> = option_env!("TOOLGATE_TOKEN_ENDPOINT");
const FAULTY_ENDPOINT: Option<&str> = option_env!("TOOLGATE_FAULTY_ENDPOINT");
/// The endpoints' grace window for a paused run, in ms.
const GRACE_MS: Option<&str> = option_env!("TOOLGATE_GRACE_MS");
const TOKEN: &str = "s3cret";

fn slow_endpoint() -> &'static str {
    SLOW_ENDPOINT.unwrap_or_else(endpoint)
}

fn grace_ms() -> i32 {
    GRACE_MS.and_then(|g| g.parse().ok()).unwrap_or(3000)
}

// ------------------------------------------------------------------------------------------------
// JS values

/// Canonical JSON: object keys sorted (the client's objects are key-sorted; the server's are not).
fn json(v: &JsValue) -> String {
    let sorted = Function::new_with_args(
        "k, x",
        "return x && typeof x === 'object' && !Array.isArray(x) \
           ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x;",
    );
    JSON::stringify_with_replacer(v, &sorted)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_else(|| "undefined".to_owned())
}

fn is_nullish(v: &JsValue) -> bool {
    v.is_null() || v.is_undefined()
}

fn fresh_thread(tag: &str) -> String {
    format!(
        "ws_{tag}_{}_{}",
        js_sys::Date::now() as u64,
        (js_sys::Math::random() * 1e9) as u64
    )
}

// ------------------------------------------------------------------------------------------------
// Clients

/// A Sidenet client: `{ baseUrl, threadId, dialect: 'sidenet', ...extra }`.
fn client_at(base: &str, thread: &str, extra: &str) -> ApprovalClient {
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(",{extra}")
    };
    let options = JSON::parse(&format!(
        r#"{{"baseUrl":"{base}","threadId":"{thread}","dialect":"sidenet"{extra}}}"#
    ))
    .expect("options JSON");
    install_recorder();
    ApprovalClient::new(options).expect("client")
}

fn client(thread: &str, extra: &str) -> ApprovalClient {
    client_at(endpoint(), thread, extra)
}

/// The gated cards of the pause (`suspension.tools`).
fn cards(c: &ApprovalClient) -> Vec<JsValue> {
    array(&path(&snap(c), &["suspension", "tools"]))
}

/// The comparable fields of a card.
fn card_fields(card: &JsValue) -> String {
    [
        "callId",
        "name",
        "inputs",
        "approvalReason",
        "runId",
        "agentVersionId",
    ]
    .iter()
    .map(|k| format!("{k}={}", json(&get(card, k))))
    .collect::<Vec<_>>()
    .join(" ")
}

fn messages(c: &ApprovalClient) -> Vec<JsValue> {
    array(&get(&snap(c), "messages"))
}

fn last_text(c: &ApprovalClient) -> String {
    messages(c)
        .last()
        .map(|m| string(&get(m, "text")))
        .unwrap_or_default()
}

/// The tool of the settled messages with this callId.
fn tool_view(c: &ApprovalClient, call_id: &str) -> JsValue {
    messages(c)
        .iter()
        .flat_map(|m| array(&get(m, "tools")))
        .find(|t| string(&get(t, "callId")) == call_id)
        .unwrap_or(JsValue::UNDEFINED)
}

// ------------------------------------------------------------------------------------------------
// The server's stored thread, fetched directly (not through the client).

/// `GET {base}/v1/threads/{thread}` → `(status, body)`.
async fn stored(base: &str, thread: &str, auth: Option<&str>) -> (u16, JsValue) {
    let f = Function::new_with_args(
        "url, auth",
        "const f = (globalThis.__tg && globalThis.__tg.real) || fetch; \
         return f(url, auth ? { headers: { Authorization: auth } } : {}) \
           .then(r => r.json().catch(() => null).then(body => ({ status: r.status, body })));",
    );
    let url = format!("{base}/v1/threads/{thread}");
    let auth = auth.map_or(JsValue::NULL, s);
    let p: Promise = f
        .call2(&JsValue::NULL, &s(&url), &auth)
        .expect("fetch")
        .unchecked_into();
    let r = wait(p).await.expect("the stored thread");
    (
        get(&r, "status").as_f64().unwrap_or(0.0) as u16,
        get(&r, "body"),
    )
}

/// Every tool part of the stored thread: `(toolCallId, type, state, part)`.
fn stored_tools(body: &JsValue) -> Vec<(String, String, String, JsValue)> {
    array(&get(body, "messages"))
        .iter()
        .flat_map(|m| array(&get(m, "parts")))
        .filter(|p| string(&get(p, "type")).starts_with("tool-"))
        .map(|p| {
            (
                string(&get(&p, "toolCallId")),
                string(&get(&p, "type")),
                string(&get(&p, "state")),
                p,
            )
        })
        .collect()
}

/// The state of the one stored part of `call_id` (panics unless there is exactly one).
fn stored_state(body: &JsValue, call_id: &str) -> String {
    let parts: Vec<_> = stored_tools(body)
        .into_iter()
        .filter(|(id, ..)| id == call_id)
        .collect();
    assert_eq!(parts.len(), 1, "{call_id} stored once: {}", json(body));
    parts[0].2.clone()
}

fn stored_last_text(body: &JsValue) -> String {
    let messages = array(&get(body, "messages"));
    let last = messages.last().cloned().unwrap_or(JsValue::UNDEFINED);
    array(&get(&last, "parts"))
        .iter()
        .filter(|p| string(&get(p, "type")) == "text")
        .map(|p| string(&get(p, "text")))
        .collect::<Vec<_>>()
        .join("\n")
}

// ------------------------------------------------------------------------------------------------
// The recorder: wraps the page's fetch once; logs every `/v1/` request with the text of its answer
// and a sequence number at its start and at the end of its body (as the driver read it); cuts an
// answer's body just before a marker when a rule says so (the rule is used once).

const RECORDER: &str = r#"
const g = globalThis;
if (g.__tg) return;
const real = g.fetch.bind(g);
const tg = { real, seq: 0, log: [], rules: [] };
tg.events = (text) => text.split('\n')
  .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
  .map((l) => { try { return JSON.parse(l.slice(6)); } catch (e) { return null; } })
  .filter((e) => e !== null);
g.__tg = tg;
g.fetch = async function (input, init) {
  const url = typeof input === 'string' ? input : input.url;
  if (!url.includes('/v1/')) return real(input, init);
  const entry = {
    url, method: (init && init.method) || 'GET',
    body: init && typeof init.body === 'string' ? init.body : null,
    start: ++tg.seq, end: null, status: null, text: '', cut: false, error: null,
  };
  tg.log.push(entry);
  const i = tg.rules.findIndex((r) => url.includes(r.url) && entry.method === r.method
    && (entry.body || '').includes(r.body));
  const rule = i >= 0 ? tg.rules.splice(i, 1)[0] : null;
  let res;
  try {
    res = await real(input, init);
  } catch (e) {
    entry.end = ++tg.seq;
    entry.error = String(e);
    throw e;
  }
  entry.status = res.status;
  if (!res.body || [204, 205, 304].includes(res.status)) {
    entry.end = ++tg.seq;
    return res;
  }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  const enc = new TextEncoder();
  let cutNow = false;
  // (The first end counts: `[DONE]`, after which the client lets the request go, or the
  // connection's end, or its failure.)
  const ended = () => { if (entry.end === null) entry.end = ++tg.seq; };
  const fail = (ctrl) => {
    entry.cut = true;
    ended();
    reader.cancel().catch(() => {});
    ctrl.error(new TypeError('network error (the test cut the stream)'));
  };
  const body = new ReadableStream({
    async pull(ctrl) {
      if (cutNow) return fail(ctrl);
      let r;
      try {
        r = await reader.read();
      } catch (e) {
        ended();
        entry.error = String(e);
        ctrl.error(e);
        return;
      }
      if (r.done) {
        ended();
        ctrl.close();
        return;
      }
      const text = dec.decode(r.value, { stream: true });
      const at = rule ? text.indexOf(rule.before) : -1;
      if (at >= 0) {
        const keep = text.slice(0, at);
        entry.text += keep;
        if (!keep) return fail(ctrl);
        cutNow = true;
        ctrl.enqueue(enc.encode(keep));
        return;
      }
      entry.text += text;
      if (entry.text.includes('data: [DONE]')) ended();
      ctrl.enqueue(r.value);
    },
    cancel(reason) {
      ended();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
};
"#;

fn install_recorder() {
    Function::new_no_args(RECORDER)
        .call0(&JsValue::NULL)
        .expect("install the recorder");
}

fn tg() -> JsValue {
    get(&js_sys::global(), "__tg")
}

/// The next request whose URL contains `url`, method is `method` and body contains `body` gets its
/// answer cut just before the first occurrence of `before`.
fn cut_once(url: &str, method: &str, body: &str, before: &str) {
    let rule = Object::new();
    for (k, v) in [
        ("url", url),
        ("method", method),
        ("body", body),
        ("before", before),
    ] {
        Reflect::set(&rule, &k.into(), &s(v)).expect("rule");
    }
    get(&tg(), "rules").unchecked_into::<Array>().push(&rule);
}

#[derive(Debug, Clone)]
struct Req {
    url: String,
    method: String,
    body: Option<String>,
    start: f64,
    end: Option<f64>,
    status: Option<f64>,
    text: String,
    cut: bool,
}

impl Req {
    /// The SSE events of the answer (as far as it arrived).
    fn events(&self) -> Vec<JsValue> {
        let f: Function = get(&tg(), "events").unchecked_into();
        array(&f.call1(&JsValue::NULL, &s(&self.text)).expect("events"))
    }

    fn events_of(&self, ty: &str) -> Vec<JsValue> {
        self.events()
            .into_iter()
            .filter(|e| string(&get(e, "type")) == ty)
            .collect()
    }

    fn body_json(&self) -> JsValue {
        self.body
            .as_deref()
            .and_then(|b| JSON::parse(b).ok())
            .unwrap_or(JsValue::UNDEFINED)
    }

    fn is_chat_post(&self) -> bool {
        self.method == "POST" && self.url.contains("/v1/chat")
    }

    /// A continuation: `(toolCallId, approved)`.
    fn continuation(&self) -> Option<(String, bool)> {
        let approval = get(&self.body_json(), "approval");
        (self.is_chat_post() && !is_nullish(&approval)).then(|| {
            (
                string(&get(&approval, "toolCallId")),
                get(&approval, "approved") == JsValue::TRUE,
            )
        })
    }
}

/// The recorded requests of a thread, in order.
fn requests(thread: &str) -> Vec<Req> {
    array(&get(&tg(), "log"))
        .iter()
        .map(|e| Req {
            url: string(&get(e, "url")),
            method: string(&get(e, "method")),
            body: get(e, "body").as_string(),
            start: get(e, "start").as_f64().unwrap_or(0.0),
            end: get(e, "end").as_f64(),
            status: get(e, "status").as_f64(),
            text: string(&get(e, "text")),
            cut: get(e, "cut") == JsValue::TRUE,
        })
        .filter(|r| {
            r.url.contains(&format!("threadId={thread}"))
                || r.url.ends_with(&format!("/threads/{thread}"))
                || r.body
                    .as_deref()
                    .is_some_and(|b| b.contains(&format!("\"threadId\":\"{thread}\"")))
        })
        .collect()
}

fn continuations(thread: &str) -> Vec<(Req, String, bool)> {
    requests(thread)
        .into_iter()
        .filter_map(|r| r.continuation().map(|(id, ok)| (r, id, ok)))
        .collect()
}

/// Each continuation was sent only after the previous one's answer had ended (one at a time).
fn assert_one_at_a_time(conts: &[(Req, String, bool)]) {
    for pair in conts.windows(2) {
        let end = pair[0].0.end.expect("the previous answer ended");
        assert!(
            pair[1].0.start > end,
            "continuation for {} started ({}) before the one for {} ended ({end})",
            pair[1].1,
            pair[1].0.start,
            pair[0].1
        );
    }
}

/// The `data-tool-call-approval` payloads of the answer.
fn approvals_sent(r: &Req) -> Vec<JsValue> {
    r.events_of("data-tool-call-approval")
        .iter()
        .map(|e| get(e, "data"))
        .collect()
}

/// The card the server's approval chunk describes, in the card's field names.
fn card_from_wire(data: &JsValue) -> String {
    [
        ("callId", get(data, "toolCallId")),
        ("name", get(data, "toolName")),
        ("inputs", get(data, "args")),
        ("approvalReason", get(data, "reason")),
        ("runId", get(data, "runId")),
        ("agentVersionId", get(data, "agentVersionId")),
    ]
    .iter()
    .map(|(k, v)| format!("{k}={}", json(v)))
    .collect::<Vec<_>>()
    .join(" ")
}

// ------------------------------------------------------------------------------------------------
// 1. A streamed plain reply.

#[wasm_bindgen_test]
async fn a_plain_reply_streams_in_delta_by_delta() {
    let thread = fresh_thread("stream");
    let base = slow_endpoint();
    let c = Rc::new(client_at(base, &thread, r#""persist":false"#));
    // What every listener call saw: the phase and the streaming message's text.
    let seen = Rc::new(RefCell::new(Vec::<(String, Option<String>)>::new()));
    let listener = {
        let (c, seen) = (c.clone(), seen.clone());
        Closure::<dyn FnMut()>::new(move || {
            let snapshot = c.get_snapshot().expect("snapshot");
            let streaming = get(&snapshot, "streaming");
            let text = (!is_nullish(&streaming)).then(|| string(&get(&streaming, "text")));
            seen.borrow_mut()
                .push((string(&get(&snapshot, "phase")), text));
        })
    };
    let stop: Function = c
        .subscribe(listener.as_ref().clone())
        .expect("subscribe")
        .unchecked_into();

    let said = "Hello there, how is the weather today?";
    wait(c.send(s(said))).await.expect("send");
    stop.call0(&JsValue::NULL).expect("unsubscribe");

    let expected = format!(
        "You said: \"{said}\". I am a scripted agent: I can read, delete, email, buy tickets and \
         deploy. Try \"delete /tmp/old.log\"."
    );
    let seen = seen.borrow().clone();
    // The phases, in order: sending, streaming, completed.
    let mut phases: Vec<&str> = seen.iter().map(|(p, _)| p.as_str()).collect();
    phases.dedup();
    assert_eq!(phases, ["sending", "streaming", "completed"], "{seen:?}");
    // While streaming, the text grew delta by delta, each a prefix of the final text.
    let mut texts: Vec<&str> = seen
        .iter()
        .filter(|(p, _)| p == "streaming")
        .filter_map(|(_, t)| t.as_deref())
        .filter(|t| !t.is_empty())
        .collect();
    texts.dedup();
    assert!(texts.len() >= 3, "separate deltas: {texts:?}");
    for pair in texts.windows(2) {
        assert!(
            pair[1].len() > pair[0].len() && pair[1].starts_with(pair[0]),
            "{texts:?}"
        );
    }
    for t in &texts {
        assert!(expected.starts_with(t), "{t:?} is not a prefix");
    }

    // The settled result: the reply in `messages`, nothing streaming, the composer open.
    let snapshot = snap(&c);
    assert_eq!(string(&get(&snapshot, "phase")), "completed");
    assert!(is_nullish(&get(&snapshot, "streaming")));
    assert_eq!(get(&snapshot, "canSend"), JsValue::TRUE);
    assert!(is_nullish(&get(&snapshot, "suspension")));
    let all = messages(&c);
    assert_eq!(all.len(), 2, "{}", json(&get(&snapshot, "messages")));
    assert_eq!(string(&get(&all[0], "role")), "user");
    assert_eq!(string(&get(&all[0], "text")), said);
    assert_eq!(string(&get(&all[1], "role")), "assistant");
    assert_eq!(string(&get(&all[1], "text")), expected);

    // What the server sent and stored.
    let reqs = requests(&thread);
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    let deltas = reqs[0].events_of("text-delta");
    assert!(deltas.len() >= 3);
    let sent: String = deltas.iter().map(|d| string(&get(d, "delta"))).collect();
    assert_eq!(sent, expected);
    let (status, body) = stored(base, &thread, None).await;
    assert_eq!(status, 200);
    assert_eq!(stored_last_text(&body), expected);
    assert_eq!(
        string(&path(&all[1], &["raw", "id"])),
        string(&path(&body, &["messages", "1", "id"]))
    );
}

/// What `a_streamed_delta_keeps_the_last_snapshot_s_objects` checks of the snapshots `seen`:
/// `{ bad }` (a line for each fault, `""` for none), `kept` (how many snapshots kept the last one's
/// objects: the same but for `version` and the streaming text) and the streaming tools' `statuses`.
const REUSE_CHECK: &str = r#"
const bad = [];
const frozen = (v) => v === null || typeof v !== 'object' || (Object.isFrozen(v) && Object.values(v).every(frozen));
const keys = JSON.stringify(Object.keys(seen[0]));
const bare = (x) => JSON.stringify({ ...x, version: 0, streaming: x.streaming && { ...x.streaming, text: '' } });
let kept = 0;
const statuses = new Set();
seen.forEach((b, i) => {
  if (!frozen(b)) bad.push(`snapshot ${i} is not frozen`);
  if (JSON.stringify(Object.keys(b)) !== keys) bad.push(`snapshot ${i} keys ${Object.keys(b)}`);
  for (const t of b.streaming?.tools ?? []) statuses.add(t.status);
  const a = seen[i - 1];
  if (!a) return;
  if (!(b.version > a.version)) bad.push(`snapshot ${i}: version ${b.version} after ${a.version}`);
  if (a.streaming && b.streaming && bare(a) === bare(b)) {
    kept++;
    if (!b.streaming.text.startsWith(a.streaming.text))
      bad.push(`snapshot ${i}: text ${JSON.stringify(b.streaming.text)} after ${JSON.stringify(a.streaming.text)}`);
    for (const k of ['messages', 'decisions', 'allowedTools', 'droppedDrafts'])
      if (a[k] !== b[k]) bad.push(`snapshot ${i}: a new ${k}`);
    if (a.streaming.tools !== b.streaming.tools) bad.push(`snapshot ${i}: new streaming tools`);
  }
});
return { bad: bad.join('\n'), kept, statuses: [...statuses].sort().join(',') };
"#;

/// A streamed delta's snapshot keeps the last snapshot's objects (only `version` and the streaming
/// text are new), and anything else that changes while the message streams (here a tool part: its
/// input, then its output) shows at once in a snapshot built anew. Every snapshot is frozen all the
/// way down and lists its fields in the same order.
#[wasm_bindgen_test]
async fn a_streamed_delta_keeps_the_last_snapshot_s_objects() {
    let thread = fresh_thread("reuse");
    let c = Rc::new(client_at(slow_endpoint(), &thread, r#""persist":false"#));
    let seen = Array::new();
    let listener = {
        let (c, seen) = (c.clone(), seen.clone());
        Closure::<dyn FnMut()>::new(move || {
            seen.push(&c.get_snapshot().expect("snapshot"));
        })
    };
    let stop: Function = c
        .subscribe(listener.as_ref().clone())
        .expect("subscribe")
        .unchecked_into();
    // A tool part, then a plain reply of many deltas.
    wait(c.send(s("read /tmp/notes.txt"))).await.expect("send");
    wait(c.send(s("Hello there, how is the weather today?")))
        .await
        .expect("send");
    stop.call0(&JsValue::NULL).expect("unsubscribe");

    // What went wrong, one line each ("" for nothing), and what was seen.
    let check = Function::new_with_args("seen", REUSE_CHECK);
    let report = check.call1(&JsValue::NULL, &seen).expect("check");
    assert_eq!(string(&get(&report, "bad")), "", "{}", json(&seen));
    let kept = get(&report, "kept").as_f64().unwrap_or(0.0);
    assert!(kept >= 3.0, "deltas that kept the objects: {kept}");
    // The tool part changed while the message streamed, and each change showed as it came.
    let statuses = string(&get(&report, "statuses"));
    assert!(
        statuses.split(',').count() >= 2,
        "tool statuses seen while streaming: {statuses}"
    );

    // The settled replies: the tool and the texts, as the server stored them.
    let snapshot = snap(&c);
    assert_eq!(string(&get(&snapshot, "phase")), "completed");
    assert!(is_nullish(&get(&snapshot, "streaming")));
    let all = messages(&c);
    assert_eq!(all.len(), 4, "{}", json(&get(&snapshot, "messages")));
    assert_eq!(array(&get(&all[1], "tools")).len(), 1, "{}", json(&all[1]));
    let (status, body) = stored(slow_endpoint(), &thread, None).await;
    assert_eq!(status, 200);
    assert_eq!(string(&get(&all[3], "text")), stored_last_text(&body));
    assert!(string(&get(&all[3], "text")).starts_with("You said: "));
}

// ------------------------------------------------------------------------------------------------
// 2 and 3. A pause shows the card the server sent; approving runs the tool.

#[wasm_bindgen_test]
async fn a_pause_shows_the_card_the_server_sent_and_approve_runs_the_tool() {
    let thread = fresh_thread("pause");
    let c = client(&thread, r#""persist":false"#);
    wait(c.load()).await.expect("load");
    assert_eq!(phase(&c), "idle");
    wait(c.send(s("delete /tmp/card.log"))).await.expect("send");

    let snapshot = snap(&c);
    assert_eq!(string(&get(&snapshot, "phase")), "awaiting_approval");
    assert_eq!(get(&snapshot, "canSend"), JsValue::FALSE);
    assert_eq!(get(&snapshot, "canSubmit"), JsValue::FALSE);
    let post = requests(&thread)
        .into_iter()
        .find(Req::is_chat_post)
        .expect("the POST");
    let sent = approvals_sent(&post);
    assert_eq!(sent.len(), 1, "{}", post.text);
    let shown = cards(&c);
    assert_eq!(shown.len(), 1);
    assert_eq!(card_fields(&shown[0]), card_from_wire(&sent[0]));
    // The values themselves, not just their agreement.
    let card = &shown[0];
    let call_id = string(&get(card, "callId"));
    assert!(call_id.starts_with("call_"), "{call_id}");
    assert_eq!(string(&get(card, "name")), "delete_file");
    assert_eq!(json(&get(card, "inputs")), r#"{"path":"/tmp/card.log"}"#);
    assert_eq!(
        string(&get(card, "approvalReason")),
        "Delete the file /tmp/card.log; this cannot be undone"
    );
    assert_eq!(string(&get(card, "agentVersionId")), "agv_ref_1");
    let run_id = string(&get(card, "runId"));
    assert!(run_id.starts_with("run_"), "{run_id}");
    assert_eq!(string(&path(&snapshot, &["suspension", "runId"])), run_id);
    assert_eq!(
        string(&path(&snapshot, &["suspension", "agentVersionId"])),
        "agv_ref_1"
    );
    assert_eq!(string(&get(card, "approval")), "pending");
    // The streamed message carries the call, pending; the server stored it awaiting approval.
    let tool = tool_view(&c, &call_id);
    assert_eq!(string(&get(&tool, "status")), "pending", "{}", json(&tool));
    let (_, body) = stored(endpoint(), &thread, None).await;
    assert_eq!(stored_state(&body, &call_id), "approval-requested");

    // Approve: a local draft until submit.
    c.approve(s(&call_id)).expect("approve");
    let snapshot = snap(&c);
    assert_eq!(
        string(&path(&snapshot, &["decisions", &call_id])),
        "approve"
    );
    assert_eq!(get(&snapshot, "canSubmit"), JsValue::TRUE);
    assert_eq!(continuations(&thread).len(), 0);
    wait(c.submit()).await.expect("submit");

    let snapshot = snap(&c);
    assert_eq!(
        string(&get(&snapshot, "phase")),
        "completed",
        "{}",
        json(&snapshot)
    );
    assert!(is_nullish(&get(&snapshot, "suspension")));
    assert_eq!(get(&snapshot, "canSend"), JsValue::TRUE);
    assert_eq!(last_text(&c), "delete_file /tmp/card.log: done.");
    let tool = tool_view(&c, &call_id);
    assert_eq!(string(&get(&tool, "status")), "done", "{}", json(&tool));
    assert_eq!(string(&get(&tool, "result")), "Deleted /tmp/card.log");
    // The exact continuation (compared as JSON: member order is not significant), once.
    let conts = continuations(&thread);
    assert_eq!(conts.len(), 1);
    let expected = JSON::parse(&format!(
        r#"{{"messages":[],"threadId":"{thread}","agentVersionId":"agv_ref_1","approval":{{"runId":"{run_id}","toolCallId":"{call_id}","approved":true}}}}"#
    ))
    .expect("JSON");
    assert_eq!(json(&conts[0].0.body_json()), json(&expected));
    let (_, body) = stored(endpoint(), &thread, None).await;
    assert_eq!(stored_state(&body, &call_id), "output-available");
    assert_eq!(stored_last_text(&body), "delete_file /tmp/card.log: done.");
}

// ------------------------------------------------------------------------------------------------
// 4. Decline with a reason.

#[wasm_bindgen_test]
async fn decline_with_a_reason_is_stored_denied_and_the_reason_kept() {
    let thread = fresh_thread("decline");
    let c = client(&thread, r#""persist":false"#);
    wait(c.send(s("email a@b.c about x"))).await.expect("send");
    assert_eq!(phase(&c), "awaiting_approval");
    let email = call_id_of(&c, "send_email");
    assert_eq!(
        string(&get(&cards(&c)[0], "approvalReason")),
        "Send an email to a@b.c about \"x\""
    );

    c.reject(s(&email), s("Not to them")).expect("reject");
    let snapshot = snap(&c);
    assert_eq!(
        json(&path(&snapshot, &["decisions", &email])),
        r#"["reject","Not to them"]"#
    );
    let decided = path(&snapshot, &["suspension", "decided", "0"]);
    assert_eq!(string(&get(&decided, "approval")), "rejected");
    assert_eq!(string(&get(&decided, "rejectReason")), "Not to them");
    wait(c.submit()).await.expect("submit");

    assert_eq!(phase(&c), "completed", "{}", json(&snap(&c)));
    assert_eq!(
        last_text(&c),
        "send_email to a@b.c: not approved by the user."
    );
    // The snapshot keeps the reason (the protocol does not carry it) and shows the call denied.
    let tool = tool_view(&c, &email);
    assert_eq!(string(&get(&tool, "status")), "denied", "{}", json(&tool));
    assert_eq!(string(&get(&tool, "approval")), "rejected");
    assert_eq!(string(&get(&tool, "rejectReason")), "Not to them");
    // On the wire: approved false, no reason.
    let conts = continuations(&thread);
    assert_eq!(conts.len(), 1);
    assert_eq!((conts[0].1.as_str(), conts[0].2), (email.as_str(), false));
    assert!(!conts[0]
        .0
        .body
        .as_deref()
        .unwrap_or_default()
        .contains("Not to them"));
    assert_eq!(conts[0].0.events_of("tool-output-denied").len(), 1);
    // Stored: denied, once; the final reply says so.
    let (_, body) = stored(endpoint(), &thread, None).await;
    assert_eq!(stored_state(&body, &email), "output-denied");
    assert_eq!(
        stored_last_text(&body),
        "send_email to a@b.c: not approved by the user."
    );

    // A reload (a fresh client) still shows the call denied; the reason lived in the first client.
    let r = client(&thread, r#""persist":false"#);
    wait(r.load()).await.expect("load");
    assert_eq!(phase(&r), "idle");
    assert_eq!(get(&snap(&r), "canSend"), JsValue::TRUE);
    let tool = tool_view(&r, &email);
    assert_eq!(string(&get(&tool, "status")), "denied");
    assert_eq!(string(&get(&tool, "approval")), "rejected");
}

// ------------------------------------------------------------------------------------------------
// 5. Two gated calls in one run.

#[wasm_bindgen_test]
async fn two_gated_calls_are_answered_one_continuation_at_a_time() {
    let thread = fresh_thread("two");
    let c = client(&thread, r#""persist":false"#);
    wait(c.send(s("delete /tmp/a and email a@b.c about x")))
        .await
        .expect("send");
    assert_eq!(phase(&c), "awaiting_approval");
    let post = requests(&thread)
        .into_iter()
        .find(Req::is_chat_post)
        .expect("the POST");
    let sent = approvals_sent(&post);
    let shown = cards(&c);
    assert_eq!(shown.len(), 2);
    assert_eq!(sent.len(), 2);
    for (card, wire) in shown.iter().zip(&sent) {
        assert_eq!(card_fields(card), card_from_wire(wire));
    }
    assert_eq!(string(&get(&shown[0], "name")), "delete_file");
    assert_eq!(string(&get(&shown[1], "name")), "send_email");
    assert_eq!(
        string(&get(&shown[0], "runId")),
        string(&get(&shown[1], "runId"))
    );
    let delete = call_id_of(&c, "delete_file");
    let email = call_id_of(&c, "send_email");

    // Decide both (email first: the order of deciding does not matter), submit once.
    c.reject(s(&email), s("no mail")).expect("reject");
    c.approve(s(&delete)).expect("approve");
    assert_eq!(path(&snap(&c), &["suspension", "complete"]), JsValue::TRUE);
    wait(c.submit()).await.expect("submit");
    assert_eq!(phase(&c), "completed", "{}", json(&snap(&c)));
    assert_eq!(
        last_text(&c),
        "delete_file /tmp/a: done. send_email to a@b.c: not approved by the user."
    );

    // Two continuations, in card order, the second sent after the first's stream ended; the first
    // answer re-announced the second card, the second finished the run.
    let conts = continuations(&thread);
    let sent: Vec<(&str, bool)> = conts.iter().map(|(_, id, ok)| (id.as_str(), *ok)).collect();
    assert_eq!(sent, [(delete.as_str(), true), (email.as_str(), false)]);
    assert_one_at_a_time(&conts);
    let again = approvals_sent(&conts[0].0);
    assert_eq!(again.len(), 1);
    assert_eq!(string(&get(&again[0], "toolCallId")), email);
    assert_eq!(conts[1].0.events_of("finish").len(), 1);
    assert_eq!(
        string(&path(&snap(&c), &["lastSubmission", "status"])),
        "completed"
    );

    // Stored: each decided once, as decided.
    let (_, body) = stored(endpoint(), &thread, None).await;
    assert_eq!(stored_state(&body, &delete), "output-available");
    assert_eq!(stored_state(&body, &email), "output-denied");
    assert_eq!(stored_tools(&body).len(), 2);
    assert_eq!(string(&get(&tool_view(&c, &delete), "status")), "done");
    assert_eq!(string(&get(&tool_view(&c, &email), "status")), "denied");
}

// ------------------------------------------------------------------------------------------------
// 6. Reconnect and replay.

#[wasm_bindgen_test]
async fn a_reload_replays_the_same_cards() {
    let thread = fresh_thread("reload");
    let a = client(&thread, r#""persist":false"#);
    wait(a.send(s("delete /tmp/r1 and email r@b.c about y")))
        .await
        .expect("send");
    assert_eq!(phase(&a), "awaiting_approval");
    let before: Vec<String> = cards(&a).iter().map(card_fields).collect();
    assert_eq!(before.len(), 2);

    // A second client for the same thread (a reload): history, then the replay.
    let b = client(&thread, r#""persist":false"#);
    let n = requests(&thread).len();
    wait(b.load()).await.expect("load");
    assert_eq!(phase(&b), "awaiting_approval");
    let after: Vec<String> = cards(&b).iter().map(card_fields).collect();
    assert_eq!(after, before);
    let load: Vec<Req> = requests(&thread).into_iter().skip(n).collect();
    assert_eq!(load.len(), 2, "{load:?}");
    assert!(load[0].url.ends_with(&format!("/v1/threads/{thread}")));
    assert!(load[1].url.contains("/v1/chat/stream?threadId="));
    assert_eq!(approvals_sent(&load[1]).len(), 2);
    // The history shows the pause too: the same message, its calls awaiting approval.
    let tail = messages(&b).last().cloned().expect("a message");
    assert_eq!(
        string(&get(&tail, "id")),
        string(&path(&snap(&b), &["suspension", "messageId"]))
    );

    // The reloaded client answers; the first one learns the outcome on its next load.
    b.approve(s(&call_id_of(&b, "delete_file")))
        .expect("approve");
    b.approve(s(&call_id_of(&b, "send_email")))
        .expect("approve");
    wait(b.submit()).await.expect("submit");
    assert_eq!(phase(&b), "completed");
    assert_eq!(
        last_text(&b),
        "delete_file /tmp/r1: done. send_email to r@b.c: done."
    );
    wait(a.load()).await.expect("load");
    assert_eq!(phase(&a), "completed", "{}", json(&snap(&a)));
    assert_eq!(last_text(&a), last_text(&b));
}

#[wasm_bindgen_test]
async fn a_stream_dropped_mid_pause_reconnects_and_replays_the_cards() {
    let thread = fresh_thread("drop");
    let c = client(&thread, r#""persist":false"#);
    // The answer to the message is cut before its approval chunks: the server has paused the run,
    // the client saw the calls start but no card.
    cut_once("/v1/chat", "POST", &thread, "data-tool-call-approval");
    wait(c.send(s("delete /tmp/d1 and email d@b.c about z")))
        .await
        .expect("the send goes on after the drop");
    let snapshot = snap(&c);
    assert_eq!(
        string(&get(&snapshot, "phase")),
        "awaiting_approval",
        "{}",
        json(&snapshot)
    );
    let reqs = requests(&thread);
    let methods: Vec<(&str, bool)> = reqs.iter().map(|r| (r.method.as_str(), r.cut)).collect();
    assert_eq!(
        methods,
        [("POST", true), ("GET", false), ("GET", false)],
        "the message once, then history and replay: {reqs:?}"
    );
    assert!(approvals_sent(&reqs[0]).is_empty());
    assert!(reqs[0].text.contains("tool-input-available"));
    // The replayed cards are the calls the server has awaiting approval.
    let replayed = approvals_sent(&reqs[2]);
    assert_eq!(replayed.len(), 2);
    let shown = cards(&c);
    assert_eq!(shown.len(), 2);
    for (card, wire) in shown.iter().zip(&replayed) {
        assert_eq!(card_fields(card), card_from_wire(wire));
    }
    let (_, body) = stored(endpoint(), &thread, None).await;
    let waiting: Vec<String> = stored_tools(&body)
        .into_iter()
        .filter(|(.., state, _)| state == "approval-requested")
        .map(|(id, ..)| id)
        .collect();
    let ids: Vec<String> = shown.iter().map(|c| string(&get(c, "callId"))).collect();
    assert_eq!(waiting, ids);
    assert_eq!(get(&snapshot, "canSend"), JsValue::FALSE);

    // The first continuation's answer is cut too, before the tool's output: the server accepted
    // it, so it is never sent again; the client reconnects and goes on with the second.
    let delete = call_id_of(&c, "delete_file");
    let email = call_id_of(&c, "send_email");
    c.approve(s(&delete)).expect("approve");
    c.approve(s(&email)).expect("approve");
    cut_once("/v1/chat", "POST", &delete, "tool-output-available");
    let n = requests(&thread).len();
    wait(c.submit())
        .await
        .expect("the submission goes on after the drop");
    assert_eq!(phase(&c), "completed", "{}", json(&snap(&c)));
    assert_eq!(
        last_text(&c),
        "delete_file /tmp/d1: done. send_email to d@b.c: done."
    );
    let reqs: Vec<Req> = requests(&thread).into_iter().skip(n).collect();
    let seq: Vec<(&str, bool)> = reqs.iter().map(|r| (r.method.as_str(), r.cut)).collect();
    assert_eq!(
        seq,
        [
            ("POST", true),
            ("GET", false),
            ("GET", false),
            ("POST", false)
        ],
        "{reqs:?}"
    );
    let conts = continuations(&thread);
    let sent: Vec<(&str, bool)> = conts.iter().map(|(_, id, ok)| (id.as_str(), *ok)).collect();
    assert_eq!(sent, [(delete.as_str(), true), (email.as_str(), true)]);
    assert_one_at_a_time(&conts);
    let (_, body) = stored(endpoint(), &thread, None).await;
    assert_eq!(stored_state(&body, &delete), "output-available");
    assert_eq!(stored_state(&body, &email), "output-available");
}

#[wasm_bindgen_test]
async fn abort_mid_stream_then_load_brings_the_card_back() {
    let thread = fresh_thread("abort");
    let base = slow_endpoint();
    let c = Rc::new(client_at(base, &thread, r#""persist":false"#));
    // Abort from a listener as soon as the answer starts streaming (the server has applied the
    // message by then; no card has arrived yet).
    let aborted = Rc::new(Cell::new(false));
    let listener = {
        let (c, aborted) = (c.clone(), aborted.clone());
        Closure::<dyn FnMut()>::new(move || {
            let snapshot = c.get_snapshot().expect("snapshot");
            if !aborted.get() && string(&get(&snapshot, "phase")) == "streaming" {
                assert!(is_nullish(&get(&snapshot, "suspension")));
                aborted.set(true);
                c.abort();
            }
        })
    };
    let stop: Function = c
        .subscribe(listener.as_ref().clone())
        .expect("subscribe")
        .unchecked_into();
    let e = wait(c.send(s("delete /tmp/abort.log")))
        .await
        .expect_err("aborted");
    stop.call0(&JsValue::NULL).expect("unsubscribe");
    assert!(aborted.get());
    assert_eq!(code(&e), "aborted");
    assert!(is_toolgate_error(&e));
    assert!(!matches!(phase(&c).as_str(), "streaming" | "sending"));
    assert_eq!(get(&snap(&c), "busy"), JsValue::FALSE);

    wait(c.load()).await.expect("load");
    assert_eq!(phase(&c), "awaiting_approval", "{}", json(&snap(&c)));
    let shown = cards(&c);
    assert_eq!(shown.len(), 1);
    let replay = requests(&thread)
        .into_iter()
        .rfind(|r| r.url.contains("/v1/chat/stream"))
        .expect("a replay");
    assert_eq!(
        card_fields(&shown[0]),
        card_from_wire(&approvals_sent(&replay)[0])
    );
    let id = call_id_of(&c, "delete_file");
    c.approve(s(&id)).expect("approve");
    wait(c.submit()).await.expect("submit");
    assert_eq!(phase(&c), "completed");
    let (_, body) = stored(base, &thread, None).await;
    assert_eq!(stored_state(&body, &id), "output-available");
    assert_eq!(
        requests(&thread)
            .iter()
            .filter(|r| r.is_chat_post() && r.continuation().is_none())
            .count(),
        1,
        "the message was sent once"
    );
}

// ------------------------------------------------------------------------------------------------
// 7. The grace window expiring.

#[wasm_bindgen_test]
async fn the_grace_window_expiring() {
    // Three paused threads, one wait: (a) the client stays (the pause known in memory); (b) freed
    // with a draft persisted (a reload knows the pause from storage); (c) freed, nothing persisted.
    // (d) stays with a draft and submits after the window.
    let (ta, tb, tc, td) = (
        fresh_thread("grace_a"),
        fresh_thread("grace_b"),
        fresh_thread("grace_c"),
        fresh_thread("grace_d"),
    );
    let a = client(&ta, r#""persist":false"#);
    wait(a.send(s("delete /tmp/ga.log"))).await.expect("send a");
    let b = client(&tb, "");
    wait(b.send(s("delete /tmp/gb.log and email g@b.c about z")))
        .await
        .expect("send b");
    let b_delete = call_id_of(&b, "delete_file");
    b.approve(s(&b_delete)).expect("approve b");
    let key = format!("toolgate:drafts:sidenet:{}:{tb}", endpoint());
    let storage = web_sys::window()
        .and_then(|w| w.local_storage().ok().flatten())
        .expect("localStorage");
    assert!(
        storage.get_item(&key).ok().flatten().is_some(),
        "the draft is persisted"
    );
    drop(b);
    let c = client(&tc, r#""persist":false"#);
    wait(c.send(s("delete /tmp/gc.log"))).await.expect("send c");
    let c_delete = call_id_of(&c, "delete_file");
    drop(c);
    let d = client(&td, r#""persist":false"#);
    wait(d.send(s("delete /tmp/gd.log"))).await.expect("send d");
    let d_delete = call_id_of(&d, "delete_file");
    d.approve(s(&d_delete)).expect("approve d");
    for x in [&a, &d] {
        assert_eq!(phase(x), "awaiting_approval");
    }

    sleep(grace_ms() + 700).await;

    // (a) The same client reloads: the pause it knew is gone: expired, composer unlocked.
    wait(a.load()).await.expect("load a");
    let snapshot = snap(&a);
    assert_eq!(
        string(&get(&snapshot, "phase")),
        "expired",
        "{}",
        json(&snapshot)
    );
    assert_eq!(string(&path(&snapshot, &["error", "code"])), "expired");
    assert_eq!(get(&snapshot, "canSend"), JsValue::TRUE);
    assert!(is_nullish(&get(&snapshot, "suspension")));
    let a_delete = messages(&a)
        .iter()
        .flat_map(|m| array(&get(m, "tools")))
        .find(|t| string(&get(t, "name")) == "delete_file")
        .expect("the abandoned call");
    assert_eq!(string(&get(&a_delete, "status")), "error");
    wait(a.send(s("read /tmp/after.txt")))
        .await
        .expect("a new message");
    assert_eq!(phase(&a), "completed");
    assert_eq!(last_text(&a), "read_file /tmp/after.txt: done.");
    assert!(is_nullish(&get(&snap(&a), "error")));

    // (b) A reload with the persisted draft: expired; the stale draft is gone from storage.
    let b = client(&tb, "");
    wait(b.load()).await.expect("load b");
    let snapshot = snap(&b);
    assert_eq!(
        string(&get(&snapshot, "phase")),
        "expired",
        "{}",
        json(&snapshot)
    );
    assert_eq!(get(&snapshot, "canSend"), JsValue::TRUE);
    assert_eq!(get(&snapshot, "canSubmit"), JsValue::FALSE);
    assert_eq!(
        Object::keys(get(&snapshot, "decisions").unchecked_ref::<Object>()).length(),
        0
    );
    assert!(storage.get_item(&key).ok().flatten().is_none(), "{key}");
    let (_, body) = stored(endpoint(), &tb, None).await;
    assert_eq!(stored_state(&body, &b_delete), "output-error");
    wait(b.send(s("hello again"))).await.expect("a new message");
    assert_eq!(phase(&b), "completed");
    assert!(last_text(&b).starts_with("You said: \"hello again\"."));

    // (c) A reload that knew of no pause: idle (nothing to expire), composer unlocked, the
    // abandoned call shown as an error.
    let c = client(&tc, r#""persist":false"#);
    wait(c.load()).await.expect("load c");
    let snapshot = snap(&c);
    assert_eq!(
        string(&get(&snapshot, "phase")),
        "idle",
        "{}",
        json(&snapshot)
    );
    assert_eq!(get(&snapshot, "canSend"), JsValue::TRUE);
    assert!(is_nullish(&get(&snapshot, "suspension")));
    assert_eq!(string(&get(&tool_view(&c, &c_delete), "status")), "error");
    let (_, body) = stored(endpoint(), &tc, None).await;
    assert_eq!(stored_state(&body, &c_delete), "output-error");
    wait(c.send(s("delete /tmp/gc2.log")))
        .await
        .expect("a new message");
    assert_eq!(phase(&c), "awaiting_approval");
    c.reject(s(&call_id_of(&c, "delete_file")), JsValue::UNDEFINED)
        .expect("reject");
    wait(c.submit()).await.expect("submit");
    assert_eq!(phase(&c), "completed");

    // (d) A decision submitted after the window: refused, reported as expired, composer unlocked.
    let e = wait(d.submit()).await.expect_err("too late");
    assert_eq!(code(&e), "expired", "{}", json(&snap(&d)));
    let snapshot = snap(&d);
    assert_eq!(
        string(&get(&snapshot, "phase")),
        "expired",
        "{}",
        json(&snapshot)
    );
    assert_eq!(get(&snapshot, "canSend"), JsValue::TRUE);
    let (_, body) = stored(endpoint(), &td, None).await;
    assert_eq!(stored_state(&body, &d_delete), "output-error");
    wait(d.send(s("read /tmp/d.txt")))
        .await
        .expect("a new message");
    assert_eq!(phase(&d), "completed");
}

// ------------------------------------------------------------------------------------------------
// 8. A wrong token.

#[wasm_bindgen_test]
async fn a_wrong_token_is_unauthorized_the_right_one_works() {
    let Some(base) = TOKEN_ENDPOINT else {
        return;
    };
    let thread = fresh_thread("token");
    for headers in [
        r#""headers":{"Authorization":"Bearer wrong"}"#,
        r#""headers":{}"#,
    ] {
        let c = client_at(base, &thread, &format!(r#""persist":false,{headers}"#));
        let e = wait(c.load()).await.expect_err("unauthorized");
        assert_eq!(code(&e), "unauthorized");
        assert!(is_toolgate_error(&e));
        let snapshot = snap(&c);
        assert_eq!(string(&get(&snapshot, "phase")), "error");
        assert_eq!(string(&path(&snapshot, &["error", "code"])), "unauthorized");
        assert_eq!(get(&snapshot, "busy"), JsValue::FALSE);
        let e = wait(c.send(s("delete /tmp/tok.log")))
            .await
            .expect_err("unauthorized");
        assert_eq!(code(&e), "unauthorized");
        assert_eq!(string(&path(&snap(&c), &["error", "code"])), "unauthorized");
    }
    // Nothing reached the thread.
    let (status, _) = stored(base, &thread, None).await;
    assert_eq!(status, 401);
    let auth = format!("Bearer {TOKEN}");
    let (status, body) = stored(base, &thread, Some(&auth)).await;
    assert_eq!(status, 200);
    assert_eq!(array(&get(&body, "messages")).len(), 0);

    let c = client_at(
        base,
        &thread,
        &format!(r#""persist":false,"headers":{{"Authorization":"{auth}"}}"#),
    );
    wait(c.load()).await.expect("load");
    assert_eq!(phase(&c), "idle");
    wait(c.send(s("delete /tmp/tok.log"))).await.expect("send");
    assert_eq!(phase(&c), "awaiting_approval");
    let id = call_id_of(&c, "delete_file");
    c.approve(s(&id)).expect("approve");
    wait(c.submit()).await.expect("submit");
    assert_eq!(phase(&c), "completed");
    assert_eq!(last_text(&c), "delete_file /tmp/tok.log: done.");
    let (_, body) = stored(base, &thread, Some(&auth)).await;
    assert_eq!(stored_state(&body, &id), "output-available");
}

// ------------------------------------------------------------------------------------------------
// The AI SDK approval form.

#[wasm_bindgen_test]
async fn the_ai_sdk_approval_form_gives_the_same_cards_and_completes() {
    let thread = fresh_thread("aisdk");
    let extra = r#""persist":false,"routes":{"chat":"/v1/chat?approvalForm=ai-sdk"}"#;
    let c = client(&thread, extra);
    wait(c.send(s("delete /tmp/ai.log and email ai@b.c about q")))
        .await
        .expect("send");
    assert_eq!(phase(&c), "awaiting_approval", "{}", json(&snap(&c)));
    let post = requests(&thread)
        .into_iter()
        .find(Req::is_chat_post)
        .expect("the POST");
    assert!(
        post.url.ends_with("/v1/chat?approvalForm=ai-sdk"),
        "{}",
        post.url
    );
    assert!(approvals_sent(&post).is_empty());
    let requests_sent = post.events_of("tool-approval-request");
    assert_eq!(requests_sent.len(), 2);
    let run = post.events_of("data-run");
    assert_eq!(run.len(), 1);
    let run_id = string(&path(&run[0], &["data", "runId"]));
    let inputs: HashMap<String, JsValue> = post
        .events_of("tool-input-available")
        .iter()
        .map(|e| (string(&get(e, "toolCallId")), e.clone()))
        .collect();

    let shown = cards(&c);
    assert_eq!(shown.len(), 2);
    for (card, request) in shown.iter().zip(&requests_sent) {
        let id = string(&get(request, "toolCallId"));
        assert_eq!(string(&get(card, "callId")), id);
        let input = &inputs[&id];
        assert_eq!(string(&get(card, "name")), string(&get(input, "toolName")));
        assert_eq!(json(&get(card, "inputs")), json(&get(input, "input")));
        assert_eq!(string(&get(card, "runId")), run_id);
        assert_eq!(string(&get(card, "agentVersionId")), "agv_ref_1");
    }
    assert_eq!(string(&get(&shown[0], "name")), "delete_file");
    assert_eq!(json(&get(&shown[0], "inputs")), r#"{"path":"/tmp/ai.log"}"#);
    assert_eq!(string(&get(&shown[1], "name")), "send_email");
    assert_eq!(
        json(&get(&shown[1], "inputs")),
        r#"{"subject":"q","to":"ai@b.c"}"#
    );

    // A reload replays the same cards (the replay keeps the form the run paused in).
    let r = client(&thread, extra);
    wait(r.load()).await.expect("load");
    let again: Vec<String> = cards(&r)
        .iter()
        .map(|c| {
            ["callId", "name", "inputs", "runId", "agentVersionId"]
                .iter()
                .map(|k| json(&get(c, k)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let first: Vec<String> = shown
        .iter()
        .map(|c| {
            ["callId", "name", "inputs", "runId", "agentVersionId"]
                .iter()
                .map(|k| json(&get(c, k)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(again, first);
    drop(r);

    let delete = call_id_of(&c, "delete_file");
    let email = call_id_of(&c, "send_email");
    c.approve(s(&delete)).expect("approve");
    c.reject(s(&email), s("no")).expect("reject");
    wait(c.submit()).await.expect("submit");
    assert_eq!(phase(&c), "completed", "{}", json(&snap(&c)));
    assert_eq!(
        last_text(&c),
        "delete_file /tmp/ai.log: done. send_email to ai@b.c: not approved by the user."
    );
    let conts = continuations(&thread);
    assert_eq!(conts.len(), 2);
    assert!(conts
        .iter()
        .all(|(r, ..)| r.url.ends_with("?approvalForm=ai-sdk")));
    assert_one_at_a_time(&conts);
    let (_, body) = stored(endpoint(), &thread, None).await;
    assert_eq!(stored_state(&body, &delete), "output-available");
    assert_eq!(stored_state(&body, &email), "output-denied");
}

// ------------------------------------------------------------------------------------------------
// Real network faults: connections dropped (streams cut mid-way), 500s, delays. Every decision is
// applied exactly once, as decided.

fn faulty_client(thread: &str) -> ApprovalClient {
    client_at(
        FAULTY_ENDPOINT.unwrap_or_else(endpoint),
        thread,
        r#""persist":false,"timeoutMs":5000,"retry":{"attempts":8,"backoffMs":10,"maxBackoffMs":100}"#,
    )
}

async fn load_until_ok(c: &ApprovalClient) {
    for _ in 0..30 {
        if wait(c.load()).await.is_ok() {
            return;
        }
        sleep(20).await;
    }
    panic!("could not load the thread: {}", json(&snap(c)));
}

fn fault_turn(turn: usize) -> String {
    match turn % 4 {
        0 => format!("delete /tmp/f{turn}.log"),
        1 => format!("delete /tmp/f{turn}.log and email f{turn}@b.c about R{turn}"),
        2 => format!("hello {turn}"),
        _ => format!("email o{turn}@b.c about S{turn} and deploy svc{turn}"),
    }
}

#[wasm_bindgen_test]
async fn faults_apply_every_decision_exactly_once() {
    let thread = fresh_thread("faulty");
    let c = faulty_client(&thread);
    let mut expected: HashMap<String, bool> = HashMap::new();
    let turns = 12;
    for turn in 0..turns {
        let text = fault_turn(turn);
        let mut sent = false;
        for _ in 0..20 {
            if wait(c.send(s(&text))).await.is_ok() {
                sent = true;
                break;
            }
            load_until_ok(&c).await;
            let users: Vec<String> = messages(&c)
                .iter()
                .filter(|m| string(&get(m, "role")) == "user")
                .map(|m| string(&get(m, "text")))
                .collect();
            if users.last() == Some(&text) {
                sent = true;
                break;
            }
        }
        assert!(sent, "turn {turn}: could not send");
        let mut done = false;
        for _ in 0..40 {
            load_until_ok(&c).await;
            if phase(&c) != "awaiting_approval" {
                done = true;
                break;
            }
            for (id, name) in pending(&c) {
                let approve = name != "send_email";
                if approve {
                    c.approve(s(&id)).expect("approve");
                } else {
                    c.reject(s(&id), s("no email")).expect("reject");
                }
                if let Some(previous) = expected.insert(id.clone(), approve) {
                    assert_eq!(previous, approve, "decided {id} differently");
                }
            }
            let _ = wait(c.submit()).await;
        }
        assert!(
            done,
            "turn {turn}: the run never completed: {}",
            json(&snap(&c))
        );
    }
    let stream_drops = requests(&thread)
        .iter()
        .filter(|r| r.is_chat_post() && r.status == Some(200.0) && !r.text.contains("[DONE]"))
        .count();
    web_sys::console::log_1(&s(&format!(
        "{} gated calls, {stream_drops} chat stream(s) cut mid-way",
        expected.len()
    )));
    assert!(expected.len() >= 8, "{} gated calls", expected.len());

    // The server's record: every gated call decided as decided, once.
    let mut body = JsValue::UNDEFINED;
    for _ in 0..50 {
        let (status, b) = stored(FAULTY_ENDPOINT.unwrap_or_else(endpoint), &thread, None).await;
        if status == 200 {
            body = b;
            break;
        }
        sleep(20).await;
    }
    assert!(!is_nullish(&body), "the stored thread");
    for (id, approved) in &expected {
        let state = stored_state(&body, id);
        assert_eq!(
            state,
            if *approved {
                "output-available"
            } else {
                "output-denied"
            },
            "{id}"
        );
    }
    let mut seen = HashMap::new();
    for (id, ..) in stored_tools(&body) {
        *seen.entry(id).or_insert(0) += 1;
    }
    assert!(seen.values().all(|n| *n == 1), "{seen:?}");
    let users: Vec<String> = array(&get(&body, "messages"))
        .iter()
        .filter(|m| string(&get(m, "role")) == "user")
        .map(|m| string(&path(m, &["parts", "0", "text"])))
        .collect();
    let mut deduped = users.clone();
    deduped.dedup();
    assert_eq!(deduped, (0..turns).map(fault_turn).collect::<Vec<_>>());
    assert_eq!(phase(&c), "completed");
}

// ------------------------------------------------------------------------------------------------
// 9. A custom fetch.

/// The `fetch` option performs every request: here it adds the bearer token (as a token refreshed
/// per request would be) to a client configured with none, and logs each call, in both dialects
/// (Sidenet's streamed answers come through the `Response` it returns). It gets the headers as a
/// `Headers` and the client's abort signal. A non-function is `invalid_argument` at `fetch`; what
/// it rejects with is a `network` failure carrying its message.
#[wasm_bindgen_test]
async fn a_custom_fetch_performs_every_request() {
    let Some(base) = TOKEN_ENDPOINT else {
        return;
    };
    let options = |dialect: &str, extra: &str| {
        JSON::parse(&format!(
            r#"{{"baseUrl":"{base}","threadId":"{}","dialect":"{dialect}","persist":false{extra}}}"#,
            fresh_thread("fetch")
        ))
        .expect("options JSON")
    };
    let log = || Reflect::get(&js_sys::global(), &"__fetched".into()).expect("log");
    let custom = Function::new_with_args(
        "url, init",
        &format!(
            "globalThis.__fetched.push([init.method, init.headers instanceof Headers, \
             init.signal instanceof AbortSignal]); \
             init.headers.set('Authorization', 'Bearer {TOKEN}'); \
             return fetch(url, init);"
        ),
    );
    for dialect in ["neuron", "sidenet"] {
        Reflect::set(&js_sys::global(), &"__fetched".into(), &Array::new()).expect("log");
        let o = options(dialect, "");
        Reflect::set(&o, &"fetch".into(), &custom).expect("fetch");
        let c = ApprovalClient::new(o).expect("client");
        wait(c.load()).await.expect("load");
        wait(c.send(s("delete /tmp/fetch.log")))
            .await
            .expect("send");
        assert_eq!(phase(&c), "awaiting_approval", "{dialect}");
        c.approve(s(&call_id_of(&c, "delete_file")))
            .expect("approve");
        wait(c.submit()).await.expect("submit");
        assert_eq!(phase(&c), "completed", "{dialect}");
        let calls = array(&log());
        assert!(calls.len() >= 3, "{dialect}: {} requests", calls.len());
        let methods: Vec<String> = calls.iter().map(|c| string(&get(c, "0"))).collect();
        assert!(methods.contains(&"GET".to_owned()), "{methods:?}");
        assert!(methods.contains(&"POST".to_owned()), "{methods:?}");
        for call in &calls {
            assert_eq!(get(call, "1"), JsValue::TRUE, "headers as a Headers");
            assert_eq!(get(call, "2"), JsValue::TRUE, "the abort signal");
        }
    }

    // A request cancelled in the step that issued it never reaches fetch: with every tool
    // allowed, the quiet reload after the paused reply is replaced by the submission at once.
    Reflect::set(&js_sys::global(), &"__fetched".into(), &Array::new()).expect("log");
    let o = options("neuron", "");
    Reflect::set(&o, &"fetch".into(), &custom).expect("fetch");
    let c = ApprovalClient::new(o).expect("client");
    c.allow_tool(s("delete_file")).expect("allow");
    wait(c.send(s("delete /tmp/fetch2.log")))
        .await
        .expect("send");
    for _ in 0..200 {
        if phase(&c) == "completed" {
            break;
        }
        sleep(10).await;
    }
    assert_eq!(phase(&c), "completed");
    let methods: Vec<String> = array(&log()).iter().map(|c| string(&get(c, "0"))).collect();
    assert_eq!(
        methods.get(..2),
        Some(&["POST".to_owned(), "POST".to_owned()][..]),
        "{methods:?}"
    );

    let o = options("neuron", "");
    Reflect::set(&o, &"fetch".into(), &JsValue::from(1)).expect("fetch");
    let Err(e) = ApprovalClient::new(o) else {
        panic!("a fetch that is no function was accepted");
    };
    assert_eq!(code(&e), "invalid_argument");
    assert_eq!(string(&get(&e, "path")), "fetch");

    let o = options("neuron", r#","retry":{"attempts":1}"#);
    let offline = Function::new_no_args("return Promise.reject(new Error('offline for a test'))");
    Reflect::set(&o, &"fetch".into(), &offline).expect("fetch");
    let c = ApprovalClient::new(o).expect("client");
    let e = wait(c.load()).await.expect_err("offline");
    assert_eq!(code(&e), "network");
    assert!(
        string(&get(&e, "message")).contains("offline for a test"),
        "{e:?}"
    );
}
