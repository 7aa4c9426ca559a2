// Reloading the page mid-pause brings back the cards and the draft decisions (kept in localStorage by
// the client), and the restored drafts can be submitted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  approve, assertNoProblems, card, cards, deny, gotoThread, lastAnswer, openPage, send, submit, threadId, waitCompleted, waitPaused, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const REASON = 'Keep the logs until the audit is over';

const env = withEndpointAndBrowser();

for (const dialect of ['neuron', 'sidenet']) {
  test(`${dialect}: a reload mid-pause restores the cards and the drafts`, async () => {
    const where = { thread: threadId(`reload_${dialect}`), dialect };
    const { context, page, problems } = await openPage(env.browser);
    try {
      await gotoThread(page, env.endpoint.url, where);
      await send(page, 'delete /var/log/app.log and buy 4 tickets at 60');
      await waitPaused(page, 2);
      await approve(card(page, /tickets/i));
      await deny(card(page, /Delet/), REASON);
      await page.getByRole('textbox', { name: 'Message' }).fill('');

      await page.reload();
      await waitPaused(page, 2);
      const tickets = card(page, /tickets/i);
      const del = card(page, /Delet/);
      await page.waitForFunction(() => document.querySelectorAll('#cards .card[data-state="pending"]').length === 0);
      assert.match(await tickets.locator('.badge').textContent(), /Approved/);
      assert.match(await del.locator('.badge').textContent(), /Denied/);
      assert.ok((await del.locator('.card-decision').textContent()).includes(REASON));
      assert.equal(await tickets.getByRole('button', { name: 'Approve' }).getAttribute('aria-pressed'), 'true');
      assert.equal(await del.getByRole('button', { name: 'Deny' }).getAttribute('aria-pressed'), 'true');
      // Still revisable after the reload.
      assert.ok(await del.getByRole('button', { name: 'Undo' }).isVisible());
      assert.match(await page.locator('#decided-count').textContent(), /2 of 2 decided/);

      await submit(page);
      await waitCompleted(page);
      const answer = await lastAnswer(page);
      assert.match(answer, /buy_ticket 4 x 60: done\./);
      if (dialect === 'neuron') assert.ok(answer.includes(`"${REASON}"`), answer);
      else assert.match(answer, /delete_file \/var\/log\/app\.log: not approved by the user\./);
      assert.equal(await cards(page).count(), 0);
      assertNoProblems(problems);
    } finally {
      await context.close();
    }
  });
}
