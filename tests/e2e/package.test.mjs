// The built package (pkg/) as an app's code meets it, in Node: what importing it touches, what its
// exports do before init() and after a failed one, a loader given an HTML page for the module, and
// the manifest's entry points, module names, types and licence files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../e2e-support/harness.mjs';

const PKG = path.join(ROOT, 'pkg');
let fresh = 0;
// A module instance of its own (a new URL is a new module), so each test starts before init().
const load = (entry = 'toolgate.js') => import(`${pathToFileURL(path.join(PKG, entry)).href}?i=${++fresh}`);
const PAUSED = JSON.stringify({
  messages: [
    { role: 'user', content: 'go' },
    {
      role: 'assistant', type: 'tool_call', content: null,
      tools: [{ callId: 'a', name: 'delete_file', inputs: { path: '/x' }, approval: 'pending' }],
    },
  ],
});

test('importing the package touches no browser global (safe in server-side rendering)', async () => {
  const names = ['window', 'document', 'localStorage', 'sessionStorage', 'self', 'location'];
  const touched = [];
  // Node 25 and later have `localStorage` and `sessionStorage` of their own: watched the same way,
  // then put back.
  const own = new Map(names.map((name) => [name, Object.getOwnPropertyDescriptor(globalThis, name)]));
  for (const name of names) {
    Object.defineProperty(globalThis, name, { configurable: true, get: () => touched.push(name) });
  }
  try {
    await load();
    await load('neuron/toolgate.js');
  } finally {
    for (const [name, d] of own) {
      if (d) Object.defineProperty(globalThis, name, d);
      else delete globalThis[name];
    }
  }
  assert.deepEqual(touched, []);
});

test('before init() and after a failed one: invalid_state, and isToolgateError works', async () => {
  for (const [entry, wasm] of [
    ['toolgate.js', 'toolgate_bg.wasm'],
    ['neuron/toolgate.js', 'neuron/toolgate_neuron_bg.wasm'],
  ]) {
    const tg = await load(entry);
    assert.equal(tg.isToolgateError(new Error('x')), false, entry);
    assert.equal(tg.isToolgateError(undefined), false, entry);
    const before = [
      () => tg.pendingApprovals(PAUSED),
      () => tg.parseThread(PAUSED),
      () => new tg.ApprovalClient({ threadId: 't' }),
    ];
    const refused = (f, when) => {
      assert.throws(f, (e) => {
        assert.ok(tg.isToolgateError(e), `${entry} ${when}: ${e}`);
        assert.equal(e.code, 'invalid_state');
        assert.match(e.message, /call init\(\) first/);
        return true;
      });
    };
    for (const f of before) refused(f, 'before init()');

    // A failed init: the loader's own error, which isToolgateError reads without throwing.
    const failure = await tg.default({ module_or_path: new Uint8Array([0, 1, 2, 3]) }).then(
      () => null,
      (e) => e,
    );
    assert.ok(failure instanceof Error, `${entry}: init() with no module fails`);
    assert.equal(tg.isToolgateError(failure), false);
    for (const f of before) refused(f, 'after a failed init()');

    // And a later init() with the module works.
    await tg.default({ module_or_path: readFileSync(path.join(PKG, wasm)) });
    assert.deepEqual(tg.pendingApprovals(PAUSED).pending.map((t) => t.callId), ['a']);
    assert.throws(() => tg.pendingApprovals('{'), (e) => tg.isToolgateError(e) && e.code === 'parse_error');
  }
});

test('a client made where `window` has no addEventListener (a server-side stub) hears no other tabs, and does not throw', async () => {
  const tg = await load();
  tg.initSync({ module: readFileSync(path.join(PKG, 'toolgate_bg.wasm')) });
  const own = Object.getOwnPropertyDescriptor(globalThis, 'window');
  try {
    for (const stub of [{}, globalThis]) {
      globalThis.window = stub;
      // `persist` on (the default): the client listens for other tabs' drafts where it can.
      const c = new tg.ApprovalClient({ threadId: 't' });
      assert.equal(c.getSnapshot().threadId, 't');
      c.free();
    }
  } finally {
    if (own) Object.defineProperty(globalThis, 'window', own);
    else delete globalThis.window;
  }
});

test('every option but threadId takes null as its default, whatever its type', async () => {
  const tg = await load();
  tg.initSync({ module: readFileSync(path.join(PKG, 'toolgate_bg.wasm')) });
  const keys = ['dialect', 'transport', 'baseUrl', 'headers', 'autoSubmit', 'persist', 'reloadAfterPost',
    'timeoutMs', 'token', 'agentVersionId', 'agentId', 'routes', 'retry'];
  const all = Object.fromEntries(keys.map((k) => [k, null]));
  const c = new tg.ApprovalClient({ threadId: 't', ...all, persist: false });
  assert.equal(c.getSnapshot().dialect, 'neuron');
  c.free();
  const d = new tg.ApprovalClient({ threadId: 't', routes: { chat: null }, retry: { attempts: null, backoffMs: null } });
  d.free();
  for (const [options, where] of [[{ threadId: null }, 'threadId'], [{ threadId: 't', autoSubmit: 0 }, 'autoSubmit']]) {
    assert.throws(() => new tg.ApprovalClient(options), (e) => tg.isToolgateError(e) && e.code === 'invalid_argument' && e.path === where);
  }
});

test('a number JSON cannot hold (NaN, Infinity) is refused as any other bad value, not read as the default', async () => {
  const tg = await load();
  tg.initSync({ module: readFileSync(path.join(PKG, 'toolgate_bg.wasm')) });
  // (`JSON.stringify` writes them as null, the default: `timeoutMs: Infinity` meant as "no
  // timeout" was 30 s.)
  for (const [options, where] of [
    [{ threadId: 't', timeoutMs: NaN }, 'timeoutMs'],
    [{ threadId: 't', timeoutMs: Infinity }, 'timeoutMs'],
    [{ threadId: 't', retry: { attempts: -Infinity } }, 'retry.attempts'],
  ]) {
    assert.throws(() => new tg.ApprovalClient(options), (e) => tg.isToolgateError(e) && e.code === 'invalid_argument' && e.path === where, where);
  }
});

test('init() given an HTML page for the module says so, naming the module', async () => {
  for (const [entry, name] of [['toolgate.js', /not toolgate_bg\.wasm /], ['neuron/toolgate.js', /not toolgate_neuron_bg\.wasm /]]) {
    const tg = await load(entry);
    const page = new Response('<!doctype html><html><body><div id="root"></div></body></html>', {
      headers: { 'content-type': 'text/html' },
    });
    const warn = console.warn;
    console.warn = () => {};
    try {
      await assert.rejects(tg.default({ module_or_path: page }), (e) => {
        assert.match(e.message, /is an HTML page, not toolgate_(neuron_)?bg\.wasm \(README: Bundlers\)/);
        assert.match(e.message, name);
        return true;
      });
    } finally {
      console.warn = warn;
    }
  }
});

test('the manifest: two entry points, each with a module of its own name, types and licences', () => {
  const manifest = JSON.parse(readFileSync(path.join(PKG, 'package.json'), 'utf8'));
  assert.deepEqual(manifest.exports['./toolgate_bg.wasm'], './toolgate_bg.wasm');
  assert.deepEqual(manifest.exports['./neuron/toolgate_neuron_bg.wasm'], './neuron/toolgate_neuron_bg.wasm');
  assert.deepEqual(manifest.typesVersions, { '*': { neuron: ['neuron/toolgate.d.ts'] } });
  // The Neuron build's glue asks for its own module: a copied toolgate_bg.wasm never stands in.
  const neuronGlue = readFileSync(path.join(PKG, 'neuron/toolgate.js'), 'utf8');
  assert.match(neuronGlue, /toolgate_neuron_bg\.wasm/);
  assert.doesNotMatch(neuronGlue, /["'`/]toolgate_bg\.wasm/);
  assert.equal(existsSync(path.join(PKG, 'neuron/toolgate_bg.wasm')), false);
  assert.match(readFileSync(path.join(PKG, 'toolgate.js'), 'utf8'), /toolgate_bg\.wasm/);
  for (const file of ['LICENSE-MIT', 'LICENSE-APACHE']) {
    assert.ok(existsSync(path.join(PKG, file)), `${file} in pkg/`);
    assert.ok(manifest.files.includes(file), `${file} in the manifest's files`);
  }
  assert.equal(manifest.license, 'MIT OR Apache-2.0');
});

test('TypeScript finds both entry points by the package name, in every module resolution', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'toolgate-ts-'));
  try {
    mkdirSync(path.join(dir, 'node_modules'));
    symlinkSync(PKG, path.join(dir, 'node_modules', 'toolgate'), 'dir');
    const code = [
      "import init, { pendingApprovals, type Suspension } from 'toolgate';",
      "import initNeuron, { ApprovalClient } from 'toolgate/neuron';",
      'export async function f(): Promise<Suspension> {',
      '  await init();',
      '  await initNeuron();',
      "  new ApprovalClient({ threadId: 't', dialect: 'neuron' }).free();",
      "  return pendingApprovals('{}');",
      '}',
      '',
    ].join('\n');
    writeFileSync(path.join(dir, 'a.ts'), code);
    writeFileSync(path.join(dir, 'a.mts'), code);
    const tsc = path.join(ROOT, 'node_modules', '.bin', 'tsc');
    const base = ['--noEmit', '--strict', '--skipLibCheck', 'false', '--lib', 'es2022,dom,esnext.disposable'];
    for (const [resolution, module, file] of [
      ['bundler', 'esnext', 'a.ts'],
      ['node16', 'node16', 'a.mts'],
      ['nodenext', 'nodenext', 'a.mts'],
      ['node10', 'commonjs', 'a.ts'],
    ]) {
      try {
        execFileSync(tsc, [...base, '--moduleResolution', resolution, '--module', module, file], { cwd: dir, encoding: 'utf8' });
      } catch (e) {
        assert.fail(`moduleResolution ${resolution}: ${e.stdout}${e.stderr}`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
