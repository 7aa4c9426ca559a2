import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import {
  start,
  spawnServer,
  tempDir,
  getJson,
  postJson,
  rawRequest,
  sseChat,
  userMsg,
  approvals,
  readEffects,
  readRecord,
  SERVER_DIR,
} from '../testkit.mjs';
import { CSP } from '../static.mjs';
import { parseFaults } from '../faults.mjs';

describe('static files', () => {
  let s;
  let root;
  before(async () => {
    root = tempDir('toolgate-www-');
    const www = path.join(root, 'www');
    const pkg = path.join(root, 'pkg');
    mkdirSync(path.join(www, 'server'), { recursive: true });
    mkdirSync(path.join(www, 'css'), { recursive: true });
    mkdirSync(pkg, { recursive: true });
    writeFileSync(path.join(www, 'index.html'), '<!doctype html><title>demo</title>');
    writeFileSync(path.join(www, 'app.js'), 'export {}');
    writeFileSync(path.join(www, 'css', 'site.css'), 'body{}');
    writeFileSync(path.join(www, 'server', 'secret.mjs'), 'nope');
    writeFileSync(path.join(www, '.env'), 'SECRET=1');
    writeFileSync(path.join(root, 'outside.txt'), 'outside');
    symlinkSync(path.join(root, 'outside.txt'), path.join(www, 'link.txt'));
    writeFileSync(path.join(pkg, 'toolgate_bg.wasm'), Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]));
    writeFileSync(path.join(pkg, 'toolgate.js'), 'export default 1');
    writeFileSync(path.join(pkg, 'toolgate.d.ts'), 'export {}');
    writeFileSync(path.join(pkg, 'package.json'), '{}');
    writeFileSync(path.join(pkg, 'icon.svg'), '<svg/>');
    writeFileSync(path.join(pkg, 'x.png'), Buffer.from([0x89, 0x50]));
    writeFileSync(path.join(pkg, 'toolgate.js.map'), '{}');
    s = await start({ wwwDir: www, pkgDir: pkg });
  });
  after(async () => {
    await s.close();
    rmSync(root, { recursive: true, force: true });
  });

  test('/ serves index.html with a strict CSP and security headers', async () => {
    const r = await fetch(`${s.url}/`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(r.headers.get('content-security-policy'), CSP);
    assert.match(CSP, /script-src 'self' 'wasm-unsafe-eval'/);
    assert.match(CSP, /frame-ancestors 'none'/);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(r.headers.get('referrer-policy'), 'no-referrer');
    assert.match(await r.text(), /demo/);
    const head = await fetch(`${s.url}/index.html`, { method: 'HEAD' });
    assert.equal(head.status, 200);
  });

  test('content types for www/ and /pkg/', async () => {
    const expect = {
      '/app.js': 'text/javascript; charset=utf-8',
      '/css/site.css': 'text/css; charset=utf-8',
      '/pkg/toolgate_bg.wasm': 'application/wasm',
      '/pkg/toolgate.js': 'text/javascript; charset=utf-8',
      '/pkg/toolgate.d.ts': 'text/plain; charset=utf-8',
      '/pkg/package.json': 'application/json; charset=utf-8',
      '/pkg/icon.svg': 'image/svg+xml',
      '/pkg/x.png': 'image/png',
      '/pkg/toolgate.js.map': 'application/json; charset=utf-8',
    };
    for (const [p, type] of Object.entries(expect)) {
      const r = await fetch(`${s.url}${p}`);
      assert.equal(r.status, 200, p);
      assert.equal(r.headers.get('content-type'), type, p);
      assert.equal(r.headers.get('content-security-policy'), null, p);
      await r.arrayBuffer();
    }
    const wasm = new Uint8Array(await (await fetch(`${s.url}/pkg/toolgate_bg.wasm`)).arrayBuffer());
    assert.deepEqual([...wasm.slice(0, 4)], [0, 0x61, 0x73, 0x6d]);
  });

  test('never outside the roots: traversal, NUL, backslashes, dotfiles, symlinks out, www/server', async () => {
    const cases = {
      '/../outside.txt': 400,
      '/%2e%2e/outside.txt': 400,
      '/css/..%2f..%2foutside.txt': 400,
      '/pkg/..%2f..%2foutside.txt': 400,
      '/pkg/%2e%2e/www/index.html': 400,
      '/a%00.js': 400,
      '/..%5coutside.txt': 400,
      '/css%5csite.css': 400,
      '/%E0%A4%A': 400,
      '/.env': 404,
      '/link.txt': 404,
      '/server/secret.mjs': 404,
      '/server/': 404,
      '/missing.js': 404,
    };
    for (const [p, status] of Object.entries(cases)) {
      const r = await rawRequest(s.url, 'GET', p);
      assert.equal(r.status, status, p);
      assert.doesNotMatch(r.body, /outside|nope|SECRET/, p);
    }
    const post = await rawRequest(s.url, 'POST', '/index.html');
    assert.equal(post.status, 405);
  });

  test('the real www/server/ directory is never served from the default root', async (t) => {
    const d = await start({});
    t.after(() => d.close());
    for (const p of ['/server/main.mjs', '/server/server.mjs', '/server/README.md']) {
      const r = await rawRequest(d.url, 'GET', p);
      assert.equal(r.status, 404, p);
    }
    assert.ok(SERVER_DIR.endsWith(path.join('www', 'server')));
  });
});

describe('HTTP plumbing', () => {
  let s;
  before(async () => {
    s = await start();
  });
  after(() => s.close());

  test('CORS: preflight and headers on API responses', async () => {
    const pre = await rawRequest(s.url, 'OPTIONS', '/threads/x/chat', {
      headers: { origin: 'http://localhost:5555', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,authorization' },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers['access-control-allow-origin'], '*');
    assert.match(pre.headers['access-control-allow-methods'], /GET/);
    assert.match(pre.headers['access-control-allow-methods'], /POST/);
    assert.match(pre.headers['access-control-allow-methods'], /OPTIONS/);
    assert.match(pre.headers['access-control-allow-headers'], /Content-Type/);
    assert.match(pre.headers['access-control-allow-headers'], /Authorization/);
    assert.ok(Number(pre.headers['access-control-max-age']) > 0);
    for (const p of ['/threads/x', '/v1/threads/x', '/v1/zzz']) {
      const r = await fetch(`${s.url}${p}`);
      assert.equal(r.headers.get('access-control-allow-origin'), '*', p);
      assert.match(r.headers.get('access-control-expose-headers'), /x-vercel-ai-ui-message-stream/, p);
    }
    const st = await sseChat(s.url, { threadId: 'c1', messages: [userMsg('hi')] });
    assert.equal(st.headers.get('access-control-allow-origin'), '*');
    const bad = await postJson(`${s.url}/threads/x/chat`, '{');
    assert.equal(bad.headers.get('access-control-allow-origin'), '*');
  });

  test('CORS_ORIGIN overrides the allowed origin', async (t) => {
    const o = await start({ corsOrigin: 'http://localhost:4000' });
    t.after(() => o.close());
    const r = await fetch(`${o.url}/threads/x`);
    assert.equal(r.headers.get('access-control-allow-origin'), 'http://localhost:4000');
    assert.match(r.headers.get('vary'), /Origin/);
  });

  test('a body over 1 MB: 413, nothing stored', async () => {
    const big = JSON.stringify({ message: 'x'.repeat(1024 * 1024 + 10) });
    const r = await postJson(`${s.url}/threads/big/chat`, big);
    assert.equal(r.status, 413);
    assert.match(r.body.error, /exceeds/);
    const r2 = await postJson(`${s.url}/v1/chat`, JSON.stringify({ threadId: 'big', messages: [userMsg('y'.repeat(1100000))] }));
    assert.equal(r2.status, 413);
    // a chunked body (no content-length) is cut off too
    const chunked = await new Promise((resolve, reject) => {
      const u = new URL(s.url);
      const sock = net.connect(Number(u.port), u.hostname, () => {
        sock.write('POST /threads/big/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
        const part = 'a'.repeat(256 * 1024);
        for (let i = 0; i < 5; i++) sock.write(`${part.length.toString(16)}\r\n${part}\r\n`);
      });
      let data = '';
      sock.on('data', (d) => (data += d));
      sock.on('close', () => resolve(data));
      sock.on('error', () => resolve(data));
      setTimeout(() => reject(new Error('no answer')), 3000);
    });
    assert.match(chunked, /^HTTP\/1\.1 413/);
    assert.deepEqual((await getJson(`${s.url}/threads/big`)).body.messages, []);
    // exactly 1 MB of JSON is accepted
    const msg = 'z'.repeat(1024 * 1024 - JSON.stringify({ message: '' }).length);
    const ok = await postJson(`${s.url}/threads/fits/chat`, JSON.stringify({ message: msg }));
    assert.equal(ok.status, 200);
  });

  test('POST bodies must be application/json: a cross-site form post is 415 and changes nothing', async () => {
    const id = 'ct_paused';
    const paused = await postJson(`${s.url}/threads/${id}/chat`, { message: 'delete /tmp/ct.txt' });
    assert.equal(paused.body.status, 'awaiting_approval');
    const [call] = paused.body.message.tools;
    const st = await sseChat(s.url, { threadId: 'ct_side', messages: [userMsg('delete /tmp/ct-side.txt')] });
    const [side] = approvals(st.chunks);
    const decide = JSON.stringify({ decisions: { [call.callId]: 'approve' } });
    const approve = JSON.stringify({ messages: [], threadId: 'ct_side', approval: { runId: side.runId, toolCallId: side.toolCallId, approved: true } });
    const refused = [undefined, 'text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x', 'text/json', 'application/jsonp', 'application/json-patch+json', ''];
    for (const type of refused) {
      for (const [p, body] of [[`/threads/${id}/chat`, decide], ['/v1/chat', approve], ['/v1/agents/ct_side/run', approve]]) {
        const headers = type === undefined ? {} : { 'content-type': type };
        const r = await rawRequest(s.url, 'POST', p, { headers, body });
        assert.equal(r.status, 415, `${p} ${type}`);
        assert.match(r.headers['content-type'], /^application\/json/, `${p} ${type}`);
        assert.match(JSON.parse(r.body).error, /Content-Type must be application\/json/, `${p} ${type}`);
        assert.equal(r.headers['access-control-allow-origin'], '*');
      }
    }
    const t = await getJson(`${s.url}/threads/${id}`);
    assert.equal(t.body.messages.at(-1).tools[0].approval, 'pending');
    assert.equal(readRecord(s.dataDir, 'sidenet', 'ct_side').run.pending.length, 1);
    assert.deepEqual(readEffects(s.dataDir).filter((e) => e.threadId === id || e.threadId === 'ct_side'), []);
    // application/json with parameters, in any case, is read.
    for (const type of ['application/json; charset=utf-8', 'Application/JSON;charset=UTF-8', ' application/json ']) {
      const r = await rawRequest(s.url, 'POST', `/threads/ct_ok/chat`, { headers: { 'content-type': type }, body: '{"message":"hi"}' });
      assert.equal(r.status, 200, type);
    }
    const ok = await rawRequest(s.url, 'POST', `/threads/${id}/chat`, { headers: { 'content-type': 'application/json;charset=utf-8' }, body: decide });
    assert.equal(JSON.parse(ok.body).status, 'completed');
  });

  test('health and unknown API routes', async () => {
    assert.deepEqual((await getJson(`${s.url}/health`)).body, { ok: true });
    assert.equal((await getJson(`${s.url}/threads`)).status, 404);
    assert.equal((await getJson(`${s.url}/threads/a/b/c`)).status, 404);
  });

  test('faults are off by default: /__faults is 404 and 50 requests all succeed', async () => {
    const r = await getJson(`${s.url}/__faults`);
    assert.equal(r.status, 404);
    assert.equal(parseFaults(undefined), null);
    assert.equal(parseFaults(''), null);
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => postJson(`${s.url}/threads/off_${i}/chat`, { message: 'read /x' })));
    assert.ok(results.every((x) => x.status === 200 && x.body.status === 'completed'));
  });
});

describe('fault injection (FAULTS with a seed)', () => {
  test('parses the spec and refuses nonsense', () => {
    assert.deepEqual(parseFaults('drop:0.1,error:0.05,delay:200,seed:7'), { drop: 0.1, error: 0.05, delay: 200, seed: 7 });
    assert.throws(() => parseFaults('drop:2'));
    assert.throws(() => parseFaults('explode:0.1'));
  });

  test('drops and 500s happen before or after applying; a retrying client loses nothing', async (t) => {
    const s = await start({ faults: 'drop:0.25,error:0.25,delay:5,seed:42' });
    t.after(() => s.close());
    const before = await getJson(`${s.url}/__faults`);
    assert.deepEqual(before.body, { drops: 0, errors: 0, delays: 0 });

    // Drive 12 Neuron threads to completion with a client that retries and re-reads.
    const send = async (id, body) => {
      for (let attempt = 0; attempt < 40; attempt++) {
        try {
          const r = await postJson(`${s.url}/threads/${id}/chat`, body);
          if (r.status === 200 || r.status === 409 || r.status === 400) return r;
        } catch {
          /* dropped */
        }
      }
      throw new Error('gave up');
    };
    const load = async (id) => {
      for (;;) {
        try {
          const r = await getJson(`${s.url}/threads/${id}`);
          if (r.status === 200) return r.body;
        } catch {}
      }
    };
    for (let i = 0; i < 12; i++) {
      const id = `f_${i}`;
      let thread = await load(id);
      if (thread.messages.length === 0) await send(id, { message: 'delete /f and email a@example.com about faults' });
      thread = await load(id);
      // a dropped "message" may have applied: the thread is the truth
      assert.equal(thread.messages.filter((m) => m.role === 'user').length, 1, id);
      const tail = thread.messages.at(-1);
      assert.equal(tail.type, 'tool_call');
      const decisions = Object.fromEntries(tail.tools.map((x) => [x.callId, x.name === 'send_email' ? ['reject', `reason ${i}`] : 'approve']));
      let done = null;
      for (let k = 0; k < 40 && !done; k++) {
        const r = await send(id, { decisions });
        if (r.status === 200 && r.body.status === 'completed') done = r.body.message;
        else {
          const th = await load(id);
          if (th.messages.at(-1).role === 'assistant' && typeof th.messages.at(-1).content === 'string') done = th.messages.at(-1);
        }
      }
      assert.ok(done, id);
      assert.match(done.content, new RegExp(`rejected — "reason ${i}"`));
      const effects = readEffects(s.dataDir).filter((e) => e.threadId === id);
      assert.deepEqual(effects.map((e) => e.name), ['delete_file'], id);
    }
    const counts = (await getJson(`${s.url}/__faults`)).body;
    assert.ok(counts.drops > 0, JSON.stringify(counts));
    assert.ok(counts.errors > 0, JSON.stringify(counts));
    assert.ok(counts.delays > 0, JSON.stringify(counts));
  });

  test('streams are cut mid-way, after the run was stored; the replay recovers the approval', async (t) => {
    const s = await start({ faults: 'drop:1,seed:3' });
    t.after(() => s.close());
    let applied = 0;
    for (let i = 0; i < 8; i++) {
      const id = `fs_${i}`;
      let text = '';
      try {
        const r = await fetch(`${s.url}/v1/chat`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ threadId: id, messages: [userMsg('delete /fs')] }),
        });
        text = await r.text();
      } catch {
        /* dropped before or mid-stream */
      }
      assert.ok(!text.includes('[DONE]'), 'every stream is dropped');
      const rec = (() => {
        try {
          return readRecord(s.dataDir, 'sidenet', id);
        } catch {
          return null;
        }
      })();
      if (rec) {
        applied += 1;
        assert.ok(rec.run, 'the run was stored before the stream was cut');
        assert.equal(rec.run.pending.length, 1);
      }
    }
    assert.ok(applied > 0 && applied < 8, `applied ${applied}`);
    const counts = (await getJson(`${s.url}/__faults`)).body;
    assert.equal(counts.drops, 8);
  });

  test('FAULTS from the environment; the stored run survives a dropped stream and is replayable', async (t) => {
    const dataDir = tempDir();
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const srv = await spawnServer({ DATA_DIR: dataDir, FAULTS: 'error:0.5,seed:9' });
    t.after(() => srv.kill());
    const counts = await getJson(`${srv.url}/__faults`);
    assert.equal(counts.status, 200);
    let ok = 0;
    let errs = 0;
    for (let i = 0; i < 16; i++) {
      const r = await sseChat(srv.url, { threadId: `e_${i}`, messages: [userMsg('delete /e')] });
      if (r.status === 200) {
        ok += 1;
        assert.equal(approvals(r.chunks).length, 1);
      } else {
        errs += 1;
        assert.equal(r.status, 500);
        assert.match(r.body.error, /Injected fault/);
      }
    }
    assert.ok(ok > 0 && errs > 0, `${ok} ok, ${errs} errors`);
  });
});

describe('process', () => {
  test('prints exactly one listening line, logs one line per request, QUIET=1 silences them', async (t) => {
    const dataDir = tempDir();
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const srv = await spawnServer({ DATA_DIR: dataDir, QUIET: '' });
    t.after(() => srv.kill());
    assert.match(srv.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    await getJson(`${srv.url}/threads/logme`);
    await postJson(`${srv.url}/threads/logme/chat`, { message: 'hi' });
    await new Promise((r) => setTimeout(r, 50));
    const lines = srv.output().trim().split('\n');
    assert.equal(lines.filter((l) => l.startsWith('toolgate endpoint listening on ')).length, 1);
    assert.ok(lines.some((l) => /^GET \/threads\/logme 200 \d+(\.\d+)?ms$/.test(l)), lines.join('\n'));
    assert.ok(lines.some((l) => /^POST \/threads\/logme\/chat 200 \d+(\.\d+)?ms$/.test(l)), lines.join('\n'));

    const quiet = await spawnServer({ DATA_DIR: dataDir, QUIET: '1' });
    t.after(() => quiet.kill());
    await getJson(`${quiet.url}/threads/logme`);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(quiet.output().trim().split('\n').length, 1);
  });
});
