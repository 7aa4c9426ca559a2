#!/usr/bin/env node
// npm run soak:tabs: the multi-tab soak. Each conversation is one thread open in three tabs (three
// pages of one browser context, sharing localStorage), each with its own `ApprovalClient`
// (`persist: true`), against the reference endpoint (no faults; Sidenet chunks a few ms apart, so
// replies stream while the other tabs act; half the Neuron conversations against a second endpoint
// with an append-only history). Tab 0 sends the messages; every tab decides, at random
// moments, some of the cards it shows undecided, and submits at random, so decisions are made in
// one tab and sent from another, continuations of a call race between tabs, and a tab acts while
// another's reply streams. In a third of the conversations tabs also stop requests (`abort()`) and
// reload (a new client on the same storage) at random; half the Sidenet ones use the AI SDK's
// approval form. Every tab decides a call the same way (a hash of its callId), so the person's
// intent is known whichever tab acted.
//
// Then the server's stored history (the thread files and effects.jsonl) is checked: every gated
// call was decided as intended (approved ones run exactly once, rejected ones never, Neuron's
// reasons verbatim), nothing is left pending, and every tab reached the end of the conversation
// (a tab left on a pause that is over, or stuck, fails the run). Requests a tab made that the server
// refused (another tab got there first) are counted and printed, not failures.
//
//   node scripts/soak-tabs.mjs                          # 24 conversations, seed 11
//   SOAK_TABS_CONVERSATIONS=60 SOAK_SEED=3 node scripts/soak-tabs.mjs
//   SOAK_TRACE=1 node scripts/soak-tabs.mjs             # and each tab's refusals
//   SOAK_TABS_FAULTS=drop:0.1,error:0.05,delay:50,seed:1 node scripts/soak-tabs.mjs   # with faults
//
// Needs pkg/ built (bash scripts/build.sh) and Chromium (bash scripts/setup.sh). Exit code 1 when a
// decision was lost, duplicated or invented, or a tab did not finish.
import { rmSync } from 'node:fs';
import path from 'node:path';
import {
  freePort, kill, launchChromium, prepare, readEffects, readRecord, startEndpoint, storedDecisions,
} from './soak-lib.mjs';
const CONVERSATIONS = Number(process.env.SOAK_TABS_CONVERSATIONS || 24);
const SEED = Number(process.env.SOAK_SEED || 11);
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY || 4);
const TABS = 3;
const log = (...a) => console.log('[soak:tabs]', ...a);

const PAGE_HTML = `<!doctype html><meta charset="utf-8"><title>toolgate tabs soak</title>
<script type="module" src="/tabs.js"></script><p id="state">loading</p>`;

const PAGE_JS = String.raw`
import init, { ApprovalClient } from '/pkg/toolgate.js';
const ready = init().then(() => { document.getElementById('state').textContent = 'ready'; });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const reasonFor = (id) => 'tabs: not ' + id;
export function choose(callId, seed) {
  let h = seed >>> 0;
  for (const c of callId) h = (Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0);
  return h % 3 === 0 ? 'reject' : 'approve';
}
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 4294967296);
}
const userTexts = (s) => s.messages.filter((m) => m.role === 'user').map((m) => m.text);

window.runTab = async ({ dialect, threadId, texts, seed, tab, routes, chaos, faults }) => {
  await ready;
  const rand = rng(seed * 31 + tab * 7919);
  const out = { tab, made: {}, refused: {}, errors: [], trace: [], journal: [], finished: false, steps: 0, stops: 0, reloads: 0, last: '' };
  // The journal (printed for a conversation a tab did not finish): what this tab wrote to storage,
  // the storage events it got, its commands and its snapshots' changes, in time order.
  const at = () => Math.round((performance.timeOrigin + performance.now()) * 10) / 10;
  const note = (what) => { if (out.journal.length < 4000) out.journal.push([at(), tab, what]); };
  const brief = (v) => {
    if (v == null) return 'none';
    try {
      const r = JSON.parse(v);
      return 'run ' + String(r.runId || r.pauseId || '').slice(-4) + ' calls ' + (r.callIds || []).map((c) => c.slice(-4)).join(',')
        + (r.settled ? ' settled ' + r.settled.map((c) => c.slice(-4)).join(',') : '')
        + ' drafts ' + Object.entries(r.drafts || {}).map(([k, d]) => k.slice(-4) + ':' + (Array.isArray(d) ? d[0] : d)).join(',');
    } catch { return String(v).slice(0, 60); }
  };
  if (!window.journaled) {
    window.journaled = true;
    const set = Storage.prototype.setItem;
    const remove = Storage.prototype.removeItem;
    Storage.prototype.setItem = function (k, v) {
      if (k.startsWith('toolgate:drafts')) note('write ' + brief(v) + (localStorage.getItem(k) === v ? ' (same: no event)' : ''));
      return set.call(this, k, v);
    };
    Storage.prototype.removeItem = function (k) {
      if (k.startsWith('toolgate:drafts')) note('remove' + (localStorage.getItem(k) === null ? ' (absent: no event)' : ''));
      return remove.call(this, k);
    };
    window.addEventListener('storage', (e) => { if (e.key && e.key.startsWith('toolgate:drafts')) note('event ' + brief(e.newValue)); });
  }
  const openClient = () => new ApprovalClient({
    dialect, threadId, persist: true, timeoutMs: 4000,
    retry: { attempts: 4, backoffMs: 40, maxBackoffMs: 300 },
    ...(routes ? { routes } : {}),
  });
  let lastView = '';
  const watch = (c) => c.subscribe(() => {
    const f = c.getSnapshot();
    const view = f.phase + (f.busy ? ' busy' : '') + ' cards ' + (f.suspension ? f.suspension.tools.map((t) => t.callId.slice(-4) + ':' + t.approval + (t.draft ? '*' : '') + '/' + t.serverApproval).join(',') : '-');
    if (view !== lastView) { lastView = view; note('snap ' + view); }
  });
  const open = () => { const c = openClient(); watch(c); return c; };
  let client = open();
  const snap = () => client.getSnapshot();
  const attempt = async (what, fn) => {
    note(what);
    try { await fn(); note(what + ' ok'); return true; } catch (e) {
      const code = (e && (e.code || e.name)) || 'unknown';
      note(what + ' ' + code);
      out.trace.push(what + ' ' + code + ' (' + String(e && e.message).slice(0, 100) + ')');
      if (code === 'expired') {
        const f = client.getSnapshot();
        out.trace.push('  phase ' + f.phase + ', tools ' + JSON.stringify(f.messages.flatMap((m) => m.tools.map((t) => [t.callId, t.name, t.status, t.approval]))));
      }
      out.refused[what + ' ' + code] = (out.refused[what + ' ' + code] || 0) + 1;
      // A race between tabs ends in a refusal (conflict), a command refused while another runs
      // (busy, input_locked, invalid_state) or a stopped request, and an injected fault in a
      // transport error; no run expires here (a grace window of ten minutes), so 'expired' is a
      // failure, as is anything else.
      const benign = ['conflict', 'invalid_state', 'aborted', 'busy', 'input_locked'];
      if (faults) benign.push('network', 'timeout', 'http_status', 'stream_error');
      if (!benign.includes(code)) {
        out.errors.push(what + ': ' + code + ': ' + String(e && e.message).slice(0, 160));
      }
      return false;
    }
  };
  // Commands are not awaited one after the other: a tab acts again while its request is out.
  let inFlight = null;
  const run = (what, fn) => { if (!inFlight) inFlight = attempt(what, fn).finally(() => { inFlight = null; }); };
  await attempt('load', () => client.load());
  let idle = 0;
  // A minute for a conversation that takes a few seconds: a tab still going then is stuck.
  const deadline = performance.now() + 60_000;
  while (performance.now() < deadline) {
    out.steps++;
    await sleep(Math.floor(rand() * 25));
    if (chaos && rand() < 0.01) {
      // The page reloaded: a new client on the same storage (commands of the old one end aborted).
      out.reloads++;
      client.free();
      client = open();
      await attempt('load', () => client.load());
      continue;
    }
    const s = snap();
    if (chaos && s.busy && (s.phase === 'submitting' || s.phase === 'streaming') && rand() < 0.15) {
      // Stop pressed while decisions or a reply are on their way.
      out.stops++;
      client.abort();
      continue;
    }
    if (s.suspension) {
      idle = 0;
      for (const id of s.suspension.undecided) {
        if (rand() < 0.45) continue;
        const d = choose(id, seed);
        try {
          if (d === 'approve') client.approve(id); else client.reject(id, reasonFor(id));
          out.made[id] = d;
        } catch (e) {
          out.refused['decide ' + e.code] = (out.refused['decide ' + e.code] || 0) + 1;
        }
      }
      const after = snap();
      if (after.canSubmit && !after.busy && rand() < 0.3) run('submit', () => client.submit());
      continue;
    }
    const seen = s.loaded ? userTexts(s) : [];
    const next = texts.find((t) => !seen.includes(t));
    if (tab === 0 && next !== undefined && s.canSend && !s.busy) {
      run('send', () => client.send(next));
      continue;
    }
    const over = next === undefined && !s.busy && (s.phase === 'completed' || s.phase === 'idle')
      && s.messages.length > 0 && s.messages[s.messages.length - 1].role !== 'user';
    if (over) {
      // The end, read once more from the server: still the end (nothing paused that this tab missed).
      await inFlight;
      await attempt('load', () => client.load());
      const f = snap();
      if (!f.suspension && texts.every((t) => userTexts(f).includes(t))) { out.finished = true; break; }
      continue;
    }
    // Nothing paused here and nothing to do: a tab that saw no pause learns of new messages only by
    // reading the thread (a person looking again). A tab on a pause never does: it must follow the
    // other tabs through their records.
    if (++idle % 12 === 0 && !s.busy) run('load', () => client.load());
  }
  await inFlight;
  const s = snap();
  // What a tab left unfinished shows, to tell why: its cards (with the server's approval), the
  // tools of its last message, and the drafts record in storage.
  const record = Object.keys(localStorage).filter((k) => k.startsWith('toolgate:drafts')).map((k) => localStorage.getItem(k)).join(' ');
  const lastTools = s.messages.length ? s.messages[s.messages.length - 1].tools.map((t) => [t.callId, t.status, t.approval]) : [];
  out.last = 'phase ' + s.phase + ', busy ' + s.busy + ', cards ' + JSON.stringify(s.suspension ? s.suspension.tools.map((t) => [t.callId, t.approval, t.draft, t.serverApproval]) : null) + ', users ' + JSON.stringify(userTexts(s)) + ', last tools ' + JSON.stringify(lastTools) + ', record ' + record.slice(0, 400);
  client.free();
  return out;
};
`;

// The same choice as the page's (a hash of the callId).
function choose(callId, seed) {
  let h = seed >>> 0;
  for (const c of callId) h = (Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0);
  return h % 3 === 0 ? 'reject' : 'approve';
}
const reasonFor = (id) => `tabs: not ${id}`;

function conversation(i) {
  const dialect = i % 2 === 0 ? 'neuron' : 'sidenet';
  const menu = [
    [`delete /tmp/tabs_${i}_a.txt and email v${i}@example.com about two ${i}`],
    [`buy 3 tickets at 50 and email x${i}@example.com about three ${i}`, `delete /tmp/tabs_${i}_b.txt`],
    [`read /tmp/tabs_${i}.txt`, `buy 2 tickets at 80 and delete /tmp/tabs_${i}_c.txt and email w${i}@example.com about all ${i}`],
    [`deploy svc${i}`, `email y${i}@example.com about next ${i}`],
  ];
  // A third of the conversations stop requests and reload tabs at random; half the Sidenet ones
  // use the AI SDK's approval form.
  const routes = dialect === 'sidenet' && i % 4 === 3 ? { chat: '/v1/chat?approvalForm=ai-sdk' } : null;
  // Half the Neuron ones against an append-only history.
  const appendOnly = dialect === 'neuron' && i % 4 === 2;
  const endpoint = appendOnly ? 'append-only' : 'default';
  const variant = appendOnly ? 'neuron append-only' : dialect;
  return { dialect, variant, endpoint, threadId: `tabs_${SEED}_${i}`, texts: menu[(i * 5 + SEED) % menu.length], seed: SEED * 1000 + i, routes, chaos: i % 3 === 2 };
}

async function main() {
  const { work, wwwDir } = prepare('soak:tabs', PAGE_HTML, 'tabs.js', PAGE_JS);
  // Two endpoints: the default one (Neuron's history rewritten in place, and Sidenet), and Neuron
  // with an append-only history.
  const endpoints = {};
  for (const appendOnly of [false, true]) {
    const port = await freePort();
    const name = appendOnly ? 'append-only' : 'default';
    const e = { port, base: `http://127.0.0.1:${port}`, dataDir: path.join(work, `data-${name}`), wwwDir, appendOnly };
    e.server = await startEndpoint({
      ...e,
      env: {
        FAULTS: process.env.SOAK_TABS_FAULTS || '', CHUNK_DELAY_MS: '4', NEURON_DECISIONS: 'strict',
        // Neuron's newest history (the pause never changes, the outcomes on the tool_call_result
        // after it) and message-less replies.
        ...(appendOnly ? { NEURON_HISTORY: 'append-only', NEURON_REPLY: 'approvals' } : {}),
      },
    });
    endpoints[name] = e;
    log(`endpoint ${name} ${e.base}, DATA_DIR=${e.dataDir}`);
  }
  const browser = await launchChromium();
  const t0 = Date.now();
  const problems = [];
  const results = [];
  try {
    const specs = Array.from({ length: CONVERSATIONS }, (_, i) => conversation(i));
    const one = async (spec) => {
      const e = endpoints[spec.endpoint];
      const context = await browser.newContext();
      try {
        const pages = [];
        for (let t = 0; t < TABS; t++) {
          const page = await context.newPage();
          page.on('pageerror', (err) => problems.push(`page error (${spec.threadId} tab ${t}): ${err.message}`));
          page.on('console', (m) => {
            // (The browser logs each refused request, a 409 among them: those are counted apart.)
            if (/Content Security Policy|panicked|unreachable|Uncaught/i.test(m.text())) problems.push(`console (${spec.threadId} tab ${t}): ${m.text()}`);
          });
          await page.goto(`${e.base}/`);
          await page.waitForFunction(() => document.getElementById('state')?.textContent === 'ready', null, { timeout: 10_000 });
          pages.push(page);
        }
        const faults = !!process.env.SOAK_TABS_FAULTS;
        const tabs = await Promise.all(pages.map((p, tab) => p.evaluate((a) => window.runTab(a), { ...spec, tab, faults })));
        results.push({ ...spec, tabs });
      } finally {
        await context.close();
      }
    };
    for (let at = 0; at < specs.length; at += CONCURRENCY) {
      await Promise.all(specs.slice(at, at + CONCURRENCY).map(one));
      log(`${Math.min(at + CONCURRENCY, specs.length)}/${specs.length} conversations`);
    }
  } finally {
    await browser.close();
    for (const e of Object.values(endpoints)) await kill(e.server);
  }

  const effectsOf = Object.fromEntries(Object.entries(endpoints).map(([k, e]) => [k, readEffects(e.dataDir)]));
  const row = () => ({ conv: 0, calls: 0, bad: [], unfinished: [], sentElsewhere: 0, refused: {}, stops: 0, reloads: 0 });
  const rows = { neuron: row(), 'neuron append-only': row(), sidenet: row() };
  for (const r of results) {
    const row = rows[r.variant];
    const effects = effectsOf[r.endpoint];
    row.conv++;
    const stored = storedDecisions(r.dialect, readRecord(endpoints[r.endpoint].dataDir, r.dialect, r.threadId));
    const decidedBy = {};
    for (const t of r.tabs) for (const id of Object.keys(t.made)) (decidedBy[id] ||= []).push(t.tab);
    for (const t of r.tabs) {
      row.stops += t.stops;
      row.reloads += t.reloads;
      for (const [k, n] of Object.entries(t.refused)) row.refused[k] = (row.refused[k] || 0) + n;
      if (!t.finished && !r.printed) {
        r.printed = true;
        const merged = r.tabs.flatMap((x) => x.journal).sort((a, b) => a[0] - b[0]);
        const t0 = merged.length ? merged[0][0] : 0;
        console.log(`journal ${r.dialect} ${r.threadId} (ms, tab, what); last 120 of ${merged.length}:`);
        for (const [when, tab, what] of merged.slice(-120)) console.log(`  ${(when - t0).toFixed(1).padStart(8)} ${tab} ${what}`);
      }
      if (!t.finished) row.unfinished.push(`${r.dialect} ${r.threadId} tab ${t.tab}: ${t.last}; ${t.errors.slice(-2).join(' | ')}; trace ${t.trace.slice(-4).join(' | ')}`);
      for (const err of t.errors) row.bad.push(`${r.dialect} ${r.threadId} tab ${t.tab}: ${err}`);
      // SOAK_TRACE=1: every refusal each tab met, in order.
      if (process.env.SOAK_TRACE && t.trace.length) console.log(`trace ${r.dialect} ${r.threadId} tab ${t.tab}: ${t.trace.filter((x) => !x.startsWith('decide')).join(' | ')}`);
    }
    for (const [callId, s] of stored) {
      row.calls++;
      const want = choose(callId, r.seed);
      const ran = effects.filter((x) => x.dialect === r.dialect && x.threadId === r.threadId && x.callId === callId).length;
      const where = `${r.dialect} ${r.threadId} ${callId} (${want}; decided in tabs ${JSON.stringify(decidedBy[callId] || [])})`;
      if (!decidedBy[callId]) row.bad.push(`${where}: stored ${s.state}, decided in no tab`);
      if (s.state === 'pending') row.bad.push(`${where}: left pending`);
      else if (s.state !== (want === 'approve' ? 'approved' : 'rejected')) row.bad.push(`${where}: stored ${s.state}`);
      if (want === 'approve' && s.state === 'approved' && ran !== 1) row.bad.push(`${where}: ran ${ran}x`);
      if (want === 'reject' && ran > 0) row.bad.push(`${where}: rejected but ran ${ran}x`);
      if (r.dialect === 'neuron' && s.state === 'rejected' && s.reason !== reasonFor(callId)) row.bad.push(`${where}: reason ${JSON.stringify(s.reason)}`);
      if ((decidedBy[callId] || []).length > 1) row.sentElsewhere++;
    }
  }
  const seconds = ((Date.now() - t0) / 1000).toFixed(1);
  console.log('');
  console.log(`conversations: ${results.length} of ${TABS} tabs each, in ${seconds}s (seed ${SEED})`);
  let bad = problems.length;
  for (const [dialect, row] of Object.entries(rows)) {
    const failures = row.bad.length + row.unfinished.length;
    bad += failures;
    const refused = Object.entries(row.refused).sort().map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
    console.log(`${failures ? 'FAIL' : 'ok  '} ${dialect.padEnd(18)} conversations ${row.conv}, gated calls ${row.calls} (decided in more than one tab ${row.sentElsewhere}), ` +
      `stops ${row.stops}, reloads ${row.reloads}, wrong ${row.bad.length}, tabs unfinished ${row.unfinished.length}; refused or stopped (not failures): ${refused}`);
    for (const l of [...row.bad, ...row.unfinished].slice(0, 15)) console.log(`  ${l}`);
  }
  for (const p of problems.slice(0, 10)) console.log(`  ${p}`);
  if (bad === 0) rmSync(work, { recursive: true, force: true });
  else console.log(`kept ${work} for inspection`);
  process.exit(bad === 0 ? 0 : 1);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
