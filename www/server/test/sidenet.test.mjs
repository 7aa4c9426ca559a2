import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  start,
  getJson,
  postJson,
  sseChat,
  userMsg,
  approvals,
  textOf,
  readEffects,
  readRecord,
  rawRequest,
  parseSse,
} from '../testkit.mjs';

const DECLINED = 'Tool call was not approved by the user';

describe('sidenet dialect', () => {
  let s;
  let n = 0;
  const tid = () => `st_${++n}`;
  const say = (threadId, text, opts) => sseChat(s.url, { threadId, messages: [userMsg(text)] }, opts);
  const answer = (threadId, a, extra = {}, opts) =>
    sseChat(s.url, { messages: [], threadId, agentVersionId: 'agv_ref_1', approval: a, ...extra }, opts);
  before(async () => {
    s = await start();
  });
  after(() => s.close());

  test('plain reply: SSE headers, keep-alive, start, several text deltas, finish stop, [DONE]', async () => {
    const r = await say(tid(), 'good morning');
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'text/event-stream');
    assert.equal(r.headers.get('cache-control'), 'no-cache');
    assert.equal(r.headers.get('x-vercel-ai-ui-message-stream'), 'v1');
    assert.ok(r.text.startsWith(': keep-alive\n\n'));
    assert.ok(r.comments.includes('keep-alive'));
    assert.equal(r.chunks[0].type, 'start');
    assert.ok(r.chunks.filter((c) => c.type === 'text-delta').length >= 3);
    assert.match(textOf(r.chunks), /good morning/);
    const types = r.chunks.map((c) => c.type);
    assert.ok(types.indexOf('text-start') < types.indexOf('text-delta'));
    assert.ok(types.indexOf('text-end') > types.lastIndexOf('text-delta'));
    assert.deepEqual(r.chunks.at(-1), { type: 'finish', finishReason: 'stop' });
    assert.equal(r.done, true);
    assert.ok(r.text.endsWith('data: [DONE]\n\n'));
  });

  test('an approved call that fails when it runs (delete under /locked/): tool-output-error, recorded, and the run goes on', async () => {
    const id = tid();
    const r = await say(id, 'delete /locked/db.sqlite');
    const [ap] = approvals(r.chunks);
    const c = await answer(id, { runId: ap.runId, toolCallId: ap.toolCallId, approved: true });
    const err = c.chunks.find((x) => x.type === 'tool-output-error');
    assert.deepEqual(err, { type: 'tool-output-error', toolCallId: ap.toolCallId, errorText: 'EBUSY: /locked/db.sqlite is locked by another process' });
    assert.equal(c.chunks.some((x) => x.type === 'tool-output-available'), false);
    assert.equal(textOf(c.chunks), 'delete_file /locked/db.sqlite: failed (EBUSY: /locked/db.sqlite is locked by another process).');
    assert.equal(c.chunks.at(-1).finishReason, 'stop');
    const h = await getJson(`${s.url}/v1/threads/${id}`);
    const part = h.body.messages[1].parts.find((p) => p.toolCallId === ap.toolCallId);
    assert.equal(part.state, 'output-error');
    assert.equal(part.errorText, err.errorText);
    assert.deepEqual(part.approval, { id: ap.toolCallId, approved: true });
    // It was run (and failed): one effect.
    assert.deepEqual(readEffects(s.dataDir).filter((e) => e.threadId === id).map((e) => e.name), ['delete_file']);
  });

  test('ungated calls run: tool-input-start, tool-input-available, tool-output-available, then text and finish', async () => {
    const id = tid();
    const r = await say(id, 'read /etc/hosts');
    const t = r.chunks.filter((c) => c.type.startsWith('tool-'));
    assert.deepEqual(t.map((c) => c.type), ['tool-input-start', 'tool-input-available', 'tool-output-available']);
    assert.equal(t[0].toolName, 'read_file');
    assert.deepEqual(t[1].input, { path: '/etc/hosts' });
    assert.equal(t[2].toolCallId, t[0].toolCallId);
    assert.match(t[2].output, /Contents of \/etc\/hosts/);
    assert.equal(textOf(r.chunks), 'read_file /etc/hosts: done.');
    assert.equal(r.chunks.at(-1).finishReason, 'stop');
  });

  test('two gated calls pause: one approval chunk each, stream ends with no finish; approve one, decline the other', async () => {
    const id = tid();
    const r = await say(id, 'delete /tmp/old.log and email team@example.com about Logs cleanup and read /a');
    assert.equal(r.status, 200);
    const ap = approvals(r.chunks);
    assert.equal(ap.length, 2);
    assert.ok(!r.chunks.some((c) => c.type === 'finish'));
    assert.ok(!r.chunks.some((c) => 'finishReason' in c));
    assert.equal(r.chunks.at(-1).type, 'data-tool-call-approval');
    const [del, mail] = ap;
    assert.equal(del.toolName, 'delete_file');
    assert.deepEqual(del.args, { path: '/tmp/old.log' });
    assert.match(del.reason, /\/tmp\/old\.log/);
    assert.equal(mail.toolName, 'send_email');
    assert.match(mail.reason, /team@example\.com/);
    assert.equal(del.runId, mail.runId);
    assert.match(del.runId, /^run_/);
    assert.equal(del.agentVersionId, 'agv_ref_1');
    assert.equal(del.threadId, id);
    const chunk = r.chunks.find((c) => c.type === 'data-tool-call-approval');
    assert.equal(chunk.id, del.toolCallId);
    // the ungated read in the same step ran already
    const read = r.chunks.find((c) => c.type === 'tool-output-available');
    assert.match(read.output, /Contents of \/a/);
    // the gated calls did not
    assert.deepEqual(readEffects(s.dataDir).filter((e) => e.threadId === id).map((e) => e.name), ['read_file']);

    // history while paused
    const h = await getJson(`${s.url}/v1/threads/${id}`);
    assert.equal(h.status, 200);
    assert.equal(h.body.id, id);
    const [u, a] = h.body.messages;
    assert.deepEqual(u.parts, [{ type: 'text', text: 'delete /tmp/old.log and email team@example.com about Logs cleanup and read /a' }]);
    assert.equal(a.role, 'assistant');
    assert.deepEqual(a.parts.map((p) => [p.type, p.state]), [
      ['tool-delete_file', 'approval-requested'],
      ['tool-send_email', 'approval-requested'],
      ['tool-read_file', 'output-available'],
    ]);

    // a new message while paused: 409
    const busy = await say(id, 'hello?');
    assert.equal(busy.status, 409);
    assert.match(busy.body.error, /awaiting approval/);

    // approve the delete: the email stays pending and is re-announced
    const c1 = await answer(id, { runId: del.runId, toolCallId: del.toolCallId, approved: true });
    assert.equal(c1.status, 200);
    const out = c1.chunks.find((c) => c.type === 'tool-output-available');
    assert.equal(out.toolCallId, del.toolCallId);
    assert.equal(out.output, 'Deleted /tmp/old.log');
    assert.deepEqual(approvals(c1.chunks).map((x) => x.toolCallId), [mail.toolCallId]);
    assert.ok(!c1.chunks.some((c) => c.type === 'finish'));

    // answering the same call again: 409
    const again = await answer(id, { runId: del.runId, toolCallId: del.toolCallId, approved: true });
    assert.equal(again.status, 409);
    assert.match(again.body.error, /already answered|not awaiting/);

    // decline the email: the run finishes
    const c2 = await answer(id, { runId: del.runId, toolCallId: mail.toolCallId, approved: false });
    assert.equal(c2.status, 200);
    assert.deepEqual(c2.chunks.find((c) => c.type === 'tool-output-denied'), { type: 'tool-output-denied', toolCallId: mail.toolCallId });
    assert.equal(
      textOf(c2.chunks),
      'delete_file /tmp/old.log: done. send_email to team@example.com: not approved by the user. read_file /a: done.',
    );
    assert.deepEqual(c2.chunks.at(-1), { type: 'finish', finishReason: 'stop' });
    assert.equal(c2.done, true);

    // the history records the call as denied; the model saw the declined result
    const h2 = await getJson(`${s.url}/v1/threads/${id}`);
    const parts = h2.body.messages[1].parts;
    const mp = parts.find((p) => p.toolCallId === mail.toolCallId);
    assert.equal(mp.state, 'output-denied');
    assert.equal(mp.approval.approved, false);
    assert.equal(parts.find((p) => p.toolCallId === del.toolCallId).state, 'output-available');
    assert.equal(parts.at(-1).type, 'text');
    const rec = readRecord(s.dataDir, 'sidenet', id);
    assert.equal(rec.toolResults.find((x) => x.toolCallId === mail.toolCallId).result, DECLINED);
    assert.equal(rec.run, null);
    assert.deepEqual(readEffects(s.dataDir).filter((e) => e.threadId === id).map((e) => e.name).sort(), ['delete_file', 'read_file']);

    // the thread accepts new messages again
    const next = await say(id, 'thanks');
    assert.equal(next.status, 200);
  });

  test('toolCallId defaults to the most recent pending call', async () => {
    const id = tid();
    const r = await say(id, 'delete /one; delete /two');
    const [one, two] = approvals(r.chunks);
    const c = await answer(id, { runId: one.runId, approved: false });
    assert.equal(c.chunks.find((x) => x.type === 'tool-output-denied').toolCallId, two.toolCallId);
    assert.deepEqual(approvals(c.chunks).map((x) => x.toolCallId), [one.toolCallId]);
  });

  test('an empty or non-string toolCallId is 400 and decides nothing (only an absent one defaults)', async () => {
    const id = tid();
    const r = await say(id, 'delete /keep-one; delete /keep-two');
    const [one, two] = approvals(r.chunks);
    for (const toolCallId of ['', null, 0, false, 7, [], {}, [two.toolCallId]]) {
      const a = { runId: one.runId, toolCallId, approved: true };
      const c = await answer(id, a);
      assert.equal(c.status, 400, JSON.stringify(toolCallId));
      assert.match(c.body.error, /toolCallId/, JSON.stringify(toolCallId));
      const run = await postJson(`${s.url}/v1/agents/${id}/run`, { messages: [], threadId: id, approval: a });
      assert.equal(run.status, 400, `agents run: ${JSON.stringify(toolCallId)}`);
    }
    assert.deepEqual(readEffects(s.dataDir).filter((e) => e.threadId === id), []);
    assert.deepEqual(readRecord(s.dataDir, 'sidenet', id).run.pending.map((p) => p.toolCallId), [one.toolCallId, two.toolCallId]);
    // Both calls are still there to be answered by name.
    const c1 = await answer(id, { runId: one.runId, toolCallId: one.toolCallId, approved: false });
    assert.equal(c1.chunks.find((x) => x.type === 'tool-output-denied').toolCallId, one.toolCallId);
    const c2 = await answer(id, { runId: one.runId, toolCallId: two.toolCallId, approved: false });
    assert.equal(c2.chunks.find((x) => x.type === 'tool-output-denied').toolCallId, two.toolCallId);
    assert.equal(c2.chunks.at(-1).finishReason, 'stop');
  });

  test('deploy: same run pauses twice, approved call runs with the shown args', async () => {
    const id = tid();
    const r = await say(id, 'deploy billing');
    const outs = r.chunks.filter((c) => c.type === 'tool-output-available');
    assert.equal(outs.length, 1);
    assert.match(outs[0].output, /tests passed for billing/);
    const [dep] = approvals(r.chunks);
    assert.equal(dep.toolName, 'deploy');
    assert.deepEqual(dep.args, { service: 'billing', environment: 'production' });
    assert.match(dep.reason, /billing/);
    const c = await answer(id, { runId: dep.runId, toolCallId: dep.toolCallId, approved: true });
    assert.equal(c.chunks.find((x) => x.type === 'tool-output-available').output, 'Deployed billing to production');
    assert.equal(textOf(c.chunks), 'run_tests billing: done. deploy billing: done.');
    const eff = readEffects(s.dataDir).filter((e) => e.threadId === id);
    assert.deepEqual(eff.find((e) => e.name === 'deploy').inputs, dep.args);

    // gated step 1 then gated step 2, one runId throughout
    const id2 = tid();
    const r2 = await say(id2, 'deploy api and email ops@example.com about release');
    const [mail] = approvals(r2.chunks);
    assert.equal(mail.toolName, 'send_email');
    const c2 = await answer(id2, { runId: mail.runId, toolCallId: mail.toolCallId, approved: false });
    const [dep2] = approvals(c2.chunks);
    assert.equal(dep2.toolName, 'deploy');
    assert.equal(dep2.runId, mail.runId);
    assert.ok(!c2.chunks.some((x) => x.type === 'finish'));
    const c3 = await answer(id2, { runId: mail.runId, toolCallId: dep2.toolCallId, approved: true });
    assert.equal(c3.chunks.at(-1).finishReason, 'stop');
  });

  test('continuation errors: wrong runId, unknown toolCallId, other agentVersionId, nothing paused → 409', async () => {
    const id = tid();
    const r = await say(id, 'delete /z');
    const [p] = approvals(r.chunks);
    const wrongRun = await answer(id, { runId: 'run_nope', toolCallId: p.toolCallId, approved: true });
    assert.equal(wrongRun.status, 409);
    assert.match(wrongRun.body.error, /run_nope/);
    const unknownCall = await answer(id, { runId: p.runId, toolCallId: 'call_nope', approved: true });
    assert.equal(unknownCall.status, 409);
    assert.match(unknownCall.body.error, /call_nope/);
    const wrongVersion = await answer(id, { runId: p.runId, toolCallId: p.toolCallId, approved: true }, { agentVersionId: 'agv_other' });
    assert.equal(wrongVersion.status, 409);
    assert.match(wrongVersion.body.error, /agentVersionId/);
    // nothing was consumed by the failed attempts
    const ok = await answer(id, { runId: p.runId, toolCallId: p.toolCallId, approved: true });
    assert.equal(ok.status, 200);
    const none = await answer(tid(), { runId: p.runId, approved: true });
    assert.equal(none.status, 409);
  });

  test('request validation: 400s', async () => {
    const url = `${s.url}/v1/chat`;
    const cases = [
      ['{"threadId":', /JSON/],
      [{ messages: [userMsg('hi')] }, /threadId/],
      [{ threadId: '../etc', messages: [userMsg('hi')] }, /threadId/],
      [{ threadId: 'a'.repeat(129), messages: [userMsg('hi')] }, /threadId/],
      [{ threadId: 't', messages: 'hi' }, /messages/],
      [{ threadId: 't' }, /messages/],
      [{ threadId: 't', messages: [] }, /user message/],
      [{ threadId: 't', messages: [], approval: { toolCallId: 'x', approved: true } }, /runId/],
      [{ threadId: 't', messages: [], approval: { runId: 'run_1', approved: 'yes' } }, /approved/],
      [{ threadId: 't', messages: [], approval: { runId: 'run_1' } }, /approved/],
      [{ threadId: 't', messages: [], approval: 'yes' }, /approval/],
      [[], /object/],
    ];
    for (const [body, re] of cases) {
      const r = await postJson(url, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.match(r.body.error, re, JSON.stringify(body));
    }
    const q = await postJson(`${s.url}/v1/chat?approvalForm=weird`, { threadId: 't', messages: [userMsg('hi')] });
    assert.equal(q.status, 400);
    // The replay route refuses it the same way (it answered 204, as if nothing were paused).
    const g = await getJson(`${s.url}/v1/chat/stream?threadId=t&approvalForm=weird`);
    assert.equal(g.status, 400);
    assert.match(g.body.error, /approvalForm/);
  });

  test('messages may carry content strings, and only the last user message counts', async () => {
    const id = tid();
    const r = await sseChat(s.url, {
      threadId: id,
      messages: [
        { role: 'user', content: 'delete /old' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'read /new' },
      ],
    });
    assert.equal(textOf(r.chunks), 'read_file /new: done.');
  });

  test('approvalForm=ai-sdk: data-run first, tool-approval-request {approvalId of its own}; same continuation', async () => {
    const id = tid();
    const r = await say(id, 'email x@example.com about y', { query: '?approvalForm=ai-sdk' });
    assert.equal(r.chunks[0].type, 'start');
    const run = r.chunks[1];
    assert.equal(run.type, 'data-run');
    assert.equal(run.data.threadId, id);
    assert.equal(run.data.agentVersionId, 'agv_ref_1');
    assert.ok(!r.chunks.some((c) => c.type === 'data-tool-call-approval'));
    const req = r.chunks.find((c) => c.type === 'tool-approval-request');
    assert.ok(req);
    // As the AI SDK names approvals: an id of its own, not the call's; the history's part records it.
    assert.match(req.approvalId, /^apr_/);
    assert.notEqual(req.approvalId, req.toolCallId);
    const input = r.chunks.find((c) => c.type === 'tool-input-available' && c.toolCallId === req.toolCallId);
    assert.equal(input.toolName, 'send_email');
    const partOf = async () => (await getJson(`${s.url}/v1/threads/${id}`)).body.messages
      .flatMap((m) => m.parts).find((p) => p.toolCallId === req.toolCallId);
    assert.deepEqual((await partOf()).approval, { id: req.approvalId });
    // A replay names the same approval.
    const rp = await fetch(`${s.url}/v1/chat/stream?threadId=${id}&approvalForm=ai-sdk`);
    assert.ok((await rp.text()).includes(`"approvalId":"${req.approvalId}"`));
    const c = await answer(id, { runId: run.data.runId, toolCallId: req.toolCallId, approved: true }, {}, { query: '?approvalForm=ai-sdk' });
    assert.equal(c.status, 200);
    assert.equal(textOf(c.chunks), 'send_email to x@example.com: done.');
    assert.deepEqual((await partOf()).approval, { id: req.approvalId, approved: true });
  });

  test('GET /v1/chat/stream replays the pending approval; 204 when nothing is paused', async () => {
    const id = tid();
    const none = await rawRequest(s.url, 'GET', `/v1/chat/stream?threadId=${id}`);
    assert.equal(none.status, 204);
    const r = await say(id, 'delete /r');
    const [p] = approvals(r.chunks);
    for (let i = 0; i < 2; i++) {
      const rp = await fetch(`${s.url}/v1/chat/stream?threadId=${id}`);
      assert.equal(rp.status, 200);
      assert.equal(rp.headers.get('content-type'), 'text/event-stream');
      const { chunks, done } = parseSse(await rp.text());
      assert.deepEqual(approvals(chunks), [p]);
      assert.ok(chunks.some((c) => c.type === 'tool-input-available' && c.toolCallId === p.toolCallId));
      assert.ok(!chunks.some((c) => c.type === 'finish'));
      assert.equal(done, true);
    }
    const bad = await rawRequest(s.url, 'GET', '/v1/chat/stream?threadId=..%2Fx');
    assert.equal(bad.status, 400);
    const missing = await rawRequest(s.url, 'GET', '/v1/chat/stream');
    assert.equal(missing.status, 400);
  });

  test('POST /v1/agents/{id}/run: collected chunks, no finishReason while paused, same continuation', async () => {
    const id = tid();
    const r = await postJson(`${s.url}/v1/agents/agent_1/run`, { threadId: id, messages: [userMsg('delete /q and read /w')] });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.ok(!('finishReason' in r.body), 'no finishReason key at all while paused');
    assert.ok(Array.isArray(r.body.chunks));
    const [p] = approvals(r.body.chunks);
    assert.equal(p.toolName, 'delete_file');
    assert.ok(!r.body.chunks.some((c) => c.type === 'finish'));
    // The run is agent_1's: another agent's route has no such run.
    const other = await postJson(`${s.url}/v1/agents/agent_2/run`, {
      threadId: id,
      messages: [],
      agentVersionId: p.agentVersionId,
      approval: { runId: p.runId, toolCallId: p.toolCallId, approved: true },
    });
    assert.equal(other.status, 409);
    assert.equal(other.body.code, 'run_mismatch');
    const c = await postJson(`${s.url}/v1/agents/agent_1/run`, {
      threadId: id,
      messages: [],
      agentVersionId: p.agentVersionId,
      approval: { runId: p.runId, toolCallId: p.toolCallId, approved: false },
    });
    assert.equal(c.status, 200);
    assert.equal(c.body.finishReason, 'stop');
    assert.equal(textOf(c.body.chunks), 'delete_file /q: not approved by the user. read_file /w: done.');
    const plain = await postJson(`${s.url}/v1/agents/agent_1/run`, { threadId: tid(), messages: [userMsg('hi')] });
    assert.equal(plain.body.finishReason, 'stop');
    const wrong = await postJson(`${s.url}/v1/agents/agent_1/run`, {
      threadId: id,
      messages: [],
      approval: { runId: p.runId, toolCallId: p.toolCallId, approved: true },
    });
    assert.equal(wrong.status, 409);
    const badId = await rawRequest(s.url, 'POST', '/v1/agents/a.b/run', { body: '{}' });
    assert.equal(badId.status, 400);
  });

  test('POST /v1/copilots/{id}/run: the same collected run and continuation as an agent\'s', async () => {
    const id = tid();
    const r = await postJson(`${s.url}/v1/copilots/cp_1/run`, { threadId: id, messages: [userMsg('delete /cp')] });
    assert.equal(r.status, 200);
    const [p] = approvals(r.body.chunks);
    assert.equal(p.toolName, 'delete_file');
    const c = await postJson(`${s.url}/v1/copilots/cp_1/run`, {
      threadId: id,
      messages: [],
      agentVersionId: p.agentVersionId,
      approval: { runId: p.runId, toolCallId: p.toolCallId, approved: true },
    });
    assert.equal(c.status, 200);
    assert.equal(textOf(c.body.chunks), 'delete_file /cp: done.');
  });

  test('GET /v1/threads/{id}: unknown thread is empty; bad id 400; unknown routes 404', async () => {
    const r = await getJson(`${s.url}/v1/threads/nobody`);
    assert.deepEqual(r.body, { id: 'nobody', messages: [] });
    assert.equal((await rawRequest(s.url, 'GET', '/v1/threads/a%2F..')).status, 400);
    assert.equal((await getJson(`${s.url}/v1/nothing`)).status, 404);
    assert.equal((await getJson(`${s.url}/v1/chat`)).status, 405);
  });
});

describe('sidenet grace window', () => {
  test('replay inside the window, 204 after it; the run is abandoned, the thread intact', async (t) => {
    const s = await start({ graceMs: 300 });
    t.after(() => s.close());
    const id = 'grace_1';
    const r = await sseChat(s.url, { threadId: id, messages: [userMsg('delete /g')] });
    const [p] = approvals(r.chunks);
    await new Promise((res) => setTimeout(res, 150));
    const inside = await fetch(`${s.url}/v1/chat/stream?threadId=${id}`);
    assert.equal(inside.status, 200);
    assert.deepEqual(approvals(parseSse(await inside.text()).chunks), [p]);
    // the replay restarted the window
    await new Promise((res) => setTimeout(res, 200));
    const stillInside = await fetch(`${s.url}/v1/chat/stream?threadId=${id}`);
    assert.equal(stillInside.status, 200);
    await stillInside.text();
    await new Promise((res) => setTimeout(res, 400));
    const after = await fetch(`${s.url}/v1/chat/stream?threadId=${id}`);
    assert.equal(after.status, 204);
    // the abandoned run cannot be answered
    const late = await sseChat(s.url, { messages: [], threadId: id, agentVersionId: p.agentVersionId, approval: { runId: p.runId, toolCallId: p.toolCallId, approved: true } });
    assert.equal(late.status, 409);
    assert.match(late.body.error, /abandoned/);
    // the thread is intact and takes new messages
    const h = await getJson(`${s.url}/v1/threads/${id}`);
    assert.equal(h.body.messages.length, 2);
    const part = h.body.messages[1].parts[0];
    assert.equal(part.toolCallId, p.toolCallId);
    assert.notEqual(part.state, 'approval-requested');
    const again = await sseChat(s.url, { threadId: id, messages: [userMsg('read /g')] });
    assert.equal(again.status, 200);
    assert.equal(textOf(again.chunks), 'read_file /g: done.');
    assert.equal(readEffects(s.dataDir).filter((e) => e.name === 'delete_file').length, 0);
  });

  test('a new message after the window is accepted without any replay', async (t) => {
    const s = await start({ graceMs: 100 });
    t.after(() => s.close());
    await sseChat(s.url, { threadId: 'g2', messages: [userMsg('delete /h')] });
    const busy = await sseChat(s.url, { threadId: 'g2', messages: [userMsg('hi')] });
    assert.equal(busy.status, 409);
    await new Promise((res) => setTimeout(res, 200));
    const ok = await sseChat(s.url, { threadId: 'g2', messages: [userMsg('hi')] });
    assert.equal(ok.status, 200);
  });
});

describe('sidenet token auth', () => {
  test('every /v1/ route requires Authorization: Bearer <TOKEN>; Neuron routes and preflight do not', async (t) => {
    const s = await start({ token: 's3cret' });
    t.after(() => s.close());
    const auth = { authorization: 'Bearer s3cret' };
    const routes = [
      ['POST', '/v1/chat', JSON.stringify({ threadId: 'a1', messages: [userMsg('hi')] })],
      ['GET', '/v1/chat/stream?threadId=a1'],
      ['POST', '/v1/agents/x/run', JSON.stringify({ threadId: 'a2', messages: [userMsg('hi')] })],
      ['GET', '/v1/threads/a1'],
    ];
    for (const [method, p, body] of routes) {
      for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: 's3cret' }, { authorization: 'Basic s3cret' }]) {
        const r = await rawRequest(s.url, method, p, { headers: { 'content-type': 'application/json', ...headers }, body });
        assert.equal(r.status, 401, `${method} ${p} ${JSON.stringify(headers)}`);
        assert.equal(r.headers['www-authenticate'], 'Bearer');
        assert.match(JSON.parse(r.body).error, /token/);
        assert.equal(r.headers['access-control-allow-origin'], '*');
      }
      const ok = await rawRequest(s.url, method, p, { headers: { 'content-type': 'application/json', ...auth }, body });
      assert.ok(ok.status === 200 || ok.status === 204, `${method} ${p} -> ${ok.status}`);
    }
    const pre = await rawRequest(s.url, 'OPTIONS', '/v1/chat', { headers: { origin: 'http://localhost:9999', 'access-control-request-method': 'POST' } });
    assert.equal(pre.status, 204);
    const neuron = await getJson(`${s.url}/threads/t1`);
    assert.equal(neuron.status, 200);
  });
});
