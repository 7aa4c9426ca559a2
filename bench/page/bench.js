// The benchmark cases, run in the page (headless Chromium) by bench/run.mjs through
// `page.evaluate(() => window.bench.<case>(...))`. Each case times toolgate and the JS a user would
// write instead in the same run, interleaved (the order alternates run by run, so drift and
// background load hit both alike), after warm-up, with a GC before every timed sample when the
// page has `gc()` (Chromium started with --js-flags=--expose-gc). Results are plain data.
import init, { pendingApprovals, parseThread, ApprovalClient } from '/pkg/toolgate.js';
import { neuronThread, sidenetHistory, textDeltas, sseReply } from './gen.js';

const now = () => performance.now();
const gc = typeof globalThis.gc === 'function' ? globalThis.gc : () => {};
let sink; // results land here so nothing is optimized away

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Times `fn` once per sample, `k` calls per sample (so sub-millisecond calls are timed in a batch). */
function timeBatch(fn, k) {
  gc();
  const t0 = now();
  for (let i = 0; i < k; i++) sink = fn();
  return (now() - t0) / k;
}

/**
 * Runs the synchronous functions of `fns` ({name: fn}) interleaved: `warmups` untimed calls each,
 * then `runs` samples each (the order rotates every run). A sample batches enough calls to last at
 * least `minMs` (timer resolution). Returns {name: {median, min, max, samples, batch}}.
 */
function compareSync(fns, { runs, warmups, minMs = 20 }) {
  const names = Object.keys(fns);
  const batch = {};
  for (const n of names) {
    // Warm-up calls (at least one); the last one also sizes the batch.
    for (let i = 1; i < warmups; i++) sink = fns[n]();
    const t = timeBatch(fns[n], 1);
    batch[n] = t >= minMs ? 1 : Math.min(2000, Math.ceil(minMs / Math.max(t, 0.005)));
  }
  const samples = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < runs; r++) {
    const order = names.map((_, i) => names[(i + r) % names.length]);
    for (const n of order) samples[n].push(timeBatch(fns[n], batch[n]));
  }
  return summarize(samples, batch);
}

/** The same for async functions that return the time they measured themselves (ms). */
async function compareAsync(fns, { runs, warmups }) {
  const names = Object.keys(fns);
  for (const n of names) for (let i = 0; i < warmups; i++) await fns[n]();
  const samples = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < runs; r++) {
    const order = names.map((_, i) => names[(i + r) % names.length]);
    for (const n of order) {
      gc();
      samples[n].push(await fns[n]());
    }
  }
  return summarize(samples);
}

function summarize(samples, batch = {}) {
  const out = {};
  for (const [n, xs] of Object.entries(samples)) {
    out[n] = { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), samples: xs, batch: batch[n] ?? 1 };
  }
  return out;
}

function check(cond, what) {
  if (!cond) throw new Error(`bench self-check failed: ${what}`);
}

// ------------------------------------------------------------------------------------------------
// Setup

let ready;
let wasm; // the module's exports, as init() gives them (its `memory` among them)
export function setup() {
  ready ??= init().then((exports) => {
    wasm = exports;
    return {
      gc: typeof globalThis.gc === 'function',
      crossOriginIsolated: globalThis.crossOriginIsolated === true,
      // The timer's resolution, as observed: the smallest non-zero step of performance.now().
      timerResolutionMs: (() => {
        let min = Infinity;
        for (let i = 0; i < 200; i++) {
          const a = now();
          let b = now();
          while (b === a) b = now();
          min = Math.min(min, b - a);
        }
        return min;
      })(),
      userAgent: navigator.userAgent,
    };
  });
  return ready;
}

// ------------------------------------------------------------------------------------------------
// Memory: what a client's load of a long thread grows wasm memory by (run in a fresh page each:
// a WebAssembly memory never shrinks, so what a load grew it by stays with the page)

/** Loads a Neuron thread of about `size` bytes (or a Sidenet history of `size` UI messages) into
 * a new `ApprovalClient`, its requests answered in the page, and reads its snapshot. */
export async function memoryLoad({ dialect, size }) {
  await ready;
  const body = dialect === 'neuron' ? neuronThread(size) : JSON.stringify({ id: 'h', messages: sidenetHistory(size) });
  const bytes = new TextEncoder().encode(body).length;
  const client = new ApprovalClient({
    dialect,
    threadId: 'memory',
    baseUrl: location.origin,
    persist: false,
    fetch: async (url) =>
      /stream/.test(url) ? new Response(null, { status: 204 }) : new Response(body, { headers: { 'content-type': 'application/json' } }),
  });
  const before = wasm.memory.buffer.byteLength;
  const t0 = now();
  await client.load();
  const snap = client.getSnapshot();
  const ms = now() - t0;
  const grown = wasm.memory.buffer.byteLength - before;
  check(snap.loaded && snap.messages.length > 0 && snap.error === null, `the ${dialect} thread loads`);
  client.free();
  return { bytes, grown, ms, messages: snap.messages.length };
}

// ------------------------------------------------------------------------------------------------
// Cases 1 and 2: pending detection and full parse on synthetic Neuron threads

const threads = new Map();

/** Generates the thread of `bytes` (once) and its UTF-8 bytes, outside any timed region. */
export function prepareThread(bytes) {
  for (const k of threads.keys()) if (k !== bytes) threads.delete(k); // one big thread alive at a time
  if (!threads.has(bytes)) {
    const t0 = now();
    const s = neuronThread(bytes);
    const u8 = new TextEncoder().encode(s);
    threads.set(bytes, { s, u8, genMs: now() - t0 });
  }
  const { s, u8, genMs } = threads.get(bytes);
  // Self-check: both sides agree on the pause before anything is timed.
  const js = JSON.parse(s);
  const last = js.messages.at(-1);
  const pendingJs = last.tools.filter((t) => t.approval === 'pending').map((t) => t.callId);
  const tg = pendingApprovals(s);
  const tgBytes = pendingApprovals(u8);
  check(tg.suspended && tgBytes.suspended, 'the synthetic thread is suspended');
  check(JSON.stringify(tg.pending.map((t) => t.callId)) === JSON.stringify(pendingJs), 'pending callIds agree');
  check(JSON.stringify(tgBytes.pending.map((t) => t.callId)) === JSON.stringify(pendingJs), 'pending callIds agree (bytes)');
  check(pendingJs.length === 2, 'two pending tools on the tail');
  // The tail check finds the same suspension as the full one, from both inputs.
  const same = JSON.stringify(tg);
  check(JSON.stringify(pendingApprovals(s, TAIL)) === same, 'the tail check agrees (string)');
  check(JSON.stringify(pendingApprovals(u8, TAIL)) === same, 'the tail check agrees (bytes)');
  return { bytes: u8.length, chars: s.length, messages: js.messages.length, genMs };
}

const jsTail = (t) => {
  const last = t.messages.at(-1);
  return last?.type === 'tool_call' ? last.tools.filter((x) => x.approval === 'pending') : [];
};

const TAIL = { check: 'tail' };

/** Case 1: pendingApprovals (string, bytes; full and tail check) against JSON.parse + the tail filter. */
export function pending(bytes, { runs = 7, warmups = 2 } = {}) {
  const { s, u8 } = threads.get(bytes);
  return compareSync(
    {
      toolgateString: () => pendingApprovals(s),
      baselineString: () => jsTail(JSON.parse(s)),
      toolgateBytes: () => pendingApprovals(u8),
      baselineBytes: () => jsTail(JSON.parse(new TextDecoder().decode(u8))),
      toolgateStringTail: () => pendingApprovals(s, TAIL),
      toolgateBytesTail: () => pendingApprovals(u8, TAIL),
    },
    { runs, warmups },
  );
}

/** Case 2: parseThread against JSON.parse. */
export function fullParse(bytes, { runs = 7, warmups = 2 } = {}) {
  const { s } = threads.get(bytes);
  const a = parseThread(s);
  const b = JSON.parse(s);
  check(a.messages.length === b.messages.length, 'parseThread keeps every message');
  return compareSync({ toolgate: () => parseThread(s), baseline: () => JSON.parse(s) }, { runs, warmups });
}

export function dropThreads() {
  threads.clear();
  sink = null;
}

// ------------------------------------------------------------------------------------------------
// Case 3: streaming through ApprovalClient, with `fetch` answered in the page (no network)

const FAKE = 'http://bench.invalid';

/**
 * Replaces `fetch` for URLs under FAKE with an in-page Sidenet server: `GET /v1/threads/{id}`
 * answers the history, `GET /v1/chat/stream` 204, `POST /v1/chat` streams `pieces` from a
 * pull-based ReadableStream (highWaterMark 0: a piece is produced only when the reader asks for
 * it, so the time between two pulls is the time the consumer spent on the previous piece).
 * Returns {restore, log, marks}: marks.pulls[i] is when piece i was pulled; marks.firstDelta and
 * marks.tail those of the first delta piece and of the tail piece.
 */
function fakeSidenet({ history, pieces }) {
  const real = globalThis.fetch;
  const log = [];
  const marks = { pulls: new Float64Array(pieces.length) };
  const store = { messages: [...history] };
  globalThis.fetch = async function (input, init = {}) {
    const url = String(typeof input === 'string' ? input : input.url);
    if (!url.startsWith(FAKE)) return real.call(this, input, init);
    const method = (init.method || 'GET').toUpperCase();
    const path = url.slice(FAKE.length);
    log.push(`${method} ${path.replace(/\?.*/, '')}`);
    if (method === 'GET' && path.startsWith('/v1/threads/')) {
      return new Response(JSON.stringify({ id: 'bench', messages: store.messages }), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    }
    if (method === 'GET' && path.startsWith('/v1/chat/stream')) return new Response(null, { status: 204 });
    if (method === 'POST' && path === '/v1/chat') {
      let i = 0;
      const body = new ReadableStream(
        {
          pull(controller) {
            const t = now();
            if (i < pieces.length) marks.pulls[i] = t;
            if (i === 1) marks.firstDelta = t;
            if (i === pieces.length - 1) marks.tail = t;
            if (i < pieces.length) controller.enqueue(pieces[i++]);
            else controller.close();
          },
        },
        { highWaterMark: 0 },
      );
      return new Response(body, {
        status: 200,
        headers: { 'content-type': 'text/event-stream', 'x-vercel-ai-ui-message-stream': 'v1' },
      });
    }
    return new Response('not found', { status: 404 });
  };
  return { restore: () => (globalThis.fetch = real), log, marks };
}

/**
 * What a user would write instead: read the body, split server-sent events, JSON.parse each
 * `data:` line, append text deltas (and, with `ui`, publish a new message object per delta as a
 * React state update would).
 */
async function jsReadStream(response, { ui = false, onDelta } = {}) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let msg = { id: null, role: 'assistant', text: '' };
  let published = msg;
  let finish = null;
  const approvals = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data:')) continue;
        const data = line.slice(line[5] === ' ' ? 6 : 5);
        if (data === '[DONE]') continue;
        const chunk = JSON.parse(data);
        switch (chunk.type) {
          case 'start':
            msg.id = chunk.messageId;
            break;
          case 'text-delta':
            msg.text += chunk.delta;
            if (ui) published = { ...msg };
            onDelta?.();
            break;
          case 'data-tool-call-approval':
            approvals.push(chunk.data);
            break;
          case 'finish':
            finish = chunk.finishReason;
            break;
        }
      }
    }
  }
  sink = published;
  return { text: msg.text, finish, approvals };
}

const streams = new Map();
function replyPieces(deltas, perPiece) {
  const key = `${deltas}/${perPiece}`;
  if (!streams.has(key)) {
    const d = textDeltas(deltas);
    streams.set(key, { pieces: sseReply(d, { perPiece }), text: d.join('') });
  }
  return streams.get(key);
}

let threadSeq = 0;

/** µs per delta over the first and the last `n` delta pieces of a reply (pieces 1..length-2). */
function earlyLate(pulls, n) {
  const last = pulls.length - 1; // the tail piece
  n = Math.min(n, (last - 1) >> 1);
  return { early: ((pulls[1 + n] - pulls[1]) / n) * 1000, late: ((pulls[last] - pulls[last - n]) / n) * 1000 };
}

/** One toolgate streamed reply: a loaded client (untimed), then `send` timed to its end. */
async function toolgateReply({ history, deltas, perPiece, subscribe }) {
  const { pieces, text } = replyPieces(deltas, perPiece);
  const fake = fakeSidenet({ history, pieces });
  const client = new ApprovalClient({ dialect: 'sidenet', baseUrl: FAKE, threadId: `bench_s${++threadSeq}`, persist: false });
  try {
    await client.load();
    let unsubscribe = () => {};
    let views = 0;
    if (subscribe) {
      unsubscribe = client.subscribe(() => {
        const snap = client.getSnapshot();
        if (snap.streaming) views++;
        sink = snap;
      });
    }
    const t0 = now();
    await client.send('Tell me a long story');
    const t1 = now();
    unsubscribe();
    const snap = client.getSnapshot();
    const last = snap.messages.at(-1);
    check(snap.phase === 'completed' || snap.phase === 'idle', `reply completed (phase ${snap.phase})`);
    check(last && last.text === text, 'the streamed text arrived whole');
    check(!subscribe || views >= deltas / perPiece - 1, 'the subscriber saw every delta');
    return { total: t1 - t0, deltaWindow: fake.marks.tail - fake.marks.firstDelta, ...earlyLate(fake.marks.pulls, 1000), requests: fake.log };
  } finally {
    fake.restore();
    client.free();
  }
}

async function baselineReply({ history, deltas, perPiece, ui }) {
  const { pieces, text } = replyPieces(deltas, perPiece);
  const fake = fakeSidenet({ history, pieces });
  try {
    const t0 = now();
    const res = await fetch(`${FAKE}/v1/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', parts: [{ type: 'text', text: 'Tell me a long story' }] }], threadId: 'bench' }),
    });
    const out = await jsReadStream(res, { ui });
    const t1 = now();
    check(out.text === text && out.finish === 'stop', 'the baseline read the whole reply');
    return { total: t1 - t0, deltaWindow: fake.marks.tail - fake.marks.firstDelta, ...earlyLate(fake.marks.pulls, 1000), requests: fake.log };
  } finally {
    fake.restore();
  }
}

/**
 * Case 3a: a reply of `deltas` text deltas, one SSE event per read (`perPiece` 1): toolgate (driver
 * and core; `subscribe`: plus a listener calling getSnapshot() on every change, as a UI does)
 * against the hand-written reader. Times are for the whole reply (ms).
 */
export async function streamThroughput({ deltas = 10000, perPiece = 1, subscribe = false, runs = 7, warmups = 1 } = {}) {
  const requests = {};
  const parts = { toolgate: { early: [], late: [] }, baseline: { early: [], late: [] } };
  const keep = (side, x) => {
    requests[side] = x.requests;
    parts[side].early.push(x.early);
    parts[side].late.push(x.late);
    return x.total;
  };
  const r = await compareAsync(
    {
      toolgate: async () => keep('toolgate', await toolgateReply({ history: [], deltas, perPiece, subscribe })),
      baseline: async () => keep('baseline', await baselineReply({ history: [], deltas, perPiece, ui: subscribe })),
    },
    { runs, warmups },
  );
  // µs per delta over the first and the last 1,000 deltas of the reply (warm-ups included).
  const perDeltaUs = {};
  for (const side of ['toolgate', 'baseline']) {
    perDeltaUs[side] = { early: median(parts[side].early), late: median(parts[side].late) };
  }
  return { ...r, requests, perDeltaUs };
}

/**
 * Case 3b: the cost of one delta (µs) after a history of `sizes` messages: the time between the
 * pulls of the first delta and of the tail, over the delta count; `subscribe`: with a listener calling
 * getSnapshot() on every change (the baseline then publishes a new message object per delta).
 */
export async function perDelta({ sizes = [10, 1000], deltas = 2000, subscribe = true, runs = 7, warmups = 1 } = {}) {
  const histories = Object.fromEntries(sizes.map((n) => [n, sidenetHistory(n)]));
  const fns = {};
  for (const n of sizes) {
    fns[`history${n}`] = async () => {
      const x = await toolgateReply({ history: histories[n], deltas, perPiece: 1, subscribe });
      return (x.deltaWindow / deltas) * 1000;
    };
  }
  fns.baseline = async () => {
    const x = await baselineReply({ history: [], deltas, perPiece: 1, ui: subscribe });
    return (x.deltaWindow / deltas) * 1000;
  };
  return compareAsync(fns, { runs, warmups });
}

// ------------------------------------------------------------------------------------------------
// Case 5: a whole pause / decide / resume turn, against the reference endpoint or its in-page replay

const COMMAND = 'delete /tmp/a and email a@b.c about x';

/** Counts the requests a function makes (the wrapper is the same for both sides). */
async function counted(fn) {
  const real = globalThis.fetch;
  let n = 0;
  globalThis.fetch = function (...args) {
    n++;
    return real.apply(this, args);
  };
  try {
    const t = await fn();
    return { t, n };
  } finally {
    globalThis.fetch = real;
  }
}

/** One turn through the client: send, approve one call and reject the other, submit. */
async function clientTurn(client) {
  await client.send(COMMAND);
  const s = client.getSnapshot();
  const [a, b] = s.suspension.pending;
  client.approve(a.callId);
  client.reject(b.callId, 'Not this one');
  await client.submit();
}

/**
 * `earlier` untimed turns, then one timed: its time (ms) and its requests (`counted`). `after`
 * runs once the timed turn is over, outside its time (and makes no request).
 */
async function timed(turn, earlier, after) {
  for (let i = 0; i < earlier; i++) await turn();
  return counted(async () => {
    const t0 = now();
    await turn();
    const t1 = now();
    await after();
    return t1 - t0;
  });
}

// The snapshots a UI subscriber took in the last timed toolgate turn (`subscribe`).
let turnSnapshots = 0;

async function toolgateTurn(dialect, baseUrl = '', earlier = 0, persist = false, subscribe = false) {
  const threadId = `${dialect === 'neuron' ? 'bench_tg' : 'bench_tgs'}_${Date.now().toString(36)}_${++threadSeq}`;
  const client = new ApprovalClient(
    dialect === 'neuron'
      ? { dialect, baseUrl, threadId, persist, reloadAfterPost: false }
      : { dialect, baseUrl, threadId, persist },
  );
  try {
    // The app loaded the thread and showed it when it opened it (and, with `earlier`, the person
    // made that many turns on it since): not part of the turn.
    await client.load();
    client.getSnapshot();
    // A UI's subscription (as React's `useSyncExternalStore` makes): a new snapshot taken at
    // every change. The baseline has no UI state to make.
    let snapshots = 0;
    if (subscribe) {
      client.subscribe(() => {
        sink = client.getSnapshot();
        snapshots++;
      });
    }
    const turn = () => {
      snapshots = 0;
      return clientTurn(client);
    };
    return await timed(turn, earlier, () => {
      turnSnapshots = snapshots;
      const end = client.getSnapshot();
      check(end.phase === 'completed' && !end.syncing, `${dialect} turn completed (phase ${end.phase})`);
      // A finished turn leaves no stored record (persist: true), so none piles up over the run.
      const kept = Object.keys(localStorage).filter((k) => k.endsWith(`:${threadId}`));
      check(kept.length === 0, `${dialect} turn left no stored record (${kept})`);
    });
  } finally {
    client.free();
  }
}

async function baselineNeuronTurn(baseUrl = '', earlier = 0) {
  const threadId = `bench_js_${Date.now().toString(36)}_${++threadSeq}`;
  const url = `${baseUrl}/threads/${threadId}/chat`;
  await (await fetch(`${baseUrl}/threads/${threadId}`)).text(); // the same untimed load
  let raw; // the answers of the last turn
  const post = async (body) => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const text = await res.text();
    raw.push(text);
    return JSON.parse(text);
  };
  const turn = async () => {
    raw = [];
    const r1 = await post({ message: COMMAND });
    const m = r1.message;
    const pend = r1.status === 'awaiting_approval' && m?.type === 'tool_call' ? m.tools.filter((t) => t.approval === 'pending') : [];
    const r2 = await post({ decisions: { [pend[0].callId]: 'approve', [pend[1].callId]: ['reject', 'Not this one'] } });
    check(pend.length === 2 && r2.status === 'completed', 'baseline neuron turn completed');
  };
  return timed(turn, earlier, () => {
    if (!baseUrl) recorded.neuron = raw;
  });
}

async function baselineSidenetTurn(baseUrl = '', earlier = 0) {
  const threadId = `bench_jss_${Date.now().toString(36)}_${++threadSeq}`;
  await (await fetch(`${baseUrl}/v1/threads/${threadId}`)).text();
  await fetch(`${baseUrl}/v1/chat/stream?threadId=${threadId}`).then((r) => r.arrayBuffer());
  let raw; // the answers of the last turn
  const post = async (body) => {
    const res = await fetch(`${baseUrl}/v1/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    if (!baseUrl) raw.push(res.clone().arrayBuffer());
    return jsReadStream(res);
  };
  const turn = async () => {
    raw = [];
    const first = await post({ messages: [{ role: 'user', parts: [{ type: 'text', text: COMMAND }] }], threadId });
    const calls = first.approvals;
    let last;
    for (const [i, c] of calls.entries()) {
      last = await post({
        messages: [],
        threadId,
        agentVersionId: c.agentVersionId,
        approval: { runId: c.runId, toolCallId: c.toolCallId, approved: i === 0 },
      });
    }
    check(calls.length === 2 && last.finish === 'stop', 'baseline sidenet turn completed');
  };
  return timed(turn, earlier, async () => {
    if (!baseUrl) recorded.sidenet = (await Promise.all(raw)).map((b) => new Uint8Array(b));
  });
}

/** The answers of the endpoint to the last real baseline turn, replayed by `local` turns. */
const recorded = {};

/**
 * An in-page server that replays a recorded turn: the same bytes the endpoint sent, without the
 * network, the endpoint's work or its fsyncs, so a turn's time is the client side alone. With
 * `pause` (ms), each answer comes after that long idle, as a server's answers do: the same wait
 * on both sides, so the paired difference is still the client's own work, done after an idle gap.
 */
function replayServer(dialect, pause = 0, history = null) {
  const real = globalThis.fetch;
  const answers = recorded[dialect];
  if (!answers) throw new Error(`no recorded ${dialect} turn: run the endpoint turns first`);
  let posts = 0;
  globalThis.fetch = async function (input, init = {}) {
    const url = String(typeof input === 'string' ? input : input.url);
    if (!url.startsWith(FAKE)) return real.call(this, input, init);
    const method = (init.method || 'GET').toUpperCase();
    if (pause) await new Promise((r) => setTimeout(r, pause));
    const path = url.slice(FAKE.length);
    if (method === 'GET' && /^\/(v1\/)?threads\//.test(path)) {
      return new Response(history ?? '{"id":"bench","messages":[]}', { status: 200, headers: { 'content-type': 'application/json' } });
    }
    if (method === 'GET') return new Response(null, { status: 204 });
    const body = answers[posts++ % answers.length];
    return dialect === 'neuron'
      ? new Response(body, { status: 200, headers: { 'content-type': 'application/json' } })
      : new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream', 'x-vercel-ai-ui-message-stream': 'v1' } });
  };
  return () => (globalThis.fetch = real);
}

/**
 * Case 5: per-turn time (ms) and requests per turn, toolgate against plain fetch; against the
 * endpoint, or (`local`) against the in-page replay of the endpoint's answers (each after `pause`
 * ms idle when given; with `history`, the turn made at the end of a long thread: see `historyBody`).
 */
export async function turns({ dialect = 'neuron', local = false, pause = 0, history = 0, earlier = 0, persist = false, subscribe = false, runs = 9, warmups = 2, batch = local ? 10 : 1 } = {}) {
  const requests = {};
  const jsTurn = dialect === 'neuron' ? baselineNeuronTurn : baselineSidenetTurn;
  const tg = (base) => toolgateTurn(dialect, base, earlier, persist, subscribe);
  const js = (base) => jsTurn(base, earlier);
  const base = local ? FAKE : '';
  const restore = local ? replayServer(dialect, pause, history ? historyBody(dialect, history) : null) : () => {};
  try {
    const r = await compareTurns(tg, js, base, requests, { runs, warmups, batch });
    return subscribe ? { ...r, snapshots: turnSnapshots } : r;
  } finally {
    restore();
  }
}

/**
 * What an idle gap costs on this machine, whatever runs after it (the turns' client work runs
 * after the gaps between a server's answers): the same work timed back to back and right after
 * 10 ms of idle (a timer), in µs, means of `runs` each. `work`: `JSON.parse` and `JSON.stringify`
 * of a drafts record ten times, plain JS; `store`: one `localStorage.setItem` of that record (what
 * `persist` writes for each decision).
 */
export async function idleCost({ runs = 200 } = {}) {
  const record = (i) =>
    `{"v":1,"runId":"run_b6e4f40c","callIds":["call_a6c0fbfbe933","call_dd6468eed4b8"],"sigs":[3318865111,4265197892],"drafts":{"call_a6c0fbfbe933":"approve","call_dd6468eed4b8":["reject","Not this one ${i}"]}}`;
  const key = 'toolgate-bench:idle-cost';
  const cases = {
    work: (i) => {
      let n = 0;
      for (let k = 0; k < 10; k++) n += JSON.stringify(JSON.parse(record(i * 10 + k))).length;
      sink = n;
    },
    store: (i) => localStorage.setItem(key, record(i)),
  };
  const out = {};
  try {
    for (const [name, fn] of Object.entries(cases)) {
      for (let i = 0; i < 50; i++) fn(i);
      let t0 = now();
      for (let i = 0; i < runs; i++) fn(i);
      const warm = ((now() - t0) / runs) * 1000;
      let idle = 0;
      for (let i = 0; i < runs; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        t0 = now();
        fn(i);
        idle += now() - t0;
      }
      out[name] = { warm, idle: (idle / runs) * 1000 };
    }
  } finally {
    localStorage.removeItem(key);
  }
  return out;
}

/**
 * The thread a `history` turn starts from (answered by the replay's GET, loaded before the turn is
 * timed): Neuron, the synthetic thread of about `size` bytes without its paused tail; Sidenet, a
 * history of `size` UI messages. Neither ends paused, so a message can be sent at once.
 */
function historyBody(dialect, size) {
  if (dialect === 'sidenet') return JSON.stringify({ id: 'bench', messages: sidenetHistory(size) });
  const doc = JSON.parse(neuronThread(size));
  doc.messages.pop();
  return JSON.stringify(doc);
}

/** Each sample is the mean of `batch` turns (each timed alone: the client setup is not timed). */
async function compareTurns(tg, js, base, requests, { runs, warmups, batch }) {
  const mean = (fn, key) => async () => {
    let sum = 0;
    for (let i = 0; i < batch; i++) {
      const { t, n } = await fn(base);
      requests[key] = n;
      sum += t;
    }
    return sum / batch;
  };
  const r = await compareAsync(
    {
      toolgate: mean(tg, 'toolgate'),
      baseline: mean(js, 'baseline'),
    },
    { runs, warmups },
  );
  // Paired differences: the two sides of a run ran back to back, so drift cancels.
  r.pairedDiffMedian = median(r.toolgate.samples.map((t, i) => t - r.baseline.samples[i]));
  return { ...r, requests };
}

// ------------------------------------------------------------------------------------------------
// Case 7: Neuron's quiet reload (`reloadAfterPost`, on by default) at the end of a long thread

/**
 * A loaded client's `load()` and `getSnapshot()` of a Neuron thread of about `size` bytes (case 1's
 * without its paused tail), its `fetch` answering with the thread's bytes: grown by a user and an
 * assistant message at each reload (`grow`, as after a turn) or unchanged. Against
 * `await response.json()` on the same answers. Each sample is one reload; a fresh client per run.
 */
export async function reload({ size = 5_000_000, grow = true, runs = 15, warmups = 2 } = {}) {
  await ready;
  const doc = JSON.parse(neuronThread(size));
  doc.messages.pop();
  const base = doc.messages.length;
  const n = runs + warmups + 1;
  // Every answer encoded before anything is timed: document i has i more pairs of messages.
  const docs = [];
  for (let i = 0; i <= (grow ? n : 0); i++) {
    const d = { ...doc, messages: doc.messages.slice() };
    for (let k = 0; k < i; k++) d.messages.push({ role: 'user', content: `turn ${k}` }, { role: 'assistant', content: `done ${k}` });
    docs.push(new TextEncoder().encode(JSON.stringify(d)));
  }
  const answer = (i) => new Response(docs[grow ? i : 0].slice(0), { status: 200, headers: { 'content-type': 'application/json' } });
  let next = 0;
  const client = new ApprovalClient({ dialect: 'neuron', baseUrl: location.origin, threadId: 'reload', persist: false, fetch: async () => answer(next) });
  await client.load();
  client.getSnapshot();
  let i = 0;
  let j = 0;
  const r = await compareAsync(
    {
      toolgate: async () => {
        next = ++i;
        const t0 = now();
        await client.load();
        const snap = client.getSnapshot();
        const t = now() - t0;
        check(snap.messages.length === base + (grow ? 2 * i : 0) && snap.error === null, 'the reload shows the thread');
        return t;
      },
      baseline: async () => {
        const res = answer(++j);
        const t0 = now();
        sink = await res.json();
        const t = now() - t0;
        check(sink.messages.length === base + (grow ? 2 * j : 0), 'the answer parses');
        return t;
      },
    },
    { runs, warmups },
  );
  client.free();
  return { ...r, bytes: docs[0].length, messages: base };
}
