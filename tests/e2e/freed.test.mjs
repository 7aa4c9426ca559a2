// A client or a decision set used after `free()`, or from inside it (a custom fetch's abort
// listener, called as `free()` cancels the request), throws a ToolgateError `invalid_state` like
// every other misuse, in both entry points (the package's glue turns wasm-bindgen's plain
// "null pointer passed to rust" into one: scripts/build.sh).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertNoProblems, openPage, withEndpointAndBrowser, withPage } from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser();

/** Runs `fn(arg)` in a fresh page of the demo's origin, where the package is served (`withPage`:
 * the page must report no problem). */
const inPage = (fn, arg) =>
  withPage(env.browser, async ({ page }) => {
    await page.goto(`${env.endpoint.url}/`);
    return page.evaluate(fn, arg);
  });

for (const entry of ['/pkg/toolgate.js', '/pkg/neuron/toolgate.js']) {
  test(`${entry}: use after free() is an invalid_state ToolgateError`, async () => {
    const out = await inPage(async (entry) => {
      const tg = await import(entry);
      await tg.default();
      const caught = (f) => {
        try {
          f();
          return 'returned';
        } catch (e) {
          return { toolgate: tg.isToolgateError(e), code: e.code, message: e.message };
        }
      };
      const rejected = async (f) => {
        try {
          await f();
          return 'resolved';
        } catch (e) {
          return { toolgate: tg.isToolgateError(e), code: e.code, message: e.message };
        }
      };
      const out = {};
      const client = new tg.ApprovalClient({ threadId: 'freed', persist: false });
      client.free();
      out.snapshot = caught(() => client.getSnapshot());
      out.approve = caught(() => client.approve('a'));
      out.subscribe = caught(() => client.subscribe(() => {}));
      out.load = await rejected(() => client.load());
      // The async methods reject (a promise comes back), never throw.
      out.promises = ['load', 'send', 'submit', 'rejectAllAndSend'].map((m) => {
        try {
          const p = client[m]('x');
          p.catch(() => {});
          return p instanceof Promise;
        } catch {
          return 'threw';
        }
      });
      out.freeAgain = caught(() => client.free());

      const doc = JSON.stringify({ messages: [{ role: 'assistant', type: 'tool_call', content: null,
        tools: [{ callId: 'a', name: 'delete_file', inputs: {}, approval: 'pending' }] }] });
      const decisions = new tg.Decisions(doc);
      decisions.free();
      out.decisions = caught(() => decisions.toJSON());

      // From inside free(): a custom fetch whose abort listener reads the snapshot.
      let during;
      const busy = new tg.ApprovalClient({
        threadId: 'freed2', persist: false,
        fetch: (url, init) => new Promise((_, reject) => {
          fetched();
          init.signal.addEventListener('abort', () => {
            during = caught(() => busy.getSnapshot());
            reject(new DOMException('aborted', 'AbortError'));
          });
        }),
      });
      let fetched;
      const called = new Promise((resolve) => { fetched = resolve; });
      const loading = busy.load().catch(() => {});
      await called;
      busy.free();
      await loading;
      out.during = during;
      return out;
    }, entry);
    const freed = { toolgate: true, code: 'invalid_state', message: 'invalid_state: the object was freed' };
    for (const key of ['snapshot', 'approve', 'subscribe', 'load', 'decisions']) assert.deepEqual(out[key], freed, key);
    assert.deepEqual(out.promises, [true, true, true, true], 'the async methods reject, never throw');
    assert.equal(out.freeAgain, 'returned', 'free() twice is harmless');
    assert.equal(out.during.toolgate, true, JSON.stringify(out.during));
    assert.equal(out.during.code, 'invalid_state');
  });
}

// `free()` from a listener: a UI that drops the client when the snapshot says so, from inside the
// `approve()` (or `load()`) whose change it hears. It does not throw; the client is freed once that
// method returns (its later calls are `invalid_state`, its pending promise rejects `aborted`).
for (const entry of ['/pkg/toolgate.js', '/pkg/neuron/toolgate.js']) {
  test(`${entry}: free() from a listener frees the client once the method returns`, async () => {
    const out = await inPage(async (entry) => {
      const tg = await import(entry);
      await tg.default();
      const outcome = (f) => {
        try {
          f();
          return 'returned';
        } catch (e) {
          return e.code ?? String(e);
        }
      };
      const thread = JSON.stringify({ id: 't', messages: [{ role: 'assistant', type: 'tool_call', content: null,
        tools: [{ callId: 'a', name: 'delete_file', inputs: {}, approval: 'pending' }] }] });
      const out = {};

      // From inside approve().
      const client = new tg.ApprovalClient({ threadId: 't', persist: false,
        fetch: async () => new Response(thread, { headers: { 'content-type': 'application/json' } }) });
      await client.load();
      let inListener;
      client.subscribe(() => { inListener = outcome(() => client.free()); });
      out.approve = outcome(() => client.approve('a'));
      out.inListener = inListener;
      out.after = outcome(() => client.getSnapshot());

      // From inside load(), while its request is out: the load rejects `aborted`.
      let release;
      const loading = new tg.ApprovalClient({ threadId: 't2', persist: false,
        fetch: () => new Promise((resolve) => { release = resolve; }) });
      let freedIn;
      loading.subscribe(() => { if (loading.getSnapshot().busy) freedIn = outcome(() => loading.free()); });
      const p = loading.load().then(() => 'resolved', (e) => e.code);
      out.loadFree = freedIn;
      out.load = await Promise.race([p, new Promise((r) => setTimeout(() => r('pending'), 2000))]);
      release?.(new Response(thread));
      out.loadAfter = outcome(() => loading.getSnapshot());
      return out;
    }, entry);
    assert.deepEqual(out, {
      approve: 'returned',
      inListener: 'returned',
      after: 'invalid_state',
      loadFree: 'returned',
      load: 'aborted',
      loadAfter: 'invalid_state',
    });
  });
}

// A client nobody refers to while its command is out (`new ApprovalClient(o).load()`, or one kept
// only by the async function that awaits it) is not collected, and so freed, before the command is
// done: the package keeps it alive while the crate holds the promise (scripts/build.sh).
test('a client with a command out is not collected before the command is done', async () => {
  const { page, problems, context } = await openPage(env.browser);
  try {
    await page.goto(`${env.endpoint.url}/`);
    await page.evaluate(async () => {
      const tg = await import('/pkg/toolgate.js');
      await tg.default();
      // Every request waits 300 ms, during which the garbage collector runs.
      const slow = (url, init) => new Promise((r) => setTimeout(r, 300)).then(() => fetch(url, init));
      const outcome = (p) => p.then(() => 'resolved', (e) => e.code);
      window.loaded = outcome(new tg.ApprovalClient({ threadId: 'gc-a', persist: false, fetch: slow }).load());
      window.sent = outcome(new tg.ApprovalClient({ dialect: 'sidenet', threadId: 'gc-b', persist: false, fetch: slow })
        .send('hello'));
    });
    const cdp = await context.newCDPSession(page);
    for (let i = 0; i < 5; i++) {
      await cdp.send('HeapProfiler.collectGarbage');
      await new Promise((r) => setTimeout(r, 20));
    }
    const out = await page.evaluate(async () => ({ loaded: await window.loaded, sent: await window.sent }));
    assert.deepEqual(out, { loaded: 'resolved', sent: 'resolved' });
    const thread = await (await fetch(`${env.endpoint.url}/v1/threads/gc-b`)).json();
    assert.equal(thread.messages.length >= 1, true, 'the Sidenet message reached the server');
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});
