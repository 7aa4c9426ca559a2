import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { planSteps, parseRequest, COMMAND_WORDS } from '../agent.mjs';
import { start, postJson } from '../testkit.mjs';

// The split the agent used to do, kept here as the reference for ordinary input: `\s+and\s+`
// backtracks quadratically on long whitespace runs, so it only ever sees short strings here.
const REFERENCE_SPLIT = new RegExp(`\\r?\\n|;|\\s+and\\s+(?=(?:${COMMAND_WORDS.join('|')})\\b)`, 'i');
const referencePlan = (text) => {
  const requests = String(text).split(REFERENCE_SPLIT).map(parseRequest).filter(Boolean);
  const steps = [];
  let index = 0;
  const depth = Math.max(0, ...requests.map((r) => r.length));
  for (let i = 0; i < depth; i++) steps.push(requests.filter((r) => r[i]).map((r) => ({ index: 0, ...r[i] })));
  for (const step of steps) for (const call of step) call.index = index++;
  return steps;
};

describe('scripted agent: splitting a message into requests', () => {
  test('ordinary messages are planned as before', () => {
    const inputs = [
      'delete /tmp/a and email team@example.com about Logs',
      'Delete /tmp/a AND Email x@y.z about Q',
      'read a; deploy billing',
      'read a\ndelete b\r\nbuy 3 tickets at 45',
      'read notes.txt and deploy billing',
      'delete a and\nread b',
      'delete a   and   read b',
      'delete a\tand\tread b',
      'delete sand and read b',
      'read band and readme',
      'read a and readme',
      'delete a and then read b',
      'email a@b.c about salt and pepper',
      'email a@b.c about salt and delete the rest',
      'and read x',
      'read x and',
      'buy 3 tickets at 45 and buy 10 tickets at 20',
      'hello there',
      '',
      '   ',
      'delete x;;and read y',
      'read a and and read b',
    ];
    for (const text of inputs) assert.deepEqual(planSteps(text), referencePlan(text), JSON.stringify(text));
    assert.deepEqual(
      planSteps('delete /tmp/a and email team@example.com about Logs').flat().map((c) => c.name),
      ['delete_file', 'send_email'],
    );
  });

  test('a message of 200,000 spaces between two words is planned at once', () => {
    const spaces = ' '.repeat(200_000);
    for (const text of [`hello${spaces}world`, `read a${spaces}and${spaces}x`, `delete a${spaces}and${spaces}read b`, `a${'\t \n'.repeat(70_000)}b`]) {
      const t0 = performance.now();
      const steps = planSteps(text);
      const ms = performance.now() - t0;
      // The quadratic split took tens of seconds here; a linear one takes a few milliseconds.
      assert.ok(ms < 2000, `${ms.toFixed(0)} ms for ${text.length} characters`);
      if (text.startsWith('delete')) assert.deepEqual(steps.flat().map((c) => c.name), ['delete_file', 'read_file']);
      if (text.startsWith('hello')) assert.deepEqual(steps, []);
    }
  });

  test('the server answers such a message, and the next request, promptly', async (t) => {
    const s = await start();
    t.after(() => s.close());
    const t0 = performance.now();
    const r = await postJson(`${s.url}/threads/redos/chat`, { message: `hello${' '.repeat(200_000)}world` });
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'completed');
    assert.match(r.body.message.content, /^You said: "hello world"/);
    const next = await postJson(`${s.url}/threads/redos2/chat`, { message: 'read /etc/motd' });
    assert.equal(next.body.status, 'completed');
    const ms = performance.now() - t0;
    assert.ok(ms < 5000, `${ms.toFixed(0)} ms`);
  });
});
