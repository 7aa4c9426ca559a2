// Sidenet, the same thread open in two tabs: while tab A's continuation of one call streams, tab B
// shows that call as settled (the decision sent in A, nothing to click on its card), and its own
// submission can only answer the other call. Chunks are slow here, so the reply is seen streaming.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  approve, assertNoProblems, card, cards, deny, gotoThread, openPage, send, submit, threadId, waitCompleted,
  waitPaused, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser({ CHUNK_DELAY_MS: '120' });

test('sidenet: a call another tab is sending shows as settled here, and the rest stays answerable', async () => {
  const where = { thread: threadId('tabs_taken'), dialect: 'sidenet' };
  const { context, page: a, problems } = await openPage(env.browser);
  const b = await context.newPage();
  b.on('pageerror', (e) => problems.push(`page B error: ${e.message}`));
  b.on('console', (m) => m.type() === 'error' && problems.push(`page B console error: ${m.text()}`));
  try {
    await gotoThread(a, env.endpoint.url, where);
    await send(a, 'delete /var/log/app.log and buy 4 tickets at 60');
    await waitPaused(a, 2);
    await gotoThread(b, env.endpoint.url, where);
    await waitPaused(b, 2);

    // A approves the tickets and sends that alone; while its reply streams, B shows the tickets
    // as sent (settled: no Approve, Deny or Undo) and the deletion still open.
    await approve(card(a, /tickets/i));
    await card(b, /tickets/i).locator('.badge', { hasText: /Approved/ }).waitFor({ timeout: 5_000 });
    await submit(a);
    const tickets = card(b, /tickets/i);
    await b.locator('#cards article.card[data-settled="true"]').waitFor({ timeout: 5_000 });
    assert.match(await tickets.locator('.badge').textContent(), /Approved · sent/);
    for (const name of ['Approve', 'Deny', 'Undo']) {
      assert.equal(await tickets.getByRole('button', { name, exact: true }).isVisible(), false, `${name} on the settled card`);
    }
    assert.equal(await card(b, /Delet/).getAttribute('data-settled'), 'false');

    // Once A's reply has ended, B shows the deletion alone, answers it and the run completes.
    await b.waitForFunction(() => document.querySelectorAll('#cards article.card').length === 1, null, { timeout: 15_000 });
    await b.locator('#app[data-phase="awaiting_approval"]').waitFor({ timeout: 15_000 });
    await deny(card(b, /Delet/), 'Not this one');
    await submit(b);
    await waitCompleted(b);
    await waitCompleted(a);
    assert.equal(await cards(b).count(), 0);
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});
