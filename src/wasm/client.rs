//! `ApprovalClient`: the driver that runs the sans-IO [`Client`] in the browser (fetch,
//! `performance.now`, timers, `localStorage`) and exposes it to JS.
//!
//! # How it runs the core
//!
//! The core lives in one `RefCell<Inner>` (in an `Rc`, beside the listeners). Every method, fetch
//! completion and timer borrows it for one synchronous *step* (a command or an input, then
//! draining [`Client::poll_output`], settling the promises of ops done (their reactions run as
//! later jobs) and re-arming the single retry timer), releases the borrow, and only then calls
//! listeners. No borrow is ever held across a promise callback or while user code runs, so a
//! listener may call any method reentrantly. The requests themselves run in JS (`request` in
//! `fast.js`: fetch, abort signal, timeout, body reading), which reports each one's course to the
//! client's one callback; that callback, also the retry timer's, holds a `Weak`: after `free()`
//! it finds nothing and stops.
//!
//! # Contract, as JS sees it
//!
//! - `getSnapshot()` returns the same object, frozen all the way down, until the core's `version`
//!   changes; the `messages` array is reused until `messagesVersion` changes (React
//!   `useSyncExternalStore`), and then the messages before the first that changed keep their
//!   objects (`Client::take_unchanged_messages`); a snapshot that differs from the last one only
//!   in `version` and the streaming text (a streamed delta) keeps that one's objects but for
//!   itself and `streaming`. Called while a step runs (from JS the step calls synchronously: an
//!   abort listener of a custom `fetch` as a request is cancelled, a patched timer or storage),
//!   it returns the last snapshot it returned, whose changes the step's listeners announce; before
//!   any, it throws `invalid_state`.
//! - Listeners are called **synchronously**, once per step that changed the snapshot, after the step
//!   (so after `approve()` returns, they have run). An exception thrown by a listener is reported
//!   with `console.error` and does not stop the other listeners or the client.
//! - Async methods (`load`, `send`, `submit`, `rejectAllAndSend`) never throw: misuse returns a
//!   rejected promise with a `ToolgateError`. `approve`, `reject` and `clear` throw synchronously.
//! - `abort()` rejects the pending op with code `aborted`; `free()` aborts every fetch, clears every
//!   timer, and rejects pending ops with `aborted`. A client is kept alive while a command of its
//!   is out (the package's glue: scripts/build.sh); a collected client is freed, but a listener or
//!   a `fetch` option that refers to it keeps it alive (the table of JS values the crate holds is
//!   a root). `free()` from inside a listener that a method call triggered lets go of the client,
//!   which is freed once that method returns (the package's glue calls wasm-bindgen's free with
//!   `allow_delayed`: scripts/build.sh; wasm-bindgen-test's own glue throws its ownership error
//!   there instead).
//! - A streamed answer (Sidenet) is read chunk by chunk, one step per chunk, so subscribers see the
//!   message grow; its `timeoutMs` bounds the wait for the headers and then every gap between chunks.
//! - The unsubscribe function `subscribe()` returns is idempotent and harmless after `free()`.

use crate::prelude::*;
use alloc::rc::{Rc, Weak};
use core::cell::{Cell, RefCell};

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::error::to_js as error_to_js;
use super::input::{
    args, list_to_js, monotonic_now, read_options, string_of, to_vec, Array, Function, Promise,
    CALL_ID,
};
use crate::client::{
    Client, Config, HttpRequest, HttpResponse, OpId, Output, RequestId, TransportError,
};
use crate::decisions::Decision;
use crate::error::{Error, ErrorCode};
use crate::json::write_str;

#[wasm_bindgen(module = "/src/wasm/fast.js")]
extern "C" {
    // Subscriptions (see `fast.js`): a client's listeners are a JS `Map` from each one's
    // unsubscribe function (idempotent, harmless after `free()`) to the listener.
    /// Adds a listener: its unsubscribe function; the `invalid_argument` error to throw when
    /// `listener` is no function.
    #[wasm_bindgen(js_name = addListener)]
    fn add_listener(listeners: &Listeners, listener: &JsValue) -> JsValue;
    /// Calls the listeners (exceptions go to `console.error`), skipping any removed meanwhile.
    #[wasm_bindgen(js_name = callListeners)]
    fn call_listeners(listeners: &Listeners);
    /// Performs one request (see `request` in `fast.js`) and reports to `report`: the function
    /// that cancels it. (`stream` as a number, 1 or 0: no bool conversion in the glue.)
    #[wasm_bindgen(js_name = request)]
    fn start_request(
        report: &Function,
        id: f64,
        url: &str,
        init: &str,
        ms: f64,
        stream: f64,
    ) -> Function;
    /// `f(value)`, for functions that do not throw: a promise's settle function, a request's
    /// cancel. (Not `Function::call1`, whose `catch` links wasm-bindgen's exception
    /// passing.)
    fn call(f: &Function, value: &JsValue);
    /// `[settle, promise]` of a new promise: `settle(value)` resolves it when `value` is
    /// `undefined`, else rejects it with `value`.
    fn deferred() -> Array;
    /// `localStorage`: reads `key` (`value` undefined), writes it, or removes it (`value` null);
    /// `undefined` for either, `false` when a write failed (the key is then removed).
    fn storage(key: &str, value: &JsValue) -> JsValue;
    /// Calls `f(NaN, 0, value)` with what `key` holds (`""`: nothing) each time another tab
    /// changes it (the `storage` event; none without a `window`, nor for the key `""`): the
    /// function that stops it.
    fn listen(key: &str, f: &Function) -> Function;
    /// Keeps the `fetch` option (if any, as `readOptions` read it) on the client's callback, for
    /// `request`.
    #[wasm_bindgen(js_name = useFetch)]
    fn use_fetch(report: &Function, fetch: &JsValue);
    /// The snapshot object of the head's JSON `head`, frozen all the way down: with its messages
    /// and its streaming text (appended to `prev`'s when that is given); kept as the `last` of
    /// `listeners`. `undefined` if `head` is no JSON.
    #[wasm_bindgen(js_name = snapshot)]
    fn freeze_snapshot(
        head: &JsValue,
        messages: &JsValue,
        text: &JsValue,
        prev: &JsValue,
        listeners: &Listeners,
        version: f64,
    ) -> JsValue;
}

#[wasm_bindgen]
extern "C" {
    /// A client's listeners (a `Map`: see `addListener` in `fast.js`).
    #[wasm_bindgen(js_name = Map)]
    type Listeners;
    #[wasm_bindgen(constructor, js_class = "Map")]
    fn new() -> Listeners;
    #[wasm_bindgen(method, js_class = "Map")]
    fn clear(this: &Listeners);
    /// The last snapshot `getSnapshot()` returned (kept there by `snapshot` in `fast.js`, outside
    /// the core's `RefCell`), or `undefined`.
    #[wasm_bindgen(method, getter, js_class = "Map", js_name = s)]
    fn last(this: &Listeners) -> JsValue;
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(handle: &JsValue);
}

/// The core's state, and the listeners (outside its `RefCell`: no borrow to reach them).
struct State {
    inner: RefCell<Inner>,
    listeners: Listeners,
    /// Stops listening to other tabs' changes to the drafts (a listener only with `persist` on);
    /// called with `true`, reads them again. (Outside the `RefCell`: called after a step with no
    /// copy of it taken out.)
    unlisten: Function,
    /// The `ApprovalClient` went while a step held the core (freed by JS the step called: a custom
    /// `fetch`'s abort listener, a stream's cancel): the step shuts the core down as it ends.
    gone: Cell<bool>,
}

type Shared = Rc<State>;

/// What `request` in `fast.js` reports besides an HTTP status (`>= 0`: the headers of a stream,
/// with no value, or a whole answer, with its body).
const CHUNK: i32 = -1;
const END: i32 = -2;
const FAILED: i32 = -3;
const TIMED_OUT: i32 = -4;

struct Inner {
    core: Box<Client>,
    freed: bool,
    /// `(version, frozen snapshot object)` (the object is also the listeners' `last`).
    snapshot: Option<(u64, JsValue)>,
    /// `(messagesVersion, frozen messages array)`: the array's objects are reused for the views
    /// that stay the same (`Client::take_unchanged_messages`).
    messages: Option<(u64, JsValue)>,
    /// The streaming message's text in the last snapshot: `(stream epoch, its length in bytes)`.
    /// A new snapshot's text is that one's plus only what the stream added since (O(delta), not
    /// O(text)).
    stream_text: Option<(u64, usize)>,
    /// The promises of commands in flight: `(op, settle)` (see `deferred`).
    ops: Vec<(OpId, Function)>,
    /// The requests on the wire (by the number of their id, as `ops` by theirs: one `take` for
    /// both), each with the function that cancels it.
    fetches: Vec<(u64, Function)>,
    /// The retry timer: its handle and deadline.
    timer: Option<(JsValue, u64)>,
    /// The one callback of the client, `(id, code, value)`, holding a `Weak`: what every request
    /// reports (see `request` in `fast.js`), and, with an `id` of NaN, the retry timer (no value)
    /// or another tab's drafts (a string). Owned by JS (freed once collected): calls after
    /// `free()` find nothing.
    on_event: Function,
}

fn now() -> u64 {
    monotonic_now() as u64
}

/// What a step gives the core (values lent: the caller drops them once, whatever the step does).
enum Input<'a> {
    /// A method: `text` is its message or callId; an async command's op is kept with `settle`
    /// (its promise's settle function).
    Cmd {
        cmd: Cmd,
        text: &'a str,
        reason: Option<&'a str>,
        settle: Option<&'a Function>,
    },
    /// The retry timer fired.
    Timeout,
    /// Drafts read from storage.
    Restore(&'a str),
    Abort,
    /// What a request reports: a status or one of `CHUNK`, `END`, `FAILED`, `TIMED_OUT`, and its
    /// value (see `request` in `fast.js`).
    Report(RequestId, i32, &'a JsValue),
}

/// Runs one synchronous step on the core, then performs its effects; the error of a command that
/// did not run. (One `Input` value, not a closure per caller: no vtables, one body.)
fn step(shared: &Shared, input: Input<'_>) -> Result<(), Error> {
    let now = now();
    let (result, changed, missed) = {
        let Ok(mut inner) = shared.inner.try_borrow_mut() else {
            return Err(Error::new(
                ErrorCode::InvalidState,
                "the client is already running a step",
            ));
        };
        if inner.freed {
            return Err(Error::new(ErrorCode::InvalidState, "the client was freed"));
        }
        let result = inner.apply(input, now);
        let changed = inner.drain(now);
        let missed = inner.core.take_missed_restore();
        (result, changed, missed)
    };
    if shared.gone.get() {
        if let Ok(mut inner) = shared.inner.try_borrow_mut() {
            if !inner.freed {
                inner.shutdown(&shared.listeners, &shared.unlisten);
            }
        }
        return result;
    }
    if changed {
        // None while a borrow is held; one removed meanwhile is skipped, and so are all of them
        // once the client is freed (`shutdown` clears them).
        call_listeners(&shared.listeners);
    }
    // Drafts another tab saved during the command that just ended, or for a pause the step
    // came to: read again, in a step of their own.
    if missed {
        call(&shared.unlisten, &JsValue::TRUE);
    }
    result
}

impl Inner {
    /// Gives `input` to the core.
    fn apply(&mut self, input: Input<'_>, now: u64) -> Result<(), Error> {
        match input {
            Input::Cmd {
                cmd,
                text,
                reason,
                settle,
            } => {
                if let (Some(op), Some(settle)) =
                    (run(&mut self.core, now, cmd, text, reason)?, settle)
                {
                    self.ops.push((op, settle.clone()));
                }
            }
            Input::Timeout => {
                self.timer = None;
                self.core.handle_timeout(now);
            }
            Input::Restore(saved) => self.core.restore_drafts(saved),
            Input::Abort => self.core.abort(),
            Input::Report(id, code, value) => self.report(now, id, code, value),
        }
        Ok(())
    }

    /// What a request reports (its value lent: dropped once, by the caller).
    fn report(&mut self, now: u64, id: RequestId, code: i32, value: &JsValue) {
        let core = &mut self.core;
        match code {
            // (`request` restarts a stream's timeout itself, and clears it at the end.)
            CHUNK => core.handle_stream_chunk(now, id, &to_vec(value)),
            status if status >= 0 && value.is_undefined() => {
                core.handle_stream_start(now, id, status as u16);
            }
            code => {
                // The request is over.
                take(&mut self.fetches, &id.0);
                match code {
                    END => core.handle_stream_end(now, id),
                    // One call for both failures.
                    FAILED | TIMED_OUT => {
                        let error = if code == FAILED {
                            TransportError::Network(string_of(value).unwrap_or_default())
                        } else {
                            TransportError::Timeout
                        };
                        core.handle_failure(now, id, error);
                    }
                    status => {
                        core.handle_response(
                            now,
                            id,
                            HttpResponse::new(status as u16, to_vec(value)),
                        );
                    }
                }
            }
        }
    }

    /// Performs the step's effects that call no user code (fetch, abort, storage, timer, and
    /// settling promises, whose reactions run as later jobs): whether the snapshot changed.
    fn drain(&mut self, now: u64) -> bool {
        let mut changed = false;
        while let Some(output) = self.core.poll_output() {
            // By reference: the output is then dropped whole, in one call.
            match &output {
                Output::Http(request) => self.start_fetch(request),
                // A request's cancel function, or an op's settle function, called with
                // `undefined` or the op's error: one look-up and one call for both.
                Output::Cancel(RequestId(key)) | Output::Done { op: key, .. } => {
                    let list = match output {
                        Output::Cancel(_) => &mut self.fetches,
                        _ => &mut self.ops,
                    };
                    if let Some(f) = take(list, key) {
                        let value = match &output {
                            Output::Done { result: Err(e), .. } => error_to_js(e),
                            _ => JsValue::UNDEFINED,
                        };
                        call(&f, &value);
                    }
                }
                Output::Persist { key, value } => {
                    let value = value.as_deref().map_or(JsValue::NULL, JsValue::from_str);
                    if !storage(key, &value).is_undefined() {
                        self.core.persist_failed();
                    }
                }
                Output::Changed => changed = true,
            }
        }
        self.arm_timer(now);
        changed
    }

    /// Keeps one timer armed for the core's next deadline.
    fn arm_timer(&mut self, now: u64) {
        let want = self.core.poll_timeout();
        match (&self.timer, want) {
            (Some((_, d)), Some(w)) if *d == w => return,
            (None, None) => return,
            _ => {}
        }
        if let Some((handle, _)) = self.timer.take() {
            clear_timeout(&handle);
        }
        let Some(deadline) = want else {
            return;
        };
        let handle = set_timeout(&self.on_event, delay(deadline.saturating_sub(now)));
        self.timer = Some((handle, deadline));
    }

    /// Puts a request on the wire: `fetch` with the method, headers and body written as one JSON
    /// text (`JSON.parse`d in `request`: one call instead of a setter per field and an array per
    /// header), an abort signal and the timeout.
    fn start_fetch(&mut self, request: &HttpRequest) {
        let mut init = "{\"method\":".to_owned();
        write_str(&mut init, request.method.as_str());
        init.push_str(",\"headers\":[");
        let mut sep = "[";
        for (name, value) in &request.headers {
            init.push_str(sep);
            write_str(&mut init, name);
            init.push(',');
            write_str(&mut init, value);
            init.push(']');
            sep = ",[";
        }
        init.push(']');
        if let Some(body) = &request.body {
            init.push_str(",\"body\":");
            write_str(&mut init, body);
        }
        init.push('}');
        let cancel = start_request(
            &self.on_event,
            request.id.0 as f64,
            &request.url,
            &init,
            delay(request.timeout_ms),
            f64::from(u8::from(request.streaming)),
        );
        self.fetches.push((request.id.0, cancel));
    }

    /// `free()`: aborts every request, clears every timer, rejects pending ops with `aborted`.
    /// (Once: only `ApprovalClient`'s `drop` calls it.)
    fn shutdown(&mut self, listeners: &Listeners, unlisten: &Function) {
        self.freed = true;
        // Only what must happen now; the rest goes with the `Inner` (a step in progress holds it
        // a moment longer, and finds it freed).
        for (_, f) in &self.fetches {
            cancel(f);
        }
        if let Some((handle, _)) = &self.timer {
            clear_timeout(handle);
        }
        cancel(unlisten);
        listeners.clear();
        let error = error_to_js(&Error::new(ErrorCode::Aborted, "the client was freed"));
        for (_, settle) in &self.ops {
            call(settle, &error);
        }
    }
}

/// A delay for `setTimeout`, which fires at once for 2^31 ms or more: at most 2^31 - 1 (a timer
/// that fires that early finds nothing due, and is armed again for the rest).
fn delay(ms: u64) -> f64 {
    ms.min(i32::MAX as u64) as f64
}

/// Takes a request or an op off its list (`fetches`, `ops`): its function.
fn take(list: &mut Vec<(u64, Function)>, key: &u64) -> Option<Function> {
    let i = list.iter().position(|(k, _)| k == key)?;
    Some(list.swap_remove(i).1)
}

/// Cancels a request: clears its timeout and aborts it (a late report of it is ignored).
fn cancel(f: &Function) {
    call(f, &JsValue::UNDEFINED);
}

/// What of the streaming message's `text` crosses for a new snapshot: the part appended since
/// the last snapshot, when that one showed the same streaming message (`epoch`) and `true` then
/// (the JS side appends it to that snapshot's text), else the whole text; `undefined` when
/// nothing streams. `cache` is the last snapshot's `(epoch, text length)`.
fn grow_text(cache: &mut Option<(u64, usize)>, epoch: u64, text: Option<&str>) -> (JsValue, bool) {
    let last = cache.take();
    let Some(text) = text else {
        return (JsValue::UNDEFINED, false);
    };
    *cache = Some((epoch, text.len()));
    match last {
        Some((e, len)) if e == epoch => match text.get(len..) {
            Some(tail) => (JsValue::from_str(tail), true),
            None => (JsValue::from_str(text), false),
        },
        _ => (JsValue::from_str(text), false),
    }
}

// ------------------------------------------------------------------------------------------------
// ------------------------------------------------------------------------------------------------
// The class

// The approval client for one thread: `new ApprovalClient(options)`.
#[wasm_bindgen(js_name = ApprovalClient, skip_typescript)]
pub struct ApprovalClient {
    shared: Shared,
}

/// What a method asks of the core.
#[derive(Clone, Copy)]
enum Cmd {
    Load,
    Send,
    Submit,
    RejectAllAndSend,
    Approve,
    Reject,
    Clear,
    Allow,
    Disallow,
}

/// Runs `cmd` on the core: an async command's op, `None` for a synchronous one. (One match, not
/// a closure per method: each closure costs a vtable and a shim.)
fn run(
    core: &mut Client,
    now: u64,
    cmd: Cmd,
    text: &str,
    reason: Option<&str>,
) -> Result<Option<OpId>, Error> {
    Ok(Some(match cmd {
        Cmd::Load => core.load(now)?,
        Cmd::Send => core.send(now, text)?,
        Cmd::Submit => core.submit(now)?,
        Cmd::RejectAllAndSend => core.reject_all_and_send(now, text, reason)?,
        // One call for both decisions.
        Cmd::Approve | Cmd::Reject => {
            let decision = match cmd {
                Cmd::Approve => Decision::Approve,
                _ => Decision::reject(reason),
            };
            core.decide(text, decision)?;
            return Ok(None);
        }
        Cmd::Clear => return core.clear(text).map(|()| None),
        Cmd::Allow | Cmd::Disallow => {
            core.allow_tool(now, text, matches!(cmd, Cmd::Allow))?;
            return Ok(None);
        }
    }))
}

const MESSAGE: &str = "the message must be a string";
const TOOL_NAME: &str = "a tool name must be a string";

/// The options, read and checked by `readOptions` in `fast.js` as `Config::from_json` and
/// `Config::validate` would, with the `fetch` option as it read it (once); the error to throw
/// otherwise. Their JSON text goes through the crate's parser first, as in `Config::from_json`:
/// what it refuses in `JSON.stringify`'s output (a 128th level of nesting) is the first error.
fn parse_options(options: &JsValue) -> Result<(Config, JsValue), JsValue> {
    let read: Array = read_options(options).unchecked_into();
    let Some(json) = string_of(&read.get(0)) else {
        return Err(read.into());
    };
    Config::check_json(&json)?;
    let checked = read.get(1);
    let config = match string_of(&checked) {
        Some(text) => Config::from_checked(&text),
        None => return Err(checked),
    };
    config.check_dialect()?;
    Ok((config, read.get(2)))
}

/// The options as the constructor reads them (`readOptions` in `fast.js`, then
/// `Config::from_checked`): for the browser test that holds the JS checks to `Config::from_json` +
/// `Config::validate`, the rules the native tests pin. Debug builds only; not part of the API.
#[cfg(debug_assertions)]
#[doc(hidden)]
pub fn read_options_for_tests(options: &JsValue) -> Result<Config, JsValue> {
    parse_options(options).map(|(config, _)| config)
}

#[wasm_bindgen(js_class = ApprovalClient)]
impl ApprovalClient {
    // A client for one thread. Throws `invalid_argument` for bad options. With `persist` on (the
    // default), drafts saved earlier for this thread are read from `localStorage` and restored on
    // the first load, and drafts other tabs save later are taken in (until `free()`).
    #[wasm_bindgen(constructor, skip_jsdoc)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "ApprovalClientOptions")] options: JsValue,
    ) -> Result<ApprovalClient, JsValue> {
        let (config, fetch) = parse_options(&options)?;
        // `""` without `persist` (a persist key is never empty): no listener, nothing read.
        let key = if config.persist {
            config.persist_key()
        } else {
            String::new()
        };
        let core = Box::new(Client::checked(config));
        let shared = Rc::new_cyclic(|weak: &Weak<State>| {
            let weak = weak.clone();
            let on_event = Closure::<dyn Fn(f64, f64, JsValue) -> bool>::new(
                move |id: f64, code: f64, value: JsValue| {
                    let Some(shared) = weak.upgrade() else {
                        return false;
                    };
                    // Drafts read first (held past the step): one step call for every input.
                    let saved;
                    let input = if !id.is_nan() {
                        Input::Report(RequestId(id as u64), code as i32, &value)
                    } else {
                        saved = string_of(&value);
                        match &saved {
                            Some(text) => Input::Restore(text),
                            None => Input::Timeout,
                        }
                    };
                    step(&shared, input).is_ok()
                },
            );
            let on_event: Function = on_event.into_js_value().unchecked_into();
            use_fetch(&on_event, &fetch);
            let unlisten = listen(&key, &on_event);
            let inner = RefCell::new(Inner {
                core,
                freed: false,
                snapshot: None,
                messages: None,
                stream_text: None,
                ops: Vec::new(),
                fetches: Vec::new(),
                timer: None,
                on_event,
            });
            State {
                inner,
                listeners: Listeners::new(),
                unlisten,
                gone: Cell::new(false),
            }
        });
        if !key.is_empty() {
            if let Some(saved) = string_of(&storage(&key, &JsValue::UNDEFINED)) {
                // Cannot fail: no step runs yet, nothing is freed, and a restore is no command.
                let _ = step(&shared, Input::Restore(&saved));
            }
        }
        Ok(ApprovalClient { shared })
    }

    // The current snapshot: the same frozen object until something changes. While a step runs
    // (JS it calls reads the snapshot), the last one it returned; `invalid_state` before any.
    #[wasm_bindgen(js_name = getSnapshot, unchecked_return_type = "Snapshot", skip_jsdoc)]
    pub fn get_snapshot(&self) -> Result<JsValue, JsValue> {
        // The crate's errors converted at one place.
        Ok((|| {
            let Ok(mut guard) = self.shared.inner.try_borrow_mut() else {
                // A step is running.
                let last = self.shared.listeners.last();
                if last.is_undefined() {
                    return Err(Error::new(
                        ErrorCode::InvalidState,
                        "the client is running a step",
                    ));
                }
                return Ok(last);
            };
            let inner = &mut *guard;
            let version = inner.core.version();
            if let Some((v, object)) = &inner.snapshot {
                if *v == version {
                    return Ok(object.clone());
                }
            }
            let head = JsValue::from_str(&inner.core.head_json());
            let messages_version = inner.core.snapshot().messages_version;
            let messages = match &inner.messages {
                Some((v, array)) if *v == messages_version => array.clone(),
                _ => {
                    // Only the views that changed cross: the last array's objects are kept for
                    // the ones before them (a turn converts its own messages, not the thread).
                    // The last array is let go first, so that a conversion that fails leaves
                    // none to build on.
                    let keep = inner.core.take_unchanged_messages();
                    let (last, keep) = match inner.messages.take() {
                        Some((_, array)) if keep > 0 => (array, keep),
                        _ => (JsValue::UNDEFINED, 0),
                    };
                    let views = inner.core.snapshot().messages.as_slice();
                    // (Its new items frozen by `append`, the array by `snapshot`, in `fast.js`.)
                    let array = list_to_js(last, keep, views.get(keep..).unwrap_or_default())?;
                    inner.messages = Some((messages_version, array.clone()));
                    array
                }
            };
            let snapshot = inner.core.snapshot();
            // The streaming text is not converted again: only what was appended since the last
            // snapshot crosses (the rest of the snapshot is small, whatever the reply's length).
            let text = snapshot.streaming.as_ref().map(|view| view.text.as_str());
            let (text, grown) = grow_text(&mut inner.stream_text, inner.core.stream_epoch(), text);
            // The last snapshot lent, not cloned: `snapshot` only reads it.
            let undefined = JsValue::UNDEFINED;
            let prev = match (grown, &inner.snapshot) {
                (true, Some((_, object))) => object,
                _ => &undefined,
            };
            let object = freeze_snapshot(
                &head,
                &messages,
                &text,
                prev,
                &self.shared.listeners,
                version as f64,
            );
            // Let go of here, once for both outcomes.
            drop((head, messages, text));
            if object.is_undefined() {
                // The next snapshot's text then crosses whole.
                inner.stream_text = None;
                return Err(Error::parse("invalid JSON"));
            }
            inner.snapshot = Some((version, object.clone()));
            Ok(object)
        })()?)
    }

    // Calls `listener` (synchronously, with no arguments) after each change; returns the function
    // that unsubscribes it (idempotent, harmless after `free()`).
    #[wasm_bindgen(unchecked_return_type = "() => void", skip_jsdoc)]
    pub fn subscribe(
        &self,
        #[wasm_bindgen(unchecked_param_type = "() => void")] listener: JsValue,
    ) -> Result<JsValue, JsValue> {
        // (The map, not the core: no borrow.)
        let off = add_listener(&self.shared.listeners, &listener);
        if super::error::is_toolgate_error(&off) {
            Err(off)
        } else {
            Ok(off)
        }
    }

    // `GET` the thread and find any pending approvals. Rejects with `busy` while another command's
    // request is in flight.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>", skip_jsdoc)]
    pub fn load(&self) -> Promise {
        self.command(Cmd::Load, &JsValue::UNDEFINED, &JsValue::UNDEFINED)
    }

    // Sends a new user message. Rejects with `invalid_argument` (blank), `busy`, `input_locked`
    // (the conversation awaits approval), `conflict` (the server refused it: 409), ...
    #[wasm_bindgen(unchecked_return_type = "Promise<void>", skip_jsdoc)]
    pub fn send(&self, #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue) -> Promise {
        self.command(Cmd::Send, &text, &JsValue::UNDEFINED)
    }

    // Approves a gated tool (a local draft until `submit`). Throws `busy`, `not_suspended`,
    // `unknown_call_id`.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn approve(
        &self,
        #[wasm_bindgen(js_name = callId, unchecked_param_type = "string")] call_id: JsValue,
    ) -> Result<(), JsValue> {
        self.exec(Cmd::Approve, &call_id, &JsValue::UNDEFINED, None)
    }

    // Rejects a gated tool, with an optional reason the model reads verbatim.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn reject(
        &self,
        #[wasm_bindgen(js_name = callId, unchecked_param_type = "string")] call_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string | null | undefined")] reason: JsValue,
    ) -> Result<(), JsValue> {
        self.exec(Cmd::Reject, &call_id, &reason, None)
    }

    // Drops the draft for a tool.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn clear(
        &self,
        #[wasm_bindgen(js_name = callId, unchecked_param_type = "string")] call_id: JsValue,
    ) -> Result<(), JsValue> {
        self.exec(Cmd::Clear, &call_id, &JsValue::UNDEFINED, None)
    }

    // Approves the tool's calls without asking, from now on, for the client's life.
    #[wasm_bindgen(js_name = allowTool, skip_jsdoc)]
    pub fn allow_tool(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
    ) -> Result<(), JsValue> {
        self.exec(Cmd::Allow, &name, &JsValue::UNDEFINED, None)
    }

    // Asks for the tool's calls again, from the next pause on.
    #[wasm_bindgen(js_name = disallowTool, skip_jsdoc)]
    pub fn disallow_tool(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
    ) -> Result<(), JsValue> {
        self.exec(Cmd::Disallow, &name, &JsValue::UNDEFINED, None)
    }

    // POSTs the decisions (the cumulative set for this pause). Rejects with `busy`,
    // `not_suspended`, `empty_decisions`, ...
    #[wasm_bindgen(unchecked_return_type = "Promise<void>", skip_jsdoc)]
    pub fn submit(&self) -> Promise {
        self.command(Cmd::Submit, &JsValue::UNDEFINED, &JsValue::UNDEFINED)
    }

    // The way out of a locked composer: rejects every undecided tool with `reason`, submits, then
    // sends `text` once the run has completed (not paused: the same as `send`).
    #[wasm_bindgen(js_name = rejectAllAndSend, unchecked_return_type = "Promise<void>", skip_jsdoc)]
    pub fn reject_all_and_send(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string | null | undefined")] reason: JsValue,
    ) -> Promise {
        self.command(Cmd::RejectAllAndSend, &text, &reason)
    }

    // Cancels the request in flight, if any; its promise rejects with `aborted`. Drafts are kept.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn abort(&self) {
        let _ = step(&self.shared, Input::Abort);
    }
}

impl ApprovalClient {
    /// Runs an async command: its promise settles on the core's `Done` for the returned op, or
    /// rejects at once when the command does not start.
    fn command(&self, cmd: Cmd, text: &JsValue, reason: &JsValue) -> Promise {
        let d = deferred();
        let settle: Function = d.get(0).unchecked_into();
        let promise: Promise = d.get(1).unchecked_into();
        if let Err(e) = self.exec(cmd, text, reason, Some(&settle)) {
            call(&settle, &e);
        }
        promise
    }

    /// Reads a method's arguments (`text`: the message, or the callId) and runs `cmd` in a step;
    /// an async command's op is kept with `settle` (its `resolve` and `reject`).
    #[inline(never)]
    fn exec(
        &self,
        cmd: Cmd,
        text: &JsValue,
        reason: &JsValue,
        settle: Option<&Function>,
    ) -> Result<(), JsValue> {
        // The error converted to JS here, once, not by each caller.
        Ok((|| {
            let (text, reason) = match cmd {
                Cmd::Load | Cmd::Submit => (String::new(), None),
                Cmd::Send | Cmd::RejectAllAndSend => args(text, MESSAGE, reason)?,
                Cmd::Approve | Cmd::Reject | Cmd::Clear => args(text, CALL_ID, reason)?,
                Cmd::Allow | Cmd::Disallow => args(text, TOOL_NAME, reason)?,
            };
            step(
                &self.shared,
                Input::Cmd {
                    cmd,
                    text: &text,
                    reason: reason.as_deref(),
                    settle,
                },
            )
        })()?)
    }
}

/// The one shutdown of the core, when the client goes (`free()` or its collection): the `Inner`
/// has no `Drop` of its own, since it outlives its `ApprovalClient` only in a step. A step that
/// holds the core (it called JS that freed the client) does the shutdown as it ends.
impl Drop for ApprovalClient {
    fn drop(&mut self) {
        match self.shared.inner.try_borrow_mut() {
            Ok(mut inner) => inner.shutdown(&self.shared.listeners, &self.shared.unlisten),
            Err(_) => self.shared.gone.set(true),
        }
    }
}
