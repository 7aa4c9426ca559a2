#!/usr/bin/env node
// npm run soak: the fault soak. Headless Chromium runs scripted conversations of both dialects
// through the browser driver (`ApprovalClient` of pkg/) against the reference endpoint started with
// FAULTS (drops, 500s, delays) and killed (SIGKILL) and restarted on the same port and DATA_DIR in
// the middle. Then the server's stored history (the thread files and effects.jsonl) is checked:
// every decision the person made was applied exactly once, and none was invented. In a third of
// the conversations the person has allowed `delete_file` and `send_email` for the session
// (`allowTool`): their calls must then be approved, and run, exactly once without being asked.
//
//   node scripts/soak.mjs                       # 200 conversations, seed 7
//   SOAK_CONVERSATIONS=50 SOAK_SEED=3 node scripts/soak.mjs
//
// Needs pkg/ built (bash scripts/build.sh) and Chromium (bash scripts/setup.sh). Exit code 1 when
// a decision was lost, duplicated or invented, or a conversation did not finish.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CONVERSATIONS = Number(process.env.SOAK_CONVERSATIONS || 200);
const SEED = Number(process.env.SOAK_SEED || 7);
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY || 8);
const FAULTS = process.env.SOAK_FAULTS || `drop:0.1,error:0.05,delay:50,seed:${SEED}`;
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
const userTexts = (s) => s.messages.filter((m) => m.role === 'user').map((m) => m.text);

window.runConversation = async ({ dialect, threadId, texts, seed, allow }) => {
  await ready;
  const out = { dialect, threadId, allow, made: {}, errors: [], asked: [], finished: false, steps: 0 };
  const client = new ApprovalClient({
    dialect, threadId, persist: false, timeoutMs: 4000,
    retry: { attempts: 8, backoffMs: 60, maxBackoffMs: 600 },
  });
  for (const tool of allow) client.allowTool(tool);
  const snap = () => client.getSnapshot();
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
        for (const id of s.suspension.undecided) {
          const d = out.made[id] || choose(id, seed);
          try {
            if (d === 'approve') client.approve(id); else client.reject(id, reasonFor(id));
            out.made[id] = d;
          } catch (e) {
            out.errors.push('decide ' + id + ': ' + (e && e.code));
          }
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

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

function startEndpoint({ port, dataDir, wwwDir }) {
  const child = spawn(process.execPath, [path.join(ROOT, 'www/server/main.mjs')], {
    cwd: ROOT,
    env: {
      ...process.env, HOST: '127.0.0.1', PORT: String(port), DATA_DIR: dataDir, WWW_DIR: wwwDir,
      PKG_DIR: path.join(ROOT, 'pkg'), FAULTS, QUIET: '1', CHUNK_DELAY_MS: '2', GRACE_MS: '600000', TOKEN: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`endpoint did not start:\n${output}`)), 10_000);
    child.stdout.on('data', (d) => {
      output += d;
      if (/listening on/.test(output)) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.stderr.on('data', (d) => (output += d));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`endpoint exited (${code}):\n${output}`));
    });
  });
}

const kill = (child) =>
  new Promise((r) => {
    if (child.exitCode !== null || child.signalCode !== null) return r();
    child.once('exit', () => r());
    child.kill('SIGKILL');
  });

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

function chromiumPath() {
  if (process.env.CHROMIUM) return process.env.CHROMIUM;
  for (const p of ['/usr/bin/chromium', '/usr/bin/chromium-browser']) if (existsSync(p)) return p;
  return execFileSync('which', ['chromium'], { encoding: 'utf8' }).trim();
}

// ------------------------------------------------------------------------------------------------
// The conversations

function conversation(i) {
  const dialect = i % 2 === 0 ? 'neuron' : 'sidenet';
  const threadId = `soak_${SEED}_${i}`;
  const menu = [
    [`delete /tmp/soak_${i}_a.txt`],
    [`email u${i}@example.com about report ${i}`],
    [`delete /tmp/soak_${i}_b.txt and email v${i}@example.com about two ${i}`],
    [`deploy svc${i}`],
    [`read /tmp/soak_${i}.txt`, `buy 3 tickets at 50`],
    [`buy 2 tickets at 80 and delete /tmp/soak_${i}_c.txt`, `email w${i}@example.com about again ${i}`],
  ];
  const allow = i % 3 === 2 ? ['delete_file', 'send_email'] : [];
  return { dialect, threadId, texts: menu[(i * 7 + SEED) % menu.length], seed: SEED * 1000 + i, allow };
}

// ------------------------------------------------------------------------------------------------
// The check against the stored history

function readEffects(dataDir) {
  const file = path.join(dataDir, 'effects.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

function readRecord(dataDir, dialect, id) {
  const file = path.join(dataDir, dialect, `${id}.json`);
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : null;
}

/** The gated calls a record stores, with the tool and the state the server recorded for each. */
function storedDecisions(dialect, rec) {
  const out = new Map();
  if (!rec) return out;
  if (dialect === 'neuron') {
    for (const m of rec.messages || []) {
      if (m.type !== 'tool_call') continue;
      for (const t of m.tools || []) {
        if (t.approval === null || t.approval === undefined) continue;
        out.set(t.callId, { name: t.name, state: t.approval, reason: t.rejectReason ?? null });
      }
    }
  } else {
    for (const m of rec.messages || []) {
      for (const p of m.parts || []) {
        if (!p.approval || typeof p.toolCallId !== 'string') continue;
        const a = p.approval.approved;
        const name = p.toolName ?? (typeof p.type === 'string' && p.type.startsWith('tool-') ? p.type.slice(5) : null);
        out.set(p.toolCallId, { name, state: a === true ? 'approved' : a === false ? 'rejected' : 'pending', reason: null });
      }
    }
  }
  return out;
}

function verify(dataDir, results, reasonFor) {
  const effects = readEffects(dataDir);
  const report = { decisions: 0, approvals: 0, rejections: 0, allowed: 0, lost: [], duplicated: [], invented: [] };
  const byThread = new Map(results.map((r) => [r.threadId, r]));
  for (const r of results) {
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
      const where = `${r.dialect} ${r.threadId} ${callId} (${d})`;
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
      if (s.state !== 'pending' && !(callId in r.made)) report.invented.push(`${r.dialect} ${r.threadId} ${callId}: stored ${s.state}, never decided`);
    }
  }
  // Every executed gated tool was approved by the person.
  for (const e of effects) {
    const r = byThread.get(e.threadId);
    if (!r) {
      report.invented.push(`effect on unknown thread ${e.threadId}`);
      continue;
    }
    const stored = storedDecisions(e.dialect, readRecord(dataDir, e.dialect, e.threadId));
    if (stored.has(e.callId) && r.made[e.callId] !== 'approve') report.invented.push(`${e.dialect} ${e.threadId} ${e.callId}: ran, not approved`);
  }
  return { report, effects: effects.length };
}

// ------------------------------------------------------------------------------------------------

async function main() {
  const pkgJs = path.join(ROOT, 'pkg', 'toolgate.js');
  if (!existsSync(pkgJs) || !/\bApprovalClient\b/.test(readFileSync(pkgJs, 'utf8'))) {
    console.error('[soak] pkg/toolgate.js with ApprovalClient is missing: run bash scripts/build.sh first');
    process.exit(2);
  }
  const work = mkdtempSync(path.join(tmpdir(), 'toolgate-soak-'));
  const dataDir = path.join(work, 'data');
  const wwwDir = path.join(work, 'www');
  mkdirSync(wwwDir, { recursive: true });
  writeFileSync(path.join(wwwDir, 'index.html'), PAGE_HTML);
  writeFileSync(path.join(wwwDir, 'soak.js'), PAGE_JS);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let server = await startEndpoint({ port, dataDir, wwwDir });
  log(`endpoint ${base}, FAULTS=${FAULTS}, DATA_DIR=${dataDir}`);

  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-quic', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const t0 = Date.now();
  const faults = { drops: 0, errors: 0, delays: 0 };
  const results = [];
  const problems = [];
  let restarted = false;
  try {
    const page = await browser.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (/Content Security Policy|panicked|unreachable/i.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    // The page itself is loaded before the faults matter: retry until it is up.
    for (let i = 0; ; i++) {
      try {
        await page.goto(`${base}/`);
        await page.waitForFunction(() => document.getElementById('state')?.textContent === 'ready', null, { timeout: 10_000 });
        break;
      } catch (e) {
        if (i >= 20) throw e;
      }
    }
    const specs = Array.from({ length: CONVERSATIONS }, (_, i) => conversation(i));
    const half = Math.floor(CONVERSATIONS / 2);
    for (let at = 0; at < specs.length; at += CONCURRENCY) {
      const batch = specs.slice(at, at + CONCURRENCY);
      let restart = null;
      if (!restarted && at + CONCURRENCY > half) {
        restarted = true;
        // Kill the server while this batch is in flight, and bring it back on the same port and data.
        restart = (async () => {
          await new Promise((r) => setTimeout(r, 120));
          const c = await faultCounts(base);
          for (const k of Object.keys(faults)) faults[k] += c[k] || 0;
          await kill(server);
          log(`server killed (SIGKILL) during conversations ${at}..${at + batch.length - 1}`);
          await new Promise((r) => setTimeout(r, 400));
          server = await startEndpoint({ port, dataDir, wwwDir });
          log('server restarted on the same port and DATA_DIR');
        })();
      }
      const out = await page.evaluate((b) => Promise.all(b.map((s) => window.runConversation(s))), batch);
      if (restart) await restart;
      results.push(...out);
      if ((at / CONCURRENCY) % 5 === 0) log(`${results.length}/${specs.length} conversations`);
    }
    const c = await faultCounts(base);
    for (const k of Object.keys(faults)) faults[k] += c[k] || 0;
  } finally {
    await browser.close();
    await kill(server);
  }

  const reasonFor = (id) => `soak: not ${id} <b>"as asked"</b>`;
  const { report, effects } = verify(dataDir, results, reasonFor);
  const unfinished = results.filter((r) => !r.finished);
  const asked = results.flatMap((r) => r.asked.map((id) => `${r.dialect} ${r.threadId} ${id}`));
  const errors = results.reduce((n, r) => n + r.errors.length, 0);
  const seconds = ((Date.now() - t0) / 1000).toFixed(1);
  console.log('');
  console.log(`conversations: ${results.length} (neuron ${results.filter((r) => r.dialect === 'neuron').length}, sidenet ${results.filter((r) => r.dialect === 'sidenet').length}), finished ${results.length - unfinished.length}, in ${seconds}s`);
  console.log(`server restarts: ${restarted ? 1 : 0} (SIGKILL mid-batch)`);
  console.log(`faults injected: ${faults.drops + faults.errors} (drops ${faults.drops}, errors ${faults.errors}, delays ${faults.delays})`);
  console.log(`client-visible failures (rejected promises, retried by the script): ${errors}`);
  console.log(`decisions: ${report.decisions} (approve ${report.approvals}, reject ${report.rejections}; ${report.allowed} approved by an allowed tool without asking); effects executed: ${effects}`);
  console.log(`lost: ${report.lost.length}`);
  console.log(`duplicated: ${report.duplicated.length}`);
  console.log(`invented: ${report.invented.length}`);
  console.log(`allowed tools asked for: ${asked.length}`);
  for (const l of [...report.lost, ...report.duplicated, ...report.invented, ...asked].slice(0, 20)) console.log(`  ${l}`);
  for (const u of unfinished.slice(0, 10)) console.log(`  unfinished ${u.dialect} ${u.threadId}: ${u.errors.slice(-3).join(' | ')}`);
  for (const p of problems.slice(0, 10)) console.log(`  ${p}`);
  const bad = report.lost.length + report.duplicated.length + report.invented.length + asked.length
    + unfinished.length + problems.length;
  if (bad === 0) rmSync(work, { recursive: true, force: true });
  else console.log(`kept ${work} for inspection`);
  process.exit(bad === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
