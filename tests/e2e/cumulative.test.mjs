// Against an endpoint that reads Neuron decisions as Neuron's cumulative revision does
// (NEURON_DECISIONS=cumulative: a partial set is held aside and the tail keeps showing every call
// pending until the set is whole). A partial submission leaves the decision a draft on its card,
// the page says it goes again with the next submission, and the whole set then completes the run.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  approve, assertNoProblems, card, deny, gotoThread, lastAnswer, openPage, send, submit, threadId,
  waitCompleted, waitPaused, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser({ NEURON_DECISIONS: 'cumulative' });

describe('neuron, cumulative revision: a partial submission', () => {
  test('keeps the decision and sends it again with the rest', async () => {
    const { context, page, problems } = await openPage(env.browser);
    try {
      await gotoThread(page, env.endpoint.url, { thread: threadId('cumulative'), dialect: 'neuron' });
      await send(page, 'Delete /tmp/cum.txt and email team@example.com about Cumulative');
      await waitPaused(page, 2);
      const del = card(page, /Delete|Deleting/);
      const mail = card(page, /email/i);
      await approve(del);
      await submit(page);
      const notice = page.locator('#approval-notices .notice');
      await notice.waitFor();
      assert.match(await notice.textContent(), /1 decision is not on the thread yet; kept, it goes again/);
      assert.match(await del.locator('.badge').textContent(), /Approved/);
      await deny(mail, 'Not this week');
      await submit(page);
      await waitCompleted(page);
      const answer = await lastAnswer(page);
      assert.match(answer, /delete_file \/tmp\/cum\.txt: done\./);
      assert.ok(answer.includes('"Not this week"'), answer);
      assertNoProblems(problems);
    } finally {
      await context.close();
    }
  });
});
