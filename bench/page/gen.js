// Deterministic synthetic data for the benchmarks: Neuron threads of a given size (JSON text) and
// Sidenet UI-message histories and event streams. Same seed, same bytes, on every machine.
//
// A Neuron thread is a long run of realistic turns (user text, assistant text, a `tool_call` with
// 1-3 tools of which some are gated and already decided, a `tool_call_result` with large results,
// a closing assistant text) and ends on a paused `tool_call` with two pending tools and one
// ungated tool. Strings carry what makes JSON scanning work: escaped quotes (`\"`, and whole JSON
// documents embedded in strings), newlines and tabs, `\uXXXX` escapes and `\/` (as PHP's
// json_encode writes them, Neuron being PHP), raw UTF-8 CJK, accents and emoji (4-byte, so
// surrogate pairs in JS), and nested objects and arrays.

/** A small, fast, seedable PRNG (mulberry32). */
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  next.int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  next.pick = (arr) => arr[Math.floor(next() * arr.length)];
  return next;
}

const WORDS = (
  'the a of to and in is for on with as by at from that this it be are was were file files path ' +
  'deploy service build test tests log logs error warning request response token tokens user users ' +
  'email report summary table row rows column query result results order orders ticket tickets ' +
  'weather city price total amount retry timeout cache index thread message messages agent tool ' +
  'approval pending approved rejected reason stream chunk delta server client config value values'
).split(' ');
const UNICODE = [
  'café', 'naïve', 'résumé', 'Zürich', 'São Paulo', 'Ελληνικά', 'Привет', 'こんにちは', '東京',
  '数据库', '错误日志', '한국어', 'مرحبا', '🚀', '✅', '❌', '🙂', '👩‍💻', '📦', '🔥', '€42', '°C', '—', '…',
];
const PATHS = ['/var/log/app.log', '/tmp/cache/blob.bin', '/srv/data/export.csv', '/home/ana/notes.md', '/etc/app/config.yaml'];
const CITIES = ['Rome', 'Paris', '東京', 'São Paulo', 'Zürich', 'Москва', 'Seoul'];
const EMAILS = ['team@example.com', 'ana@example.org', 'ops+alerts@example.net', 'bob@example.com'];

function sentence(r, min = 4, max = 16) {
  const n = r.int(min, max);
  const out = [];
  for (let i = 0; i < n; i++) {
    const x = r();
    if (x < 0.1) out.push(r.pick(UNICODE));
    else if (x < 0.14) out.push(`"${r.pick(WORDS)}"`);
    else if (x < 0.16) out.push(r.pick(PATHS));
    else out.push(r.pick(WORDS));
  }
  const s = out.join(' ');
  return s[0].toUpperCase() + s.slice(1) + (r() < 0.1 ? '!' : '.');
}

function paragraph(r, sentences) {
  const out = [];
  for (let i = 0; i < sentences; i++) out.push(sentence(r));
  return out.join(r() < 0.3 ? '\n' : ' ');
}

/** A log excerpt of about `bytes` bytes: many lines, quoted values, tabs, unicode. */
function logText(r, bytes) {
  const lines = [];
  let size = 0;
  let t = 1700000000 + r.int(0, 1e6);
  while (size < bytes) {
    t += r.int(0, 30);
    const level = r.pick(['INFO', 'INFO', 'INFO', 'WARN', 'ERROR', 'DEBUG']);
    const line =
      `${t}\t${level}\t[${r.pick(['api', 'worker', 'db', 'auth'])}] ${sentence(r, 3, 10)} ` +
      `key="${r.pick(WORDS)}_${r.int(0, 9999)}" path="${r.pick(PATHS)}" ms=${r.int(0, 2000)}`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n');
}

/** Search hits: an array of nested objects with CJK and emoji in titles and snippets. */
function searchHits(r, bytes) {
  const hits = [];
  let size = 0;
  while (size < bytes) {
    const hit = {
      id: `doc_${r.int(0, 1e9).toString(36)}`,
      title: `${r.pick(UNICODE)} ${sentence(r, 3, 7)}`,
      url: `https://example.com/${r.pick(WORDS)}/${r.int(0, 99999)}`,
      score: Math.round(r() * 10000) / 10000,
      snippet: paragraph(r, r.int(1, 4)),
      meta: { lang: r.pick(['en', 'fr', 'ja', 'zh', 'ko']), tags: [r.pick(WORDS), r.pick(WORDS)], fresh: r() < 0.5 },
    };
    hits.push(hit);
    size += 220 + hit.snippet.length + hit.title.length;
  }
  return { query: sentence(r, 2, 5), total: hits.length * 7, hits };
}

/** A tool result as many tools return it: a JSON document encoded into a string (all `\"`). */
function embeddedJson(r, bytes) {
  return JSON.stringify(searchHits(r, bytes));
}

function bigResult(r, bytes) {
  const k = r();
  if (k < 0.35) return logText(r, bytes);
  if (k < 0.7) return searchHits(r, bytes);
  return embeddedJson(r, bytes);
}

const TOOLS = [
  { name: 'read_file', description: 'Read a file from the filesystem', gated: null, inputs: (r) => ({ path: r.pick(PATHS) }) },
  { name: 'search_docs', description: 'Search the documentation', gated: null, inputs: (r) => ({ query: sentence(r, 2, 6), limit: r.int(5, 50), filters: { lang: ['en', 'ja'], since: '2024-01-01' } }) },
  { name: 'get_weather', description: 'Current weather', gated: null, inputs: (r) => ({ city: r.pick(CITIES), units: 'metric' }) },
  { name: 'delete_file', description: 'Delete a file from the filesystem', gated: 'Deleting a file is irreversible', inputs: (r) => ({ path: r.pick(PATHS) }) },
  { name: 'send_email', description: 'Send an email to a recipient', gated: 'Outbound email reaches people outside this workspace', inputs: (r) => ({ to: r.pick(EMAILS), subject: sentence(r, 2, 6), body: paragraph(r, 3) }) },
  { name: 'buy_ticket', description: 'Buy tickets', gated: 'Amount above 100', inputs: (r) => ({ quantity: r.int(1, 6), price: r.int(20, 300), currency: 'EUR' }) },
];

function toolEntry(r, spec, callId, approval) {
  const tool = {
    callId,
    name: spec.name,
    description: spec.description,
    inputs: spec.inputs(r),
    result: null,
    approval,
    approvalReason: approval ? spec.gated : null,
    rejectReason: approval === 'rejected' ? (r() < 0.5 ? `Do not ${r.pick(WORDS)} "${r.pick(WORDS)}" ${r.pick(UNICODE)}` : null) : null,
  };
  if (r() < 0.2) tool.parameters = [{ name: 'path', type: 'string', description: 'Where', required: true }];
  if (r() < 0.2) tool.deferred = false;
  return tool;
}

/**
 * One turn: user, assistant text, tool_call, tool_call_result, assistant text.
 * `resultBytes` is the rough size of each large tool result.
 */
function turn(r, state, resultBytes) {
  const id = () => `msg_${(++state.msg).toString(36)}`;
  const out = [];
  out.push({ __id: id(), role: 'user', content: paragraph(r, r.int(1, 3)) });
  out.push({ __id: id(), role: 'assistant', content: [{ type: 'text', text: paragraph(r, r.int(1, 4)) }], usage: { input_tokens: r.int(100, 90000), output_tokens: r.int(5, 900) } });
  const n = r.int(1, 3);
  const tools = [];
  for (let i = 0; i < n; i++) {
    const spec = r.pick(TOOLS);
    const approval = spec.gated ? (r() < 0.7 ? 'approved' : 'rejected') : r() < 0.5 ? null : undefined;
    const t = toolEntry(r, spec, `call_${(++state.call).toString(36)}_${r.int(0, 1e9).toString(36)}`, approval);
    if (approval === undefined) delete t.approval;
    tools.push(t);
  }
  const call = { __id: id(), role: 'assistant', content: null, type: 'tool_call', tools };
  if (r() < 0.3) call.resume_token = `rt_${r.int(0, 1e12).toString(36)}`;
  out.push(call);
  const results = tools.map((t) => {
    const res = { ...t };
    delete res.parameters;
    if (t.approval === 'rejected') {
      res.result = `TOOL NOT EXECUTED. The user rejected this action. User instruction: ${t.rejectReason ?? 'No specific instruction provided.'}. Do not attempt this tool again. Follow the user's instruction or reconsider your plan.`;
    } else {
      res.result = bigResult(r, Math.max(64, Math.round(resultBytes * (0.3 + 1.4 * r()))));
    }
    return res;
  });
  out.push({ __id: id(), role: 'user', content: null, type: 'tool_call_result', tools: results });
  out.push({ __id: id(), role: 'assistant', content: paragraph(r, r.int(1, 5)), meta: { model: 'model-x', latency_ms: r.int(100, 9000), finish: 'stop' } });
  return out;
}

/** The paused tail: one ungated tool and two pending gated ones. */
function pausedTail(r, state) {
  const tools = [
    toolEntry(r, TOOLS[0], 'call_tail_read', null),
    toolEntry(r, TOOLS[3], 'call_tail_delete', 'pending'),
    toolEntry(r, TOOLS[4], 'call_tail_email', 'pending'),
  ];
  return { __id: `msg_${(++state.msg).toString(36)}`, role: 'assistant', content: null, type: 'tool_call', tools, resume_token: 'rt_tail' };
}

function utf8Length(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c < 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/**
 * A Neuron thread document of about `targetBytes` bytes of UTF-8 JSON (within a few percent),
 * `{"id":…,"title":…,"messages":[…]}`, as a string. Deterministic for a (targetBytes, seed).
 */
export function neuronThread(targetBytes, seed = 42) {
  const r = rng(seed ^ targetBytes);
  const state = { msg: 0, call: 0 };
  // Results scale a little with the thread, as real threads with big tool outputs do.
  const resultBytes = Math.min(24000, Math.max(800, Math.round(targetBytes / 400)));
  const head = `{"id":"thread_bench_${targetBytes}","title":${JSON.stringify('Bench “thread” ' + targetBytes)},"created_at":"2025-01-01T00:00:00Z","messages":[`;
  const parts = [];
  let size = utf8Length(head) + 2;
  const tail = JSON.stringify(pausedTail(r, state));
  size += utf8Length(tail);
  while (size < targetBytes) {
    for (const m of turn(r, state, resultBytes)) {
      const s = escapeLikePhp(JSON.stringify(m));
      parts.push(s);
      size += utf8Length(s) + 1;
    }
  }
  parts.push(tail);
  return head + parts.join(',') + ']}';
}

/**
 * PHP's json_encode escapes `/` as `\/` and non-ASCII as `\uXXXX`; do some of that (accents and
 * slashes) so the text has escapes of every kind, and keep CJK and emoji raw. Only string
 * contents contain these characters (keys are ASCII words), so the result is valid JSON.
 */
function escapeLikePhp(s) {
  return s.replace(/[/éèïü]/g, (c) => (c === '/' ? '\\/' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}

// ------------------------------------------------------------------------------------------------
// Sidenet

/** An AI SDK UI message history of `count` messages (alternating user / assistant with tool parts). */
export function sidenetHistory(count, seed = 7) {
  const r = rng(seed + count);
  const messages = [];
  for (let i = 0; i < count; i++) {
    if (i % 2 === 0) {
      messages.push({ id: `msg_u${i}`, role: 'user', parts: [{ type: 'text', text: paragraph(r, r.int(1, 3)) }] });
    } else {
      const parts = [{ type: 'step-start' }];
      if (r() < 0.5) {
        const spec = r.pick(TOOLS);
        const gated = !!spec.gated;
        const denied = gated && r() < 0.3;
        parts.push({
          type: `tool-${spec.name}`,
          toolCallId: `call_h${i}`,
          state: denied ? 'output-denied' : 'output-available',
          input: spec.inputs(r),
          ...(denied ? {} : { output: r() < 0.5 ? logText(r, 600) : searchHits(r, 600) }),
        });
      }
      parts.push({ type: 'text', text: paragraph(r, r.int(1, 5)), state: 'done' });
      messages.push({ id: `msg_a${i}`, role: 'assistant', parts });
    }
  }
  return messages;
}

/** `count` text deltas of a reply: short word groups, some unicode, quotes and newlines. */
export function textDeltas(count, seed = 11) {
  const r = rng(seed + count);
  const out = [];
  for (let i = 0; i < count; i++) {
    const x = r();
    if (x < 0.05) out.push(` ${r.pick(UNICODE)}`);
    else if (x < 0.08) out.push(` "${r.pick(WORDS)}"`);
    else if (x < 0.1) out.push('.\n\n');
    else out.push(` ${r.pick(WORDS)}`);
  }
  return out;
}

/**
 * The server-sent-event pieces of a streamed text reply: [head, ...one piece per `perPiece`
 * deltas, tail], each a Uint8Array, in the Sidenet / AI SDK UI message stream format.
 */
export function sseReply(deltas, { perPiece = 1, messageId = 'msg_bench_reply', textId = 'txt_bench' } = {}) {
  const enc = new TextEncoder();
  const ev = (o) => `data: ${JSON.stringify(o)}\n\n`;
  const head =
    ': keep-alive\n\n' + ev({ type: 'start', messageId }) + ev({ type: 'start-step' }) + ev({ type: 'text-start', id: textId });
  const pieces = [enc.encode(head)];
  for (let i = 0; i < deltas.length; i += perPiece) {
    let s = '';
    for (const d of deltas.slice(i, i + perPiece)) s += ev({ type: 'text-delta', id: textId, delta: d });
    pieces.push(enc.encode(s));
  }
  const tail = ev({ type: 'text-end', id: textId }) + ev({ type: 'finish-step' }) + ev({ type: 'finish', finishReason: 'stop' }) + 'data: [DONE]\n\n';
  pieces.push(enc.encode(tail));
  return pieces;
}
