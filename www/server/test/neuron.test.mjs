import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { start, getJson, postJson, rawRequest, readEffects, readRecord } from '../testkit.mjs';

const TEMPLATE = (r) =>
  `TOOL NOT EXECUTED. The user rejected this action. User instruction: ${r}. Do not attempt this tool again. Follow the user's instruction or reconsider your plan.`;

describe('neuron dialect', () => {
  let s;
  let n = 0;
  const tid = () => `nt_${++n}`;
  const chat = (id, body) => postJson(`${s.url}/threads/${id}/chat`, body);
  before(async () => {
    s = await start();
  });
  after(() => s.close());

  test('unknown thread is an empty thread', async () => {
    const r = await getJson(`${s.url}/threads/never_seen`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { id: 'never_seen', messages: [] });
  });

  test('plain message gets a plain reply, completed', async () => {
    const id = tid();
    const r = await chat(id, { message: 'hello there' });
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'completed');
    assert.equal(r.body.message.role, 'assistant');
    assert.equal(typeof r.body.message.content, 'string');
    assert.match(r.body.message.content, /hello there/);
    const t = await getJson(`${s.url}/threads/${id}`);
    assert.deepEqual(
      t.body.messages.map((m) => [m.role, typeof m.content]),
      [['user', 'string'], ['assistant', 'string']],
    );
    assert.equal(t.body.messages[0].content, 'hello there');
    assert.ok(t.body.messages.every((m) => /^msg_/.test(m.__id)));
  });

  test('ungated read runs at once: tool_call (approval null), tool_call_result, final message', async () => {
    const id = tid();
    const r = await chat(id, { message: 'read /etc/motd' });
    assert.equal(r.body.status, 'completed');
    assert.match(r.body.message.content, /read_file \/etc\/motd: done\./);
    const { body } = await getJson(`${s.url}/threads/${id}`);
    const [user, call, result, final] = body.messages;
    assert.equal(user.role, 'user');
    assert.equal(call.type, 'tool_call');
    assert.equal(call.role, 'assistant');
    assert.deepEqual(call.content, []);
    assert.equal(call.resume_token, undefined);
    assert.equal(call.tools.length, 1);
    const tool = call.tools[0];
    assert.equal(tool.name, 'read_file');
    assert.equal(tool.approval, null);
    assert.ok('approval' in tool);
    assert.equal(tool.approvalReason, null);
    assert.equal(tool.rejectReason, null);
    assert.deepEqual(tool.parameters, []);
    assert.deepEqual(tool.inputs, { path: '/etc/motd' });
    assert.match(tool.callId, /^toolu_/);
    assert.equal(result.type, 'tool_call_result');
    assert.equal(result.role, 'tool');
    assert.equal(result.tools[0].callId, tool.callId);
    assert.match(result.tools[0].result, /Contents of \/etc\/motd/);
    assert.equal(final.role, 'assistant');
  });

  test('two gated tools + one ungated: pause, partial decision, revise, complete; reason reaches the model', async () => {
    const id = tid();
    const r1 = await chat(id, { message: 'delete /tmp/old.log and email team@example.com about Logs cleanup; read /etc/hosts' });
    assert.equal(r1.status, 200);
    assert.equal(r1.body.status, 'awaiting_approval');
    const msg = r1.body.message;
    assert.equal(msg.type, 'tool_call');
    assert.match(msg.resume_token, /^workflow_/);
    assert.deepEqual(msg.tools.map((t) => [t.name, t.approval]), [
      ['delete_file', 'pending'],
      ['send_email', 'pending'],
      ['read_file', null],
    ]);
    assert.equal(msg.tools[0].approvalReason, 'Deleting a file is irreversible');
    assert.match(msg.tools[1].approvalReason, /[Oo]utbound email/);
    assert.deepEqual(msg.tools[1].inputs, { to: 'team@example.com', subject: 'Logs cleanup' });
    const [del, mail] = msg.tools;

    // Nothing ran yet, not even the ungated read in the same step.
    assert.equal(readEffects(s.dataDir).filter((e) => e.threadId === id).length, 0);

    // Partial: reject the email with a reason. Stored; the tail shows it.
    const r2 = await chat(id, { decisions: { [mail.callId]: ['reject', 'Do not email the whole team'] } });
    assert.equal(r2.status, 200);
    assert.equal(r2.body.status, 'awaiting_approval');
    assert.equal(r2.body.message.__id, msg.__id);
    const t2 = r2.body.message.tools;
    assert.equal(t2[0].approval, 'pending');
    assert.equal(t2[1].approval, 'rejected');
    assert.equal(t2[1].rejectReason, 'Do not email the whole team');
    const stored = await getJson(`${s.url}/threads/${id}`);
    assert.deepEqual(stored.body.messages.at(-1), r2.body.message);

    // Revise: approve the email instead (last write wins), still partial.
    const r3 = await chat(id, { decisions: { [mail.callId]: 'approve' } });
    assert.equal(r3.body.status, 'awaiting_approval');
    assert.equal(r3.body.message.tools[1].approval, 'approved');
    assert.equal(r3.body.message.tools[1].rejectReason, null);

    // Revise again and complete in one cumulative payload.
    const r4 = await chat(id, {
      decisions: { [mail.callId]: ['reject', 'Do not email the whole team'], [del.callId]: 'approve' },
    });
    assert.equal(r4.status, 200);
    assert.equal(r4.body.status, 'completed');
    const final = r4.body.message;
    assert.equal(final.role, 'assistant');
    assert.equal(
      final.content,
      'delete_file /tmp/old.log: done. send_email to team@example.com: rejected — "Do not email the whole team". read_file /etc/hosts: done.',
    );

    const { body } = await getJson(`${s.url}/threads/${id}`);
    const result = body.messages.at(-2);
    assert.equal(result.type, 'tool_call_result');
    const byName = Object.fromEntries(result.tools.map((t) => [t.name, t]));
    assert.equal(byName.send_email.result, TEMPLATE('Do not email the whole team'));
    assert.equal(byName.send_email.approval, 'rejected');
    assert.equal(byName.delete_file.result, 'Deleted /tmp/old.log');
    assert.equal(byName.delete_file.approval, 'approved');
    assert.equal(byName.read_file.approval, null);
    // The paused tool_call is now settled history.
    const call = body.messages.at(-3);
    assert.equal(call.type, 'tool_call');
    assert.ok(call.tools.every((t) => t.approval !== 'pending'));

    const effects = readEffects(s.dataDir).filter((e) => e.threadId === id);
    assert.deepEqual(effects.map((e) => e.name).sort(), ['delete_file', 'read_file']);
  });

  test('incremental payloads work: one decision per request', async () => {
    const id = tid();
    const r1 = await chat(id, { message: 'delete /a\ndelete /b' });
    const [a, b] = r1.body.message.tools;
    const r2 = await chat(id, { decisions: { [a.callId]: 'reject' } });
    assert.equal(r2.body.status, 'awaiting_approval');
    const r3 = await chat(id, { decisions: { [b.callId]: 'approve' } });
    assert.equal(r3.body.status, 'completed');
    assert.equal(r3.body.message.content, 'delete_file /a: rejected — "No specific instruction provided.". delete_file /b: done.');
    const rec = readRecord(s.dataDir, 'neuron', id);
    const res = rec.messages.at(-2).tools;
    assert.equal(res[0].result, TEMPLATE('No specific instruction provided.'));
    assert.equal(res[0].rejectReason, null);
  });

  test('identical cumulative re-sends are harmless', async () => {
    const id = tid();
    const r1 = await chat(id, { message: 'delete /a; delete /b' });
    const [a, b] = r1.body.message.tools;
    const d1 = { [a.callId]: 'approve' };
    assert.equal((await chat(id, { decisions: d1 })).body.status, 'awaiting_approval');
    assert.equal((await chat(id, { decisions: d1 })).body.status, 'awaiting_approval');
    const r = await chat(id, { decisions: { ...d1, [b.callId]: 'approve' } });
    assert.equal(r.body.status, 'completed');
  });

  test('buy tickets: gated only above 100, amount in the reason', async () => {
    const id = tid();
    const small = await chat(id, { message: 'buy 2 tickets at 40' });
    assert.equal(small.body.status, 'completed');
    const call = (await getJson(`${s.url}/threads/${id}`)).body.messages[1];
    assert.equal(call.tools[0].approval, null);
    assert.deepEqual(call.tools[0].inputs, { quantity: 2, price: 40, amount: 80 });
    const big = await chat(id, { message: 'Buy 3 tickets at 50' });
    assert.equal(big.body.status, 'awaiting_approval');
    assert.equal(big.body.message.tools[0].approval, 'pending');
    assert.match(big.body.message.tools[0].approvalReason, /150/);
  });

  test('deploy pauses after run_tests, with the service in the reason; approving finishes', async () => {
    const id = tid();
    const r1 = await chat(id, { message: 'deploy payments' });
    assert.equal(r1.body.status, 'awaiting_approval');
    const { body } = await getJson(`${s.url}/threads/${id}`);
    assert.deepEqual(
      body.messages.map((m) => m.type || m.role),
      ['user', 'tool_call', 'tool_call_result', 'tool_call'],
    );
    assert.equal(body.messages[1].tools[0].name, 'run_tests');
    assert.equal(body.messages[1].tools[0].approval, null);
    assert.match(body.messages[2].tools[0].result, /passed/);
    const dep = body.messages[3].tools[0];
    assert.equal(dep.name, 'deploy');
    assert.equal(dep.approval, 'pending');
    assert.match(dep.approvalReason, /payments/);
    const r2 = await chat(id, { decisions: { [dep.callId]: 'approve' } });
    assert.equal(r2.body.status, 'completed');
    assert.equal(r2.body.message.content, 'run_tests payments: done. deploy payments: done.');
  });

  test('a run that pauses twice: gated calls in step 1 and deploy in step 2', async () => {
    const id = tid();
    const r1 = await chat(id, { message: 'deploy api and delete /var/cache' });
    assert.equal(r1.body.status, 'awaiting_approval');
    assert.deepEqual(r1.body.message.tools.map((t) => [t.name, t.approval]), [
      ['run_tests', null],
      ['delete_file', 'pending'],
    ]);
    const r2 = await chat(id, { decisions: { [r1.body.message.tools[1].callId]: ['reject', 'keep the cache'] } });
    assert.equal(r2.body.status, 'awaiting_approval');
    assert.equal(r2.body.message.tools[0].name, 'deploy');
    assert.notEqual(r2.body.message.__id, r1.body.message.__id);
    // decisions addressed to the settled first pause are unknown now
    const stale = await chat(id, { decisions: { [r1.body.message.tools[1].callId]: 'approve' } });
    assert.equal(stale.status, 400);
    const r3 = await chat(id, { decisions: { [r2.body.message.tools[0].callId]: ['reject', 'not on a Friday'] } });
    assert.equal(r3.body.status, 'completed');
    assert.equal(
      r3.body.message.content,
      'run_tests api: done. delete_file /var/cache: rejected — "keep the cache". deploy api: rejected — "not on a Friday".',
    );
  });

  test('new message while suspended: 409 conflict, history unchanged', async () => {
    const id = tid();
    await chat(id, { message: 'delete /x' });
    const before = readRecord(s.dataDir, 'neuron', id);
    const r = await chat(id, { message: 'hello?' });
    assert.equal(r.status, 409);
    assert.equal(r.body.status, 'conflict');
    assert.equal(typeof r.body.error, 'string');
    assert.match(r.body.error, /approval/);
    assert.deepEqual(readRecord(s.dataDir, 'neuron', id), before);
  });

  test('decisions when nothing is paused: 409', async () => {
    const r = await chat(tid(), { decisions: { toolu_x: 'approve' } });
    assert.equal(r.status, 409);
    assert.equal(r.body.status, 'conflict');
    const id = tid();
    await chat(id, { message: 'hi' });
    const r2 = await chat(id, { decisions: { toolu_x: 'approve' } });
    assert.equal(r2.status, 409);
  });

  test('400s: both fields, neither, non-string message, bad JSON, unknown callId, malformed value, empty map, ungated callId', async () => {
    const id = tid();
    const p = await chat(id, { message: 'delete /x; read /y' });
    const [gated, ungated] = p.body.message.tools;
    const cases = [
      [{ message: 'x', decisions: { [gated.callId]: 'approve' } }, /both/],
      [{}, /message.*decisions/],
      [{ message: 42 }, /string/],
      [{ message: '   ' }, /empty/],
      [[1, 2], /object/],
      [{ decisions: [] }, /object/],
      [{ decisions: {} }, /empty/],
      [{ decisions: { [gated.callId]: 'yes' } }, /Malformed decision/],
      [{ decisions: { [gated.callId]: ['reject'] } }, /Malformed decision/],
      [{ decisions: { [gated.callId]: ['reject', 5] } }, /Malformed decision/],
      [{ decisions: { [gated.callId]: ['approve', 'why'] } }, /Malformed decision/],
      [{ decisions: { [gated.callId]: { approve: true } } }, /Malformed decision/],
      [{ decisions: { toolu_nope: 'approve' } }, /Unknown callId/],
      [{ decisions: { [ungated.callId]: 'approve' } }, /does not require approval/],
      [{ decisions: { [gated.callId]: 'approve', toolu_nope: 'approve' } }, /Unknown callId/],
    ];
    for (const [body, re] of cases) {
      const r = await chat(id, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.match(r.body.error, re, JSON.stringify(body));
    }
    const badJson = await postJson(`${s.url}/threads/${id}/chat`, '{"message": ');
    assert.equal(badJson.status, 400);
    assert.match(badJson.body.error, /JSON/);
    const emptyBody = await postJson(`${s.url}/threads/${id}/chat`, '');
    assert.equal(emptyBody.status, 400);
    // a rejected batch changes nothing: the valid entry was not applied
    const t = readRecord(s.dataDir, 'neuron', id);
    assert.equal(t.messages.at(-1).tools[0].approval, 'pending');
  });

  test('thread ids outside [A-Za-z0-9_-]{1,128}: 400, never a path', async () => {
    for (const p of [
      '/threads/..%2F..%2Fetc%2Fpasswd',
      '/threads/a.b',
      '/threads/%2e%2e',
      `/threads/${'a'.repeat(129)}`,
      '/threads/a%00b/chat',
      '/threads/a%20b',
      '/threads/%E0%A4%A',
    ]) {
      const r = await rawRequest(s.url, 'GET', p);
      assert.equal(r.status, 400, p);
      const r2 = await rawRequest(s.url, 'POST', p.endsWith('/chat') ? p : `${p}/chat`, {
        headers: { 'content-type': 'application/json' },
        body: '{"message":"hi"}',
      });
      assert.equal(r2.status, 400, p);
    }
    const ok = await getJson(`${s.url}/threads/${'a'.repeat(128)}`);
    assert.equal(ok.status, 200);
  });

  test('wrong methods: 405 with Allow', async () => {
    const r = await postJson(`${s.url}/threads/x`, {});
    assert.equal(r.status, 405);
    assert.equal(r.headers.get('allow'), 'GET');
    const r2 = await getJson(`${s.url}/threads/x/chat`);
    assert.equal(r2.status, 405);
    assert.equal(r2.headers.get('allow'), 'POST');
  });
});

// Neuron's revisions read a decision payload differently (PROTOCOLS.md §1): NEURON_DECISIONS picks one.
describe('neuron decision semantics of each revision', () => {
  const servers = {};
  let n = 0;
  before(async () => {
    for (const mode of ['incremental', 'cumulative']) servers[mode] = await start({ neuronDecisions: mode });
  });
  after(async () => {
    for (const s of Object.values(servers)) await s.close();
  });
  const paused = async (s) => {
    const id = `sem_${++n}`;
    const r = await postJson(`${s.url}/threads/${id}/chat`, {
      message: 'delete /tmp/sem.log and email sem@example.com about Sem',
    });
    assert.equal(r.body.status, 'awaiting_approval');
    const [del, mail] = r.body.message.tools.map((t) => t.callId);
    return { id, del, mail, chat: (body) => postJson(`${s.url}/threads/${id}/chat`, body) };
  };

  test('incremental: unknown callIds and an empty map are ignored; omitted entries keep theirs', async () => {
    const { del, mail, chat } = await paused(servers.incremental);
    let r = await chat({ decisions: {} });
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'awaiting_approval');
    r = await chat({ decisions: { [del]: 'approve', toolu_nope: 'reject' } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.message.tools.map((t) => t.approval), ['approved', 'pending']);
    r = await chat({ decisions: { [mail]: ['reject', 'no'] } });
    assert.equal(r.body.status, 'completed');
    assert.match(r.body.message.content, /delete_file \/tmp\/sem\.log: done\./);
  });

  test('cumulative: the tail keeps its pending snapshot until the set is whole; omitted entries revert', async () => {
    const { id, del, mail, chat } = await paused(servers.cumulative);
    let r = await chat({ decisions: { [del]: 'approve' } });
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'awaiting_approval');
    assert.deepEqual(r.body.message.tools.map((t) => t.approval), ['pending', 'pending']);
    // A payload without del: del reverts to pending, so the set is still not whole.
    r = await chat({ decisions: { [mail]: 'reject' } });
    assert.equal(r.body.status, 'awaiting_approval');
    assert.deepEqual(r.body.message.tools.map((t) => t.approval), ['pending', 'pending']);
    // The whole set: written to the tail, and the run goes on.
    r = await chat({ decisions: { [del]: 'approve', [mail]: ['reject', 'not now'] } });
    assert.equal(r.body.status, 'completed');
    const t = await getJson(`${servers.cumulative.url}/threads/${id}`);
    const decided = t.body.messages.find((m) => m.type === 'tool_call').tools;
    assert.deepEqual(decided.map((x) => [x.approval, x.rejectReason]), [['approved', null], ['rejected', 'not now']]);
    const effects = readEffects(servers.cumulative.dataDir).filter((e) => e.threadId === id);
    assert.deepEqual(effects.map((e) => e.callId), [del]);
  });
});

// Neuron's newest history is append-only (NEURON_HISTORY=append-only): the paused tool_call
// message keeps its pending snapshot forever; the outcomes land on the tool_call_result after it.
describe('neuron append-only history', () => {
  const servers = {};
  let n = 0;
  before(async () => {
    for (const mode of ['strict', 'incremental', 'cumulative'])
      servers[mode] = await start({ neuronDecisions: mode, neuronHistory: 'append-only' });
  });
  after(async () => {
    for (const s of Object.values(servers)) await s.close();
  });
  const paused = async (s, message = 'delete /tmp/ao.log and email ao@example.com about Ao; read /etc/hosts') => {
    const id = `ao_${++n}`;
    const chat = (body) => postJson(`${s.url}/threads/${id}/chat`, body);
    const r = await chat({ message });
    assert.equal(r.body.status, 'awaiting_approval');
    const thread = async () => (await getJson(`${s.url}/threads/${id}`)).body.messages;
    return { id, chat, thread, pause: r.body.message, before: await thread() };
  };

  for (const mode of ['strict', 'incremental', 'cumulative']) {
    test(`${mode}: partial and revised decisions leave the paused message as written; outcomes go on the result`, async () => {
      const s = servers[mode];
      const { id, chat, thread, pause, before } = await paused(s);
      const [del, mail, read] = pause.tools;
      // The newest shape: an ungated tool's approval left out, no `parameters`, no `resume_token`.
      assert.deepEqual(pause.tools.map((t) => t.approval), ['pending', 'pending', undefined]);
      assert.ok(!('approval' in read));
      assert.ok(pause.tools.every((t) => !('parameters' in t)));
      assert.ok(!('resume_token' in pause));

      // Partial, then revised (a cumulative payload carries the whole set each time).
      let r = await chat({ decisions: { [del.callId]: ['reject', 'keep it'] } });
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, { status: 'awaiting_approval', message: pause });
      r = await chat({ decisions: { [del.callId]: 'approve' } });
      assert.deepEqual(r.body, { status: 'awaiting_approval', message: pause });
      assert.deepEqual(await thread(), before, 'nothing in the history changed');
      assert.deepEqual(readEffects(s.dataDir).filter((e) => e.threadId === id), []);

      // The last decision: the step runs.
      const last = { [mail.callId]: ['reject', 'Not this week'] };
      r = await chat({ decisions: mode === 'cumulative' ? { [del.callId]: 'approve', ...last } : last });
      assert.equal(r.body.status, 'completed');
      assert.equal(
        r.body.message.content,
        'delete_file /tmp/ao.log: done. send_email to ao@example.com: rejected — "Not this week". read_file /etc/hosts: done.',
      );
      const messages = await thread();
      assert.deepEqual(messages.slice(0, before.length), before, 'the paused tool_call message keeps its pending snapshot');
      const result = messages[before.length];
      assert.equal(result.type, 'tool_call_result');
      assert.deepEqual(
        result.tools.map((t) => [t.callId, t.approval, t.rejectReason]),
        [[del.callId, 'approved', null], [mail.callId, 'rejected', 'Not this week'], [read.callId, undefined, null]],
      );
      assert.equal(result.tools[0].result, 'Deleted /tmp/ao.log');
      assert.equal(result.tools[1].result, TEMPLATE('Not this week'));
      assert.deepEqual(result.tools[0].inputs, del.inputs);
      assert.equal(messages.length, before.length + 2);
      assert.deepEqual(readEffects(s.dataDir).filter((e) => e.threadId === id).map((e) => e.callId).sort(), [del.callId, read.callId].sort());
      assert.equal(readRecord(s.dataDir, 'neuron', id).run, null);
    });
  }

  test('cumulative: an omitted callId reverts to undecided', async () => {
    const { chat, pause } = await paused(servers.cumulative, 'delete /a; delete /b');
    const [a, b] = pause.tools;
    assert.equal((await chat({ decisions: { [a.callId]: 'approve' } })).body.status, 'awaiting_approval');
    assert.equal((await chat({ decisions: { [b.callId]: 'approve' } })).body.status, 'awaiting_approval');
    const r = await chat({ decisions: { [a.callId]: 'reject', [b.callId]: 'approve' } });
    assert.equal(r.body.status, 'completed');
    assert.equal(r.body.message.content, 'delete_file /a: rejected — "No specific instruction provided.". delete_file /b: done.');
  });

  test('strict refusals and the 409 still apply; a held decision survives them', async () => {
    const { id, chat, thread, pause, before } = await paused(servers.strict, 'delete /x; delete /y');
    const [x, y] = pause.tools;
    assert.equal((await chat({ decisions: { [x.callId]: 'approve' } })).status, 200);
    const unknown = await chat({ decisions: { toolu_nope: 'approve' } });
    assert.equal(unknown.status, 400);
    assert.deepEqual(Object.keys(unknown.body), ['error']);
    const conflict = await chat({ message: 'hello?' });
    assert.equal(conflict.status, 409);
    assert.equal(conflict.body.status, 'conflict');
    assert.match(conflict.body.error, /1 tool call requires approval/);
    assert.deepEqual(await thread(), before);
    const r = await chat({ decisions: { [y.callId]: 'reject' } });
    assert.equal(r.body.status, 'completed');
    assert.equal(r.body.message.content, 'delete_file /x: done. delete_file /y: rejected — "No specific instruction provided.".');
    assert.deepEqual(readEffects(servers.strict.dataDir).filter((e) => e.threadId === id).map((e) => e.callId), [x.callId]);
  });

  test('a run that pauses twice: each pause is decided on its own, both tool_call messages stay pending', async () => {
    const { id, chat, thread, pause } = await paused(servers.strict, 'delete /old and deploy api');
    assert.deepEqual(pause.tools.map((t) => [t.name, t.approval]), [['delete_file', 'pending'], ['run_tests', undefined]]);
    const r1 = await chat({ decisions: { [pause.tools[0].callId]: 'approve' } });
    assert.equal(r1.body.status, 'awaiting_approval');
    const second = r1.body.message;
    assert.notEqual(second.__id, pause.__id);
    assert.deepEqual(second.tools.map((t) => [t.name, t.approval]), [['deploy', 'pending']]);
    // The first pause's decision does not carry over.
    const stale = await chat({ decisions: { [pause.tools[0].callId]: 'approve' } });
    assert.equal(stale.status, 400);
    const r2 = await chat({ decisions: { [second.tools[0].callId]: ['reject', 'not today'] } });
    assert.equal(r2.body.status, 'completed');
    const messages = await thread();
    const calls = messages.filter((m) => m.type === 'tool_call');
    const results = messages.filter((m) => m.type === 'tool_call_result');
    assert.deepEqual(calls.map((m) => m.tools.map((t) => t.approval)), [['pending', undefined], ['pending']]);
    assert.deepEqual(results.map((m) => m.tools.map((t) => t.approval)), [['approved', undefined], ['rejected']]);
    assert.equal(results[1].tools[0].rejectReason, 'not today');
    assert.deepEqual(readEffects(servers.strict.dataDir).filter((e) => e.threadId === id).map((e) => e.name), ['delete_file', 'run_tests']);
  });
});

// NEURON_REPLY=approvals: the chat POST answers { status, approvals: [{ id, name, reason }] } and no
// message, as Laravel's JSON endpoint does; the 409 and 400 bodies are unchanged.
describe('neuron approvals reply', () => {
  const servers = {};
  let n = 0;
  before(async () => {
    servers.update = await start({ neuronReply: 'approvals' });
    servers.appendOnly = await start({ neuronReply: 'approvals', neuronHistory: 'append-only' });
  });
  after(async () => {
    for (const s of Object.values(servers)) await s.close();
  });

  for (const history of ['update', 'appendOnly']) {
    test(`${history}: awaiting_approval lists the calls still to decide; completed lists none`, async () => {
      const s = servers[history];
      const id = `ar_${++n}`;
      const chat = (body) => postJson(`${s.url}/threads/${id}/chat`, body);
      let r = await chat({ message: 'delete /tmp/ar.log and email ar@example.com about Ar; read /etc/hosts' });
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.body).sort(), ['approvals', 'status']);
      assert.equal(r.body.status, 'awaiting_approval');
      const tail = (await getJson(`${s.url}/threads/${id}`)).body.messages.at(-1);
      const [del, mail] = tail.tools;
      assert.deepEqual(r.body.approvals, [
        { id: del.callId, name: 'delete_file', reason: 'Deleting a file is irreversible' },
        { id: mail.callId, name: 'send_email', reason: 'Outbound email reaches people outside this workspace' },
      ]);
      r = await chat({ decisions: { [del.callId]: 'approve' } });
      assert.deepEqual(r.body, {
        status: 'awaiting_approval',
        approvals: [{ id: mail.callId, name: 'send_email', reason: 'Outbound email reaches people outside this workspace' }],
      });
      const conflict = await chat({ message: 'hello?' });
      assert.equal(conflict.status, 409);
      assert.deepEqual(Object.keys(conflict.body).sort(), ['error', 'status']);
      assert.equal(conflict.body.status, 'conflict');
      const bad = await chat({ decisions: {} });
      assert.equal(bad.status, 400);
      assert.deepEqual(Object.keys(bad.body), ['error']);
      r = await chat({ decisions: { [mail.callId]: ['reject', 'no'] } });
      assert.deepEqual(r.body, { status: 'completed', approvals: [] });
      const final = (await getJson(`${s.url}/threads/${id}`)).body.messages.at(-1);
      assert.match(final.content, /delete_file \/tmp\/ar\.log: done\. send_email to ar@example\.com: rejected — "no"\./);
      r = await chat({ message: 'hello' });
      assert.deepEqual(r.body, { status: 'completed', approvals: [] });
    });
  }

  test('the options come from NEURON_HISTORY and NEURON_REPLY; unknown values are refused at start', async () => {
    const { configFromEnv, startServer } = await import('../server.mjs');
    const d = configFromEnv({});
    assert.equal(d.neuronHistory, 'update');
    assert.equal(d.neuronReply, 'message');
    const c = configFromEnv({ NEURON_HISTORY: 'append-only', NEURON_REPLY: 'approvals' });
    assert.equal(c.neuronHistory, 'append-only');
    assert.equal(c.neuronReply, 'approvals');
    const never = '/nonexistent/toolgate-never-created';
    await assert.rejects(startServer({ port: 0, quiet: true, dataDir: never, neuronHistory: 'append' }), /NEURON_HISTORY/);
    await assert.rejects(startServer({ port: 0, quiet: true, dataDir: never, neuronReply: 'json' }), /NEURON_REPLY/);
  });
});

// NEURON_CONFLICT_STATUS=200: a conflict answered as the seed's own controller does (the array it
// returns sent as a 200), the body unchanged.
describe('neuron conflicts as HTTP 200', () => {
  let s;
  before(async () => {
    s = await start({ neuronConflictStatus: 200 });
  });
  after(() => s.close());

  test('a message while paused and decisions with nothing paused: 200 {status: "conflict"}', async () => {
    const { configFromEnv, startServer } = await import('../server.mjs');
    assert.equal(configFromEnv({}).neuronConflictStatus, 409);
    assert.equal(configFromEnv({ NEURON_CONFLICT_STATUS: '200' }).neuronConflictStatus, 200);
    const never = '/nonexistent/toolgate-never-created';
    await assert.rejects(startServer({ port: 0, quiet: true, dataDir: never, neuronConflictStatus: 500 }), /NEURON_CONFLICT_STATUS/);
    const chat = (body) => postJson(`${s.url}/threads/c200/chat`, body);
    const r = await chat({ message: 'delete /tmp/c200.log' });
    assert.equal(r.body.status, 'awaiting_approval');
    const busy = await chat({ message: 'hello' });
    assert.equal(busy.status, 200);
    assert.equal(busy.body.status, 'conflict');
    assert.match(busy.body.error, /awaiting approval/);
    const [call] = r.body.message.tools;
    assert.equal((await chat({ decisions: { [call.callId]: 'approve' } })).body.status, 'completed');
    const late = await chat({ decisions: { [call.callId]: 'approve' } });
    assert.equal(late.status, 200);
    assert.deepEqual(Object.keys(late.body).sort(), ['error', 'status']);
    assert.equal(late.body.status, 'conflict');
  });
});

// NEURON_EXPIRES_MS: each gated tool of a pause carries Neuron 4's `expiresAt` deadline; ungated
// tools, and every tool without the option, carry none.
describe('neuron approval deadlines', () => {
  let s;
  before(async () => {
    s = await start({ neuronExpiresMs: 90_000 });
  });
  after(() => s.close());

  test('gated tools carry expiresAt, that many ms after the pause', async () => {
    const { configFromEnv } = await import('../server.mjs');
    assert.equal(configFromEnv({}).neuronExpiresMs, 0);
    assert.equal(configFromEnv({ NEURON_EXPIRES_MS: '5000' }).neuronExpiresMs, 5000);
    const before = Date.now();
    const r = await postJson(`${s.url}/threads/exp_1/chat`, { message: 'delete /tmp/exp.log; read /etc/hosts' });
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'awaiting_approval');
    const [gated, read] = r.body.message.tools;
    assert.equal(gated.approval, 'pending');
    const at = Date.parse(gated.expiresAt);
    assert.match(gated.expiresAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(at >= before + 90_000 && at <= Date.now() + 90_000, gated.expiresAt);
    assert.equal(read.approval, null);
    assert.equal('expiresAt' in read, false);
  });
});

// NEURON_CALL_IDS=name: the tool's name as the callId, as Neuron's Gemini provider sets it. Two
// calls of one tool in a step share it, and one decision answers both, as Neuron's actions keyed by
// callId do; each call still runs (and is recorded) on its own.
describe('neuron callIds as tool names', () => {
  let s;
  before(async () => {
    s = await start({ neuronCallIds: 'name' });
  });
  after(() => s.close());

  test('two calls of one tool share the callId; one decision answers both, each runs', async () => {
    const { configFromEnv, startServer } = await import('../server.mjs');
    assert.equal(configFromEnv({}).neuronCallIds, 'unique');
    assert.equal(configFromEnv({ NEURON_CALL_IDS: 'name' }).neuronCallIds, 'name');
    await assert.rejects(
      startServer({ port: 0, quiet: true, dataDir: '/nonexistent/toolgate-never-created', neuronCallIds: 'gemini' }),
      /NEURON_CALL_IDS/,
    );
    const chat = (id, body) => postJson(`${s.url}/threads/${id}/chat`, body);
    const r = await chat('twins_1', { message: 'delete /tmp/a.log and delete /tmp/b.log; email x@example.com about Twins' });
    assert.equal(r.body.status, 'awaiting_approval');
    assert.deepEqual(r.body.message.tools.map((t) => [t.callId, t.inputs.path ?? t.inputs.to, t.approval]), [
      ['delete_file', '/tmp/a.log', 'pending'],
      ['delete_file', '/tmp/b.log', 'pending'],
      ['send_email', 'x@example.com', 'pending'],
    ]);
    const partial = await chat('twins_1', { decisions: { delete_file: 'approve' } });
    assert.equal(partial.body.status, 'awaiting_approval');
    assert.deepEqual(partial.body.message.tools.map((t) => t.approval), ['approved', 'approved', 'pending']);
    const done = await chat('twins_1', { decisions: { send_email: ['reject', 'Not now'] } });
    assert.equal(done.body.status, 'completed');
    assert.match(done.body.message.content, /delete_file \/tmp\/a\.log: done\..*delete_file \/tmp\/b\.log: done\./);
    const ran = readEffects(s.dataDir).filter((e) => e.threadId === 'twins_1');
    assert.deepEqual(ran.map((e) => [e.callId, e.inputs.path]), [['delete_file', '/tmp/a.log'], ['delete_file', '/tmp/b.log']]);
    // A later turn reuses the callId (the tool's name again): a new call, run and recorded too.
    const again = await chat('twins_1', { message: 'delete /tmp/c.log' });
    assert.equal(again.body.message.tools[0].callId, 'delete_file');
    await chat('twins_1', { decisions: { delete_file: 'approve' } });
    assert.deepEqual(readEffects(s.dataDir).filter((e) => e.threadId === 'twins_1').map((e) => e.inputs.path), ['/tmp/a.log', '/tmp/b.log', '/tmp/c.log']);
  });
});
