#!/usr/bin/env node
// npm run soak: the fault soak. Headless Chromium runs scripted conversations of both dialects
// through the browser driver (`ApprovalClient` of pkg/) against the reference endpoint started with
// FAULTS (drops, 500s, delays) and killed (SIGKILL) and restarted on the same port and DATA_DIR in
// the middle. Then the server's stored history (the thread files and effects.jsonl) is checked:
// every decision the person made was applied exactly once, and none was invented. In a third of
// the conversations the person has allowed `delete_file` and `send_email` for the session
// (`allowTool`): their calls must then be approved, and run, exactly once without being asked.
//
// The conversations are split evenly across the server variants of PROTOCOLS.md sections 1-3:
// Neuron reading partial decision payloads as `strict`, `incremental` or `cumulative`
// (NEURON_DECISIONS, one endpoint per reading, each killed and restarted once), Neuron with an
// append-only history and message-less replies (a fourth endpoint), and Sidenet with its
// own `data-tool-call-approval` chunks or the AI SDK form (`?approvalForm=ai-sdk` on the chat
// route). The check and its summary are per variant.
//
//   node scripts/soak.mjs                       # 200 conversations, seed 7
//   SOAK_CONVERSATIONS=50 SOAK_SEED=3 node scripts/soak.mjs
//
// Needs pkg/ built (bash scripts/build.sh) and Chromium (bash scripts/setup.sh). Exit code 1 when
// a decision was lost, duplicated or invented, or a conversation did not finish.
import { rmSync } from 'node:fs';
import path from 'node:path';
import {
  freePort, kill, launchChromium, prepare, readEffects, readRecord, startEndpoint as startServer, storedDecisions,
} from './soak-lib.mjs';
const CONVERSATIONS = Number(process.env.SOAK_CONVERSATIONS || 200);
const SEED = Number(process.env.SOAK_SEED || 7);
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY || 8);
const log = (...a) => console.log('[soak]', ...a);

// ------------------------------------------------------------------------------------------------
// The page: a module served by the endpoint (CSP: script-src 'self' 'wasm-unsafe-eval').

const PAGE_HTML = `<!doctype html><meta charset="utf-8"><title>toolgate soak</title>
<script type="module" src="/soak.js"></script><p id="state">loading</p>`;

const PAGE_JS = String.raw`
import init, { ApprovalClient } from '/pkg/toolgate.js';
const ready = init().then(() => { document.getElementById('state').textContent = 'ready'; });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const reasonFor = (id) => 'soak: not ' + id + ' <b>"as asked"</b>';
function choose(callId, seed) {
  let h = seed >>> 0;
  for (const c of callId) h = (Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0);
  return h % 3 === 0 ? 'reject' : 'approve';
}
// The Sidenet chat POSTs the page made, as [threadId, url]: the soak checks that each variant's
// requests went to its own route (the AI SDK form's query kept on every one of them).
window.chatPosts = [];
const realFetch = window.fetch;
window.fetch = function (url, init) {
  const u = String(url);
  if (u.includes('/v1/chat') && init && init.method === 'POST') {
    try { window.chatPosts.push([JSON.parse(init.body).threadId, u]); } catch { window.chatPosts.push([null, u]); }
  }
  return realFetch.call(this, url, init);
};
const userTexts = (s) => s.messages.filter((m) => m.role === 'user').map((m) => m.text);

window.runConversation = async ({ variant, reading, dialect, routes, threadId, texts, seed, allow, stepwise }) => {
  await ready;
  const out = { variant, reading, dialect, threadId, allow, made: {}, errors: [], asked: [], finished: false, steps: 0, partials: 0, revised: 0 };
  const client = new ApprovalClient({
    dialect, threadId, persist: false, timeoutMs: 4000,
    retry: { attempts: 8, backoffMs: 60, maxBackoffMs: 600 },
    ...(routes ? { routes } : {}),
  });
  for (const tool of allow) client.allowTool(tool);
  const snap = () => client.getSnapshot();
  const busyNow = () => snap().busy;
  const partial = new Set();
  const revise = new Map();
  const flip = (d) => (d === 'approve' ? 'reject' : 'approve');
  const decide = (id, d) => {
    try {
      if (d === 'approve') client.approve(id); else client.reject(id, reasonFor(id));
      out.made[id] = d;
      return true;
    } catch (e) {
      out.errors.push('decide ' + id + ': ' + (e && e.code));
      return false;
    }
  };
  const attempt = async (what, fn) => {
    try { await fn(); return true; } catch (e) {
      out.errors.push(what + ': ' + (e && (e.code || e.name)) + ': ' + String(e && e.message).slice(0, 120));
      return false;
    }
  };
  for (let i = 0; i < 40 && !snap().loaded; i++) if (!(await attempt('load', () => client.load()))) await sleep(150);
  for (const text of texts) {
    let landed = false;
    let done = false;
    for (let guard = 0; guard < 80 && !done; guard++) {
      out.steps++;
      const s = snap();
      // Undecided calls, or decisions left unsubmitted (an automatic submission that failed).
      const paused = s.suspension && (s.suspension.pending.length > 0 || (s.canSubmit && !s.busy));
      if (paused) {
        // An allowed tool is never asked for (once nothing is in flight: a pause streaming in is
        // decided when its stream has ended).
        if (!s.busy) for (const t of s.suspension.pending) if (allow.includes(t.name)) out.asked.push(t.callId);
        // Neuron: a decision sent in a partial set is revised (the set is not complete yet).
        for (const [id, d] of revise) {
          if (!s.suspension.tools.some((t) => t.callId === id)) continue;
          if (decide(id, d)) { out.revised++; revise.delete(id); } else if (!busyNow()) revise.delete(id);
        }
        let undecided = s.suspension.undecided;
        // Stepwise: one call of a pause decided and submitted alone, the rest after it (a partial
        // set, which each Neuron reading stores differently); on Neuron that first decision is the
        // opposite of the final one, revised before the rest is decided.
        if (stepwise && undecided.length >= 2 && !partial.has(undecided[0])) {
          const id = undecided[0];
          partial.add(id);
          out.partials++;
          const d = out.made[id] || choose(id, seed);
          if (dialect === 'neuron' && !out.made[id]) {
            if (decide(id, flip(d))) revise.set(id, d);
          } else decide(id, d);
          undecided = [];
        }
        for (const id of undecided) {
          const d = out.made[id] || choose(id, seed);
          // Stepwise: a draft changed before it is sent.
          if (stepwise && !out.made[id]) decide(id, flip(d));
          decide(id, d);
        }
        if (!(await attempt('submit', () => client.submit()))) {
          await sleep(150);
          await attempt('load', () => client.load());
        }
        continue;
      }
      if (!landed) {
        if (s.loaded && userTexts(s).includes(text)) { landed = true; continue; }
        if (await attempt('send', () => client.send(text))) landed = true;
        else { await sleep(150); await attempt('load', () => client.load()); }
        continue;
      }
      if (!s.busy && (s.phase === 'completed' || s.phase === 'idle')) { done = true; break; }
      await sleep(100);
      await attempt('load', () => client.load());
    }
    if (!done) { out.errors.push('gave up on ' + JSON.stringify(text)); client.free(); return out; }
  }
  out.finished = true;
  client.free();
  return out;
};
window.reasonFor = reasonFor;
`;

// ------------------------------------------------------------------------------------------------
// The endpoint

/** The endpoint of one Neuron reading (`append-only`: Neuron's newest history, the pause never
 * changed and the outcomes on the tool_call_result after it, and message-less replies, read
 * strictly), with its faults. */
function startEndpoint({ port, dataDir, wwwDir, reading, faults }) {
  return startServer({
    port, dataDir, wwwDir,
    env: {
      FAULTS: faults, CHUNK_DELAY_MS: '2',
      NEURON_DECISIONS: reading === 'append-only' ? 'strict' : reading,
      ...(reading === 'append-only' ? { NEURON_HISTORY: 'append-only', NEURON_REPLY: 'approvals' } : {}),
    },
  });
}

async function faultCounts(base) {
  for (let i = 0; i < 20; i++) {
    try {
      const r = await fetch(`${base}/__faults`);
      if (r.ok) return await r.json();
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  return { drops: 0, errors: 0, delays: 0 };
}

// ------------------------------------------------------------------------------------------------
// The conversations

// The server variants. Each Neuron reading needs an endpoint of its own (NEURON_DECISIONS); the
// Sidenet forms are chosen per request (the chat route's query), and share those endpoints.
const READINGS = ['strict', 'incremental', 'cumulative', 'append-only'];
const VARIANTS = [
  { variant: 'neuron strict', dialect: 'neuron', reading: 'strict' },
  { variant: 'neuron incremental', dialect: 'neuron', reading: 'incremental' },
  { variant: 'neuron cumulative', dialect: 'neuron', reading: 'cumulative' },
  { variant: 'neuron append-only', dialect: 'neuron', reading: 'append-only' },
  { variant: 'sidenet native', dialect: 'sidenet', reading: 'strict' },
  { variant: 'sidenet ai-sdk', dialect: 'sidenet', reading: 'cumulative', routes: { chat: '/v1/chat?approvalForm=ai-sdk' } },
];

function conversation(i) {
  const { variant, dialect, reading, routes = null } = VARIANTS[i % VARIANTS.length];
  const threadId = `soak_${SEED}_${i}`;
  const menu = [
    [`delete /tmp/soak_${i}_a.txt`],
    [`email u${i}@example.com about report ${i}`],
    [`delete /tmp/soak_${i}_b.txt and email v${i}@example.com about two ${i}`],
    [`deploy svc${i}`],
    [`read /tmp/soak_${i}.txt`, `buy 3 tickets at 50 and email x${i}@example.com about three ${i}`],
    [`buy 2 tickets at 80 and delete /tmp/soak_${i}_c.txt`, `email w${i}@example.com about again ${i}`],
  ];
  // A third allow two tools, in blocks of twelve: independent of the menu entry (i mod 6) and of
  // stepwise, so that every seed has pauses of two calls both with and without allowed tools.
  const allow = Math.floor(i / 12) % 3 === 2 ? ['delete_file', 'send_email'] : [];
  // Half the conversations decide stepwise (a partial set first; see the page), in blocks of six so
  // that each half meets every menu entry and both allow settings.
  const stepwise = Math.floor(i / 6) % 2 === 1;
  return { variant, dialect, reading, routes, threadId, texts: menu[(i * 7 + SEED) % menu.length], seed: SEED * 1000 + i, allow, stepwise };
}

// ------------------------------------------------------------------------------------------------
// The check against the stored history

const sum = (rs, k) => rs.reduce((n, r) => n + r[k], 0);
const newReport = () => ({ decisions: 0, approvals: 0, rejections: 0, allowed: 0, lost: [], duplicated: [], invented: [], misrouted: [] });

/** Checks the conversations one endpoint served against its DATA_DIR; adds to `reports[variant]`. */
function verify(dataDir, results, reasonFor, reports) {
  const effects = readEffects(dataDir);
  const byThread = new Map(results.map((r) => [r.threadId, r]));
  for (const r of results) {
    const report = reports[r.variant];
    const rec = readRecord(dataDir, r.dialect, r.threadId);
    const stored = storedDecisions(r.dialect, rec);
    // The person approved every call of an allowed tool ahead, by allowing it: each must have
    // been approved and run once, like the calls they decided one by one.
    for (const [callId, s] of stored) {
      if (r.allow.includes(s.name) && !(callId in r.made)) {
        r.made[callId] = 'approve';
        report.allowed++;
      }
    }
    for (const [callId, d] of Object.entries(r.made)) {
      report.decisions++;
      if (d === 'approve') report.approvals++;
      else report.rejections++;
      const ran = effects.filter((e) => e.dialect === r.dialect && e.threadId === r.threadId && e.callId === callId).length;
      const s = stored.get(callId);
      const where = `${r.variant} ${r.threadId} ${callId} (${d})`;
      if (d === 'approve') {
        if (ran === 0 || s?.state !== 'approved') report.lost.push(`${where}: ran ${ran}x, stored ${s?.state}`);
        if (ran > 1) report.duplicated.push(`${where}: ran ${ran}x`);
      } else {
        if (ran > 0) report.invented.push(`${where}: rejected but ran ${ran}x`);
        if (s?.state !== 'rejected') report.lost.push(`${where}: stored ${s?.state}`);
        else if (r.dialect === 'neuron' && s.reason !== reasonFor(callId))
          report.lost.push(`${where}: reason ${JSON.stringify(s.reason)}`);
      }
    }
    for (const [callId, s] of stored) {
      if (s.state !== 'pending' && !(callId in r.made)) report.invented.push(`${r.variant} ${r.threadId} ${callId}: stored ${s.state}, never decided`);
    }
  }
  // Every executed gated tool was approved by the person.
  const unknown = [];
  for (const e of effects) {
    const r = byThread.get(e.threadId);
    if (!r || r.dialect !== e.dialect) {
      unknown.push(`effect on unknown thread ${e.dialect} ${e.threadId} in ${dataDir}`);
      continue;
    }
    const stored = storedDecisions(e.dialect, readRecord(dataDir, e.dialect, e.threadId));
    if (stored.has(e.callId) && r.made[e.callId] !== 'approve') reports[r.variant].invented.push(`${r.variant} ${e.threadId} ${e.callId}: ran, not approved`);
  }
  const perVariant = {};
  for (const e of effects) {
    const r = byThread.get(e.threadId);
    if (r && r.dialect === e.dialect) perVariant[r.variant] = (perVariant[r.variant] || 0) + 1;
  }
  return { effects: perVariant, unknown };
}

// ------------------------------------------------------------------------------------------------

async function main() {
  const { work, wwwDir } = prepare('soak', PAGE_HTML, 'soak.js', PAGE_JS);
  // One endpoint per Neuron reading, each with its own port, DATA_DIR and fault seed.
  const endpoints = {};
  for (const [k, reading] of READINGS.entries()) {
    const port = await freePort();
    const faults = process.env.SOAK_FAULTS || `drop:0.1,error:0.05,delay:50,seed:${SEED * 10 + k}`;
    const e = { reading, port, base: `http://127.0.0.1:${port}`, dataDir: path.join(work, `data-${reading}`), wwwDir, faults };
    e.server = await startEndpoint(e);
    endpoints[reading] = e;
    log(`endpoint ${reading} ${e.base}, FAULTS=${faults}, DATA_DIR=${e.dataDir}`);
  }

  const browser = await launchChromium();
  const t0 = Date.now();
  const faults = Object.fromEntries(READINGS.map((r) => [r, { drops: 0, errors: 0, delays: 0 }]));
  const addFaults = async (e) => {
    const c = await faultCounts(e.base);
    for (const k of Object.keys(faults[e.reading])) faults[e.reading][k] += c[k] || 0;
  };
  const results = [];
  const problems = [];
  let restarts = 0;
  const chatPosts = [];
  try {
    // One page per endpoint (its CSP allows connections to its own origin only).
    for (const e of Object.values(endpoints)) {
      const page = await browser.newPage();
      page.on('pageerror', (err) => problems.push(`page error (${e.reading}): ${err.message}`));
      page.on('console', (m) => {
        if (/Content Security Policy|panicked|unreachable/i.test(m.text())) problems.push(`console (${e.reading}): ${m.text()}`);
      });
      // The page itself is loaded before the faults matter: retry until it is up.
      for (let i = 0; ; i++) {
        try {
          await page.goto(`${e.base}/`);
          await page.waitForFunction(() => document.getElementById('state')?.textContent === 'ready', null, { timeout: 10_000 });
          break;
        } catch (err) {
          if (i >= 20) throw err;
        }
      }
      e.page = page;
    }
    const specs = Array.from({ length: CONVERSATIONS }, (_, i) => conversation(i));
    // Each endpoint is killed once, while a batch is in flight: the first at a third of the run,
    // the last at two thirds, so that the restarts fall on different conversations.
    const killAt = Object.fromEntries(READINGS.map((r, k) => [r, Math.floor((CONVERSATIONS * (k + 2)) / (READINGS.length + 3))]));
    const killed = new Set();
    for (let at = 0; at < specs.length; at += CONCURRENCY) {
      const batch = specs.slice(at, at + CONCURRENCY);
      const restartsNow = [];
      for (const e of Object.values(endpoints)) {
        if (killed.has(e.reading) || at + CONCURRENCY <= killAt[e.reading]) continue;
        killed.add(e.reading);
        restarts++;
        // Kill the server while this batch is in flight, and bring it back on the same port and data.
        restartsNow.push((async () => {
          await new Promise((r) => setTimeout(r, 120));
          await addFaults(e);
          await kill(e.server);
          log(`${e.reading} server killed (SIGKILL) during conversations ${at}..${at + batch.length - 1}`);
          await new Promise((r) => setTimeout(r, 400));
          e.server = await startEndpoint(e);
          log(`${e.reading} server restarted on the same port and DATA_DIR`);
        })());
      }
      const runs = Object.values(endpoints).map((e) => {
        const mine = batch.filter((s) => s.reading === e.reading);
        return mine.length ? e.page.evaluate((b) => Promise.all(b.map((s) => window.runConversation(s))), mine) : [];
      });
      const outs = await Promise.all(runs);
      await Promise.all(restartsNow);
      for (const o of outs) results.push(...o);
      if ((at / CONCURRENCY) % 5 === 0) log(`${results.length}/${specs.length} conversations`);
    }
    for (const e of Object.values(endpoints)) {
      await addFaults(e);
      chatPosts.push(...(await e.page.evaluate(() => window.chatPosts)));
    }
  } finally {
    await browser.close();
    for (const e of Object.values(endpoints)) await kill(e.server);
  }

  const reasonFor = (id) => `soak: not ${id} <b>"as asked"</b>`;
  const reports = Object.fromEntries(VARIANTS.map((v) => [v.variant, newReport()]));
  const effects = {};
  const unknownEffects = [];
  for (const e of Object.values(endpoints)) {
    const v = verify(e.dataDir, results.filter((r) => r.reading === e.reading), reasonFor, reports);
    Object.assign(effects, v.effects);
    unknownEffects.push(...v.unknown);
  }
  const seconds = ((Date.now() - t0) / 1000).toFixed(1);
  const total = Object.values(faults).reduce((a, f) => ({ drops: a.drops + f.drops, errors: a.errors + f.errors, delays: a.delays + f.delays }), { drops: 0, errors: 0, delays: 0 });
  console.log('');
  console.log(`conversations: ${results.length}, finished ${results.filter((r) => r.finished).length}, in ${seconds}s (seed ${SEED})`);
  console.log(`server restarts: ${restarts} (SIGKILL mid-batch, one per endpoint)`);
  console.log(`faults injected: ${total.drops + total.errors} (drops ${total.drops}, errors ${total.errors}, delays ${total.delays})`);
  console.log(`client-visible failures (rejected promises, retried by the script): ${results.reduce((n, r) => n + r.errors.length, 0)}`);
  let bad = problems.length + unknownEffects.length;
  const details = [...unknownEffects];
  for (const { variant } of VARIANTS) {
    const mine = results.filter((r) => r.variant === variant);
    const report = reports[variant];
    const unfinished = mine.filter((r) => !r.finished);
    const asked = mine.flatMap((r) => r.asked.map((id) => `${variant} ${r.threadId} ${id}: allowed tool asked for`));
    // The route each Sidenet variant is meant to exercise was the one its chat POSTs used.
    const spec = VARIANTS.find((v) => v.variant === variant);
    const threads = new Set(mine.map((r) => r.threadId));
    const posts = chatPosts.filter(([t]) => threads.has(t));
    if (spec.dialect === 'sidenet') {
      const want = spec.routes ? spec.routes.chat : '/v1/chat';
      const wrong = posts.filter(([, u]) => !u.endsWith(want));
      if (posts.length === 0) report.misrouted.push(`${variant}: no chat POST seen`);
      for (const [t, u] of wrong.slice(0, 3)) report.misrouted.push(`${variant} ${t}: chat POST to ${u}, not ${want}`);
    }
    const failures = report.lost.length + report.duplicated.length + report.invented.length + report.misrouted.length
      + asked.length + unfinished.length;
    bad += failures;
    console.log(
      `${failures ? 'FAIL' : 'ok  '} ${variant.padEnd(18)} conversations ${mine.length} (finished ${mine.length - unfinished.length}), ` +
        (spec.dialect === 'sidenet' ? `chat POSTs ${posts.length}, ` : '') + `decisions ${report.decisions} (approve ${report.approvals}, reject ${report.rejections}, allowed ${report.allowed}), ` +
        `partial sets ${sum(mine, 'partials')}, revised after sending ${sum(mine, 'revised')}, ` +
        `effects ${effects[variant] || 0}, lost ${report.lost.length}, duplicated ${report.duplicated.length}, ` +
        `invented ${report.invented.length}, allowed asked ${asked.length}` + (report.misrouted.length ? `, misrouted ${report.misrouted.length}` : ''),
    );
    details.push(...report.lost, ...report.duplicated, ...report.invented, ...report.misrouted, ...asked);
    for (const u of unfinished) details.push(`unfinished ${variant} ${u.threadId}: ${u.errors.slice(-3).join(' | ')}`);
  }
  for (const l of details.slice(0, 30)) console.log(`  ${l}`);
  for (const p of problems.slice(0, 10)) console.log(`  ${p}`);
  if (bad === 0) rmSync(work, { recursive: true, force: true });
  else console.log(`kept ${work} for inspection`);
  process.exit(bad === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
