// Hostile input against the reference endpoint: path traversal in thread ids and static paths,
// oversized bodies, missing and wrong tokens, security headers on every HTML page, and an XSS
// corpus that must travel through the JSON-only API verbatim.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, rmSync, symlinkSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { start, tempDir, getJson, postJson, rawRequest, sseChat, userMsg, approvals } from '../testkit.mjs';
import { CSP } from '../static.mjs';
import { rejectionResult } from '../agent.mjs';

const REPO_WWW = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SENTINEL = 'TOP-SECRET-SENTINEL';

/** Every file under dir (relative paths), following no symlinks. */
function listFiles(dir, base = dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...listFiles(p, base));
    else out.push(path.relative(base, p));
  }
  return out.sort();
}

/** A sandbox: root/{outside.txt, data/, www/, pkg/} with traps (symlinks out, secrets). */
function sandbox() {
  const root = tempDir('toolgate-hostile-');
  const www = path.join(root, 'www');
  const pkg = path.join(root, 'pkg');
  const data = path.join(root, 'data');
  mkdirSync(path.join(www, 'server'), { recursive: true });
  mkdirSync(path.join(www, 'sub'), { recursive: true });
  mkdirSync(pkg, { recursive: true });
  mkdirSync(path.join(root, 'outdir'), { recursive: true });
  writeFileSync(path.join(root, 'outside.txt'), SENTINEL);
  writeFileSync(path.join(root, 'outside.json'), JSON.stringify({ secret: SENTINEL }));
  writeFileSync(path.join(root, 'outdir', 'index.html'), `<p>${SENTINEL}</p>`);
  writeFileSync(path.join(www, 'index.html'), '<!doctype html><title>demo</title>');
  writeFileSync(path.join(www, 'other.html'), '<!doctype html><title>other</title>');
  writeFileSync(path.join(www, 'legacy.htm'), '<!doctype html><title>legacy</title>');
  writeFileSync(path.join(www, 'SHOUT.HTML'), '<!doctype html><title>shout</title>');
  writeFileSync(path.join(www, 'sub', 'index.html'), '<!doctype html><title>sub</title>');
  writeFileSync(path.join(www, 'sub', 'page.html'), '<!doctype html><title>page</title>');
  writeFileSync(path.join(www, 'server', 'main.mjs'), SENTINEL);
  writeFileSync(path.join(www, '.env'), SENTINEL);
  symlinkSync(path.join(root, 'outside.txt'), path.join(www, 'link.txt'));
  symlinkSync(path.join(root, 'outdir'), path.join(www, 'linkdir'));
  symlinkSync(path.join(www, 'server'), path.join(www, 'srv'));
  symlinkSync(path.join(root, 'outside.txt'), path.join(pkg, 'evil.js'));
  symlinkSync(root, path.join(pkg, 'up'));
  writeFileSync(path.join(pkg, 'toolgate.js'), 'export default 1');
  return { root, www, pkg, data };
}

function snapshotOutside(root) {
  const files = listFiles(root).filter((f) => !f.startsWith(`data${path.sep}`));
  return files.map((f) => {
    const st = statSync(path.join(root, f), { throwIfNoEntry: false });
    return `${f}:${st ? st.size : 'link'}`;
  });
}

describe('hostile: path traversal', () => {
  let box;
  let s;
  let before0;
  before(async () => {
    box = sandbox();
    before0 = snapshotOutside(box.root);
    s = await start({ dataDir: box.data, wwwDir: box.www, pkgDir: box.pkg });
  });
  after(async () => {
    await s.close();
    rmSync(box.root, { recursive: true, force: true });
  });

  const BAD_IDS = [
    '..',
    '.',
    '..%2f..%2foutside',
    '..%2F..%2Foutside',
    '%2e%2e',
    '%2e%2e%2f%2e%2e%2foutside',
    '..%252f..%252foutside',
    '%252e%252e',
    'a%00b',
    '%00',
    'a%5cb',
    '..%5c..%5coutside',
    'a.json',
    'a%2fb',
    'a%20b',
    '%C3%A9',
    '%E0%A4%A',
    'x'.repeat(129),
    'y'.repeat(5000),
  ];

  test('Neuron routes refuse every bad thread id, and touch nothing', async () => {
    for (const id of BAD_IDS) {
      const get = await rawRequest(s.url, 'GET', `/threads/${id}`);
      assert.ok(get.status === 400 || get.status === 404, `GET ${id} -> ${get.status}`);
      assert.match(get.headers['content-type'], /^application\/json/, id);
      assert.doesNotMatch(get.body, new RegExp(SENTINEL), id);
      const post = await rawRequest(s.url, 'POST', `/threads/${id}/chat`, {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'delete /tmp/x' }),
      });
      assert.ok(post.status === 400 || post.status === 404, `POST ${id} -> ${post.status}`);
      assert.doesNotMatch(post.body, new RegExp(SENTINEL), id);
    }
    // A raw backslash and a raw dot-dot in the request line (fetch would normalize them).
    for (const p of ['/threads/..\\..\\outside/chat', '/threads/../outside.txt', '/threads/./x', '/threads//chat']) {
      const r = await rawRequest(s.url, 'POST', p, { headers: { 'content-type': 'application/json' }, body: '{"message":"hi"}' });
      assert.ok(r.status === 400 || r.status === 404, `${p} -> ${r.status}`);
    }
    assert.deepEqual(listFiles(box.data), []);
    assert.deepEqual(snapshotOutside(box.root), before0);
  });

  test('Sidenet bodies, queries and paths refuse every bad thread id, and touch nothing', async () => {
    const raw = (id) => decodeURIComponent(id.replace(/%(?![0-9a-fA-F]{2})/g, '%25'));
    const ids = [...BAD_IDS.map((id) => { try { return raw(id); } catch { return id; } }), '../../outside', '..\\..\\outside', 'a/b', '', ' ', 'a\u0000b'];
    for (const threadId of [...ids, 42, null, true, ['a'], { id: 'a' }]) {
      for (const route of ['/v1/chat', '/v1/agents/agent_1/run']) {
        const r = await postJson(`${s.url}${route}`, { threadId, messages: [userMsg('delete /tmp/x')] });
        assert.equal(r.status, 400, `${route} ${JSON.stringify(threadId)}`);
        assert.match(r.headers.get('content-type'), /^application\/json/);
      }
      const cont = await postJson(`${s.url}/v1/chat`, {
        threadId,
        messages: [],
        approval: { runId: 'run_x', toolCallId: 'c', approved: true },
      });
      assert.equal(cont.status, 400, `continuation ${JSON.stringify(threadId)}`);
    }
    for (const id of BAD_IDS) {
      const q = await rawRequest(s.url, 'GET', `/v1/chat/stream?threadId=${id}`);
      assert.equal(q.status, 400, `stream ?threadId=${id}`);
      const t = await rawRequest(s.url, 'GET', `/v1/threads/${id}`);
      assert.ok(t.status === 400 || t.status === 404, `threads/${id} -> ${t.status}`);
      const a = await rawRequest(s.url, 'POST', `/v1/agents/${id}/run`, {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ threadId: 'ok_id', messages: [userMsg('hi')] }),
      });
      assert.ok(a.status === 400 || a.status === 404, `agents/${id} -> ${a.status}`);
      for (const r of [q, t, a]) assert.doesNotMatch(r.body, new RegExp(SENTINEL));
    }
    // Two threadId parameters: the first one counts, and it is checked.
    const two = await rawRequest(s.url, 'GET', '/v1/chat/stream?threadId=..%2f..&threadId=ok');
    assert.equal(two.status, 400);
    assert.deepEqual(listFiles(box.data), []);
    assert.deepEqual(snapshotOutside(box.root), before0);
  });

  test('static paths never leave www/ and pkg/, never serve www/server/ or DATA_DIR', async () => {
    const refused = [
      '/../outside.txt',
      '/..',
      '/../',
      '/%2e%2e/outside.txt',
      '/%2E%2E/outside.txt',
      '/..%2foutside.txt',
      '/sub/..%2f..%2foutside.txt',
      '/%2e%2e%2f%2e%2e%2foutside.txt',
      '/pkg/../outside.txt',
      '/pkg/..%2f..%2foutside.txt',
      '/pkg/%2e%2e/%2e%2e/outside.txt',
      '/..%5coutside.txt',
      '/..\\outside.txt',
      '/pkg/..\\..\\outside.txt',
      '/index.html%00.js',
      '/%00',
      '/%E0%A4%A',
    ];
    for (const p of refused) {
      const r = await rawRequest(s.url, 'GET', p);
      assert.equal(r.status, 400, p);
      assert.doesNotMatch(r.body, new RegExp(SENTINEL), p);
    }
    const missing = [
      // double-encoded: decoded once, `%2e%2e` is just a (missing) name
      '/%252e%252e/outside.txt',
      '/%252e%252e%252foutside.txt',
      '/pkg/%252e%252e/outside.txt',
      '//outside.txt',
      '/%2foutside.txt',
      '/.env',
      '/%2eenv',
      '/server/main.mjs',
      '/server/',
      '/server',
      '/srv/main.mjs',
      '/link.txt',
      '/linkdir/',
      '/linkdir/index.html',
      '/pkg/evil.js',
      '/pkg/up/outside.txt',
      '/pkg/up/www/index.html',
      '/data/',
      '/outside.txt',
    ];
    for (const p of missing) {
      const r = await rawRequest(s.url, 'GET', p);
      assert.equal(r.status, 404, p);
      assert.doesNotMatch(r.body, new RegExp(SENTINEL), p);
      assert.equal(r.headers['x-content-type-options'], 'nosniff', p);
    }
  });

  test('DATA_DIR inside the web root is never served', async (t) => {
    const b = sandbox();
    t.after(() => rmSync(b.root, { recursive: true, force: true }));
    const dataDir = path.join(b.www, 'data');
    const s2 = await start({ dataDir, wwwDir: b.www, pkgDir: b.pkg });
    t.after(() => s2.close());
    assert.equal((await postJson(`${s2.url}/threads/t1/chat`, { message: 'delete /tmp/x' })).status, 200);
    for (const p of ['/data/neuron/t1.json', '/data/', '/data/effects.jsonl', '/data/neuron/']) {
      const r = await rawRequest(s2.url, 'GET', p);
      assert.equal(r.status, 404, p);
      assert.doesNotMatch(r.body, /delete_file/, p);
    }
  });

  test('the real www/server/ sources are never served by the default roots', async (t) => {
    const d = await start({});
    t.after(() => d.close());
    for (const f of readdirSync(path.join(REPO_WWW, 'server'))) {
      for (const p of [`/server/${f}`, `/server/%2e/${f}`, `/sub/..%2fserver/${f}`, `/pkg/..%2fwww%2fserver%2f${f}`]) {
        const r = await rawRequest(d.url, 'GET', p);
        assert.ok(r.status === 404 || r.status === 400, `${p} -> ${r.status}`);
      }
    }
  });
});

describe('hostile: oversized bodies', () => {
  let s;
  before(async () => {
    s = await start();
  });
  after(() => s.close());

  const ROUTES = [
    ['/threads/big/chat', (pad) => ({ message: pad })],
    ['/v1/chat', (pad) => ({ threadId: 'big', messages: [userMsg(pad)] })],
    ['/v1/agents/agent_1/run', (pad) => ({ threadId: 'big2', messages: [userMsg(pad)] })],
  ];

  /** POST over a raw socket: `chunked` without Content-Length, or a declared length. */
  function rawPost(route, { chunked, declared, parts = 5, partSize = 256 * 1024 }) {
    const u = new URL(s.url);
    return new Promise((resolve, reject) => {
      const sock = net.connect(Number(u.port), u.hostname, () => {
        const head = chunked
          ? 'Transfer-Encoding: chunked\r\n'
          : `Content-Length: ${declared}\r\n`;
        sock.write(`POST ${route} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${head}\r\n`);
        const part = 'a'.repeat(partSize);
        for (let i = 0; i < parts && !sock.destroyed; i++) {
          sock.write(chunked ? `${part.length.toString(16)}\r\n${part}\r\n` : part);
        }
      });
      let data = '';
      sock.on('data', (d) => (data += d));
      sock.on('close', () => resolve(data));
      sock.on('error', () => resolve(data));
      setTimeout(() => reject(new Error(`no answer on ${route}`)), 5000);
    });
  }

  test('413 with Content-Length, without it (chunked), and with a declared length alone', async () => {
    for (const [route, body] of ROUTES) {
      const big = JSON.stringify(body('x'.repeat(1024 * 1024 + 1)));
      const r = await postJson(`${s.url}${route}`, big);
      assert.equal(r.status, 413, route);
      assert.match(r.headers.get('content-type'), /^application\/json/);
      const chunked = await rawPost(route, { chunked: true });
      assert.match(chunked, /^HTTP\/1\.1 413/, `${route} chunked`);
      // A huge declared length is refused before any byte of the body is read.
      const declared = await rawPost(route, { declared: 50 * 1024 * 1024, parts: 1, partSize: 10 });
      assert.match(declared, /^HTTP\/1\.1 413/, `${route} declared`);
    }
    assert.deepEqual((await getJson(`${s.url}/threads/big`)).body.messages, []);
    const side = await getJson(`${s.url}/v1/threads/big`);
    assert.ok(side.status === 404 || (side.status === 200 && side.body.messages.length === 0), `${side.status}`);
  });

  test('the server keeps answering after a flood of oversized bodies', async () => {
    await Promise.all(Array.from({ length: 8 }, () => rawPost('/threads/flood/chat', { chunked: true })));
    const r = await postJson(`${s.url}/threads/flood/chat`, { message: 'hello' });
    assert.equal(r.status, 200);
  });
});

describe('hostile: tokens', () => {
  let s;
  before(async () => {
    s = await start({ token: 's3cret-token' });
  });
  after(() => s.close());

  test('every /v1/ route, known or not, answers 401 without the exact bearer token', async () => {
    const body = JSON.stringify({ threadId: 'tk', messages: [userMsg('hi')] });
    const routes = [
      ['POST', '/v1/chat', body],
      ['POST', '/v1/chat?approvalForm=ai-sdk', body],
      ['GET', '/v1/chat/stream?threadId=tk'],
      ['POST', '/v1/agents/agent_1/run', body],
      ['GET', '/v1/threads/tk'],
      ['GET', '/v1/threads/..%2f..%2fetc'],
      ['GET', '/v1/nope'],
      ['GET', '/v1'],
      ['DELETE', '/v1/threads/tk'],
      ['POST', '/v1/chat', 'x'.repeat(2 * 1024 * 1024)],
    ];
    const wrong = [
      {},
      { authorization: '' },
      { authorization: 'Bearer' },
      { authorization: 'Bearer ' },
      { authorization: 'Bearer wrong' },
      { authorization: 'Bearer s3cret-toke' },
      { authorization: 'Bearer s3cret-tokenX' },
      { authorization: 'Bearer S3CRET-TOKEN' },
      { authorization: 's3cret-token' },
      { authorization: 'Basic s3cret-token' },
      { authorization: 'Token s3cret-token' },
      { authorization: 'Bearer s3cret-token\u0000' },
      { authorization: `Bearer ${'s'.repeat(4000)}` },
      { 'x-authorization': 'Bearer s3cret-token' },
    ];
    for (const [method, p, b] of routes) {
      for (const headers of wrong) {
        let r;
        try {
          r = await rawRequest(s.url, method, p, { headers: { 'content-type': 'application/json', ...headers }, body: b });
        } catch (e) {
          // Node refuses to send a header with NUL itself: nothing reached the server.
          assert.match(String(e), /Invalid character|ERR_INVALID_CHAR/);
          continue;
        }
        assert.equal(r.status, 401, `${method} ${p} ${JSON.stringify(headers).slice(0, 80)}`);
        assert.equal(r.headers['www-authenticate'], 'Bearer');
        assert.match(r.headers['content-type'], /^application\/json/);
        assert.doesNotMatch(r.body, /s3cret/);
      }
    }
    const ok = await rawRequest(s.url, 'GET', '/v1/threads/tk', { headers: { authorization: 'Bearer s3cret-token' } });
    assert.notEqual(ok.status, 401);
    const lower = await rawRequest(s.url, 'GET', '/v1/threads/tk', { headers: { authorization: 'bearer   s3cret-token  ' } });
    assert.notEqual(lower.status, 401, 'the scheme is case-insensitive and spaces around the token are ignored');
  });
});

describe('hostile: security headers on HTML', () => {
  test('CSP and nosniff on every HTML page of a web root, GET and HEAD, any spelling', async (t) => {
    const box = sandbox();
    t.after(() => rmSync(box.root, { recursive: true, force: true }));
    const s = await start({ dataDir: box.data, wwwDir: box.www, pkgDir: box.pkg });
    t.after(() => s.close());
    const pages = ['/', '/index.html', '/other.html', '/legacy.htm', '/SHOUT.HTML', '/sub/', '/sub', '/sub/index.html', '/sub/page.html', '/other.html?x=<script>', '/%69ndex.html'];
    for (const p of pages) {
      for (const method of ['GET', 'HEAD']) {
        const r = await rawRequest(s.url, method, p);
        assert.equal(r.status, 200, `${method} ${p}`);
        assert.match(r.headers['content-type'], /^text\/html/, p);
        assert.equal(r.headers['content-security-policy'], CSP, `${method} ${p}`);
        assert.equal(r.headers['x-content-type-options'], 'nosniff', `${method} ${p}`);
      }
    }
    assert.match(CSP, /script-src 'self' 'wasm-unsafe-eval'/);
    assert.doesNotMatch(CSP, /unsafe-inline/);
  });

  test('CSP and nosniff on every HTML file of the real www/', async (t) => {
    const s = await start({});
    t.after(() => s.close());
    const html = listFiles(REPO_WWW).filter((f) => /\.html?$/i.test(f) && !f.startsWith(`server${path.sep}`));
    for (const f of ['/', ...html.map((f) => `/${f.split(path.sep).join('/')}`)]) {
      const r = await rawRequest(s.url, 'GET', f);
      if (f === '/' && r.status === 404) continue; // no index.html yet
      assert.equal(r.status, 200, f);
      assert.equal(r.headers['content-security-policy'], CSP, f);
      assert.equal(r.headers['x-content-type-options'], 'nosniff', f);
    }
  });
});

describe('hostile: XSS corpus through the JSON API', () => {
  let s;
  before(async () => {
    s = await start();
  });
  after(() => s.close());

  const XSS = [
    '<script>alert(1)</script>',
    '"><img src=x onerror=alert(1)>',
    "'><svg/onload=alert`1`>",
    'javascript:alert(1)',
    '<iframe srcdoc="&lt;script&gt;alert(1)&lt;/script&gt;">',
    '</script><script>alert(document.cookie)</script>',
    '{{constructor.constructor(\'alert(1)\')()}}',
    '&lt;b&gt; &amp; &quot; &#39;',
    '\u2028\u2029 <!-- --> ]]> \u0000 \u001f \ud83d\ude00',
    '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>',
  ];

  const noHtml = (r, what) => {
    const ct = r.headers.get ? r.headers.get('content-type') : r.headers['content-type'];
    assert.ok(/^(application\/json|text\/event-stream)/.test(ct || ''), `${what}: content-type ${ct}`);
    const nosniff = r.headers.get ? r.headers.get('x-content-type-options') : r.headers['x-content-type-options'];
    assert.equal(nosniff, 'nosniff', what);
  };

  test('Neuron: messages, tool inputs and reject reasons come back verbatim as JSON', async () => {
    let n = 0;
    for (const x of XSS) {
      const id = `xss_n${n++}`;
      const sent = await postJson(`${s.url}/threads/${id}/chat`, { message: x });
      assert.equal(sent.status, 200, x);
      noHtml(sent, 'chat');
      const thread = await getJson(`${s.url}/threads/${id}`);
      noHtml(thread, 'thread');
      assert.equal(thread.body.messages[0].content, x, 'the message is stored verbatim');
      const again = await rawRequest(s.url, 'GET', `/threads/${id}`);
      assert.ok(again.body.includes(JSON.stringify(x).slice(1, -1)), 'the raw body is plain JSON of it, never HTML-escaped');
    }
    // A tool input and a rejection reason.
    const path1 = '/tmp/<img_src=x_onerror=alert(1)>';
    const paused = await postJson(`${s.url}/threads/xss_tool/chat`, { message: `delete ${path1}` });
    assert.equal(paused.body.status, 'awaiting_approval');
    const call = paused.body.message.tools.find((t) => t.approval === 'pending');
    assert.equal(call.inputs.path, path1);
    const reason = XSS.join(' | ');
    const done = await postJson(`${s.url}/threads/xss_tool/chat`, { decisions: { [call.callId]: ['reject', reason] } });
    assert.equal(done.status, 200);
    noHtml(done, 'decisions');
    const thread = await getJson(`${s.url}/threads/xss_tool`);
    const rejected = thread.body.messages.flatMap((m) => m.tools || []).find((t) => t.callId === call.callId && t.approval === 'rejected');
    assert.equal(rejected.rejectReason, reason, 'the reason is stored verbatim');
    // What the model reads: the rejection's result, the reason in it verbatim.
    const result = thread.body.messages
      .filter((m) => m.type === 'tool_call_result')
      .flatMap((m) => m.tools)
      .find((t) => t.callId === call.callId);
    assert.equal(result.result, rejectionResult(reason), 'and reaches the model verbatim');
    assert.ok(result.result.includes(reason));
    // Errors echo hostile input as JSON too.
    for (const [p, body] of [
      ['/threads/<script>/chat', { message: 'x' }],
      [`/threads/xss_tool/chat`, { decisions: { '<img src=x onerror=alert(1)>': 'approve' } }],
      [`/threads/xss_tool/chat`, { decisions: { a: '<script>' } }],
    ]) {
      const r = await postJson(`${s.url}${p}`, body);
      assert.ok(r.status >= 400, p);
      noHtml(r, p);
    }
  });

  test('Sidenet: texts and tool args come back verbatim in the event stream and the thread', async () => {
    let n = 0;
    for (const x of XSS) {
      const threadId = `xss_s${n++}`;
      const st = await sseChat(s.url, { threadId, messages: [userMsg(x)] });
      assert.equal(st.status, 200, x);
      noHtml(st, 'stream');
      const thread = await getJson(`${s.url}/v1/threads/${threadId}`);
      noHtml(thread, 'v1 thread');
      const user = thread.body.messages.find((m) => m.role === 'user');
      assert.equal(user.parts.find((p) => p.type === 'text').text, x);
    }
    const to = 'a@b.c';
    const subject = '<script>alert(1)</script>';
    const st = await sseChat(s.url, { threadId: 'xss_sargs', messages: [userMsg(`email ${to} about ${subject}`)] });
    const [a] = approvals(st.chunks);
    assert.equal(a.args.subject, subject);
    assert.ok(a.reason.includes(subject), 'the headline carries the subject verbatim');
    for (const [p, body] of [
      ['/v1/chat', { threadId: '<svg onload=alert(1)>', messages: [userMsg('x')] }],
      ['/v1/chat', { threadId: 'xss_sargs', messages: [], approval: { runId: '<script>', toolCallId: '<b>', approved: true } }],
    ]) {
      const r = await postJson(`${s.url}${p}`, body);
      assert.ok(r.status >= 400, p);
      noHtml(r, p);
    }
    const nf = await getJson(`${s.url}/v1/%3Cscript%3Ealert(1)%3C%2Fscript%3E`);
    assert.equal(nf.status, 404);
    noHtml(nf, 'unknown v1 route');
  });

  test('every API answer is JSON or an event stream, never HTML, whatever the status', async () => {
    const cases = [
      ['GET', '/threads/x'],
      ['GET', '/threads'],
      ['GET', '/threads/a/b/c'],
      ['PUT', '/threads/x/chat'],
      ['POST', '/threads/x/chat', '{'],
      ['POST', '/threads/x/chat', ''],
      ['POST', '/threads/x/chat', '"<html>"'],
      ['GET', '/v1/chat'],
      ['GET', '/v1/chat/stream?threadId=none'],
      ['POST', '/v1/chat', '<html><body>'],
      ['GET', '/health'],
      ['GET', '/__faults'],
    ];
    for (const [method, p, body] of cases) {
      const r = await rawRequest(s.url, method, p, { headers: { 'content-type': 'application/json', accept: 'text/html' }, body });
      const ct = r.headers['content-type'];
      if (r.status === 204) {
        assert.equal(r.body, '', p);
        continue;
      }
      assert.ok(/^(application\/json|text\/event-stream)/.test(ct || ''), `${method} ${p} -> ${r.status} ${ct}`);
      assert.equal(r.headers['x-content-type-options'], 'nosniff', p);
      JSON.parse(r.body);
    }
  });
});

describe('hostile: a crash between a tool run and its record', () => {
  test('a replayed decision never runs a tool twice, across restarts (found by npm run soak)', async (t) => {
    const { Store } = await import('../store.mjs');
    const { readEffects } = await import('../testkit.mjs');
    const dataDir = tempDir('toolgate-effects-');
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const entry = { dialect: 'neuron', threadId: 't1', callId: 'toolu_1', name: 'send_email', inputs: { to: 'a@b.c' } };
    const a = new Store(dataDir);
    assert.equal(a.recordEffect(entry), true);
    assert.equal(a.recordEffect(entry), false);
    // The server is killed before the thread record is written; the restarted one sees the same
    // decision again (the client's retry) and must not run the tool again.
    writeFileSync(path.join(dataDir, 'effects.jsonl'), `${readEffects(dataDir).map((e) => JSON.stringify(e)).join('\n')}\n{"torn`);
    const b = new Store(dataDir);
    assert.equal(b.recordEffect(entry), false);
    assert.equal(b.recordEffect({ ...entry, dialect: 'sidenet' }), true);
    assert.equal(b.recordEffect({ ...entry, callId: 'toolu_2' }), true);
    const lines = readFileSync(path.join(dataDir, 'effects.jsonl'), 'utf8').split('\n').filter(Boolean);
    assert.equal(lines.length, 4);
    assert.deepEqual(lines.slice(2).map((l) => JSON.parse(l).callId), ['toolu_1', 'toolu_2']);
  });
});
