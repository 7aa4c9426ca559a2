// Test helpers: start servers (in-process or as a child), speak both dialects.
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import http from 'node:http';
import { startServer } from './server.mjs';

export const SERVER_DIR = path.dirname(fileURLToPath(import.meta.url));
export const MAIN = path.join(SERVER_DIR, 'main.mjs');

export function tempDir(prefix = 'toolgate-') {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

/** In-process server on a free port with a fresh DATA_DIR. Call t.after(s.close) or use `using`. */
export async function start(options = {}) {
  const dataDir = options.dataDir || tempDir();
  const srv = await startServer({ port: 0, quiet: true, chunkDelayMs: 0, faults: null, token: null, ...options, dataDir });
  const close = async () => {
    await srv.close();
    if (!options.dataDir && !options.keepData) rmSync(dataDir, { recursive: true, force: true });
  };
  return { ...srv, dataDir, close };
}

/** Child process running main.mjs. Resolves once the listening line is printed. */
export function spawnServer(env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN], {
      env: { ...process.env, PORT: '0', QUIET: '1', CHUNK_DELAY_MS: '0', FAULTS: '', TOKEN: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`server did not start: ${out} ${err}`)), 5000);
    child.stderr.on('data', (d) => (err += d));
    child.stdout.on('data', (d) => {
      out += d;
      const m = /^toolgate endpoint listening on (http:\/\/\S+)$/m.exec(out);
      if (m && !child.url) {
        child.url = m[1];
        clearTimeout(timer);
        resolve({
          child,
          url: m[1],
          output: () => out,
          kill: (sig = 'SIGKILL') =>
            new Promise((r) => {
              if (child.exitCode !== null || child.signalCode !== null) return r();
              child.once('exit', () => r());
              child.kill(sig);
            }),
        });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (!child.url) reject(new Error(`server exited with ${code}: ${out} ${err}`));
    });
  });
}

export async function getJson(url, init = {}) {
  const r = await fetch(url, init);
  const text = await r.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  return { status: r.status, headers: r.headers, body };
}

export function postJson(url, body, headers = {}) {
  return getJson(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** Parse an SSE body into { chunks, comments, done }. */
export function parseSse(text) {
  const chunks = [];
  const comments = [];
  let done = false;
  for (const event of text.split('\n\n')) {
    for (const line of event.split('\n')) {
      if (line.startsWith(':')) comments.push(line.slice(1).trim());
      else if (line.startsWith('data: ')) {
        const payload = line.slice(6);
        if (payload === '[DONE]') done = true;
        else chunks.push(JSON.parse(payload));
      }
    }
  }
  return { chunks, comments, done };
}

/** POST /v1/chat and read the whole stream. */
export async function sseChat(base, body, { query = '', headers = {} } = {}) {
  const r = await fetch(`${base}/v1/chat${query}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  if (!(r.headers.get('content-type') || '').startsWith('text/event-stream')) {
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {}
    return { status: r.status, headers: r.headers, body: json, text };
  }
  return { status: r.status, headers: r.headers, text, ...parseSse(text) };
}

export const userMsg = (text) => ({ id: `u_${Math.random().toString(36).slice(2)}`, role: 'user', parts: [{ type: 'text', text }] });

export const approvals = (chunks) => chunks.filter((c) => c.type === 'data-tool-call-approval').map((c) => c.data);

export const textOf = (chunks) => chunks.filter((c) => c.type === 'text-delta').map((c) => c.delta).join('');

/** A raw HTTP request, for paths fetch() would normalize. */
export function rawRequest(base, method, rawPath, { headers = {}, body } = {}) {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path: rawPath, headers }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (data += d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

export function readEffects(dataDir) {
  try {
    return readFileSync(path.join(dataDir, 'effects.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  } catch (e) {
    if (e.code === 'ENOENT') return [];
    throw e;
  }
}

export function readRecord(dataDir, dialect, id) {
  return JSON.parse(readFileSync(path.join(dataDir, dialect, `${id}.json`), 'utf8'));
}

