// The Sidenet client against a server built on pydantic-ai (tests/e2e-support/pydantic-ai/endpoint.py:
// its Agent with tools that need approval, its Vercel AI adapter for the stream and for the
// history), in Node, with the endpoint run by the Python of .tools/pydantic-ai (scripts/setup.sh
// installs its pinned packages there). The chunks toolgate reads here were written by the
// installed pydantic-ai, not by hand.
//
// A reload mid-pause must show what the live client showed. Once the run has ended, pydantic-ai's
// history says less than its stream did, and the reloaded client shows what it says: one UI
// message per model response (the answer after a pause is a message of its own), no record of
// the approval of a call that ran (it reads as ungated), and a declined call's text where
// Sidenet's history keeps the request's reason. `settledAfterReload` holds the rest to the live view.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../e2e-support/harness.mjs';
import { cardIds as cards, lastText, loadPackage, reloaded, shown, sidenetClient, tool } from '../e2e-support/sidenet-client.mjs';

const PYTHON = path.join(ROOT, '.tools', 'pydantic-ai', 'bin', 'python');
const ENDPOINT = path.join(ROOT, 'tests', 'e2e-support', 'pydantic-ai', 'endpoint.py');
const AGENT_VERSION = 'agv_pydantic_ai_1';

let tg;
let server;
let url;
let n = 0;

before(async () => {
  if (!existsSync(PYTHON)) throw new Error(`${PYTHON} is missing: run scripts/setup.sh (npm test does)`);
  tg = await loadPackage();
  server = spawn(PYTHON, [ENDPOINT], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  server.stderr.on('data', (d) => (err += d));
  url = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(`http://127.0.0.1:${m[1]}`);
    });
    server.on('exit', (code) => reject(new Error(`the pydantic-ai endpoint exited (${code}): ${err}`)));
  });
});
after(() => {
  server?.kill();
});

const newThread = (label) => `pydantic_ai_${label}_${++n}`;
const client = (threadId, transport = 'stream') => sidenetClient(tg, url, threadId, transport);
const debug = async () => (await fetch(`${url}/debug`)).json();
/** The tools pydantic-ai ran, of the inputs given. */
const effectsWith = async (pred) => (await debug()).effects.filter((e) => pred(e.input));
/** Mid-pause, a new client loading the thread shows what the live one shows. */
async function sameAfterReload(threadId, snapshot, transport) {
  const s = await reloaded(tg, url, threadId, transport);
  assert.equal(s.phase, 'awaiting_approval', JSON.stringify(s.error));
  assert.deepEqual(cards(s), cards(snapshot));
  assert.deepEqual(shown(s), shown(snapshot));
}

/**
 * After the run, a new client loading the thread shows the live client's messages as pydantic-ai
 * persisted them: the same user messages; the assistant's text after the last user message the
 * same, in one message per model response; every tool the same but that a call approved and run
 * reads as ungated (its approval is not in the history) and that a declined call's reason is
 * pydantic-ai's text.
 */
async function settledAfterReload(threadId, live, transport) {
  const s = await reloaded(tg, url, threadId, transport);
  assert.equal(s.suspension, null);
  const users = (x) => x.messages.filter((m) => m.role === 'user').map((m) => m.text);
  assert.deepEqual(users(s), users(live));
  const answer = (x) => {
    const from = x.messages.findLastIndex((m) => m.role === 'user') + 1;
    return x.messages.slice(from).map((m) => m.text).filter(Boolean).join('\n');
  };
  assert.equal(answer(s), answer(live));
  const tools = (x, persisted) =>
    x.messages
      .flatMap((m) => m.tools)
      .map((t) => ({
        callId: t.callId,
        name: t.name,
        inputs: t.inputs,
        result: t.result,
        status: t.status,
        approval: persisted || t.approval !== 'approved' || t.status !== 'done' ? t.approval : null,
      }));
  assert.deepEqual(tools(s, true), tools(live, false));
}

// Every case twice: replies streamed (the chat route), and collected (`transport: 'collect'`).
for (const transport of ['stream', 'collect']) {
  test(`[${transport}] one card, approved: pydantic-ai runs the tool with the input the card showed, the ungated call of the step ran at once`, async () => {
    const threadId = newThread(`approve_${transport}`);
    const body = `Hi "Maya", café ☕ \\ done\nBye (${transport})`;
    const c = client(threadId, transport);
    try {
      await c.load();
      await c.send(`please email maya@example.com «${body}» and read /etc/motd`);
      let s = c.getSnapshot();
      assert.equal(s.phase, 'awaiting_approval', JSON.stringify(s.error));
      assert.equal(s.suspension.runId, (await debug()).runs[threadId].runId);
      assert.equal(s.suspension.agentVersionId, AGENT_VERSION);
      const [card] = s.suspension.pending;
      assert.equal(s.suspension.pending.length, 1);
      assert.equal(card.name, 'send_email');
      assert.deepEqual(card.inputs, { to: 'maya@example.com', body });
      assert.equal(card.approvalReason, null);
      const read = s.messages.at(-1).tools.find((t) => t.name === 'read_file');
      assert.equal(read.status, 'done');
      assert.equal(read.result, 'contents of /etc/motd');
      assert.deepEqual(await effectsWith((i) => i.body === body), []);
      await sameAfterReload(threadId, s, transport);

      c.approve(card.callId);
      await c.submit();
      s = c.getSnapshot();
      assert.equal(s.phase, 'completed', JSON.stringify(s.error));
      assert.equal(s.suspension, null);
      assert.deepEqual(await effectsWith((i) => i.body === body), [{ name: 'send_email', input: { to: 'maya@example.com', body } }]);
      assert.equal(tool(s, card.callId).status, 'done');
      assert.equal(tool(s, card.callId).approval, 'approved');
      assert.deepEqual(tool(s, card.callId).result, { sent: true, to: 'maya@example.com' });
      assert.equal(lastText(s), 'send_email: {"sent":true,"to":"maya@example.com"}; read_file: contents of /etc/motd');
      await settledAfterReload(threadId, s, transport);
    } finally {
      c.free();
    }
  });

  test(`[${transport}] one card, rejected: pydantic-ai tells the model it was denied, and nothing runs`, async () => {
    const threadId = newThread(`reject_${transport}`);
    const c = client(threadId, transport);
    try {
      await c.load();
      await c.send(`email bob@example.com «the secret plan ${transport}»`);
      const [card] = c.getSnapshot().suspension.pending;
      c.reject(card.callId, 'Not to Bob');
      await c.submit();
      const s = c.getSnapshot();
      assert.equal(s.phase, 'completed', JSON.stringify(s.error));
      assert.equal(tool(s, card.callId).status, 'denied');
      assert.equal(tool(s, card.callId).approval, 'rejected');
      assert.deepEqual(await effectsWith((i) => i.body === `the secret plan ${transport}`), []);
      assert.equal(lastText(s), 'send_email: The tool call was denied.');
      await settledAfterReload(threadId, s, transport);
    } finally {
      c.free();
    }
  });

  test(`[${transport}] two cards in one step, answered one at a time: the first decision waits, the second resumes the run`, async () => {
    const threadId = newThread(`two_${transport}`);
    const c = client(threadId, transport);
    try {
      await c.load();
      await c.send(`email a@example.com «one ${transport}» and email b@example.com «two ${transport}»`);
      let s = c.getSnapshot();
      const [a, b] = s.suspension.pending;
      assert.deepEqual([a.inputs.to, b.inputs.to], ['a@example.com', 'b@example.com']);
      c.approve(a.callId);
      await c.submit();
      s = c.getSnapshot();
      assert.equal(s.phase, 'awaiting_approval', JSON.stringify(s.error));
      assert.deepEqual(cards(s), [b.callId]);
      assert.equal(tool(s, a.callId).status, 'approved');
      const mine = (i) => i.body === `one ${transport}` || i.body === `two ${transport}`;
      assert.deepEqual(await effectsWith(mine), []);
      c.reject(b.callId);
      await c.submit();
      s = c.getSnapshot();
      assert.equal(s.phase, 'completed', JSON.stringify(s.error));
      assert.deepEqual(
        [tool(s, a.callId).status, tool(s, b.callId).status],
        ['done', 'denied'],
      );
      assert.deepEqual((await effectsWith(mine)).map((e) => e.input.to), ['a@example.com']);
      await settledAfterReload(threadId, s, transport);
    } finally {
      c.free();
    }
  });

  test(`[${transport}] a reload mid-pause: pydantic-ai's history and the replay show the same cards, which can be answered`, async () => {
    const threadId = newThread(`reload_${transport}`);
    const first = client(threadId, transport);
    let paused;
    try {
      await first.load();
      await first.send(`email ops@example.com «Deploy now ${transport}» and read /srv/VERSION`);
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
      const [card] = s.suspension.pending;
      c.approve(card.callId);
      await c.submit();
      s = c.getSnapshot();
      assert.equal(s.phase, 'completed', JSON.stringify(s.error));
      assert.deepEqual((await effectsWith((i) => i.body === `Deploy now ${transport}`)).map((e) => e.input.to), ['ops@example.com']);
      await settledAfterReload(threadId, s, transport);
    } finally {
      c.free();
    }
  });

  test(`[${transport}] a call the tool's own policy lets through runs at once; the one it stops for is a card`, async () => {
    const threadId = newThread(`policy_${transport}`);
    const c = client(threadId, transport);
    try {
      await c.load();
      await c.send('delete /tmp/scratch.log and delete /etc/hosts.bak');
      let s = c.getSnapshot();
      assert.equal(s.phase, 'awaiting_approval', JSON.stringify(s.error));
      const [card] = s.suspension.pending;
      assert.deepEqual(card.inputs, { path: '/etc/hosts.bak' });
      const tmp = s.messages.at(-1).tools.find((t) => t.inputs.path === '/tmp/scratch.log');
      assert.deepEqual([tmp.status, tmp.approval], ['done', null]);
      await sameAfterReload(threadId, s, transport);
      c.approve(card.callId);
      await c.submit();
      s = c.getSnapshot();
      assert.equal(s.phase, 'completed', JSON.stringify(s.error));
      assert.deepEqual(tool(s, card.callId).result, { deleted: '/etc/hosts.bak' });
      await settledAfterReload(threadId, s, transport);
    } finally {
      c.free();
    }
  });

  test(`[${transport}] a continuation that pauses again on a later step: the same run, a new card, answered in turn`, async () => {
    const threadId = newThread(`steps_${transport}`);
    const c = client(threadId, transport);
    try {
      await c.load();
      await c.send(`email a@example.com «first ${transport}» then email b@example.com «second ${transport}»`);
      let s = c.getSnapshot();
      const runId = s.suspension.runId;
      const [a] = s.suspension.pending;
      c.approve(a.callId);
      await c.submit();
      s = c.getSnapshot();
      assert.equal(s.phase, 'awaiting_approval', JSON.stringify(s.error));
      assert.equal(s.suspension.runId, runId);
      const [b] = s.suspension.pending;
      assert.deepEqual(b.inputs, { to: 'b@example.com', body: `second ${transport}` });
      assert.equal(tool(s, a.callId).status, 'done');
      c.approve(b.callId);
      await c.submit();
      s = c.getSnapshot();
      assert.equal(s.phase, 'completed', JSON.stringify(s.error));
      const mine = (i) => i.body === `first ${transport}` || i.body === `second ${transport}`;
      assert.deepEqual((await effectsWith(mine)).map((e) => e.input.body), [`first ${transport}`, `second ${transport}`]);
      await settledAfterReload(threadId, s, transport);
    } finally {
      c.free();
    }
  });

  test(`[${transport}] a call whose input does not parse and a call of an unknown tool fail, with no card`, async () => {
    const threadId = newThread(`refused_${transport}`);
    const c = client(threadId, transport);
    try {
      await c.load();
      await c.send('garbled and ghost');
      const s = c.getSnapshot();
      assert.equal(s.phase, 'completed', JSON.stringify(s.error));
      assert.equal(s.suspension, null);
      const tools = s.messages.at(-1).tools;
      assert.deepEqual(tools.map((t) => [t.name, t.status, t.approval]), [['send_email', 'error', null], ['ghost_tool', 'error', null]]);
      // The input that did not parse, as the `tool-input-error` carried it (pydantic-ai puts its
      // text under `INVALID_JSON`) and as the AI SDK's client keeps it.
      assert.deepEqual(tools[0].inputs, { INVALID_JSON: '{"to": 5' });
      assert.match(String(tools[1].result), /Unknown tool name: 'ghost_tool'/);
    } finally {
      c.free();
    }
  });

  test(`[${transport}] an approved tool that raises ends the run with an error: the call shows approved and failed`, async () => {
    const threadId = newThread(`raises_${transport}`);
    const c = client(threadId, transport);
    try {
      await c.load();
      await c.send('email bounce@example.com «Hello?»');
      const [card] = c.getSnapshot().suspension.pending;
      c.approve(card.callId);
      await assert.rejects(c.submit(), (e) => e.code === 'stream_error' && /mailbox bounce@example\.com does not exist/.test(e.message));
      const s = c.getSnapshot();
      assert.equal(s.phase, 'error');
      assert.equal(s.error.code, 'stream_error');
      assert.deepEqual([tool(s, card.callId).approval, tool(s, card.callId).status], ['approved', 'error']);
      assert.equal(s.canSend, true);
    } finally {
      c.free();
    }
  });

  test(`[${transport}] the model fails mid-reply: the error shows, the text so far is kept, the next message goes`, async () => {
    const threadId = newThread(`crash_${transport}`);
    const c = client(threadId, transport);
    try {
      await c.load();
      await assert.rejects(c.send('crash'), (e) => e.code === 'stream_error' && /provider overloaded/.test(e.message));
      let s = c.getSnapshot();
      assert.equal(s.phase, 'error');
      if (transport === 'stream') assert.equal(s.messages.at(-1).text, 'Let me');
      await c.send('email x@example.com «after»');
      s = c.getSnapshot();
      assert.equal(s.phase, 'awaiting_approval', JSON.stringify(s.error));
    } finally {
      c.free();
    }
  });
}
