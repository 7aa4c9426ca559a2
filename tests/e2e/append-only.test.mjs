// Against an endpoint whose Neuron history is append-only and whose chat POST answers with approvals
// only (NEURON_HISTORY=append-only, NEURON_REPLY=approvals): the paused tool_call message keeps its
// pending snapshot forever, the outcomes are recorded on the tool_call_result that follows, and a
// reply carries `{ status, approvals }` and no message. A partial submission keeps the decision; the
// whole set completes the run, and only the approved tool ran, once.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  approve, assertNoProblems, card, deny, gotoThread, lastAnswer, openPage, send, submit, threadId,
  waitCompleted, waitPaused, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';
import { readEffects } from '../../www/server/testkit.mjs';

const dataDir = mkdtempSync(path.join(tmpdir(), 'toolgate-e2e-append-'));
const env = withEndpointAndBrowser({ NEURON_HISTORY: 'append-only', NEURON_REPLY: 'approvals', DATA_DIR: dataDir });
after(() => rmSync(dataDir, { recursive: true, force: true }));

const effects = (thread) => readEffects(dataDir).filter((e) => e.threadId === thread);

describe('neuron, append-only history with approvals-only replies', () => {
  test('a partial submission keeps the decision; the whole set completes the run', async () => {
    const { context, page, problems } = await openPage(env.browser);
    const thread = threadId('append');
    try {
      await gotoThread(page, env.endpoint.url, { thread, dialect: 'neuron' });
      await send(page, 'Delete /tmp/append.txt and email team@example.com about Append only');
      await waitPaused(page, 2);
      const del = card(page, /Delete|Deleting/);
      const mail = card(page, /email/i);

      // Partial: the server holds the decision aside and answers with the unchanged pause.
      await approve(del);
      await submit(page);
      await page.locator('#app[data-phase="awaiting_approval"]').waitFor();
      await page.waitForFunction(() => document.getElementById('submit').textContent === 'Submit decisions');
      assert.match(await del.locator('.badge').textContent(), /Approved/);
      const notices = (await page.locator('#approval-notices').textContent()) ?? '';
      assert.doesNotMatch(notices, /decide again/, notices);
      assert.equal(await page.locator('#alert-region .alert').count(), 0, 'no error after the partial submission');
      assert.deepEqual(effects(thread), [], 'nothing ran yet');

      // The rest: the run goes on and completes.
      await deny(mail, 'Not this week');
      await submit(page);
      await waitCompleted(page);
      const answer = await lastAnswer(page);
      assert.match(answer, /delete_file \/tmp\/append\.txt: done\./);
      assert.ok(answer.includes('send_email to team@example.com: rejected — "Not this week".'), answer);
      assert.equal(await page.locator('#alert-region .alert').count(), 0, 'no error banner');

      // The thread shows each outcome (read from the tool_call_result), none still pending.
      const done = page.locator('#messages .tool-done');
      await done.first().waitFor();
      assert.equal(await done.count(), 1);
      assert.equal(await done.locator('.tool-name').textContent(), 'delete_file');
      const rejected = page.locator('#messages .tool-rejected');
      assert.equal(await rejected.count(), 1);
      assert.equal(await rejected.locator('.tool-name').textContent(), 'send_email');
      assert.match(await rejected.locator('.tool-reason').textContent(), /Not this week/);
      assert.equal(await page.locator('#messages .tool-pending').count(), 0);

      // Exactly the approved tool ran, once.
      assert.deepEqual(effects(thread).map((e) => e.name), ['delete_file']);
      // The server kept the paused message as written.
      const stored = await (await fetch(`${env.endpoint.url}/threads/${thread}`)).json();
      const call = stored.messages.find((m) => m.type === 'tool_call');
      assert.deepEqual(call.tools.map((t) => t.approval), ['pending', 'pending']);
      assertNoProblems(problems);
    } finally {
      await context.close();
    }
  });
});
