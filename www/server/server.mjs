// The HTTP layer: routing, body limits, CORS, auth, logging, fault injection.
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { timingSafeEqual } from 'node:crypto';
import { Store, validThreadId } from './store.mjs';
import * as neuron from './neuron.mjs';
import * as sidenet from './sidenet.mjs';
import { serveStatic } from './static.mjs';
import { parseFaults, Faults } from './faults.mjs';
import { json, empty, HttpError } from './util.mjs';

const SERVER_DIR = path.dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = path.resolve(SERVER_DIR, '..', '..');
export const BODY_LIMIT = 1024 * 1024;

/** Options from the environment (what main.mjs uses). */
export function configFromEnv(env = process.env) {
  const num = (v, d) => (v === undefined || v === '' ? d : Number(v));
  return {
    host: env.HOST || '127.0.0.1',
    port: num(env.PORT, 8787),
    dataDir: env.DATA_DIR ? path.resolve(env.DATA_DIR) : path.join(REPO_ROOT, '.data'),
    wwwDir: env.WWW_DIR ? path.resolve(env.WWW_DIR) : path.join(REPO_ROOT, 'www'),
    pkgDir: env.PKG_DIR ? path.resolve(env.PKG_DIR) : path.join(REPO_ROOT, 'pkg'),
    token: env.TOKEN || null,
    graceMs: num(env.GRACE_MS, 60000),
    corsOrigin: env.CORS_ORIGIN || '*',
    agentVersion: env.AGENT_VERSION || 'agv_ref_1',
    faults: env.FAULTS || null,
    quiet: env.QUIET === '1' || env.QUIET === 'true',
    chunkDelayMs: num(env.CHUNK_DELAY_MS, 10),
    neuronDecisions: env.NEURON_DECISIONS || 'strict',
    neuronHistory: env.NEURON_HISTORY || 'update',
    neuronReply: env.NEURON_REPLY || 'message',
    neuronCallIds: env.NEURON_CALL_IDS || 'unique',
    neuronExpiresMs: num(env.NEURON_EXPIRES_MS, 0),
    neuronConflictStatus: num(env.NEURON_CONFLICT_STATUS, 409),
  };
}

const DEFAULTS = configFromEnv({});

function readBody(req, limit) {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new HttpError(413, `Request body exceeds ${limit} bytes`));
      return;
    }
    const chunks = [];
    let size = 0;
    let failed = false;
    req.on('data', (c) => {
      if (failed) return;
      size += c.length;
      if (size > limit) {
        failed = true;
        chunks.length = 0;
        reject(new HttpError(413, `Request body exceeds ${limit} bytes`));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (!failed) resolve(Buffer.concat(chunks));
    });
    req.on('error', (e) => {
      if (!failed) reject(e);
    });
  });
}

/**
 * True when Content-Type is `application/json`, parameters (`; charset=utf-8`) allowed. Anything
 * else is refused before the body is read: a cross-site form can POST `text/plain`,
 * `application/x-www-form-urlencoded` or `multipart/form-data` without a CORS preflight, and must
 * not be able to send a message or decide a tool call.
 */
export function isJsonContentType(header) {
  if (typeof header !== 'string') return false;
  return header.split(';', 1)[0].trim().toLowerCase() === 'application/json';
}

async function readJson(req) {
  if (!isJsonContentType(req.headers['content-type']))
    throw new HttpError(415, 'Content-Type must be application/json');
  const buf = await readBody(req, BODY_LIMIT);
  const text = buf.toString('utf8');
  if (text.trim() === '') throw new HttpError(400, 'Request body is empty; expected JSON');
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new HttpError(400, `Malformed JSON: ${e.message}`);
  }
}

function tokenOk(header, token) {
  const m = /^Bearer\s+(.+)$/i.exec(header || '');
  if (!m) return false;
  const a = Buffer.from(m[1].trim());
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function splitUrl(rawUrl) {
  const q = rawUrl.indexOf('?');
  const rawPath = q === -1 ? rawUrl : rawUrl.slice(0, q);
  const query = new URLSearchParams(q === -1 ? '' : rawUrl.slice(q + 1));
  return { rawPath, query };
}

function isApiPath(p) {
  return p === '/threads' || p.startsWith('/threads/') || p === '/v1' || p.startsWith('/v1/') || p === '/__faults' || p === '/health';
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Start the endpoint. Resolves to { url, port, close(), faults, store, config }.
 */
export async function startServer(options = {}) {
  const config = { ...DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
  for (const [key, name, allowed] of [
    ['neuronHistory', 'NEURON_HISTORY', ['update', 'append-only']],
    ['neuronReply', 'NEURON_REPLY', ['message', 'approvals']],
    ['neuronCallIds', 'NEURON_CALL_IDS', ['unique', 'name']],
    ['neuronConflictStatus', 'NEURON_CONFLICT_STATUS', [409, 200]],
  ]) {
    if (!allowed.includes(config[key]))
      throw new Error(`${name} must be ${allowed.map((v) => `"${v}"`).join(' or ')}, not ${JSON.stringify(config[key])}`);
  }
  const store = new Store(config.dataDir);
  const faultCfg = typeof config.faults === 'string' || config.faults === null ? parseFaults(config.faults) : config.faults;
  const faults = faultCfg ? new Faults(faultCfg) : null;
  const ctx = { store, config };
  const log = config.log || ((line) => process.stdout.write(line + '\n'));
  const staticOpts = { wwwDir: config.wwwDir, pkgDir: config.pkgDir, deny: [SERVER_DIR, path.join(config.wwwDir, 'server'), config.dataDir] };

  function cors() {
    const h = {
      'access-control-allow-origin': config.corsOrigin,
      'access-control-expose-headers': 'x-vercel-ai-ui-message-stream',
    };
    if (config.corsOrigin !== '*') h.vary = 'Origin';
    return h;
  }

  /** Route an API request to a response plan. */
  async function route(req, rawPath, query) {
    let segs;
    try {
      segs = rawPath.split('/').slice(1).map(decodeURIComponent);
    } catch {
      return json(400, { error: 'Malformed percent-encoding in path' });
    }
    const method = req.method;
    const allow = (methods) =>
      methods.includes(method) ? null : json(405, { error: `Method ${method} not allowed; use ${methods.join(', ')}` }, { allow: methods.join(', ') });

    if (segs[0] === 'health' && segs.length === 1) return allow(['GET']) || json(200, { ok: true });

    if (segs[0] === '__faults' && segs.length === 1) {
      if (!faults) return json(404, { error: 'Fault injection is off (set FAULTS)' });
      return allow(['GET']) || json(200, { ...faults.counts });
    }

    if (segs[0] === 'threads') {
      const id = segs[1];
      if (segs.length === 2 || (segs.length === 3 && segs[2] === 'chat')) {
        if (!validThreadId(id)) return json(400, { error: 'Thread id must match [A-Za-z0-9_-]{1,128}' });
        if (segs.length === 2) return allow(['GET']) || neuron.getThread(ctx, id);
        return allow(['POST']) || neuron.chat(ctx, id, await readJson(req));
      }
      return json(404, { error: `No route for ${rawPath}` });
    }

    if (segs[0] === 'v1') {
      if (config.token && !tokenOk(req.headers.authorization, config.token))
        return json(401, { error: 'Missing or invalid bearer token' }, { 'www-authenticate': 'Bearer' });
      const rest = segs.slice(1);
      // `?approvalForm=` on the chat and replay routes: "ai-sdk", "sidenet" or none.
      const form = query.get('approvalForm');
      const badForm = form !== null && form !== 'ai-sdk' && form !== 'sidenet';
      const formError = () => json(400, { error: 'approvalForm must be "ai-sdk" or "sidenet"' });
      if (rest.length === 1 && rest[0] === 'chat') {
        const denied = allow(['POST']);
        if (denied) return denied;
        if (badForm) return formError();
        const parsed = sidenet.parseChatBody(await readJson(req));
        if (parsed.error) return parsed.error;
        return sidenet.chat(ctx, parsed, { approvalForm: form === 'ai-sdk' ? 'ai-sdk' : form === 'sidenet' ? 'sidenet' : null });
      }
      if (rest.length === 2 && rest[0] === 'chat' && rest[1] === 'stream') {
        const denied = allow(['GET']);
        if (denied) return denied;
        const threadId = query.get('threadId');
        if (!validThreadId(threadId)) return json(400, { error: 'threadId query parameter must match [A-Za-z0-9_-]{1,128}' });
        if (badForm) return formError();
        return sidenet.replay(ctx, threadId, form);
      }
      // The same collected run for an agent and for a copilot.
      if (rest.length === 3 && (rest[0] === 'agents' || rest[0] === 'copilots') && rest[2] === 'run') {
        const denied = allow(['POST']);
        if (denied) return denied;
        if (!validThreadId(rest[1])) return json(400, { error: 'Agent id must match [A-Za-z0-9_-]{1,128}' });
        const parsed = sidenet.parseChatBody(await readJson(req));
        if (parsed.error) return parsed.error;
        return sidenet.collect(await sidenet.chat(ctx, parsed, { agentId: rest[1] }));
      }
      if (rest.length === 2 && rest[0] === 'threads') {
        const denied = allow(['GET']);
        if (denied) return denied;
        if (!validThreadId(rest[1])) return json(400, { error: 'Thread id must match [A-Za-z0-9_-]{1,128}' });
        return sidenet.getThread(ctx, rest[1]);
      }
      return json(404, { error: `No route for ${rawPath}` });
    }
    return json(404, { error: `No route for ${rawPath}` });
  }

  function writePlan(res, plan, extraHeaders, fault) {
    const headers = { ...extraHeaders, ...(plan.headers || {}) };
    if (plan.stream) {
      res.writeHead(200, {
        ...headers,
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-vercel-ai-ui-message-stream': 'v1',
        'x-accel-buffering': 'no',
      });
      const items = plan.stream;
      // A mid-stream drop sends at least one item and stops before the end.
      const cutAt = fault ? Math.max(1, Math.floor(fault.cut * items.length)) : Infinity;
      return (async () => {
        for (let i = 0; i < items.length; i++) {
          if (res.destroyed) return;
          if (i >= cutAt) {
            res.socket?.destroy();
            res.destroy();
            return;
          }
          const it = items[i];
          if (it.comment !== undefined) res.write(`: ${it.comment}\n\n`);
          else if (it.done) res.write('data: [DONE]\n\n');
          else res.write(`data: ${JSON.stringify(it.data)}\n\n`);
          if (config.chunkDelayMs > 0 && i < items.length - 1) await sleep(config.chunkDelayMs);
        }
        res.end();
      })();
    }
    if (plan.json !== undefined) {
      const body = JSON.stringify(plan.json);
      res.writeHead(plan.status, {
        ...headers,
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
      });
      res.end(body);
    } else {
      res.writeHead(plan.status, headers);
      res.end();
    }
  }

  function drop(req, res) {
    res.statusForLog = 'DROP';
    req.socket.destroy();
  }

  async function handleApi(req, res, rawPath, query) {
    const base = {
      ...cors(),
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    };
    if (req.method === 'OPTIONS') {
      res.writeHead(204, {
        ...base,
        'access-control-allow-methods': 'GET, POST, OPTIONS',
        'access-control-allow-headers': 'Content-Type, Authorization',
        'access-control-max-age': '600',
      });
      res.end();
      return;
    }
    const fault = faults && rawPath !== '/__faults' ? faults.decide() : null;
    if (fault?.delayMs > 0) {
      faults.counts.delays += 1;
      await sleep(fault.delayMs);
    }
    if (fault?.kind && fault.when === 'before') {
      if (fault.kind === 'drop') {
        faults.counts.drops += 1;
        return drop(req, res);
      }
      faults.counts.errors += 1;
      return writePlan(res, json(500, { error: 'Injected fault (before applying the request)' }), base);
    }
    let plan;
    try {
      plan = await route(req, rawPath, query);
    } catch (e) {
      if (e instanceof HttpError) {
        plan = json(e.status, { error: e.message, ...e.extra }, e.status === 413 ? { connection: 'close' } : {});
      } else {
        log(`error: ${e.stack || e}`);
        plan = json(500, { error: 'Internal server error' });
      }
    }
    if (fault?.kind && fault.when === 'after') {
      if (fault.kind === 'drop') {
        faults.counts.drops += 1;
        if (plan.stream) return writePlan(res, plan, base, fault);
        return drop(req, res);
      }
      faults.counts.errors += 1;
      return writePlan(res, json(500, { error: 'Injected fault (after applying the request)' }), base);
    }
    await writePlan(res, plan, base);
    if (plan.status === 413) {
      // Stop reading: let the response flush, then drop whatever is still coming.
      res.on('finish', () => setTimeout(() => req.socket.destroy(), 50));
    }
  }

  const server = http.createServer(async (req, res) => {
    const started = process.hrtime.bigint();
    const { rawPath, query } = splitUrl(req.url || '/');
    res.on('close', () => {
      if (config.quiet) return;
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const status = res.statusForLog || (res.headersSent ? res.statusCode : 'ABORTED');
      log(`${req.method} ${rawPath} ${status} ${ms.toFixed(1)}ms`);
    });
    try {
      if (!rawPath.startsWith('/')) {
        res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('Bad Request\n');
        return;
      }
      if (isApiPath(rawPath)) await handleApi(req, res, rawPath, query);
      else await serveStatic(req, res, rawPath, staticOpts);
    } catch (e) {
      log(`error: ${e.stack || e}`);
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify({ error: 'Internal server error' }));
      } else res.destroy();
    }
  });
  server.keepAliveTimeout = 5000;

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  const hostForUrl = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `http://${hostForUrl}:${addr.port}`;
  return {
    url,
    port: addr.port,
    config,
    store,
    faults,
    server,
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
