// The Sidenet client against a server built on LangChain (tests/e2e-support/langchain-endpoint.mjs:
// its createAgent with humanInTheLoopMiddleware, the graph's stream turned into an AI SDK UI
// message stream by @ai-sdk/langchain), in Node: the chunks toolgate reads here were written by
// the installed LangChain and its adapter, not by hand. After each case, and mid-pause, a new
// client loading the thread must show what the live one shows.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLangChainEndpoint, AGENT_VERSION, DECLINED } from '../e2e-support/langchain-endpoint.mjs';
import { cardIds, lastText, loadPackage, reloaded, shown, sidenetClient, tool } from '../e2e-support/sidenet-client.mjs';

let tg;
let ep;
let n = 0;

before(async () => {
  tg = await loadPackage();
  ep = await startLangChainEndpoint();
});
after(async () => {
  await ep?.close();
});

const newThread = (label) => `langchain_${label}_${++n}`;
const client = (threadId, transport = 'stream') => sidenetClient(tg, ep.url, threadId, transport);
/** The tools LangChain ran, of the inputs given. */
const effectsWith = (pred) => ep.effects.filter((e) => pred(e.input));
async function sameAfterReload(threadId, snapshot) {
  const loaded = await reloaded(tg, ep.url, threadId);
  assert.deepEqual(cardIds(loaded), cardIds(snapshot));
  assert.deepEqual(shown(loaded), shown(snapshot));
}

// Every case twice: replies streamed (the chat route), and collected (`transport: 'collect'`).
for (const transport of ['stream', 'collect']) {
  test(`[${transport}] one card, approved: the interrupt resumes, LangChain runs the call as the card showed it and the ungated one with it`, async () => {
    const threadId = newThread(`approve_${transport}`);
    const body = `Hi "Maya", café ☕ \\ done\nBye (${transport})`;
    const c = client(threadId, transport);
    try {
      await c.load();
      await c.send(`please email maya@example.com «${body}» and read /etc/motd`);
      let s = c.getSnapshot();
      assert.equal(s.phase, 'awaiting_approval', JSON.stringify(s.error));
      assert.equal(s.suspension.runId, ep.threads.get(threadId).run.runId);
      assert.equal(s.suspension.agentVersionId, AGENT_VERSION);
      const [card] = s.suspension.pending;
      assert.equal(s.suspension.pending.length, 1);
      assert.deepEqual([card.name, card.inputs], ['send_email', { to: 'maya@example.com', body }]);
      assert.equal(s.messages.at(-1).text, 'On it.');
      // The middleware stops the whole step before any call runs: the ungated one waits too.
      const read = s.messages.at(-1).tools.find((t) => t.name === 'read_file');
      assert.deepEqual([read.status, read.approval], ['called', null]);
      assert.deepEqual(effectsWith((i) => i.body === body), []);
      await sameAfterReload(threadId, s);

      c.approve(card.callId);
      await c.submit();
      s = c.getSnapshot();
      assert.equal(s.phase, 'completed', JSON.stringify(s.error));
      assert.deepEqual(effectsWith((i) => i.body === body), [{ name: 'send_email', input: { to: 'maya@example.com', body } }]);
      assert.deepEqual([tool(s, card.callId).status, tool(s, card.callId).approval], ['done', 'approved']);
      assert.equal(tool(s, read.callId).status, 'done');
      assert.equal(lastText(s), 'read_file: contents of /etc/motd; send_email: {"sent":true,"to":"maya@example.com"}');
      await sameAfterReload(threadId, s);
    } finally {
      c.free();
    }
  });

  test(`[${transport}] one card, rejected: LangChain answers the call with an error tool message, which shows rejected, and nothing runs`, async () => {
    const threadId = newThread(`reject_${transport}`);
    const c = client(threadId, transport);
    try {
      await c.load();
      await c.send(`email bob@example.com «the plan ${transport}»`);
      const [card] = c.getSnapshot().suspension.pending;
      c.reject(card.callId, 'Not to Bob');
      await c.submit();
      const s = c.getSnapshot();
      assert.equal(s.phase, 'completed', JSON.stringify(s.error));
      const t = tool(s, card.callId);
      assert.deepEqual([t.approval, t.status, t.result, t.rejectReason], ['rejected', 'error', DECLINED, 'Not to Bob']);
      assert.deepEqual(effectsWith((i) => i.body === `the plan ${transport}`), []);
      assert.equal(lastText(s), `send_email: ${DECLINED}`);
      await sameAfterReload(threadId, s);
    } finally {
      c.free();
    }
  });

  test(`[${transport}] two cards in one interrupt, answered one at a time: the first decision waits, the second resumes the run (one rejected: neither runs)`, async () => {
    const threadId = newThread(`two_${transport}`);
    const c = client(threadId, transport);
    try {
      await c.load();
      await c.send(`email a@example.com «one ${transport}» and delete /srv/two-${transport}`);
      let s = c.getSnapshot();
      const [a, b] = s.suspension.pending;
      assert.deepEqual([a.name, b.name], ['send_email', 'delete_file']);
      c.approve(a.callId);
      await c.submit();
      s = c.getSnapshot();
      assert.equal(s.phase, 'awaiting_approval', JSON.stringify(s.error));
      assert.deepEqual(cardIds(s), [b.callId]);
      assert.equal(tool(s, a.callId).status, 'approved');
      assert.deepEqual(effectsWith((i) => i.body === `one ${transport}`), []);
      await sameAfterReload(threadId, s);
      c.reject(b.callId);
      await c.submit();
      s = c.getSnapshot();
      assert.equal(s.phase, 'completed', JSON.stringify(s.error));
      // LangChain sends a step with any rejection in it back to the model: the approved call of
      // it does not run, and no outcome comes for it. It stays approved, with no result.
      const ta = tool(s, a.callId);
      assert.deepEqual([ta.status, ta.approval, ta.result], ['approved', 'approved', null]);
      assert.deepEqual([tool(s, b.callId).status, tool(s, b.callId).approval], ['error', 'rejected']);
      assert.deepEqual(effectsWith((i) => i.body === `one ${transport}` || i.path === `/srv/two-${transport}`), []);
      await sameAfterReload(threadId, s);
    } finally {
      c.free();
    }
  });

  test(`[${transport}] a reload mid-pause: the history and the replay show the same cards, which can be answered`, async () => {
    const threadId = newThread(`reload_${transport}`);
    const first = client(threadId, transport);
    let paused;
    try {
      await first.load();
      await first.send(`delete /srv/reload-${transport}`);
      paused = first.getSnapshot();
    } finally {
      first.free(); // the tab closed with the card unanswered
    }
    const c = client(threadId, transport);
    try {
      await c.load();
      let s = c.getSnapshot();
      assert.equal(s.phase, 'awaiting_approval', JSON.stringify(s.error));
      assert.deepEqual(shown(s), shown(paused));
      c.approve(s.suspension.pending[0].callId);
      await c.submit();
      s = c.getSnapshot();
      assert.equal(s.phase, 'completed', JSON.stringify(s.error));
      assert.deepEqual(effectsWith((i) => i.path === `/srv/reload-${transport}`).map((e) => e.name), ['delete_file']);
      await sameAfterReload(threadId, s);
    } finally {
      c.free();
    }
  });

  test(`[${transport}] a resumed run that interrupts again on a later step: the same run, a new card, answered in turn`, async () => {
    const threadId = newThread(`steps_${transport}`);
    const c = client(threadId, transport);
    try {
      await c.load();
      await c.send(`email a@example.com «first ${transport}» then email b@example.com «second ${transport}»`);
      let s = c.getSnapshot();
      const runId = s.suspension.runId;
      c.approve(s.suspension.pending[0].callId);
      await c.submit();
      s = c.getSnapshot();
      assert.equal(s.phase, 'awaiting_approval', JSON.stringify(s.error));
      const [b] = s.suspension.pending;
      assert.deepEqual(b.inputs, { to: 'b@example.com', body: `second ${transport}` });
      assert.equal(s.suspension.runId, runId);
      await sameAfterReload(threadId, s);
      c.approve(b.callId);
      await c.submit();
      s = c.getSnapshot();
      assert.equal(s.phase, 'completed', JSON.stringify(s.error));
      assert.deepEqual(effectsWith((i) => i.body === `first ${transport}` || i.body === `second ${transport}`).map((e) => e.input.to), ['a@example.com', 'b@example.com']);
      assert.equal(ep.threads.get(threadId).run, null);
      await sameAfterReload(threadId, s);
    } finally {
      c.free();
    }
  });
}
