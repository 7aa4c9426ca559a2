// What the two soaks (scripts/soak.mjs, scripts/soak-tabs.mjs) share: the reference endpoint started
// as a child process on a free port, headless Chromium, and the reading of the endpoint's stored
// history (the thread files and effects.jsonl) that their checks compare with the person's intent.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Checks that pkg/ is built (exits with code 2 if not), then makes the soak's temporary directory
 * with its page in `www/`: `index.html` and the module `script` (named `scriptName`). Returns the
 * directory and the page's directory.
 */
export function prepare(label, html, scriptName, script) {
  const pkgJs = path.join(ROOT, 'pkg', 'toolgate.js');
  if (!existsSync(pkgJs) || !/\bApprovalClient\b/.test(readFileSync(pkgJs, 'utf8'))) {
    console.error(`[${label}] pkg/toolgate.js with ApprovalClient is missing: run bash scripts/build.sh first`);
    process.exit(2);
  }
  const work = mkdtempSync(path.join(tmpdir(), `toolgate-${label.replace(':', '-')}-`));
  const wwwDir = path.join(work, 'www');
  mkdirSync(wwwDir, { recursive: true });
  writeFileSync(path.join(wwwDir, 'index.html'), html);
  writeFileSync(path.join(wwwDir, scriptName), script);
  return { work, wwwDir };
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/**
 * Starts the reference endpoint on `port` with its data in `dataDir`, serving the soak's page from
 * `wwwDir` and the package from pkg/; `env` adds to (or overrides) the settings below: no faults, a
 * grace window of ten minutes, no token. Resolves to the child process once it listens.
 */
export function startEndpoint({ port, dataDir, wwwDir, env = {} }) {
  const child = spawn(process.execPath, [path.join(ROOT, 'www/server/main.mjs')], {
    cwd: ROOT,
    env: {
      ...process.env, HOST: '127.0.0.1', PORT: String(port), DATA_DIR: dataDir, WWW_DIR: wwwDir,
      PKG_DIR: path.join(ROOT, 'pkg'), FAULTS: '', QUIET: '1', GRACE_MS: '600000', TOKEN: '', ...env,
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

/** SIGKILLs the child, resolving once it has exited. */
export const kill = (child) =>
  new Promise((r) => {
    if (child.exitCode !== null || child.signalCode !== null) return r();
    child.once('exit', () => r());
    child.kill('SIGKILL');
  });

function chromiumPath() {
  if (process.env.CHROMIUM) return process.env.CHROMIUM;
  for (const p of ['/usr/bin/chromium', '/usr/bin/chromium-browser']) if (existsSync(p)) return p;
  return execFileSync('which', ['chromium'], { encoding: 'utf8' }).trim();
}

/** Headless Chromium, with the flags a closed network needs when run as root. */
export function launchChromium() {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-quic', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
}

/** The gated tools the endpoint ran (effects.jsonl), one entry per run. */
export function readEffects(dataDir) {
  const file = path.join(dataDir, 'effects.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

export function readRecord(dataDir, dialect, id) {
  const file = path.join(dataDir, dialect, `${id}.json`);
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : null;
}

/** The gated calls a record stores, with the tool and the state the server recorded for each. */
export function storedDecisions(dialect, rec) {
  const out = new Map();
  if (!rec) return out;
  if (dialect === 'neuron') {
    // The tool_call's states, then the outcomes on the tool_call_result after it (an append-only
    // history writes them only there).
    for (const m of rec.messages || []) {
      if (m.type !== 'tool_call' && m.type !== 'tool_call_result') continue;
      for (const t of m.tools || []) {
        if (t.approval === null || t.approval === undefined) continue;
        if (m.type === 'tool_call_result' && t.approval === 'pending') continue;
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
