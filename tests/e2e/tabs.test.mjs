// The same thread open in two tabs (two pages of one browser context, sharing localStorage): a
// decision taken in one shows in the other, a reload of either brings back both tabs' drafts, and
// once one submits, the other moves on with it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  approve, assertNoProblems, card, cards, deny, gotoThread, lastAnswer, openPage, send, submit, threadId, waitCompleted,
  waitPaused, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const REASON = 'Not this one';

const env = withEndpointAndBrowser();

/** Two pages of one browser context (sharing localStorage), B's errors counted with A's. */
async function twoTabs() {
  const { context, page: a, problems } = await openPage(env.browser);
  const b = await context.newPage();
  b.on('pageerror', (e) => problems.push(`page B error: ${e.message}`));
  b.on('console', (m) => m.type() === 'error' && problems.push(`page B console error: ${m.text()}`));
  return { context, a, b, problems };
}

/** A sends a message that pauses on two calls; B opens the same thread and shows them too. */
async function bothPaused(a, b, where) {
  await gotoThread(a, env.endpoint.url, where);
  await send(a, 'delete /var/log/app.log and buy 4 tickets at 60');
  await waitPaused(a, 2);
  await gotoThread(b, env.endpoint.url, where);
  await waitPaused(b, 2);
}

/** Waits until the card's badge reads `state`. */
const shows = (cardLocator, state) => cardLocator.locator('.badge', { hasText: state }).waitFor({ timeout: 5_000 });

for (const dialect of ['neuron', 'sidenet']) {
  test(`${dialect}: two tabs share their drafts, a reload keeps both tabs' decisions, and the other tab follows a submission`, async () => {
    const where = { thread: threadId(`tabs_${dialect}`), dialect };
    const { context, a, b, problems } = await twoTabs();
    try {
      await bothPaused(a, b, where);

      // Decided in A: seen in B.
      await approve(card(a, /tickets/i));
      await shows(card(b, /tickets/i), /Approved/);
      // Decided in B: seen in A.
      await deny(card(b, /Delet/), REASON);
      await shows(card(a, /Delet/), /Denied/);
      assert.ok((await card(a, /Delet/).locator('.card-decision').textContent()).includes(REASON));
      assert.match(await a.locator('#decided-count').textContent(), /2 of 2 decided/);

      // A reload of A brings back both drafts.
      await a.reload();
      await waitPaused(a, 2);
      await a.waitForFunction(() => document.querySelectorAll('#cards .card[data-state="pending"]').length === 0);
      assert.match(await card(a, /tickets/i).locator('.badge').textContent(), /Approved/);
      assert.match(await card(a, /Delet/).locator('.badge').textContent(), /Denied/);
      assert.ok((await card(a, /Delet/).locator('.card-decision').textContent()).includes(REASON));

      // Undone in A: undone in B (the draft the other tab cleared is cleared).
      await card(a, /tickets/i).getByRole('button', { name: 'Undo' }).click();
      await b.waitForFunction(() => document.querySelectorAll('#cards .card[data-state="pending"]').length === 1);
      assert.match(await card(b, /Delet/).locator('.badge').textContent(), /Denied/);

      // A submits and the run completes: B, left on the pause, catches up by itself (no reload
      // of the page), and shows the same answer.
      await approve(card(a, /tickets/i));
      await submit(a);
      await waitCompleted(a);
      await waitCompleted(b);
      assert.equal(await lastAnswer(b), await lastAnswer(a));
      assert.equal(await cards(b).count(), 0);
      // B's drafts were A's, sent by A: acknowledged, not reported as dropped.
      assert.equal(await b.locator('.notice', { hasText: 'no longer applied' }).count(), 0);
      assertNoProblems(problems);
    } finally {
      await context.close();
    }
  });
}

for (const dialect of ['neuron', 'sidenet']) {
  test(`${dialect}: a tab follows another tab's partial submission, then answers the rest`, async () => {
    const where = { thread: threadId(`tabs_partial_${dialect}`), dialect };
    const { context, a, b, problems } = await twoTabs();
    try {
      await bothPaused(a, b, where);

      // A approves the tickets and submits that alone: the server takes it, the deletion waits.
      await approve(card(a, /tickets/i));
      await shows(card(b, /tickets/i), /Approved/);
      await submit(a);
      if (dialect === 'neuron') {
        // The tail holds the approval: A and then B (by itself) show it as sent.
        await shows(card(a, /tickets/i), /sent/);
        await shows(card(b, /tickets/i), /sent/);
      } else {
        // The call left the pause: A and then B (by itself) show the deletion alone.
        await a.waitForFunction(() => document.querySelectorAll('#cards article.card').length === 1);
        await b.waitForFunction(() => document.querySelectorAll('#cards article.card').length === 1, null, { timeout: 5_000 });
      }
      await b.waitForFunction(() => document.querySelectorAll('#cards .card[data-state="pending"]').length === 1);
      await b.locator('#app[data-phase="awaiting_approval"]').waitFor({ timeout: 5_000 });

      // B answers the rest and the run completes in both.
      await deny(card(b, /Delet/), REASON);
      await submit(b);
      await waitCompleted(b);
      await waitCompleted(a);
      assert.equal(await lastAnswer(a), await lastAnswer(b));
      assert.equal(await b.locator('.notice', { hasText: 'no longer applied' }).count(), 0);
      assert.equal(await a.locator('.notice', { hasText: 'no longer applied' }).count(), 0);
      assertNoProblems(problems);
    } finally {
      await context.close();
    }
  });
}
