// The skin's own JS, bundled into the package's glue by scripts/build.sh: the JSON.parse fast paths
// of `parseThread` and `pendingApprovals`, string encoding into wasm memory, `ToolgateError`
// objects, and `ApprovalClient`'s I/O (listener lists, requests, storage, promises, snapshots).
// Small pieces whose JS is smaller or faster than what wasm-bindgen would generate for them; every
// decision about the protocol stays in the crate.

// The fast path of `parseThread`: `JSON.parse` builds the objects (nothing is faster at that), then
// the thread's shape is checked on what it built, with the rules of `src/thread.rs`. Anything off
// returns `undefined`, and the crate's own parser then runs on the same input and reports the
// exact error (code, message, path, line and column); it also takes a numeric thread id, whose
// digits `JSON.parse` could round. The check reads the objects `JSON.parse` returns, so where a key
// repeats, the value it checks is the one the caller gets.

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const text = (v) => v === undefined || v === null || typeof v === 'string';
const object = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

export function fastThread(input) {
  let doc;
  try {
    doc = JSON.parse(typeof input === 'string' ? input : utf8.decode(input));
  } catch {
    return;
  }
  let id = null;
  let messages = doc;
  if (!Array.isArray(doc)) {
    if (!object(doc) || !Array.isArray(doc.messages) || !text(doc.id)) return;
    messages = doc.messages;
    id = doc.id ?? null;
  }
  for (const m of messages) {
    if (!object(m) || !(m.role === undefined || typeof m.role === 'string') || !text(m.type)) return;
    if (!(text(m.__id) || typeof m.__id === 'number')) return;
    if (m.type === 'tool_call' || m.type === 'tool_call_result') {
      if (!Array.isArray(m.tools)) return;
      for (const t of m.tools) {
        if (!object(t) || typeof t.callId !== 'string') return;
        const a = t.approval;
        if (!(a == null || a === 'pending' || a === 'approved' || a === 'rejected')) return;
        if (!(t.inputs == null || typeof t.inputs === 'object')) return;
      }
    }
  }
  return { id, messages };
}

// `JSON.parse(text)`, `undefined` where it throws.
export function parse(text) {
  try {
    return JSON.parse(text);
  } catch {}
}

// `parseThread`'s result from text the crate's parser has checked (the slow path); `undefined`
// where `JSON.parse` throws.
export function threadOf(text, id, bare) {
  const doc = parse(text);
  if (doc !== undefined) return { id, messages: bare ? doc : doc.messages };
}

// The fast path of `pendingApprovals` for a string or an already-parsed value: `JSON.parse` checks
// the syntax (for a string), this checks the thread's frame (a `messages` array, or a bare array,
// of objects; an id that is a string, a number or null) and returns the last message as JSON text
// for the crate to read, or `''` when there is none. Anything off returns `undefined`, and the
// crate's own reading reports the exact error.
export function fastTail(input) {
  let doc = input;
  if (typeof input === 'string') {
    try {
      doc = JSON.parse(input);
    } catch {
      return;
    }
  }
  let messages = doc;
  if (!Array.isArray(doc)) {
    if (!object(doc) || !Array.isArray(doc.messages)) return;
    if (!(text(doc.id) || typeof doc.id === 'number')) return;
    messages = doc.messages;
  }
  for (const m of messages) if (!object(m)) return;
  if (!messages.length) return '';
  try {
    return JSON.stringify(messages[messages.length - 1]);
  } catch {
    return;
  }
}

// A `Uint8Array` of bytes given as one or as an `ArrayBuffer`; `undefined` for any other value.
export function bytesOf(v) {
  try {
    if (v instanceof Uint8Array) return v;
    if (v instanceof ArrayBuffer) return new Uint8Array(v);
  } catch {}
}

// A `Uint8Array` into `dest`, a view of wasm memory of its length.
export function copyInto(bytes, dest) {
  dest.set(bytes);
}

// A JS string as UTF-8 into `dest` (a view of wasm memory at least 3 bytes per UTF-16 unit, so
// the whole string fits): the number of bytes written.
const encoder = new TextEncoder();
export function encodeInto(s, dest) {
  return encoder.encodeInto(s, dest).written;
}

// The message of a thrown `Error`, else `other`.
const messageOf = (e, other) => {
  try {
    if (e instanceof Error) return e.message;
  } catch {}
  return other;
};

// `JSON.stringify(value)` for the crate: its text, `undefined` for a value JSON cannot hold (a
// function, a symbol, `undefined`), or `[message]` when it throws (a cycle, a bigint).
export function stringify(value) {
  try {
    return JSON.stringify(value);
  } catch (e) {
    return [messageOf(e, '')];
  }
}

// `new ApprovalClient`'s options as JSON text; `null` when they are no object (an array neither).
export function optionsJson(options) {
  return object(options) ? stringify(options) : null;
}

// `new Decisions(source)`: whether `source` is a `Suspension` object (as `pendingApprovals`
// returns), with `suspended` and `pending` (a proxy that throws is not one).
export function isSuspension(v) {
  try {
    return object(v) && 'suspended' in v && 'pending' in v;
  } catch {
    return false;
  }
}

// `isToolgateError(e)`: whether `e` is an error thrown by toolgate.
// (A value whose prototype or `name` cannot be read, such as some proxies, is not one.)
export function namedToolgateError(e) {
  try {
    return e instanceof Error && e.name === 'ToolgateError';
  } catch {
    return false;
  }
}

// A core error as JS sees it: an `Error` whose message is the error's `Display` form
// (`code: detail at path (line L, column C)`), with `name === "ToolgateError"` and the fields
// (`line` and `column` come as -1 when unknown: `null`).
export function toolgateError(code, detail, path, line, column) {
  if (line < 0) line = null;
  if (column < 0) column = null;
  let text = code + ': ' + detail;
  if (path !== null) text += ' at ' + path;
  if (line !== null && column !== null) text += ' (line ' + line + ', column ' + column + ')';
  return Object.assign(new Error(text), { name: 'ToolgateError', code, detail, path, line, column });
}

// An `ApprovalClient`'s listeners: a `Map` from each one's unsubscribe function to the listener.
// Unsubscribing is idempotent, and harmless after `free()` (which clears the map). A listener that
// is no function is not added (`undefined`: the crate throws).
export function addListener(listeners, listener) {
  if (typeof listener !== 'function') return;
  const off = () => {
    listeners.delete(off);
  };
  listeners.set(off, listener);
  return off;
}

// Calls the listeners present now (with no arguments, synchronously), skipping any removed by an
// earlier one; an exception is reported with `console.error` and does not stop the others.
export function callListeners(listeners) {
  for (const [off, listener] of [...listeners]) {
    if (!listeners.has(off)) continue;
    try {
      listener();
    } catch (e) {
      console.error(e);
    }
  }
}

// One request of an `ApprovalClient`: `fetch(url, init)` (`init`: JSON text) with an abort signal
// and a timeout of `ms` (for a stream, the wait for the headers and then every gap between
// chunks), which aborts it. Its course goes to `report(id, code, value)`, always from a promise
// job (never inside the crate's step that started it): a whole answer as `(status, bytes)`; a
// stream as `(status)` once its headers are in, `(-1, bytes)` per chunk and `(-2)` at its end; a
// failure as `(-4)` when the timeout aborted it, else `(-3, message)`. `report` returns `false`
// once the client is gone: the stream is then cancelled. Returns the function that cancels the
// request (clears its timeout and aborts it).
export function request(report, id, url, init, ms, stream) {
  const c = new AbortController();
  let timer;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => c.abort(), ms);
  };
  const end = (code, value) => {
    clearTimeout(timer);
    report(id, code, value);
  };
  arm();
  Promise.resolve()
    .then(async () => {
      const o = JSON.parse(init);
      o.signal = c.signal;
      const r = await fetch(url, o);
      if (!stream) return end(r.status, new Uint8Array(await r.arrayBuffer()));
      arm();
      if (!report(id, r.status)) return clearTimeout(timer);
      if (!r.body) return end(-2);
      const reader = r.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return end(-2);
        arm();
        if (!report(id, -1, value)) {
          clearTimeout(timer);
          return reader.cancel();
        }
      }
    })
    .catch((e) => end(c.signal.aborted ? -4 : -3, messageOf(e, e)));
  return () => {
    clearTimeout(timer);
    c.abort();
  };
}

// `f(value)`: a promise's `resolve` or `reject`, a request's cancel.
export function call(f, value) {
  f(value);
}

// `[resolve, reject, promise]` of a new promise.
export function deferred() {
  const d = [];
  d.push(new Promise((resolve, reject) => d.push(resolve, reject)));
  return d;
}

// `localStorage` (none in a worker, nor where reading it throws: a sandboxed frame, storage
// disabled): `getItem(key)` when `value` is `undefined`, else `setItem(key, value)`, or
// `removeItem(key)` when `value` is `null`. Storage errors (private mode, quota) are ignored.
export function storage(key, value) {
  try {
    if (value === undefined) return localStorage.getItem(key);
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, value);
  } catch {}
}

// `getSnapshot()`'s object: the head the crate wrote, with the messages array (reused until the
// messages change) and, while a message streams, its text (kept as a JS string that only grows);
// both objects frozen (the array again each time: a no-op once it is).
export function snapshot(head, messages, text) {
  if (text !== undefined) head.streaming.text = text;
  head.messages = Object.freeze(messages);
  return Object.freeze(head);
}
