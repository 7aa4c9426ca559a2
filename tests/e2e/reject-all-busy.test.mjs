// "Reject all and send" while another request runs: the button is disabled (as Submit is) and a
// click does nothing, and a call the client refuses gives the typed text back: the person's message
// is never lost. The decisions POST is held at the network layer until the test releases it, so the
// submit is surely in flight when the button is clicked.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  approve, assertNoProblems, card, gotoThread, lastAnswer, openPage, send, submit, threadId, waitCompleted, waitPaused,
  withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser();
const TEXT = 'read notes.txt';

/** Pauses on two cards, approves one and submits; the submission is held until `release()`. */
async function submitHeld(page, label) {
  await gotoThread(page, env.endpoint.url, { thread: threadId(label), dialect: 'neuron' });
  await send(page, 'Delete /tmp/busy.txt and email team@example.com about Busy');
  await waitPaused(page, 2);
  let release;
  const released = new Promise((r) => (release = r));
  let arrived;
  const held = new Promise((r) => (arrived = r));
  await page.route('**/threads/*/chat', async (route) => {
    if (route.request().method() === 'POST' && /"decisions"/.test(route.request().postData() ?? '')) {
      arrived();
      await released;
    }
    await route.continue();
  });
  await approve(card(page, /Delete|Deleting/));
  await submit(page);
  await held;
  await page.locator('#app[data-phase="submitting"]').waitFor();
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.fill(TEXT);
  const button = page.getByRole('button', { name: 'Reject all and send' });
  assert.equal(await button.getAttribute('aria-disabled'), 'true', 'disabled while the submission runs');
  return { box, button, release };
}

/** After the held submission: the run still waits on the email, and Reject all goes ahead. */
async function finish(page, box, button) {
  await page.locator('#app[data-phase="awaiting_approval"]').waitFor();
  await page.waitForFunction(() => document.getElementById('reject-all').getAttribute('aria-disabled') === 'false');
  assert.equal(await box.inputValue(), TEXT);
  await button.click();
  await page.locator('#messages .msg-user', { hasText: TEXT }).waitFor();
  await waitCompleted(page);
  assert.match(await lastAnswer(page), /read_file notes\.txt: done\./);
  assert.equal(await box.inputValue(), '');
}

describe('neuron: Reject all and send while a submission runs', () => {
  test('the click does nothing and the typed text stays', async () => {
    const { context, page, problems } = await openPage(env.browser);
    try {
      const { box, button, release } = await submitHeld(page, 'rab_click');
      await button.click({ force: true });
      // Give a refusal time to show (it would come back within a few tasks).
      await page.waitForTimeout(200);
      assert.equal(await box.inputValue(), TEXT, 'the composer keeps the text');
      assert.equal(await page.locator('#alert-region .alert').count(), 0, 'no "another request is still running" notice');
      release();
      await finish(page, box, button);
      assertNoProblems(problems);
    } finally {
      await context.close();
    }
  });

  test('a call the client refuses (busy) gives the text back', async () => {
    const { context, page, problems } = await openPage(env.browser);
    try {
      const { box, button, release } = await submitHeld(page, 'rab_refused');
      // The button as a stale render would leave it (enabled) though the client is busy: the click
      // reaches the client, which refuses it.
      await page.evaluate(() => {
        const b = document.getElementById('reject-all');
        b.setAttribute('aria-disabled', 'false');
        b.click();
      });
      await page.locator('#alert-region .alert[data-code="busy"]').waitFor();
      await page.waitForFunction((t) => document.getElementById('composer-input').value === t, TEXT);
      release();
      await finish(page, box, button);
      assertNoProblems(problems);
    } finally {
      await context.close();
    }
  });
});
