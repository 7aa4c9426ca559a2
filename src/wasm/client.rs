//! `ApprovalClient`: the driver that runs the sans-IO [`Client`] in the browser (fetch, `Date.now`,
//! timers, `localStorage`) and exposes it to JS.
//!
//! # How it runs the core
//!
//! The core lives in one `Rc<RefCell<Inner>>`. Every method, fetch completion and timer borrows it for
//! one synchronous *step* (a command or an input, then draining [`Client::poll_output`] and re-arming
//! the single retry timer), releases the borrow, and only then settles promises and calls listeners.
//! No borrow is ever held across a promise callback or while user code runs, so a listener may call any
//! method reentrantly. Fetch callbacks and timer callbacks hold a `Weak`: after `free()` they find
//! nothing and stop.
//!
//! # Contract, as JS sees it
//!
//! - `getSnapshot()` returns the same frozen object until the core's `version` changes; the
//!   `messages` array is reused until `messagesVersion` changes (React `useSyncExternalStore`).
//! - Listeners are called **synchronously**, once per step that changed the snapshot, after the step
//!   (so after `approve()` returns, they have run). An exception thrown by a listener is reported
//!   with `console.error` and does not stop the other listeners or the client.
//! - Async methods (`load`, `send`, `submit`, `rejectAllAndSend`) never throw: misuse returns a
//!   rejected promise with a `ToolgateError`. `approve`, `reject` and `clear` throw synchronously.
//! - `abort()` rejects the pending op with code `aborted`; `free()` aborts every fetch, clears every
//!   timer, and rejects pending ops with `aborted`. Keep a reference to the client while awaiting it
//!   (a collected client is freed). Do not call `free()` from inside a listener that a method call
//!   triggered (wasm-bindgen refuses to free an object in use): defer it.
//! - A streamed answer (Sidenet) is read chunk by chunk, one step per chunk, so subscribers see the
//!   message grow; its `timeoutMs` bounds the wait for the headers and then every gap between chunks.
//! - The unsubscribe function `subscribe()` returns is idempotent and harmless after `free()`.

use crate::prelude::*;
use alloc::rc::{Rc, Weak};
use core::cell::RefCell;

use js_sys::{Array, Function, JsString, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{AbortController, AbortSignal, ReadableStreamDefaultReader, Response};

use super::error::to_js as error_to_js;
use super::input::{args, parse, string_of, CALL_ID};
use super::to_js;
use crate::client::{
    Client, Config, HttpRequest, HttpResponse, OpId, Output, RequestId, TransportError,
};
use crate::error::{Error, ErrorCode};
use crate::json::write_str;

#[wasm_bindgen(module = "/src/wasm/fast.js")]
extern "C" {
    // Subscriptions (see `fast.js`): a client's listeners are a JS `Map` from each one's
    // unsubscribe function (idempotent, harmless after `free()`) to the listener.
    /// Adds a listener: its unsubscribe function.
    #[wasm_bindgen(js_name = addListener)]
    fn add_listener(listeners: &Listeners, listener: &Function) -> JsValue;
    /// Calls the listeners (exceptions go to `console.error`), skipping any removed meanwhile.
    #[wasm_bindgen(js_name = callListeners)]
    fn call_listeners(listeners: &Listeners);
}

#[wasm_bindgen]
extern "C" {
    /// A client's listeners (a `Map`: see `addListener` in `fast.js`).
    #[wasm_bindgen(js_name = Map)]
    #[derive(Clone)]
    type Listeners;
    #[wasm_bindgen(constructor, js_class = "Map")]
    fn new() -> Listeners;
    #[wasm_bindgen(method, js_class = "Map")]
    fn clear(this: &Listeners);
    /// The global `fetch` (window or worker).
    #[wasm_bindgen(js_name = fetch, catch)]
    fn js_fetch(url: &str, init: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(handle: &JsValue);
    /// `globalThis.localStorage` (it throws in a sandboxed frame or with storage disabled).
    #[wasm_bindgen(js_name = globalThis)]
    type Global;
    #[wasm_bindgen(static_method_of = Global, js_class = "globalThis", getter = localStorage, catch)]
    fn local_storage() -> Result<JsValue, JsValue>;
    /// `storage.getItem(key)`: a string or `null` (read with `string_of`, not as an
    /// `Option<String>`: no wasm-bindgen string passing in the glue).
    #[wasm_bindgen(js_name = Storage)]
    type Store;
    #[wasm_bindgen(method, js_name = getItem, catch)]
    fn get_item(this: &Store, key: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, js_name = setItem, catch)]
    fn set_item(this: &Store, key: &str, value: &str) -> Result<(), JsValue>;
    #[wasm_bindgen(method, js_name = removeItem, catch)]
    fn remove_item(this: &Store, key: &str) -> Result<(), JsValue>;
    /// A promise, for `then` with a plain function (one made by `Closure::once_into_js`).
    type Thenable;
    #[wasm_bindgen(method)]
    fn then(this: &Thenable, on_fulfilled: &JsValue) -> JsValue;
    /// `new Promise(executor)`, with any function as the executor.
    #[wasm_bindgen(js_name = Promise)]
    type NewPromise;
    #[wasm_bindgen(constructor, js_class = "Promise")]
    fn new(executor: &Function) -> NewPromise;
}

type Shared = Rc<RefCell<Inner>>;

/// One request on the wire.
struct Fetch {
    id: RequestId,
    controller: Option<AbortController>,
    /// The `setTimeout` handle of the request's timeout.
    timer: JsValue,
    timeout_ms: f64,
    /// What the timeout calls: `controller.abort`, bound (no Rust closure). The request then fails
    /// with its signal aborted, which reads as a timeout: an abort for any other reason (a cancel,
    /// `free()`) concerns a request the core no longer awaits, or a client that is gone.
    on_timeout: JsValue,
}

struct Inner {
    core: Client,
    freed: bool,
    listeners: Listeners,
    /// `(version, frozen snapshot object)`.
    snapshot: Option<(u64, JsValue)>,
    /// `(messagesVersion, frozen messages array)`.
    messages: Option<(u64, JsValue)>,
    /// The streaming message's text as a JS string: `(stream epoch, its length in bytes, text)`.
    /// A new snapshot appends only what the stream added since (O(delta), not O(text)).
    stream_text: Option<(u64, usize, JsString)>,
    /// The promises of commands in flight: `(op, resolve, reject)`.
    ops: Vec<(OpId, Function, Function)>,
    fetches: Vec<Fetch>,
    /// The retry timer: its handle and deadline.
    timer: Option<(JsValue, u64)>,
    /// (Every closure of the skin takes one `JsValue`: one closure kind in the wasm and the glue.)
    on_timer: Option<Closure<dyn FnMut(JsValue)>>,
}

/// What to do once the borrow is released.
#[derive(Default)]
struct After {
    settle: Vec<(Function, JsValue)>,
    changed: bool,
}

fn now() -> u64 {
    js_sys::Date::now() as u64
}

fn invalid(message: &str) -> Error {
    Error::new(ErrorCode::InvalidArgument, message)
}

/// What a step gives the core.
enum Input<'a> {
    /// A method: `text` is its message or callId; an async command's op is kept with `settle`
    /// (its `resolve` and `reject`).
    Cmd {
        cmd: Cmd,
        text: &'a str,
        reason: Option<&'a str>,
        settle: Option<(Function, Function)>,
    },
    /// The retry timer fired.
    Timeout,
    /// Drafts read from storage.
    Restore(&'a str),
    Abort,
    /// What a request reports.
    Report(RequestId, Event<'a>),
}

/// Runs one synchronous step on the core, then performs its effects; the error of a command that
/// did not run. (One `Input` value, not a closure per caller: no vtables, one body.)
fn step(shared: &Shared, input: Input<'_>) -> Result<(), Error> {
    let now = now();
    let after = {
        let Ok(mut inner) = shared.try_borrow_mut() else {
            return Err(Error::new(
                ErrorCode::InvalidState,
                "the client is already running a step",
            ));
        };
        if inner.freed {
            return Err(Error::new(ErrorCode::InvalidState, "the client was freed"));
        }
        let result = inner.apply(input, now);
        let after = inner.drain(&Rc::downgrade(shared), now);
        (result, after, inner.listeners.clone())
    };
    let (result, after, listeners) = after;
    for (settle, value) in after.settle {
        let _ = settle.call1(&JsValue::UNDEFINED, &value);
    }
    if after.changed {
        // None while a borrow is held; one removed meanwhile is skipped, and so are all of them
        // once the client is freed (`shutdown` clears them).
        call_listeners(&listeners);
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
                if let (Some(op), Some((resolve, reject))) =
                    (run(&mut self.core, now, cmd, text, reason)?, settle)
                {
                    self.ops.push((op, resolve, reject));
                }
            }
            Input::Timeout => {
                self.timer = None;
                self.core.handle_timeout(now);
            }
            Input::Restore(saved) => self.core.restore_drafts(saved),
            Input::Abort => self.core.abort(),
            Input::Report(id, event) => match event {
                Event::Start(status) => {
                    self.restart_timeout(id);
                    self.core.handle_stream_start(now, id, status);
                }
                Event::Chunk(bytes) => {
                    self.restart_timeout(id);
                    self.core.handle_stream_chunk(now, id, bytes);
                }
                Event::Body(status, body) => {
                    self.end_fetch(id, false);
                    self.core
                        .handle_response(now, id, HttpResponse::new(status, body));
                }
                Event::End => {
                    self.end_fetch(id, false);
                    self.core.handle_stream_end(now, id);
                }
                Event::Fail(error) => {
                    self.end_fetch(id, false);
                    self.core.handle_failure(now, id, error);
                }
            },
        }
        Ok(())
    }

    /// Performs the step's effects that call no user code (fetch, abort, storage, timer) and
    /// collects the rest.
    fn drain(&mut self, weak: &Weak<RefCell<Inner>>, now: u64) -> After {
        let mut after = After::default();
        while let Some(output) = self.core.poll_output() {
            match output {
                Output::Http(request) => self.start_fetch(weak, request),
                Output::Cancel(id) => self.end_fetch(id, true),
                Output::Persist { key, value } => persist(&key, value.as_deref()),
                Output::Done { op, result } => {
                    if let Some(i) = self.ops.iter().position(|(o, _, _)| *o == op) {
                        let (_, resolve, reject) = self.ops.swap_remove(i);
                        after.settle.push(match result {
                            Ok(()) => (resolve, JsValue::UNDEFINED),
                            Err(e) => (reject, error_to_js(&e)),
                        });
                    }
                }
                Output::Changed => after.changed = true,
            }
        }
        self.arm_timer(weak, now);
        after
    }

    /// Keeps one timer armed for the core's next deadline.
    fn arm_timer(&mut self, weak: &Weak<RefCell<Inner>>, now: u64) {
        let want = self.core.poll_timeout();
        if want == self.timer.as_ref().map(|(_, d)| *d) {
            return;
        }
        if let Some((handle, _)) = self.timer.take() {
            clear_timeout(&handle);
        }
        let Some(deadline) = want else {
            return;
        };
        let callback = self.on_timer.get_or_insert_with(|| {
            let weak = weak.clone();
            Closure::new(move |_: JsValue| {
                if let Some(shared) = weak.upgrade() {
                    let _ = step(&shared, Input::Timeout);
                }
            })
        });
        let handle = set_timeout(
            callback.as_ref().unchecked_ref(),
            deadline.saturating_sub(now) as f64,
        );
        self.timer = Some((handle, deadline));
    }

    fn start_fetch(&mut self, weak: &Weak<RefCell<Inner>>, request: HttpRequest) {
        let controller = AbortController::new().ok();
        let on_timeout = controller.as_ref().map_or(JsValue::UNDEFINED, |c| {
            Reflect::get(c, &"abort".into()).map_or(JsValue::UNDEFINED, |abort| {
                // (`bind(c, undefined)`: `abort(undefined)` is `abort()`; one bind import.)
                abort
                    .unchecked_into::<Function>()
                    .bind1(c, &JsValue::UNDEFINED)
                    .into()
            })
        });
        let timeout_ms = request.timeout_ms as f64;
        let timer = arm(&on_timeout, timeout_ms);
        let signal = controller.as_ref().map(AbortController::signal);
        self.fetches.push(Fetch {
            id: request.id,
            controller,
            timer,
            timeout_ms,
            on_timeout,
        });
        let run = Run {
            weak: weak.clone(),
            id: request.id,
            signal,
        };
        // From a promise job: this runs inside a step, whose borrow must end first.
        when(&JsValue::UNDEFINED, run, Next::Fetch(request));
    }

    /// Restarts a streaming request's timeout (headers or a chunk arrived).
    fn restart_timeout(&mut self, id: RequestId) {
        if let Some(fetch) = self.fetches.iter_mut().find(|f| f.id == id) {
            clear_timeout(&fetch.timer);
            fetch.timer = arm(&fetch.on_timeout, fetch.timeout_ms);
        }
    }

    /// Forgets a request: clears its timeout, and aborts it when `abort`.
    fn end_fetch(&mut self, id: RequestId, abort: bool) {
        if let Some(i) = self.fetches.iter().position(|f| f.id == id) {
            let fetch = self.fetches.swap_remove(i);
            clear_timeout(&fetch.timer);
            if abort {
                if let Some(c) = &fetch.controller {
                    c.abort();
                }
            }
        }
    }

    /// `free()`: aborts every request, clears every timer, rejects pending ops with `aborted`.
    fn shutdown(&mut self) {
        if self.freed {
            return;
        }
        self.freed = true;
        // Only what must happen now; the rest goes with the `Inner` (a step in progress holds it
        // a moment longer, and finds it freed).
        for fetch in &self.fetches {
            clear_timeout(&fetch.timer);
            if let Some(c) = &fetch.controller {
                c.abort();
            }
        }
        if let Some((handle, _)) = &self.timer {
            clear_timeout(handle);
        }
        self.listeners.clear();
        let error = error_to_js(&Error::new(ErrorCode::Aborted, "the client was freed"));
        for (_, _, reject) in &self.ops {
            let _ = reject.call1(&JsValue::UNDEFINED, &error);
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A request's timeout: `setTimeout(on_timeout, ms)`, none without an abort function.
fn arm(on_timeout: &JsValue, ms: f64) -> JsValue {
    match on_timeout.dyn_ref::<Function>() {
        Some(f) => set_timeout(f, ms),
        None => JsValue::UNDEFINED,
    }
}

/// One request's callbacks: which request, and how to reach the client.
struct Run {
    weak: Weak<RefCell<Inner>>,
    id: RequestId,
    /// The request's abort signal: aborted when its timeout fired.
    signal: Option<AbortSignal>,
}

/// What a request reports to the core.
enum Event<'a> {
    /// The whole body of a non-streaming request.
    Body(u16, Vec<u8>),
    /// A streaming request's headers.
    Start(u16),
    Chunk(&'a [u8]),
    End,
    Fail(TransportError),
}

impl Run {
    /// Reports `event` as a step if the client is still alive; `false` once it is freed.
    fn report(&self, event: Event<'_>) -> bool {
        let Some(shared) = self.weak.upgrade() else {
            return false;
        };
        step(&shared, Input::Report(self.id, event)).is_ok()
    }

    /// The request failed (`timeout` if its timer fired first).
    fn fail(&self, e: &JsValue) {
        let error = if self.signal.as_ref().is_some_and(AbortSignal::aborted) {
            TransportError::Timeout
        } else {
            TransportError::Network(error_message(e))
        };
        self.report(Event::Fail(error));
    }
}

/// Where a request goes on once a promise settles.
enum Next {
    /// Start the fetch.
    Fetch(HttpRequest),
    /// The fetch answered (the headers): read the body, whole or (when streaming) chunk by chunk.
    Headers { streaming: bool },
    /// The whole body was read.
    Body(u16),
    /// A chunk of a streamed body was read.
    Chunk(ReadableStreamDefaultReader),
}

/// Goes on with `run` at `next` once `promise` settles, with its value or its rejection reason:
/// always from a promise job, never synchronously (so never inside a step). One JS callback per
/// promise (`Promise.allSettled`), freed once called, of one closure type: no executor, no futures.
fn when(promise: &JsValue, run: Run, next: Next) {
    let settled = Promise::all_settled(&Array::of1(promise));
    let callback = Closure::once_into_js(move |results: JsValue| {
        let state = results.unchecked_ref::<Array>().get(0);
        let field = |name: &str| Reflect::get(&state, &name.into()).unwrap_or(JsValue::UNDEFINED);
        if field("status") == "fulfilled" {
            resume(run, next, field("value"));
        } else {
            run.fail(&field("reason"));
        }
    });
    settled.unchecked_ref::<Thenable>().then(&callback);
}

/// Performs one request and reports its end to the core: the whole body at once, or, for a
/// streaming request, the status when the headers arrive and then each chunk as it arrives (one step
/// per chunk, so subscribers see the stream grow). For a stream, `timeoutMs` bounds the wait for the
/// headers and then every gap between chunks.
fn resume(run: Run, next: Next, value: JsValue) {
    match next {
        Next::Fetch(request) => {
            let init = request_init(&request, run.signal.as_ref());
            match js_fetch(&request.url, &init) {
                Ok(fetched) => when(
                    &fetched,
                    run,
                    Next::Headers {
                        streaming: request.streaming,
                    },
                ),
                Err(e) => run.fail(&e),
            }
        }
        Next::Headers { streaming } => {
            let response: Response = value.unchecked_into();
            let status = response.status();
            if !streaming {
                match response.array_buffer() {
                    Ok(read) => when(&read, run, Next::Body(status)),
                    Err(e) => run.fail(&e),
                }
            } else if run.report(Event::Start(status)) {
                match response.body() {
                    Some(body) => read_next(run, body.get_reader().unchecked_into()),
                    None => {
                        run.report(Event::End);
                    }
                }
            }
        }
        Next::Body(status) => {
            run.report(Event::Body(status, Uint8Array::new(&value).to_vec()));
        }
        Next::Chunk(reader) => {
            if Reflect::get(&value, &"done".into()).is_ok_and(|d| d == JsValue::TRUE) {
                run.report(Event::End);
                return;
            }
            let chunk = Reflect::get(&value, &"value".into()).unwrap_or(JsValue::UNDEFINED);
            let bytes = match chunk.dyn_ref::<Uint8Array>() {
                Some(array) => array.to_vec(),
                None => Uint8Array::new(&chunk).to_vec(),
            };
            if run.report(Event::Chunk(&bytes)) {
                read_next(run, reader);
            } else {
                let _ = reader.cancel();
            }
        }
    }
}

/// Reads the next chunk of a streamed body.
fn read_next(run: Run, reader: ReadableStreamDefaultReader) {
    let read = reader.read();
    when(&read, run, Next::Chunk(reader));
}

/// The `fetch` options: method, headers and body written as one JSON text and `JSON.parse`d (one
/// call instead of a setter per field and an array per header), then the signal.
fn request_init(request: &HttpRequest, signal: Option<&AbortSignal>) -> JsValue {
    let mut text = "{\"method\":".to_owned();
    write_str(&mut text, request.method.as_str());
    text.push_str(",\"headers\":[");
    let mut sep = "[";
    for (name, value) in &request.headers {
        text.push_str(sep);
        write_str(&mut text, name);
        text.push(',');
        write_str(&mut text, value);
        text.push(']');
        sep = ",[";
    }
    text.push(']');
    if let Some(body) = &request.body {
        text.push_str(",\"body\":");
        write_str(&mut text, body);
    }
    text.push('}');
    let init = parse(&JsValue::from_str(&text)).unwrap_or_else(|_| Object::new().into());
    if let Some(signal) = signal {
        let _ = Reflect::set(&init, &"signal".into(), signal);
    }
    init
}

/// `text` as a JS string, from the one cached for the same streaming message (`epoch`) plus the
/// part appended since; converted whole only for a new message.
fn grow_text(cache: &mut Option<(u64, usize, JsString)>, epoch: u64, text: &str) -> JsString {
    let js = match cache.take() {
        Some((e, len, js)) if e == epoch => match text.get(len..) {
            Some("") => js,
            Some(tail) => js.concat(&JsValue::from_str(tail)),
            None => JsString::from(text),
        },
        _ => JsString::from(text),
    };
    *cache = Some((epoch, text.len(), js.clone()));
    js
}

/// The message of a thrown value: `err.message`, a thrown string, or a generic text.
fn error_message(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .and_then(|e| string_of(&e.message()))
        .or_else(|| string_of(e))
        .unwrap_or_else(|| "the request failed".to_owned())
}

/// `globalThis.localStorage`: none in a worker, or where reading it throws (a sandboxed frame,
/// storage disabled). (Read from `globalThis`, not through `web_sys::window()`, which links
/// four global-object lookups and a `Window` check.)
fn storage() -> Option<Store> {
    let storage = Global::local_storage().ok()?;
    storage.is_object().then(|| storage.unchecked_into())
}

/// Writes or removes a storage entry; storage errors (private mode, quota) are ignored.
fn persist(key: &str, value: Option<&str>) {
    if let Some(storage) = storage() {
        let _ = match value {
            Some(v) => storage.set_item(key, v),
            None => storage.remove_item(key),
        };
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
        Cmd::Approve => {
            core.approve(text)?;
            return Ok(None);
        }
        Cmd::Reject => {
            core.reject(text, reason)?;
            return Ok(None);
        }
        Cmd::Clear => {
            core.clear(text)?;
            return Ok(None);
        }
    }))
}

const MESSAGE: &str = "the message must be a string";

fn parse_options(options: &JsValue) -> Result<Config, Error> {
    if !options.is_object() || Array::is_array(options) {
        return Err(invalid("the options must be an object"));
    }
    let json = js_sys::JSON::stringify(options)
        .ok()
        .and_then(|s| string_of(&s))
        .ok_or_else(|| invalid("the options must be JSON-serializable"))?;
    Config::from_json(&json)
}

#[wasm_bindgen(js_class = ApprovalClient)]
impl ApprovalClient {
    // A client for one thread. Throws `invalid_argument` for bad options. With `persist` on (the
    // default), drafts saved earlier for this thread are read from `localStorage` and restored on
    // the first load.
    #[wasm_bindgen(constructor, skip_jsdoc)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "ApprovalClientOptions")] options: JsValue,
    ) -> Result<ApprovalClient, JsValue> {
        let config = parse_options(&options)?;
        let key = config.persist.then(|| config.persist_key());
        let core = Client::new(config)?;
        let shared = Rc::new(RefCell::new(Inner {
            core,
            freed: false,
            listeners: Listeners::new(),
            snapshot: None,
            messages: None,
            stream_text: None,
            ops: Vec::new(),
            fetches: Vec::new(),
            timer: None,
            on_timer: None,
        }));
        if let Some(saved) = key.and_then(|k| string_of(&storage()?.get_item(&k).ok()?)) {
            step(&shared, Input::Restore(&saved))?;
        }
        Ok(ApprovalClient { shared })
    }

    // The current snapshot: the same frozen object until something changes.
    #[wasm_bindgen(js_name = getSnapshot, unchecked_return_type = "Snapshot", skip_jsdoc)]
    pub fn get_snapshot(&self) -> Result<JsValue, JsValue> {
        let mut guard = self
            .shared
            .try_borrow_mut()
            .map_err(|_| Error::new(ErrorCode::InvalidState, "the client is running a step"))?;
        let inner = &mut *guard;
        let version = inner.core.version();
        if let Some((v, object)) = &inner.snapshot {
            if *v == version {
                return Ok(object.clone());
            }
        }
        let snapshot = inner.core.snapshot();
        let messages = match &inner.messages {
            Some((v, array)) if *v == snapshot.messages_version => array.clone(),
            _ => {
                let array = to_js(&snapshot.messages)?;
                Object::freeze(array.unchecked_ref::<Object>());
                inner.messages = Some((snapshot.messages_version, array.clone()));
                array
            }
        };
        // The streaming text is not converted again: only what was appended since the last
        // snapshot crosses (the rest of the snapshot is small, whatever the reply's length).
        let object = to_js(&snapshot.head_without_stream_text())?;
        if let Some(view) = &snapshot.streaming {
            let text = grow_text(
                &mut inner.stream_text,
                inner.core.stream_epoch(),
                &view.text,
            );
            if let Ok(streaming) = Reflect::get(&object, &"streaming".into()) {
                let _ = Reflect::set(&streaming, &"text".into(), &text);
            }
        } else {
            inner.stream_text = None;
        }
        let _ = Reflect::set(&object, &"messages".into(), &messages);
        Object::freeze(object.unchecked_ref::<Object>());
        inner.snapshot = Some((version, object.clone()));
        Ok(object)
    }

    // Calls `listener` (synchronously, with no arguments) after each change; returns the function
    // that unsubscribes it (idempotent, harmless after `free()`).
    #[wasm_bindgen(unchecked_return_type = "() => void", skip_jsdoc)]
    pub fn subscribe(
        &self,
        #[wasm_bindgen(unchecked_param_type = "() => void")] listener: JsValue,
    ) -> Result<JsValue, JsValue> {
        let listener: Function = listener
            .dyn_into()
            .map_err(|_| invalid("a listener must be a function"))?;
        let inner = self
            .shared
            .try_borrow()
            .map_err(|_| Error::new(ErrorCode::InvalidState, "the client is running a step"))?;
        Ok(add_listener(&inner.listeners, &listener))
    }

    // `GET` the thread and find any pending approvals. Rejects with `busy` while another command's
    // request is in flight.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>", skip_jsdoc)]
    pub fn load(&self) -> Promise {
        self.command(Cmd::Load, &JsValue::UNDEFINED, None)
    }

    // Sends a new user message. Rejects with `invalid_argument` (blank), `busy`, `input_locked`
    // (the conversation awaits approval), `conflict` (the server refused it: 409), ...
    #[wasm_bindgen(unchecked_return_type = "Promise<void>", skip_jsdoc)]
    pub fn send(&self, #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue) -> Promise {
        self.command(Cmd::Send, &text, None)
    }

    // Approves a gated tool (a local draft until `submit`). Throws `busy`, `not_suspended`,
    // `unknown_call_id`.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn approve(
        &self,
        #[wasm_bindgen(js_name = callId, unchecked_param_type = "string")] call_id: JsValue,
    ) -> Result<(), JsValue> {
        Ok(self.exec(Cmd::Approve, &call_id, None, None)?)
    }

    // Rejects a gated tool, with an optional reason the model reads verbatim.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn reject(
        &self,
        #[wasm_bindgen(js_name = callId, unchecked_param_type = "string")] call_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null")] reason: Option<JsValue>,
    ) -> Result<(), JsValue> {
        Ok(self.exec(Cmd::Reject, &call_id, reason, None)?)
    }

    // Drops the draft for a tool.
    #[wasm_bindgen(skip_jsdoc)]
    pub fn clear(
        &self,
        #[wasm_bindgen(js_name = callId, unchecked_param_type = "string")] call_id: JsValue,
    ) -> Result<(), JsValue> {
        Ok(self.exec(Cmd::Clear, &call_id, None, None)?)
    }

    // POSTs the decisions (the cumulative set for this pause). Rejects with `busy`,
    // `not_suspended`, `empty_decisions`, ...
    #[wasm_bindgen(unchecked_return_type = "Promise<void>", skip_jsdoc)]
    pub fn submit(&self) -> Promise {
        self.command(Cmd::Submit, &JsValue::UNDEFINED, None)
    }

    // The way out of a locked composer: rejects every undecided tool with `reason`, submits, then
    // sends `text` once the run has completed (not paused: the same as `send`).
    #[wasm_bindgen(js_name = rejectAllAndSend, unchecked_return_type = "Promise<void>", skip_jsdoc)]
    pub fn reject_all_and_send(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null")] reason: Option<JsValue>,
    ) -> Promise {
        self.command(Cmd::RejectAllAndSend, &text, reason)
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
    fn command(&self, cmd: Cmd, text: &JsValue, reason: Option<JsValue>) -> Promise {
        // The executor is `Array.prototype.push`, bound to an array: it keeps `resolve` and
        // `reject` there (no closure, nor its glue, for it).
        let slots = Array::of1(&JsValue::UNDEFINED);
        let push = Reflect::get(&slots, &"push".into()).unwrap_or(JsValue::UNDEFINED);
        let executor: Function = push
            .unchecked_into::<Function>()
            .bind1(&slots, &JsValue::UNDEFINED)
            .unchecked_into();
        let promise: Promise = NewPromise::new(&executor).unchecked_into();
        // [undefined, undefined (the bound argument), resolve, reject]: functions, by the
        // `Promise` constructor's contract.
        let resolve: Function = slots.get(2).unchecked_into();
        let reject: Function = slots.get(3).unchecked_into();
        if let Err(e) = self.exec(cmd, text, reason, Some((resolve, reject.clone()))) {
            let _ = reject.call1(&JsValue::UNDEFINED, &error_to_js(&e));
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
        reason: Option<JsValue>,
        settle: Option<(Function, Function)>,
    ) -> Result<(), Error> {
        let (text, reason) = match cmd {
            Cmd::Load | Cmd::Submit => (String::new(), None),
            Cmd::Send | Cmd::RejectAllAndSend => args(text, MESSAGE, reason)?,
            Cmd::Approve | Cmd::Reject | Cmd::Clear => args(text, CALL_ID, reason)?,
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
    }
}

impl Drop for ApprovalClient {
    fn drop(&mut self) {
        if let Ok(mut inner) = self.shared.try_borrow_mut() {
            inner.shutdown();
        }
    }
}
