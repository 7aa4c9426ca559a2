// A decision the server accepted while its card is still shown (Sidenet: the reply to it was cut
// and the thread could not be reloaded to see where the run stands) is shown as settled: nothing
// on its card to click, while the other card stays open.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  approve, assertNoProblems, card, gotoThread, lastAnswer, openPage, screenshot, send, submit,
  threadId, waitCompleted, waitPaused, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser();

test('sidenet: a card whose decision the server accepted is settled, not clickable', async () => {
  const where = { thread: threadId('accepted'), dialect: 'sidenet' };
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, where);
    await send(page, 'delete /tmp/x.log and email a@example.com about x');
    await waitPaused(page, 2);
    // The continuation reaches the server, which accepts it; its reply is cut before it tells
    // anything, and the thread cannot be reloaded.
    await page.route(/\/v1\/chat$/, async (route) => {
      const response = await route.fetch();
      await response.body();
      await route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: '' });
    });
    await page.route(/\/v1\/(threads\/|chat\/stream)/, (route) => route.abort('connectionrefused'));
    await approve(card(page, /Delet/));
    await submit(page);
    const alert = page.locator('#alert-region .alert');
    await alert.waitFor({ timeout: 15_000 });

    const accepted = card(page, /Delet/);
    assert.equal(await accepted.getAttribute('data-settled'), 'true');
    assert.equal(await accepted.getByRole('button').count(), 0, 'nothing to click on a settled card');
    assert.match(await accepted.locator('.card-decision').textContent(), /You approved this call\. The server accepted it\./);
    assert.match(await accepted.locator('.badge').textContent(), /Approved · sent/);
    const open = card(page, /email/i);
    assert.equal(await open.getAttribute('data-settled'), 'false');
    assert.equal(await open.getByRole('button', { name: 'Approve' }).count(), 1);
    await screenshot(page, 'accepted-sidenet.png');

    // Reachable again: a reload shows where the run stands (the call ran), the other card waits.
    await page.unrouteAll();
    await page.getByRole('button', { name: 'Reload thread' }).click();
    await waitPaused(page, 1);
    await approve(card(page, /email/i));
    await submit(page);
    await waitCompleted(page);
    assert.match(await lastAnswer(page), /delete_file \/tmp\/x\.log: done\. send_email to a@example\.com: done\./);
    assertNoProblems(problems.filter((p) => !/ERR_CONNECTION_REFUSED|ERR_FAILED/.test(p)));
  } finally {
    await context.close();
  }
});
