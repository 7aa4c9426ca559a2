// Against an endpoint that gives Neuron approval requests a deadline (NEURON_EXPIRES_MS, as Neuron
// 4's `expiresAt`): the card says by when to decide, as text, and a card without one says nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  assertNoProblems, card, gotoThread, openPage, send, threadId, waitPaused, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser({ NEURON_EXPIRES_MS: '600000' });

test('neuron: a card shows the approval request\'s deadline', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, { thread: threadId('deadline'), dialect: 'neuron' });
    const before = Date.now();
    await send(page, 'delete /tmp/deadline.txt and email team@example.com about Deadline');
    await waitPaused(page, 2);
    for (const c of [card(page, /Delet/), card(page, /email/i)]) {
      const due = c.locator('.card-deadline');
      assert.equal(await due.isVisible(), true);
      assert.match(await due.textContent(), /^Decide by \S/);
      const at = Date.parse(await due.locator('time').getAttribute('datetime'));
      assert.ok(at >= before + 600000 && at <= Date.now() + 600000, String(at));
    }
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});

test('sidenet: no deadline, nothing shown', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, { thread: threadId('deadline_s'), dialect: 'sidenet' });
    await send(page, 'delete /tmp/deadline.txt');
    await waitPaused(page, 1);
    assert.equal(await card(page, /Delet/).locator('.card-deadline').isVisible(), false);
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});
