// What loading a long thread leaves in wasm memory, in the release package. A WebAssembly memory
// never shrinks, so a load's peak stays with the page for good. That peak is kept down three ways:
// the response body is dropped once parsed, before the messages' views are built; the parser
// gives each string and object exactly the room it needs; and the snapshot's `messages`
// cross to JS in batches of about 64 KiB of JSON (`list_to_js` in src/wasm/input.rs), not as one
// text of every message and its wire form. Before them, the 5.6 MB thread below grew memory by
// 46.6 MB (8.3 times its size) and the 5.8 MB history by 53.1 MB; now by 13.9 and 14.0 MB.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withEndpointAndBrowser, withPage } from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser();

for (const entry of ['/pkg/toolgate.js', '/pkg/neuron/toolgate.js']) {
  test(`${entry}: a 5 MB thread loaded grows wasm memory by under 3 times its size`, async () => {
    const out = await withPage(env.browser, async ({ page }) => {
      await page.goto(`${env.endpoint.url}/`);
      return page.evaluate(async (entry) => {
        const tg = await import(entry);
        const { memory } = await tg.default();
        // A long Neuron thread: turns of text, a gated tool call already decided and its large
        // result (escaped quotes, newlines, non-ASCII), and a pause on the tail.
        const messages = [];
        let n = 0;
        let size = 0;
        const result = (i) =>
          `line ${i}: "quoted" value\t\\path\\to\\file — café 東京 🚀\n`.repeat(40) + JSON.stringify({ i, rows: [1, 2, 3] });
        while (size < 5_000_000) {
          const id = `call_${n++}`;
          messages.push({ role: 'user', content: `please run step ${n}` });
          messages.push({
            role: 'assistant', type: 'tool_call', content: null,
            tools: [{ callId: id, name: 'write_file', inputs: { path: `/tmp/${n}`, text: 'x'.repeat(200) },
              result: null, approval: n % 3 ? 'approved' : 'rejected',
              rejectReason: n % 3 ? null : 'Not that one' }],
          });
          messages.push({ role: 'user', type: 'tool_call_result', content: null,
            tools: [{ callId: id, name: 'write_file', inputs: {}, result: result(n) }] });
          messages.push({ role: 'assistant', content: `done with step ${n}: "ok"` });
          size += JSON.stringify(messages.slice(-4)).length;
        }
        messages.push({ role: 'assistant', type: 'tool_call', content: null, tools: [
          { callId: 'tail_a', name: 'delete_file', inputs: { path: '/tmp/a' }, approval: 'pending' },
          { callId: 'tail_b', name: 'send_email', inputs: { to: 'a@b.c' }, approval: 'pending' },
        ] });
        const body = JSON.stringify({ id: 'long', messages });
        const bytes = new TextEncoder().encode(body).length;
        const client = new tg.ApprovalClient({
          threadId: 'long', baseUrl: location.origin, persist: false,
          fetch: async () => new Response(body, { headers: { 'content-type': 'application/json' } }),
        });
        const before = memory.buffer.byteLength;
        await client.load();
        const snap = client.getSnapshot();
        const grown = memory.buffer.byteLength - before;
        client.free();
        return { bytes, grown, count: snap.messages.length, pending: snap.suspension?.pending.map((c) => c.callId),
          lastRaw: snap.messages.at(-1).raw.tools.length, firstText: snap.messages[0].text, want: messages.length };
      }, entry);
    });
    // The messages arrive whole, in order, however many batches they crossed in.
    assert.equal(out.count, out.want);
    assert.equal(out.firstText, 'please run step 1');
    assert.equal(out.lastRaw, 2);
    assert.deepEqual(out.pending, ['tail_a', 'tail_b']);
    assert.ok(out.bytes > 5_000_000);
    assert.ok(out.grown < 3 * out.bytes, `a ${out.bytes} B thread grew wasm memory by ${out.grown} B`);
  });
}

test('/pkg/toolgate.js: a 5 MB Sidenet history loaded grows wasm memory by under 3 times its size', async () => {
  const out = await withPage(env.browser, async ({ page }) => {
    await page.goto(`${env.endpoint.url}/`);
    return page.evaluate(async () => {
      const tg = await import('/pkg/toolgate.js');
      const { memory } = await tg.default();
      // AI SDK UI messages: user text, and assistant steps with a tool part and its large output.
      const messages = [];
      let size = 0;
      for (let n = 0; size < 5_000_000; n++) {
        const pair = [
          { id: `u${n}`, role: 'user', parts: [{ type: 'text', text: `please run step ${n}` }] },
          { id: `a${n}`, role: 'assistant', parts: [
            { type: 'step-start' },
            { type: 'tool-read_log', toolCallId: `call_${n}`, state: 'output-available',
              input: { path: `/var/log/${n}.log` },
              output: `line ${n}: "quoted" value\t\\path — café 東京 🚀\n`.repeat(40) },
            { type: 'text', text: `done with step ${n}: "ok"`, state: 'done' },
          ] },
        ];
        messages.push(...pair);
        size += JSON.stringify(pair).length;
      }
      const body = JSON.stringify({ id: 'long', messages });
      const bytes = new TextEncoder().encode(body).length;
      const client = new tg.ApprovalClient({
        dialect: 'sidenet', threadId: 'long', baseUrl: location.origin, persist: false,
        fetch: async (url) => /stream/.test(url) ? new Response(null, { status: 204 })
          : new Response(body, { headers: { 'content-type': 'application/json' } }),
      });
      const before = memory.buffer.byteLength;
      await client.load();
      const snap = client.getSnapshot();
      const grown = memory.buffer.byteLength - before;
      client.free();
      const last = snap.messages.at(-1);
      return { bytes, grown, count: snap.messages.length, want: messages.length, phase: snap.phase,
        lastTool: last.tools[0]?.callId, lastOutput: last.tools[0]?.result === messages.at(-1).parts[1].output };
    });
  });
  assert.equal(out.count, out.want);
  assert.equal(out.phase, 'idle');
  assert.equal(out.lastTool, `call_${out.want / 2 - 1}`);
  assert.ok(out.lastOutput, 'the last output arrives whole');
  assert.ok(out.bytes > 5_000_000);
  assert.ok(out.grown < 3 * out.bytes, `a ${out.bytes} B history grew wasm memory by ${out.grown} B`);
});
