// Keyboard only: type a request, let the run pause, approve one card and deny the other with a reason,
// submit, without the mouse. Focus moves to the first card when the run pauses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  assertNoProblems, gotoThread, lastAnswer, openPage, threadId,
  waitCompleted, waitPaused, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser();

/** What has focus: tag, accessible-ish name and id. */
const focused = (page) =>
  page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return { tag: 'body', name: '', id: '' };
    const label = el.getAttribute('aria-label') || el.labels?.[0]?.textContent || el.textContent || '';
    return { tag: el.tagName.toLowerCase(), name: label.trim().replace(/\s+/g, ' '), id: el.id, card: !!el.closest('#cards') };
  });

async function tabTo(page, predicate, what, max = 40) {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const f = await focused(page);
    if (predicate(f)) return f;
  }
  throw new Error(`Tab never reached ${what}`);
}

for (const dialect of ['neuron', 'sidenet']) {
  test(`${dialect}: keyboard-only approval`, async () => {
    const { context, page, problems } = await openPage(env.browser);
    try {
      await gotoThread(page, env.endpoint.url, { thread: threadId(`kbd_${dialect}`), dialect });
      await tabTo(page, (f) => f.id === 'composer-input', 'the message box');
      await page.keyboard.type('delete /srv/cache and email ops@example.com about Friday deploy');
      await page.keyboard.press('Enter');
      await waitPaused(page, 2);
      await page.waitForFunction(() => document.activeElement?.matches('#cards article.card'));

      // First card: Tab to Approve, press Space.
      let f = await tabTo(page, (x) => x.card && x.name.endsWith('Approve'), 'Approve');
      await page.keyboard.press('Space');
      await page.waitForFunction(() => document.querySelector('#cards .card')?.dataset.state === 'approved');
      // Focus moved on to the next undecided card: Tab to its Deny, Enter, type a reason, Enter.
      assert.ok((await focused(page)).card, 'focus stays in the cards');
      f = await tabTo(page, (x) => x.card && x.name.endsWith('Deny'), 'Deny');
      await page.keyboard.press('Enter');
      f = await focused(page);
      assert.equal(f.tag, 'textarea');
      await page.keyboard.type('Not on a Friday');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.querySelectorAll('#cards .card')[1]?.dataset.state === 'rejected');
      // Every call decided: focus is on "Submit decisions".
      f = await focused(page);
      assert.equal(f.name, 'Submit decisions');
      await page.keyboard.press('Enter');
      await waitCompleted(page);
      const answer = await lastAnswer(page);
      assert.match(answer, /delete_file \/srv\/cache: done\./);
      if (dialect === 'neuron') assert.match(answer, /send_email to ops@example\.com: rejected — "Not on a Friday"\./);
      else assert.match(answer, /send_email to ops@example\.com: not approved by the user\./);
      assertNoProblems(problems);
    } finally {
      await context.close();
    }
  });
}
