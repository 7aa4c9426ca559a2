import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, rmSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  start,
  spawnServer,
  tempDir,
  getJson,
  postJson,
  sseChat,
  userMsg,
  approvals,
  textOf,
  readEffects,
  readRecord,
} from '../testkit.mjs';

describe('restart durability mid-pause (SIGKILL, same DATA_DIR)', () => {
  test('neuron: the pause and its partial decisions survive; resumable after restart', async (t) => {
    const dataDir = tempDir();
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    let srv = await spawnServer({ DATA_DIR: dataDir });
    t.after(() => srv.kill());
    const r1 = await postJson(`${srv.url}/threads/dur/chat`, { message: 'delete /tmp/a and email ops@example.com about outage' });
    assert.equal(r1.body.status, 'awaiting_approval');
    const [del, mail] = r1.body.message.tools;
    const r2 = await postJson(`${srv.url}/threads/dur/chat`, { decisions: { [mail.callId]: ['reject', 'Not during the outage'] } });
    assert.equal(r2.body.status, 'awaiting_approval');
    await srv.kill('SIGKILL');

    srv = await spawnServer({ DATA_DIR: dataDir });
    const thread = await getJson(`${srv.url}/threads/dur`);
    assert.deepEqual(thread.body.messages.at(-1), r2.body.message);
    const busy = await postJson(`${srv.url}/threads/dur/chat`, { message: 'hello' });
    assert.equal(busy.status, 409);
    const r3 = await postJson(`${srv.url}/threads/dur/chat`, { decisions: { [del.callId]: 'approve' } });
    assert.equal(r3.body.status, 'completed');
    assert.equal(r3.body.message.content, 'delete_file /tmp/a: done. send_email to ops@example.com: rejected — "Not during the outage".');
    await srv.kill();
    // no temporary files left behind, and the record parses
    assert.deepEqual(readdirSync(path.join(dataDir, 'neuron')), ['dur.json']);
  });

  test('sidenet: the paused run survives; replay and continuation work after restart', async (t) => {
    const dataDir = tempDir();
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    let srv = await spawnServer({ DATA_DIR: dataDir });
    t.after(() => srv.kill());
    const r = await sseChat(srv.url, { threadId: 'dur', messages: [userMsg('deploy web')] });
    const [p] = approvals(r.chunks);
    await srv.kill('SIGKILL');

    srv = await spawnServer({ DATA_DIR: dataDir });
    const rp = await fetch(`${srv.url}/v1/chat/stream?threadId=dur`);
    assert.equal(rp.status, 200);
    const text = await rp.text();
    assert.match(text, new RegExp(p.toolCallId));
    const c = await sseChat(srv.url, {
      messages: [],
      threadId: 'dur',
      agentVersionId: p.agentVersionId,
      approval: { runId: p.runId, toolCallId: p.toolCallId, approved: true },
    });
    assert.equal(c.status, 200);
    assert.equal(textOf(c.chunks), 'run_tests web: done. deploy web: done.');
    assert.deepEqual(readEffects(dataDir).map((e) => e.name), ['run_tests', 'deploy']);
  });

  test('sidenet: after a restart with a different AGENT_VERSION, an unpinned continuation is refused (409) and the pinned one runs', async (t) => {
    const dataDir = tempDir();
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    let srv = await spawnServer({ DATA_DIR: dataDir, AGENT_VERSION: 'agv_v1' });
    t.after(() => srv.kill());
    const r = await sseChat(srv.url, { threadId: 'ver', messages: [userMsg('delete /v')] });
    const [p] = approvals(r.chunks);
    assert.equal(p.agentVersionId, 'agv_v1');
    await srv.kill('SIGKILL');
    srv = await spawnServer({ DATA_DIR: dataDir, AGENT_VERSION: 'agv_v2' });
    // unpinned: routed to the active version, which is not the one that paused
    const unpinned = await sseChat(srv.url, { messages: [], threadId: 'ver', approval: { runId: p.runId, approved: true } });
    assert.equal(unpinned.status, 409);
    // pinned to the version that paused: accepted
    const pinned = await sseChat(srv.url, { messages: [], threadId: 'ver', agentVersionId: 'agv_v1', approval: { runId: p.runId, approved: true } });
    assert.equal(pinned.status, 200);
    assert.equal(textOf(pinned.chunks), 'delete_file /v: done.');
  });
});

describe('racing submissions on one thread', () => {
  test('neuron: two concurrent complete decision POSTs run the tools once', async (t) => {
    const s = await start();
    t.after(() => s.close());
    for (let round = 0; round < 5; round++) {
      const id = `race_${round}`;
      const r = await postJson(`${s.url}/threads/${id}/chat`, { message: 'delete /r1; delete /r2' });
      const decisions = Object.fromEntries(r.body.message.tools.map((x) => [x.callId, 'approve']));
      const results = await Promise.all(
        Array.from({ length: 3 }, () => postJson(`${s.url}/threads/${id}/chat`, { decisions })),
      );
      const statuses = results.map((x) => x.status).sort();
      assert.deepEqual(statuses, [200, 409, 409]);
      for (const x of results) {
        if (x.status === 200) assert.equal(x.body.status, 'completed');
        else assert.equal(x.body.status, 'conflict');
      }
      const effects = readEffects(s.dataDir).filter((e) => e.threadId === id);
      assert.equal(effects.length, 2);
      const rec = readRecord(s.dataDir, 'neuron', id);
      assert.equal(rec.messages.filter((m) => m.type === 'tool_call_result').length, 1);
      assert.equal(rec.messages.length, 4);
    }
  });

  test('neuron: a racing new message and a decision never corrupt the thread', async (t) => {
    const s = await start();
    t.after(() => s.close());
    const r = await postJson(`${s.url}/threads/mix/chat`, { message: 'delete /m' });
    const [tool] = r.body.message.tools;
    const [a, b] = await Promise.all([
      postJson(`${s.url}/threads/mix/chat`, { decisions: { [tool.callId]: 'approve' } }),
      postJson(`${s.url}/threads/mix/chat`, { message: 'read /n' }),
    ]);
    // Whichever is queued first, the decision applies once; the message is refused
    // while the pause stands, or accepted after it completed.
    assert.equal(a.status, 200);
    assert.equal(a.body.status, 'completed');
    assert.ok(b.status === 409 || b.status === 200);
    const rec = JSON.parse(readFileSync(path.join(s.dataDir, 'neuron', 'mix.json'), 'utf8'));
    const finals = rec.messages.filter((m) => m.role === 'assistant' && typeof m.content === 'string').map((m) => m.content);
    assert.equal(finals[0], 'delete_file /m: done.');
    if (b.status === 200) assert.deepEqual(finals, ['delete_file /m: done.', 'read_file /n: done.']);
    else assert.equal(finals.length, 1);
    assert.equal(readEffects(s.dataDir).filter((e) => e.threadId === 'mix' && e.name === 'delete_file').length, 1);
  });

  test('sidenet: two concurrent approvals of one call run it once; the loser gets 409', async (t) => {
    const s = await start();
    t.after(() => s.close());
    for (let round = 0; round < 5; round++) {
      const id = `srace_${round}`;
      const r = await sseChat(s.url, { threadId: id, messages: [userMsg('delete /s')] });
      const [p] = approvals(r.chunks);
      const body = { messages: [], threadId: id, agentVersionId: p.agentVersionId, approval: { runId: p.runId, toolCallId: p.toolCallId, approved: true } };
      const bodies = [body, body, { ...body, approval: { ...body.approval, approved: false } }];
      const results = await Promise.all(bodies.map((b) => sseChat(s.url, b)));
      assert.deepEqual(results.map((x) => x.status).sort(), [200, 409, 409]);
      // The winner's decision, and only it, took effect: an approval ran the tool once, the
      // rejection ran nothing.
      const won = bodies[results.findIndex((x) => x.status === 200)].approval.approved;
      const effects = readEffects(s.dataDir).filter((e) => e.threadId === id);
      assert.equal(effects.length, won ? 1 : 0);
      const rec = readRecord(s.dataDir, 'sidenet', id);
      assert.equal(rec.run, null);
      assert.equal(rec.toolResults.length, 1);
    }
  });
});
