// The package's second entry point, `toolgate/neuron` (pkg/neuron/: the crate built without its
// `sidenet` feature), loaded in a page of the reference endpoint's origin: the same API, a whole
// Neuron turn against the endpoint, the pure functions, and a Sidenet config refused in words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, assertNoProblems, openPage, threadId, withEndpointAndBrowser } from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser();

test('toolgate/neuron: a pause / decide / resume turn, the pure functions, and no Sidenet', async () => {
  assert.ok(existsSync(path.join(ROOT, 'pkg/neuron/toolgate.js')), 'pkg/neuron/ is built by scripts/build.sh');
  const manifest = JSON.parse(readFileSync(path.join(ROOT, 'pkg/package.json'), 'utf8'));
  assert.deepEqual(manifest.exports['./neuron'], { types: './neuron/toolgate.d.ts', default: './neuron/toolgate.js' });
  assert.ok(manifest.files.includes('neuron/'));

  const { page, problems, context } = await openPage(env.browser);
  try {
    // Any page of the origin: the module is imported by the test, not by the demo.
    await page.goto(`${env.endpoint.url}/`);
    const result = await page.evaluate(async (thread) => {
      const tg = await import('/pkg/neuron/toolgate.js');
      await tg.default();
      const out = {};

      const doc = JSON.stringify({
        id: 't',
        messages: [
          { role: 'user', content: 'go' },
          {
            role: 'assistant', type: 'tool_call', content: null, tools: [
              { callId: 'a', name: 'delete_file', inputs: { path: '/x' }, approval: 'pending' },
              { callId: 'b', name: 'read_file', inputs: {}, approval: null },
            ],
          },
        ],
      });
      out.pending = tg.pendingApprovals(doc).pending.map((t) => t.callId);
      out.pendingBytes = tg.pendingApprovals(new TextEncoder().encode(doc)).pending.map((t) => t.callId);
      out.parsed = tg.parseThread(doc).messages.length;
      const decisions = new tg.Decisions(doc);
      decisions.reject('a', 'not now');
      out.wire = decisions.toJSON();
      decisions.free();

      try {
        new tg.ApprovalClient({ dialect: 'sidenet', threadId: 'x', persist: false });
        out.sidenet = 'constructed';
      } catch (e) {
        out.sidenet = { name: e.name, code: e.code, path: e.path, message: e.message };
      }

      const client = new tg.ApprovalClient({ threadId: thread, persist: false });
      try {
        await client.load();
        await client.send('delete /tmp/a and email a@b.c about x');
        const paused = client.getSnapshot();
        out.pausedPhase = paused.phase;
        const [a, b] = paused.suspension.pending;
        out.pausedNames = [a.name, b.name];
        client.approve(a.callId);
        client.reject(b.callId, 'Not this one');
        await client.submit();
        const end = client.getSnapshot();
        out.endPhase = end.phase;
        out.lastText = end.messages[end.messages.length - 1].text;
      } finally {
        client.free();
      }
      return out;
    }, threadId('neuron-build'));

    assert.deepEqual(result.pending, ['a']);
    assert.deepEqual(result.pendingBytes, ['a']);
    assert.equal(result.parsed, 2);
    assert.deepEqual(result.wire, { decisions: { a: ['reject', 'not now'] } });
    assert.equal(result.sidenet.name, 'ToolgateError');
    assert.equal(result.sidenet.code, 'invalid_argument');
    assert.equal(result.sidenet.path, 'dialect');
    assert.match(result.sidenet.message, /only the Neuron dialect/);
    assert.equal(result.pausedPhase, 'awaiting_approval');
    assert.deepEqual(result.pausedNames, ['delete_file', 'send_email']);
    assert.equal(result.endPhase, 'completed');
    assert.match(result.lastText, /delete_file \/tmp\/a: done/);
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});
