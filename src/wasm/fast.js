// The skin's own JS, bundled into the package's glue by scripts/build.sh: the JSON.parse fast paths
// of `parseThread` and `pendingApprovals`, string encoding into wasm memory, `ToolgateError`
// objects, and `ApprovalClient`'s I/O (listener lists, requests, storage, promises, snapshots).
// Small pieces whose JS is smaller or faster than what wasm-bindgen would generate for them; every
// decision about the protocol stays in the crate. Its functions are arrows, which minify shorter;
// `isToolgateError`, which the package exports as it is, stays a `function` declaration.
// The declarations are in the order gzip compresses best (found by trying each one at every
// place: about 45 B of the package), not by topic. Any order works: while the module loads, none
// is called and none reads another (the crate calls them once `init()` is done).

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const text = (v) => v === undefined || v === null || typeof v === 'string';

// An id: a string, a number, or none.
const anId = (v) => text(v) || typeof v === 'number';

// A `Uint8Array` of bytes given as one or as an `ArrayBuffer`; `undefined` for any other value.
// Known by its tag, not `instanceof`: bytes from another realm (a frame, a test environment's
// `TextEncoder`) count too.
export const bytesOf = (v) => {
  try {
    const tag = v?.[Symbol.toStringTag];
    if (tag == 'Uint8Array') return v;
    if (tag == 'ArrayBuffer') return new Uint8Array(v);
  } catch {}
};

// `JSON.parse(text)`, `undefined` where it throws.
export const parse = (text) => {
  try {
    return JSON.parse(text);
  } catch {}
};

// `v` as bytes (`bytesOf`); else a `TypeError` that fails the request: a custom fetch's body or
// stream chunk that is no bytes (`undefined`, a string) is read here, as the crate reads only bytes.
const bytes = (v) => {
  const b = bytesOf(v);
  if (!b) throw TypeError('the fetch gave no bytes');
  return b;
};

const object = (v) => v !== null && typeof v === 'object' && !isArray(v);

// A core error as JS sees it: an `Error` whose message is the error's `Display` form
// (`code: detail at path (line L, column C)`), with `name === "ToolgateError"` and the fields
// (`path` comes as `null` when unknown, or is left out; `line` and `column` come as -1 when
// unknown, or are left out: `null`).
export const toolgateError = (code, detail, path = null, line, column) => {
  let text = code + ': ' + detail;
  if (path != null) text += ' at ' + path;
  if (line >= 0 && column >= 0) text += ' (line ' + line + ', column ' + column + ')';
  return Object.assign(Error(text), {
    name: 'ToolgateError', code, detail, path, line: line >= 0 ? line : null, column: column >= 0 ? column : null,
  });
};

// The fast path of `parseThread`: `JSON.parse` builds the objects (nothing is faster at that), then
// the thread's shape is checked on what it built, with the rules of `src/thread.rs`. Anything off
// returns `undefined`, and the crate's own parser then runs on the same input and reports the
// exact error (code, message, path, line and column); it also takes a numeric thread id, whose
// digits `JSON.parse` could round. The check reads the objects `JSON.parse` returns, so where a key
// repeats, the value it checks is the one the caller gets.
export const fastThread = (input) => {
  let doc;
  try {
    doc = JSON.parse(typeof input === 'string' ? input : utf8.decode(input));
  } catch {
    return;
  }
  let messages = doc;
  let id = null;
  if (!isArray(doc)) {
    if (!object(doc) || !isArray(doc.messages) || !text(doc.id)) return;
    messages = doc.messages;
    id = doc.id ?? null;
  }
  for (const m of messages) {
    if (!object(m) || !(m.role === undefined || typeof m.role === 'string') || !text(m.type)) return;
    if (!anId(m.__id)) return;
    if (m.type === 'tool_call' || m.type === 'tool_call_result') {
      if (!isArray(m.tools)) return;
      for (const t of m.tools) {
        if (!object(t)) return;
        const a = t.approval;
        if (!(a == null || ['pending', 'approved', 'rejected'].includes(a))) return;
        // (No callId only on a tool that is not gated.)
        if (!(typeof t.callId === 'string' || (t.callId == null && a == null))) return;
        if (!(t.inputs == null || typeof t.inputs === 'object')) return;
      }
    }
  }
  return { id, messages };
};

// `list` (its first `keep` items alone, in a new array, when `keep` is not 0) with the items of
// the array `items` appended (`items` itself when `list` is `undefined`), each frozen all the way
// down: a long list crosses in batches, so the crate never holds the whole list's text, and only
// the messages that changed cross at all (the last snapshot's objects are kept for the others).
// (A spread, not `slice`: V8 copies a frozen array's items one by one in `slice`, about 60 times
// slower at 11,000.)
export const append = (list, items, keep) => {
  // The batch's last item is its messages' flags: each message's text (2: its content; 4: the
  // text of its part `f >> 3`) and its tools' results (1: each the raw tool's at its place) are
  // in `raw` alone.
  const flags = items.pop();
  items.forEach((m, i) => {
    const f = flags[i];
    if (f & 2) m.text = m.raw.content;
    if (f & 4) m.text = m.raw.parts[f >> 3].text;
    if (f & 1) m.tools.map((t, k) => (t.result = m.raw.tools[k].result ?? null));
  });
  items.map(freeze);
  if (keep) (list = [...list]).length = keep;
  if (!list) return items;
  for (const item of items) list.push(item);
  return list;
};

// `parseThread`'s result from text the crate's parser has checked (the slow path); `undefined`
// where `JSON.parse` throws.
export const threadOf = (text, id, bare) => {
  const doc = parse(text);
  if (doc !== undefined) return { id, messages: bare ? doc : doc.messages };
};

// The bytes of a `Uint8Array` from `offset` into `dest`, a view of wasm memory (as many as it holds).
// Copies nothing where that throws (a detached buffer, a chunk that is no `Uint8Array`): no
// exception ever unwinds through the crate.
export const copyInto = (bytes, dest, offset) => {
  try {
    dest.set(bytes.subarray(offset, offset + dest.length));
  } catch {}
};

// The encoder of `encodeInto` (and of `tailDoc` and `check`).
const encoder = new TextEncoder();

// `localStorage` (none in a worker, nor where reading it throws: a sandboxed frame, storage
// disabled): `getItem(key)` when `value` is `undefined`, else `setItem(key, value)`, or
// `removeItem(key)` when `value` is `null`. Storage errors (private mode, quota) are not thrown:
// a write that failed returns `false`.
export const storage = (key, value, failed) => {
  try {
    if (value === undefined) return localStorage.getItem(key);
    try {
      // One write, so other tabs see one change (one `storage` event).
      // (`undefined`, whatever a patched `setItem` returns: any other value reads as a failure.)
      if (value != null) return void localStorage.setItem(key, value);
    } catch {
      failed = false;
    }
    // Removed when asked, and when the value cannot be written (a full storage): never an older
    // one left (drafts the person has since changed).
    localStorage.removeItem(key);
  } catch {}
  return failed;
};

// A JS string as UTF-8 into `dest` (a view of wasm memory at least 3 bytes per UTF-16 unit, so
// the whole string fits): the number of bytes written.
export const encodeInto = (s, dest) => {
  return encoder.encodeInto(s, dest).written;
};

// The message of a thrown `Error`, else `other`.
const messageOf = (e, other) => {
  try {
    if (e instanceof Error) return e.message;
  } catch {}
  return other;
};

// `pendingApprovals(input, { check: 'tail' })`, for a document that ends with its `messages` array
// (`{ ..., "messages": [...] }`): the document cut to its last message, read from its end
// backwards so that only the tail is read at all: `'{"messages":['` and the text from the last
// message's `{` to the end, a string or bytes like `input`, for the crate to read in full. Going
// backwards, a quote with an even number of backslashes before it is a string's end (an escaped
// one has an odd number): exact on well-formed JSON; what the scan gets wrong on a broken document
// the crate's reading of the cut finds, unless it lies before the tail. `undefined` for a full read:
// `check` absent or `'all'`, a parsed value, a bare array, a document ending otherwise, an empty
// array or a last object without a `role` key, or anything else unexpected (the full read reports
// it); the `ToolgateError` to throw for another `check`, or
// options that are no object (`'tail'` for `{ check: 'tail' }`).
export const tailDoc = (input, options) => {
  if (options != null && typeof options != 'object') return fail('the options must be an object');
  try {
    const check = options?.check;
    if (check === undefined || check === 'all') return;
    if (check !== 'tail') return fail('check must be "all" or "tail"', 'check');
    const str = typeof input === 'string';
    const s = str ? input : bytesOf(input);
    const at = (i) => (str ? s.charCodeAt(i) : s[i]);
    let i = s.length;
    // JSON's white space (no other: a BOM or a no-break space before the document is for the
    // full read to refuse).
    const ws = (c) => [32, 10, 13, 9].includes(c);
    // The last character before `i` that is no white space, `i` left on it.
    const back = () => {
      let c;
      do {
        if (i <= 0) throw 0;
        c = at(--i);
      } while (ws(c));
      return c;
    };
    // `{`, and `]}` at the end (a bare array is read whole: cut short after any array of objects
    // in its last message, it would read as whole).
    let c = 0;
    while (ws(at(c))) c++;
    if (at(c) !== 123 || back() !== 125 || back() !== 93) return;
    // The last message, from its `}` to its `{`, strings jumped from their closing quote to their
    // opening one. It must have a `role` member of its own: an array after `messages` (a server's
    // `"approvals": [{ "id", "name", "reason" }]`) ends the document the same way, and its last
    // object is no message. An empty array, which could be any array, is read whole (a thread with
    // no messages is small).
    if (back() !== 125) return;
    let role, prev;
    for (let depth = 1; depth; prev = c) {
      if ((c = back()) === 34) {
        const end = i;
        do {
          i = s.lastIndexOf(str ? '"' : 34, i - 1);
          for (c = i; at(c - 1) === 92; ) c--;
        } while (i > 0 && (i - c) & 1);
        if (i < 0) return;
        // A key (`:` after it) of the message's own, spelled `"role"`.
        if (depth == 1 && prev === 58 && end - i == 5 && at(i + 1) === 114 && at(i + 2) === 111 && at(i + 3) === 108 && at(i + 4) === 101) role = 1;
        c = 34;
      } else depth += (c === 125 || c === 93) - (c === 123 || c === 91);
    }
    const cut = i;
    c = back();
    if (!role || (c !== 44 && c !== 91)) return;
    const head = '{"messages":[';
    if (str) return head + s.slice(cut);
    // Bytes stay bytes, for the crate to read as the full read does (numbers as written).
    const b = new Uint8Array(13 + s.length - cut);
    b.set(s.subarray(cut), encoder.encodeInto(head, b).written);
    return b;
  } catch {}
};

// The fast path of `pendingApprovals` for a string or an already-parsed value: `JSON.parse` checks
// the syntax (for a string), this checks the thread's frame (a `messages` array, or a bare array,
// of objects; an id that is a string, a number or null) and returns the last message as JSON text
// for the crate to read, or `''` when there is none. Anything off returns `undefined`, and the
// crate's own reading reports the exact error.
export const fastTail = (input) => {
  // (Whatever reading the value throws, a getter or a revoked proxy, leaves it to the crate too.)
  try {
    const doc = typeof input === 'string' ? JSON.parse(input) : input;
    let messages = doc;
    if (!isArray(doc)) {
      if (!object(doc) || !isArray(doc.messages)) return;
      if (!anId(doc.id)) return;
      messages = doc.messages;
    }
    for (const m of messages) if (!object(m)) return;
    return messages.length ? JSON.stringify(messages[messages.length - 1]) : '';
  } catch {}
};

// `new Decisions(source)`: a `Suspension` object (as `pendingApprovals` returns), read for the
// crate. `undefined` when `source` is none: no object with `suspended` and `pending` (a proxy that
// throws is not one). Else `[json, tail]`: `stringify`'s result (the crate's parser reads the text
// first, for its errors) and, when that is text, either the `ToolgateError` to throw (the first
// gated tool of `pending`, then of `decided`, that lacks a string `callId` or an `approval`, or
// either array missing) or the JSON text of a `tool_call` message with those tools (`callId`,
// `approval`, `rejectReason`, in that order), the string `messageId` as its `__id`, and
// `s` when `pending` is not empty (the suspension is suspended).
export const readSuspension = (v) => {
  try {
    if (!(object(v) && 'suspended' in v && 'pending' in v)) return;
  } catch {
    return;
  }
  const json = stringify(v);
  if (typeof json != 'string') return [json];
  const doc = JSON.parse(json);
  const tools = [];
  const fail = (detail, path) => [json, toolgateError('parse_error', detail, '$.' + path)];
  for (const key of ['pending', 'decided']) {
    const items = doc?.[key];
    if (!isArray(items)) return fail('a suspension needs a "' + key + '" array', key);
    for (const [i, t] of items.entries()) {
      const at = key + '[' + i + ']';
      const { callId, approval, rejectReason } = t ?? {};
      if (typeof callId != 'string') return fail('a gated tool needs a string callId', at);
      if (!['pending', 'approved', 'rejected'].includes(approval))
        return fail('approval must be "pending", "approved" or "rejected"', at + '.approval');
      tools.push({ callId, approval, rejectReason });
    }
  }
  const id = doc.messageId;
  const s = doc.pending.length || undefined;
  return [json, JSON.stringify({ __id: typeof id == 'string' ? id : null, type: 'tool_call', tools, s })];
};

// `new ApprovalClient(options)`: the options read and checked as the crate's `Config::from_json`
// and `Config::validate` do (same order, codes, messages and paths), here because that code is
// smaller in JS than in wasm. The options are read as `JSON.stringify` writes them. Returns the
// `ToolgateError` to throw when they are no object or JSON cannot hold them, else
// `[json, checked, fetch]`: their JSON text (for the crate's JSON parser, whose error, if any,
// comes first), either the error to throw or the config as JSON text for `Config::from_checked` (an
// array in `KEYS`' order, each value checked, `null` for a default), and the `fetch` option as it
// was read and checked (for `useFetch`: read once).
export const readOptions = (options) => {
  // `fetch` is a function, which JSON leaves out: checked here (see `useFetch`). (Options that
  // throw when read, a getter or a revoked proxy, are refused as JSON refuses them.)
  let f;
  try {
    if (!object(options)) return fail('the options must be an object');
    f = options.fetch;
    // `headers` as a `Headers` or a `Map`, which JSON would write as `{}`: its pairs.
    const h = options.headers;
    if (h instanceof Map || (typeof Headers == 'function' && h instanceof Headers))
      options = { ...options, headers: [...h] };
  } catch {
    return fail('the options must be JSON-serializable');
  }
  if (f != null && typeof f != 'function')
    return fail('invalid client options: fetch must be a function', 'fetch');
  // A number JSON cannot hold (NaN, Infinity), which it writes as null (the default), as text:
  // refused as the wrong type it is.
  const json = stringify(options, (_, v) => (typeof v == 'number' && !isFinite(v) ? '' + v : v));
  if (typeof json != 'string') return fail('the options must be JSON-serializable');
  return [json, check(JSON.parse(json)), f];
};

// `Array.isArray`, under a name that minifies to one letter.
const isArray = Array.isArray;

// `f(value)`: a promise's settle function, a request's cancel.
// (The wasm calls it as a function with no result: whatever `f` returns is dropped.)
export const call = (f, value) => f(value);

// Each key's kind: e (one of two strings, or null), t (a string), s (a string or null), i (an
// id: a string or null, '' is null), h (headers), b (a boolean), n (a non-negative integer), a (one
// that fits 32 bits).
const KINDS = 'eetshbbbniiissssann';

const fail = (detail, path) => toolgateError('invalid_argument', detail, path);

// `v` frozen with every object it holds, except what is frozen already and all it holds: the
// messages array (its new items frozen as they crossed) is not walked.
const freeze = (v) => {
  if (v === Object(v) && !Object.isFrozen(v)) Object.values(Object.freeze(v)).map(freeze);
  return v;
};

const check = (doc) => {
  const out = KEYS.map(() => null);
  const bad = (name, what) => fail(name + ' ' + what, name);
  let path;
  // `top`: 1 for a key of the options, 0 for one of `routes` or `retry`.
  const read = (name, v, top) => {
    const i = KEYS.indexOf(name);
    if (i < 0 || i < 12 != top) return;
    path = name;
    const k = KINDS[i];
    // `null` is the default, for every option but `threadId` (`out` holds `null` already).
    if (v == null && k != 't') return;
    const type = typeof v;
    if (k == 'h') {
      v = isArray(v) ? v : object(v) ? Object.entries(v) : [0];
      for (const p of v)
        if (!(isArray(p) && p.length == 2 && typeof p[0] == 'string' && typeof p[1] == 'string'))
          throw 'must be an object of header values or an array of [name, value] pairs';
    } else if (k == 'b') {
      if (type != 'boolean') throw 'must be a boolean';
    } else if (k == 'n' || k == 'a') {
      if (type != 'number') throw 'must be a number';
      if (!(Number.isInteger(v) && v >= 0 && v < 2 ** 64)) throw 'must be a non-negative integer';
      if (k == 'a' && v >= 2 ** 32) throw 'is too large';
    } else {
      if (type != 'string') throw 'must be a string';
      const one = [['neuron', 'sidenet'], ['stream', 'collect']][i];
      if (k == 'e' && !one.includes(v)) throw `must be "${one[0]}" or "${one[1]}"`;
      if (k == 'i' && !v) v = null;
    }
    out[i] = v;
  };
  if (!object(doc)) return fail('invalid client options: the options must be an object');
  try {
    for (const [key, v] of Object.entries(doc)) {
      if (key == 'routes' || key == 'retry') {
        path = key;
        if (v == null) continue;
        if (!object(v)) throw 'must be an object';
        for (const [name, w] of Object.entries(v)) read(key + '.' + name, w, 0);
      } else read(key, v, 1);
    }
  } catch (what) {
    return fail('invalid client options: ' + path + ' ' + what, path);
  }
  const [dialect, transport, id, base, headers, , , , timeout, token, , agent] = out;
  if (id == null) return fail('invalid client options: threadId is required', 'threadId');
  if (/^\p{White_Space}*$/u.test(id)) return bad('threadId', 'must not be empty');
  if (/\p{Cc}/u.test(id)) return bad('threadId', 'must not contain control characters');
  if (encoder.encode(id).length > 1024) return bad('threadId', 'is longer than 1024 bytes');
  const url = (base ?? '').replace(/\/+$/, '');
  // (Each regex inline, where gzip finds its repeats. A `test(null)` reads the text "null", which
  // none of them matches: an option left `null` passes.)
  if (/[\p{Cc}\p{White_Space}]/u.test(url))
    return bad('baseUrl', 'must not contain spaces or control characters');
  if (!/^(https?:\/\/|\/|$)/.test(url))
    return bad('baseUrl', 'must be empty (same origin), a path starting with / or an http(s) URL');
  for (let i = 12; i < 16; i++) {
    const route = out[i];
    if (route != null && route[0] != '/') return bad(KEYS[i], 'must start with /');
    if (/[\p{Cc}\p{White_Space}]/u.test(route))
      return bad(KEYS[i], 'must not contain spaces or control characters');
  }
  for (const [name, value] of headers ?? []) {
    const q = JSON.stringify(name);
    if (!/^[-!#$%&'*+.^_`|~0-9A-Za-z]+$/.test(name)) return fail('invalid header name ' + q, 'headers');
    if (/[\r\n\0]/.test(value)) return fail('the value of header ' + q + ' contains a line break', 'headers');
    // A character a header value cannot carry (`fetch` sends one byte per character).
    if (/[^\0-\xff]/.test(value)) return fail('the value of header ' + q + ' is not Latin-1 text', 'headers');
  }
  if (/\p{Cc}/u.test(token)) return bad('token', 'must not contain control characters');
  if (/[^\0-\xff]/.test(token)) return bad('token', 'must be Latin-1 text');
  if (dialect == 'sidenet' && transport == 'collect') {
    if (agent == null) return bad('agentId', 'is required with transport "collect"');
    if (/[\p{Cc}\p{White_Space}]/u.test(agent))
      return bad('agentId', 'must not contain spaces or control characters');
  }
  if (out[16] == 0) return bad('retry.attempts', 'must be at least 1');
  if (timeout == 0) return bad('timeoutMs', 'must be positive');
  return JSON.stringify(out);
};

// The options' keys, in the order of `Config::from_checked`'s array (see `readOptions`).
const KEYS = [
  'dialect', 'transport', 'threadId', 'baseUrl', 'headers', 'autoSubmit', 'persist',
  'reloadAfterPost', 'timeoutMs', 'token', 'agentVersionId', 'agentId', 'routes.chat',
  'routes.thread', 'routes.stream', 'routes.run', 'retry.attempts', 'retry.backoffMs',
  'retry.maxBackoffMs',
];

// `JSON.stringify(value)` for the crate (and `replacer`, for the options): its text, `undefined`
// for a value JSON cannot hold (a function, a symbol, `undefined`), or `[message]` when it throws
// (a cycle, a bigint).
export const stringify = (value, replacer) => {
  try {
    return JSON.stringify(value, replacer);
  } catch (e) {
    return [messageOf(e, '')];
  }
};

// `isToolgateError(e)`: whether `e` is an error thrown by toolgate.
// (A value whose prototype or `name` cannot be read, such as some proxies, is not one.)
export function isToolgateError(e) {
  try {
    return e instanceof Error && e.name === 'ToolgateError';
  } catch {
    return false;
  }
}

// Calls the listeners present now (with no arguments, synchronously), skipping any removed by an
// earlier one; an exception is reported with `console.error` and does not stop the others (nor
// does a `console.error` that throws, as test setups that fail on console errors make it: nothing
// may unwind through the crate, which then skips the rest of its call, a `free()` among it).
export const callListeners = (listeners) => {
  for (const [off, listener] of [...listeners]) {
    if (!listeners.has(off)) continue;
    try {
      listener();
    } catch (e) {
      try {
        console.error(e);
      } catch {}
    }
  }
};

// One request of an `ApprovalClient`: `fetch(url, init)` (`init`: JSON text) with an abort signal
// and a timeout of `ms` (for a stream, the wait for the headers and then every gap between
// chunks), which aborts it. Its course goes to `report(id, code, value)`, always from a promise
// job (never inside the crate's step that started it): a whole answer as `(status, bytes)`; a
// stream as `(status)` once its headers are in, `(-1, bytes)` per chunk and `(-2)` at its end; a
// failure as `(-4)` when the timeout fired (the request is then aborted), else `(-3, message)`;
// nothing once it is cancelled or timed out. `report` returns `false` once the client is gone: the
// stream is then cancelled. Returns the function that cancels the request (clears its timeout and
// aborts it).
// A client's own `fetch` (the `fetch` option as `readOptions` read and checked it, once: a getter
// is not asked again), kept on its callback: `request` gets that with every request.
// (The wasm calls it as a function with no result: the value of the assignment is dropped.)
export const useFetch = (report, f) => (report.f = f);

// The reason every cancelled request is aborted with: one `AbortError`, made on the first
// cancellation (`abort()` without a reason builds a new one, with its stack, every time: about
// 5 µs a request).
let cancelled;

export const request = (report, id, url, init, ms, stream) => {
  const c = new AbortController(), signal = c.signal;
  let timer, body, reader, due;
  // Clears the timeout (not for a stream's headers or a chunk: `arm` moves its deadline) and
  // reports, unless the request is cancelled or timed out (then nothing): whether the client still
  // wants it (not if the report's step cancelled it).
  const end = (code, value) => {
    if (code < -1 || !stream) timer = clearTimeout(timer);
    return !signal.aborted && report(id, code, value) && !signal.aborted;
  };
  // Aborts the fetch, and cancels its body, being read or not yet (a `Response` a custom fetch
  // built may not follow the signal). Nothing here throws into the crate's step that cancels (a
  // custom body's `cancel` may be missing, throw, or return no promise): that would leave the
  // client borrowed for good.
  const cancel = () => {
    clearTimeout(timer);
    c.abort(cancelled ??= new DOMException('cancelled', 'AbortError'));
    try {
      (reader || body)?.cancel().catch(() => {});
    } catch {}
  };
  // The timeout is reported here, not left to the fetch (a custom one may ignore the signal).
  // One timer per request, not one per chunk: each chunk moves the deadline, and a timer that
  // fires before it waits out the rest.
  const fire = () => {
    const left = due - performance.now();
    if (left > 0) timer = setTimeout(fire, left);
    else {
      end(-4);
      cancel();
    }
  };
  const arm = () => {
    due = performance.now() + ms;
    timer ??= setTimeout(fire, ms);
  };
  arm();
  Promise.resolve()
    .then(async () => {
      const o = JSON.parse(init);
      o.signal = signal;
      // Cancelled in the step that issued it (a quiet reload a submission replaced): never sent.
      signal.throwIfAborted();
      // A custom fetch gets the headers as a `Headers`, and is called as a plain function
      // (`window.fetch` refuses another `this`).
      let f = report.f;
      if (f) o.headers = new Headers(o.headers);
      else f = fetch;
      const r = await f(url, o);
      body = r.body;
      // Cancelled or timed out while a fetch that ignores the signal was out: its body is let go
      // unread (the `catch` below cancels it).
      signal.throwIfAborted();
      // A status that is no HTTP status (from something that is no `Response`) is a failure.
      const s = r.status;
      if (s >>> 0 !== s || s > 999) throw TypeError('the fetch gave no Response');
      if (!stream) return end(s, bytes(await r.arrayBuffer()));
      // A page (an app's fallback route at a wrong URL) says so, not "the stream was cut short";
      // not a 204 (the replay's "nothing paused", which some frameworks label text/html).
      if (s < 300 && s != 204 && /html/i.test(r.headers?.get?.('content-type')))
        throw TypeError('the reply is an HTML page, not an event stream');
      if (!end(s)) return cancel();
      if (!r.body) return end(-2);
      reader = r.body.getReader();
      for (;;) {
        arm();
        const { done, value } = await reader.read();
        if (done) return end(-2);
        if (!end(-1, bytes(value))) return cancel();
      }
    })
    .catch((e) => {
      end(-3, messageOf(e, e));
      cancel();
    });
  return cancel;
};

// `[settle, promise]` of a new promise: `settle(value)` resolves it (with `undefined`) when
// `value` is `undefined`, else rejects it with `value`.
export const deferred = () => {
  let settle;
  const promise = new Promise((resolve, reject) => {
    settle = (v) => (v === undefined ? resolve() : reject(v));
  });
  return [settle, promise];
};

// Calls `f(NaN, 0, value)` with what `key` holds now ("" once removed) each time another tab
// changes it: the `storage` event (of this window: none in a worker, nor for the key ""). Not the
// event's `newValue`: when two tabs write at once, each takes in the write that storage kept, the
// last one. Returns the function that stops listening, or, given `true`, reads the key again (a
// change that came during a command, or a pause another tab may have saved drafts for).
export const listen = (key, f) => {
  // The controller as the options: its `signal` removes the listener once aborted.
  const c = new AbortController();
  const read = () => f(NaN, 0, storage(key) ?? "");
  // (A `window` without `addEventListener`, as a server-side stub: no other tabs to hear.)
  key && globalThis.window?.addEventListener?.("storage", (e) => e.key === key && read(), c);
  return (again) => (again ? key && read() : c.abort());
};

// `getSnapshot()`'s object: the head the crate wrote (`json`), with the messages array (reused
// until the messages change) and, while a message streams, its text: `text`, appended to the text
// of `prev` (the last snapshot, of the same streaming message) when given, so that only what the
// stream added crosses; frozen all the way down (each message once, when it is new: a streamed
// delta freezes only the small head). A head that is the last one's but for its `version` (a
// streamed delta: the text is written as "") is not parsed: that snapshot's objects are kept.
// The last snapshot and its head's JSON from the first `,` are kept as `listeners.s` and
// `listeners.h` (outside the core's `RefCell`, as the listeners' `Map` is): `s` is what
// `getSnapshot()` returns while a step runs. `undefined` for a `json` that does not parse.
export const snapshot = (json, messages, text, prev, listeners, version) => {
  const rest = json.slice(json.indexOf(","));
  const last = listeners.s;
  let head;
  if (last && rest == listeners.h && (prev || text === undefined)) {
    head = { ...last, version };
    if (prev) head.streaming = { ...last.streaming };
  } else {
    head = parse(json);
    if (!head) return;
    // Its items are frozen already (`append`): not walked again.
    head.messages = Object.freeze(messages);
  }
  if (text !== undefined) head.streaming.text = prev ? prev.streaming.text + text : text;
  listeners.h = rest;
  return (listeners.s = freeze(head));
};

// An `ApprovalClient`'s listeners: a `Map` from each one's unsubscribe function to the listener.
// Unsubscribing is idempotent, and harmless after `free()` (which clears the map). A listener that
// is no function is not added: the `ToolgateError` for the crate to throw.
export const addListener = (listeners, listener) => {
  if (typeof listener !== 'function') return fail('a listener must be a function');
  const off = () => {
    listeners.delete(off);
  };
  listeners.set(off, listener);
  return off;
};
