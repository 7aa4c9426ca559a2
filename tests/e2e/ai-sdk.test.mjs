// The Sidenet client against a server built on the AI SDK itself (tests/e2e-support/ai-sdk-endpoint.mjs:
// the `ai` package's streamText with its tool approvals, its UI message stream and SSE framing, and
// its persisted UI messages as the history), in Node: the chunks toolgate reads here were written by
// the installed `ai`, not by hand, so a change in what the SDK streams or persists shows up here.
// Every case runs on both majors with tool approvals: 7 (`ai`) and 6 (`ai-6`, the last `ai@6`).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startAiSdkEndpoint, AGENT_VERSION, SDKS } from '../e2e-support/ai-sdk-endpoint.mjs';
import { cardIds, lastText, loadPackage, reloaded, shown, sidenetClient, tool } from '../e2e-support/sidenet-client.mjs';

let tg;
/** The endpoint of each SDK major, and the one the running suite's tests use. */
const eps = {};
let ep;
let n = 0;

before(async () => {
  tg = await loadPackage();
  for (const sdk of Object.keys(SDKS)) eps[sdk] = await startAiSdkEndpoint({ sdk: Number(sdk) });
});
after(async () => {
  for (const e of Object.values(eps)) await e.close();
});

const newThread = (label) => `ai_sdk_${label}_${++n}`;
const client = (threadId, transport = 'stream') => sidenetClient(tg, ep.url, threadId, transport);
/** The tools the SDK executed for a thread's calls. */
const effectsOf = (callIds) => ep.effects.filter((e) => callIds.includes(e.callId));
/**
 * A new client loading the thread (the history as the SDK persisted it) shows what `snapshot`
 * shows: the same cards and messages.
 */
async function sameAfterReload(threadId, snapshot) {
  const loaded = await reloaded(tg, ep.url, threadId);
  assert.deepEqual(cardIds(loaded), cardIds(snapshot));
  assert.deepEqual(shown(loaded), shown(snapshot));
}
/** The POSTs a thread's client made: the route and, for a decision, what it said. */
const posts = (threadId) =>
  ep.requests
    .filter((r) => r.method === 'POST' && r.threadId === threadId)
    .map((r) => [r.path, r.body.approval ? `${r.body.approval.toolCallId}=${r.body.approval.approved}` : r.body.messages.at(-1).parts[0].text]);
const POST_ROUTE = { stream: '/v1/chat', collect: '/v1/agents/agent_1/run' };

// Every case on each SDK major, each in its own suite (its endpoint set before its tests run).
for (const sdk of Object.keys(SDKS).sort().reverse()) {
  describe(`AI SDK ${sdk}`, () => {
    before(() => {
      ep = eps[sdk];
    });
    // Every case twice: replies streamed (the chat route), and collected (`transport: 'collect'`).
    for (const transport of ['stream', 'collect']) {
      test(`[${transport}] one card, approved: the SDK runs the tool with the input the card showed, and the answer comes`, async () => {
        const threadId = newThread(`approve_${transport}`);
        const body = 'Hi "Maya", café ☕ \\ done\nBye';
        const c = client(threadId, transport);
        try {
          await c.load();
          await c.send(`please email maya@example.com «${body}» and read /etc/motd`);
          let s = c.getSnapshot();
          assert.equal(s.phase, 'awaiting_approval', JSON.stringify(s.error));
          const { run } = ep.threads.get(threadId);
          assert.equal(s.suspension.runId, run.runId);
          assert.equal(s.suspension.agentVersionId, AGENT_VERSION);
          assert.equal(s.suspension.pending.length, 1);
          const [card] = s.suspension.pending;
          assert.equal(card.name, 'send_email');
          assert.deepEqual(card.inputs, { to: 'maya@example.com', body });
          assert.equal(card.approvalReason, ep.emailReason);
          // The ungated call of the same step ran at once and shows its result.
          const read = s.messages.at(-1).tools.find((t) => t.name === 'read_file');
          assert.equal(read.status, 'done');
          assert.equal(read.result, 'contents of /etc/motd');
          assert.deepEqual(effectsOf([card.callId]), []);

          c.approve(card.callId);
          await c.submit();
          s = c.getSnapshot();
          assert.equal(s.phase, 'completed', JSON.stringify(s.error));
          assert.equal(s.finishReason, 'stop');
          assert.equal(s.suspension, null);
          assert.deepEqual(effectsOf([card.callId]), [{ callId: card.callId, name: 'send_email', input: { to: 'maya@example.com', body } }]);
          assert.deepEqual(tool(s, card.callId), { ...tool(s, card.callId), approval: 'approved', status: 'done', result: { sent: true, to: 'maya@example.com' } });
          assert.match(lastText(s), /send_email: \{"sent":true,"to":"maya@example.com"\}/);
          assert.equal(ep.threads.get(threadId).run, null);
          assert.deepEqual(posts(threadId), [
            [POST_ROUTE[transport], `please email maya@example.com «${body}» and read /etc/motd`],
            [POST_ROUTE[transport], `${card.callId}=true`],
          ]);
          // The history as the SDK persisted it reads as what the live client shows.
          await sameAfterReload(threadId, s);
        } finally {
          c.free();
        }
      });

      test(`[${transport}] one card, rejected: the SDK streams it denied, the model is told, and nothing runs`, async () => {
        const threadId = newThread(`reject_${transport}`);
        const c = client(threadId, transport);
        try {
          await c.load();
          await c.send('email boss@example.com «I resign»');
          const [card] = c.getSnapshot().suspension.pending;
          c.reject(card.callId, 'Not today');
          await c.submit();
          const s = c.getSnapshot();
          assert.equal(s.phase, 'completed', JSON.stringify(s.error));
          assert.deepEqual(effectsOf([card.callId]), []);
          assert.equal(tool(s, card.callId).approval, 'rejected');
          assert.equal(tool(s, card.callId).status, 'denied');
          // The model's prompt carried the call as denied (Sidenet sends no reason with a decline).
          const results = ep.prompts.at(-1).at(-1).content;
          assert.deepEqual(
            results.map((r) => [r.toolCallId, r.output.type]),
            [[card.callId, 'execution-denied']],
          );
          assert.equal(lastText(s), 'send_email: not approved');
          await sameAfterReload(threadId, s);
        } finally {
          c.free();
        }
      });

      test(`[${transport}] two cards in one step, answered one at a time: the first decision waits, the second resumes the run`, async () => {
        const threadId = newThread(`two_${transport}`);
        const c = client(threadId, transport);
        try {
          await c.load();
          await c.send('email a@example.com «to A» and email b@example.com «to B»');
          let s = c.getSnapshot();
          assert.deepEqual(s.suspension.pending.map((p) => [p.name, p.inputs.to]), [['send_email', 'a@example.com'], ['send_email', 'b@example.com']]);
          const [a, b] = s.suspension.pending.map((p) => p.callId);
          c.approve(a);
          await c.submit();
          s = c.getSnapshot();
          // The server recorded the answer and announced the call still waiting: nothing ran yet.
          assert.equal(s.phase, 'awaiting_approval', JSON.stringify(s.error));
          assert.deepEqual(s.suspension.pending.map((p) => p.callId), [b]);
          assert.deepEqual(effectsOf([a, b]), []);
          // The first call shows as approved, not run yet, as the SDK's history has it.
          assert.deepEqual([tool(s, a).status, tool(s, a).approval], ['approved', 'approved']);
          await sameAfterReload(threadId, s);
          c.reject(b);
          await c.submit();
          s = c.getSnapshot();
          assert.equal(s.phase, 'completed', JSON.stringify(s.error));
          assert.deepEqual(effectsOf([a, b]).map((e) => e.input.to), ['a@example.com']);
          assert.deepEqual([tool(s, a).status, tool(s, b).status], ['done', 'denied']);
          // One continuation per decision, each sent once.
          assert.deepEqual(posts(threadId).slice(1), [
            [POST_ROUTE[transport], `${a}=true`],
            [POST_ROUTE[transport], `${b}=false`],
          ]);
          // The model was told both outcomes (in the SDK's order of the tool results).
          assert.deepEqual(lastText(s).split('; ').sort(), ['send_email: not approved', 'send_email: {"sent":true,"to":"a@example.com"}']);
          await sameAfterReload(threadId, s);
        } finally {
          c.free();
        }
      });

      test(`[${transport}] a reload mid-pause: the SDK-persisted history and the replay show the same cards, which can be answered`, async () => {
        const threadId = newThread(`reload_${transport}`);
        const first = client(threadId, transport);
        let card;
        let paused;
        try {
          await first.load();
          await first.send('email ops@example.com «Deploy now» and read /srv/VERSION');
          card = first.getSnapshot().suspension.pending[0];
          paused = first.getSnapshot();
        } finally {
          first.free(); // the tab closed with the card unanswered
        }
        const c = client(threadId, transport);
        try {
          await c.load();
          let s = c.getSnapshot();
          assert.equal(s.phase, 'awaiting_approval', JSON.stringify(s.error));
          // The paused thread (its history, then the replay of the stream that paused) reads as the
          // tab that streamed it showed it.
          assert.deepEqual(
            ep.requests.filter((r) => r.method === 'GET' && r.threadId === threadId).map((r) => r.path).slice(-2),
            [`/v1/threads/${threadId}`, '/v1/chat/stream'],
          );
          assert.deepEqual(shown(s), shown(paused));
          assert.equal(s.suspension.runId, ep.threads.get(threadId).run.runId);
          assert.deepEqual(
            s.suspension.pending.map((p) => [p.callId, p.name, p.inputs, p.approvalReason]),
            [[card.callId, card.name, card.inputs, ep.emailReason]],
          );
          c.approve(card.callId);
          await c.submit();
          s = c.getSnapshot();
          assert.equal(s.phase, 'completed', JSON.stringify(s.error));
          assert.deepEqual(effectsOf([card.callId]).map((e) => e.input), [{ to: 'ops@example.com', body: 'Deploy now' }]);
          await sameAfterReload(threadId, s);
        } finally {
          c.free();
        }
      });

      test(`[${transport}] a call the server's own policy lets through (7: an automatic approval; 6: no gate) is no card`, async () => {
        const threadId = newThread(`auto_${transport}`);
        const c = client(threadId, transport);
        try {
          await c.load();
          await c.send('delete /tmp/old.log');
          const s = c.getSnapshot();
          assert.equal(s.phase, 'completed', JSON.stringify(s.error));
          assert.equal(s.suspension, null);
          const t = s.messages.at(-1).tools.find((x) => x.name === 'delete_file');
          assert.equal(t.status, 'done');
          assert.deepEqual(effectsOf([t.callId]).map((e) => e.input), [{ path: '/tmp/old.log' }]);
          assert.equal(lastText(s), 'delete_file: {"deleted":"/tmp/old.log"}');
          await sameAfterReload(threadId, s);
        } finally {
          c.free();
        }
      });

      test(`[${transport}] rejectAllAndSend: the waiting call is declined through the SDK, then the new message goes`, async () => {
        const threadId = newThread(`reject_all_${transport}`);
        const c = client(threadId, transport);
        try {
          await c.load();
          await c.send('email all@example.com «Party!»');
          const [card] = c.getSnapshot().suspension.pending;
          await c.rejectAllAndSend('never mind', 'Not now');
          const s = c.getSnapshot();
          assert.equal(s.phase, 'completed', JSON.stringify(s.error));
          assert.deepEqual(effectsOf([card.callId]), []);
          assert.equal(tool(s, card.callId).status, 'denied');
          assert.deepEqual(s.messages.filter((m) => m.role === 'user').map((m) => m.text), ['email all@example.com «Party!»', 'never mind']);
          assert.equal(lastText(s), 'Nothing to do.');
          await sameAfterReload(threadId, s);
        } finally {
          c.free();
        }
      });

      test(`[${transport}] an approved call that fails on the server shows as failed, and the run goes on to its answer`, async () => {
        const threadId = newThread(`fails_${transport}`);
        const c = client(threadId, transport);
        try {
          await c.load();
          await c.send('email bounce@example.com «Hello?»');
          const [card] = c.getSnapshot().suspension.pending;
          c.approve(card.callId);
          await c.submit();
          const s = c.getSnapshot();
          assert.equal(s.phase, 'completed', JSON.stringify(s.error));
          assert.equal(s.error, null);
          assert.equal(tool(s, card.callId).approval, 'approved');
          assert.equal(tool(s, card.callId).status, 'error');
          assert.deepEqual(effectsOf([card.callId]).map((e) => e.input.to), ['bounce@example.com']);
          assert.match(String(tool(s, card.callId).result), /mailbox bounce@example\.com does not exist/);
          assert.match(lastText(s), /^send_email: .*mailbox bounce@example\.com does not exist$/);
          await sameAfterReload(threadId, s);
        } finally {
          c.free();
        }
      });

      test(`[${transport}] a continuation that pauses again on a later step: the same run, a new card, answered in turn`, async () => {
        const threadId = newThread(`steps_${transport}`);
        const c = client(threadId, transport);
        try {
          await c.load();
          await c.send('email a@example.com «first» then email b@example.com «second»');
          let s = c.getSnapshot();
          const runId = s.suspension.runId;
          const [a] = s.suspension.pending;
          assert.equal(a.inputs.to, 'a@example.com');
          c.approve(a.callId);
          await c.submit();
          s = c.getSnapshot();
          assert.equal(s.phase, 'awaiting_approval', JSON.stringify(s.error));
          assert.equal(s.suspension.runId, runId);
          const [b] = s.suspension.pending;
          assert.equal(b.inputs.to, 'b@example.com');
          assert.notEqual(b.callId, a.callId);
          assert.equal(tool(s, a.callId).status, 'done');
          assert.deepEqual(effectsOf([a.callId, b.callId]).map((e) => e.input.to), ['a@example.com']);
          c.approve(b.callId);
          await c.submit();
          s = c.getSnapshot();
          assert.equal(s.phase, 'completed', JSON.stringify(s.error));
          assert.deepEqual(effectsOf([a.callId, b.callId]).map((e) => e.input.to), ['a@example.com', 'b@example.com']);
          assert.equal(lastText(s), 'send_email: {"sent":true,"to":"b@example.com"}');
          await sameAfterReload(threadId, s);
        } finally {
          c.free();
        }
      });

      test(`[${transport}] a dynamic tool (dynamic-tool parts, as an MCP server gives) is a card like any other, live and after a reload`, async () => {
        const threadId = newThread(`dynamic_${transport}`);
        const first = client(threadId, transport);
        let card;
        try {
          await first.load();
          await first.send('run «rm -rf /tmp/cache»');
          const s = first.getSnapshot();
          assert.equal(s.phase, 'awaiting_approval', JSON.stringify(s.error));
          [card] = s.suspension.pending;
          assert.deepEqual([card.name, card.inputs, card.approvalReason], ['run_command', { command: 'rm -rf /tmp/cache' }, null]);
        } finally {
          first.free();
        }
        const c = client(threadId, transport);
        try {
          await c.load();
          let s = c.getSnapshot();
          assert.deepEqual(
            s.suspension.pending.map((p) => [p.callId, p.name, p.inputs]),
            [[card.callId, 'run_command', { command: 'rm -rf /tmp/cache' }]],
          );
          c.approve(card.callId);
          await c.submit();
          s = c.getSnapshot();
          assert.equal(s.phase, 'completed', JSON.stringify(s.error));
          assert.deepEqual(tool(s, card.callId).result, { exitCode: 0, stdout: 'ran rm -rf /tmp/cache' });
          assert.deepEqual(effectsOf([card.callId]).map((e) => e.input), [{ command: 'rm -rf /tmp/cache' }]);
          await sameAfterReload(threadId, s);
        } finally {
          c.free();
        }
      });

      test(`[${transport}] a call whose input does not parse and a call of an unknown tool fail, with no card, live and after a reload`, async () => {
        const threadId = newThread(`invalid_${transport}`);
        const c = client(threadId, transport);
        try {
          await c.load();
          await c.send('send something garbled and call a ghost');
          const s = c.getSnapshot();
          assert.equal(s.phase, 'completed', JSON.stringify(s.error));
          assert.equal(s.suspension, null);
          const tools = s.messages.at(-1).tools;
          assert.deepEqual(tools.map((t) => [t.name, t.status, t.approval]), [['send_email', 'error', null], ['ghost_tool', 'error', null]]);
          assert.match(String(tools[0].result), /Invalid input for tool send_email/);
          assert.match(String(tools[1].result), /unavailable tool 'ghost_tool'/);
          assert.deepEqual(ep.effects.filter((e) => tools.some((t) => t.callId === e.callId)), []);
          await sameAfterReload(threadId, s);
        } finally {
          c.free();
        }
      });

      test(`[${transport}] the model fails mid-reply: the error shows, the text so far is kept, the next message goes`, async () => {
        const threadId = newThread(`crash_${transport}`);
        const c = client(threadId, transport);
        try {
          await c.load();
          // The SDK streams an `error` chunk (its text masked: "An error occurred.") and finishes.
          await assert.rejects(c.send('crash please'), (e) => tg.isToolgateError(e) && e.code === 'stream_error');
          let s = c.getSnapshot();
          assert.equal(s.phase, 'error', JSON.stringify(s));
          assert.ok(s.error?.message, JSON.stringify(s.error));
          assert.equal(s.messages.at(-1).text, 'Let me');
          assert.equal(s.canSend, true);
          await sameAfterReload(threadId, s);
          await c.send('hello');
          s = c.getSnapshot();
          assert.equal(s.phase, 'completed', JSON.stringify(s.error));
          assert.equal(lastText(s), 'Nothing to do.');
        } finally {
          c.free();
        }
      });
    }
  });
}
