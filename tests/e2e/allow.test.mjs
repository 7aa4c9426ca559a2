// "Always allow": in both dialects, a card's "Always allow" approves that tool's calls without
// asking for the rest of the browser session. The next call of the tool runs without a pause, the
// allowance survives a reload (sessionStorage), and "Ask again" takes it back.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  assertNoProblems, card, cards, deny, gotoThread, lastAnswer, openPage, send, submit, threadId,
  waitCompleted, waitPaused, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser();

/** Waits until the last answer matches `re` and the run is over. */
async function waitAnswer(page, re) {
  await page.waitForFunction((source) => {
    const bubbles = document.querySelectorAll('#messages .msg-assistant .bubble-text');
    const last = bubbles[bubbles.length - 1]?.textContent ?? '';
    return new RegExp(source).test(last) && document.getElementById('app')?.dataset.phase === 'completed';
  }, re.source, { timeout: 15_000 });
}

for (const dialect of ['neuron', 'sidenet']) {
  describe(`${dialect}: always allow a tool for the session`, () => {
    test('its next calls run without asking, until asked again', async () => {
      const where = { thread: threadId(`allow_${dialect}`), dialect };
      const { context, page, problems } = await openPage(env.browser);
      try {
        await gotoThread(page, env.endpoint.url, where);
        await send(page, 'Delete /tmp/a.txt and email team@example.com about Allow');
        await waitPaused(page, 2);
        const del = card(page, /Delete|Deleting/);
        const mail = card(page, /email/i);
        await del.getByRole('button', { name: 'Always allow delete_file this session' }).click();

        // The delete card is approved, saying why; the allowance is listed; email still waits.
        assert.match(await del.locator('.badge').textContent(), /Approved/);
        assert.match(await del.locator('.card-decision').textContent(), /allowed delete_file for this session/);
        assert.equal(await del.getByRole('button', { name: /Always allow/ }).isVisible(), false);
        const allowed = page.getByRole('region', { name: /Allowed this session/ });
        assert.ok(await allowed.isVisible());
        assert.match(await allowed.textContent(), /delete_file/);
        assert.match(await mail.locator('.badge').textContent(), /Needs your decision/);

        await deny(mail, 'Not today');
        await submit(page);
        await waitCompleted(page);
        assert.match(await lastAnswer(page), /delete_file \/tmp\/a\.txt: done\./);

        // The next delete runs without a pause.
        await send(page, 'Delete /tmp/b.txt');
        await waitAnswer(page, /delete_file \/tmp\/b\.txt: done\./);
        assert.equal(await cards(page).count(), 0);

        // A reload keeps the allowance for this session.
        await page.reload();
        await page.locator('#app[data-phase="completed"], #app[data-phase="idle"]').waitFor();
        await allowed.waitFor();
        await send(page, 'Delete /tmp/c.txt');
        await waitAnswer(page, /delete_file \/tmp\/c\.txt: done\./);

        // "Ask again": the next delete pauses for a decision.
        await allowed.getByRole('button', { name: 'Ask again before running delete_file' }).click();
        assert.equal(await allowed.isVisible(), false);
        await send(page, 'Delete /tmp/d.txt');
        await waitPaused(page, 1);
        assert.match(await card(page, /Delete|Deleting/).locator('.badge').textContent(), /Needs your decision/);

        // What storage holds is read with care: blank names (a hand-edited storage) are skipped.
        await page.evaluate(() => sessionStorage.setItem('toolgate-demo:allowed', JSON.stringify(['', ' ', 'send_email', 7])));
        await page.reload();
        await allowed.waitFor();
        assert.equal(await allowed.locator('li').count(), 1);
        assert.match(await allowed.textContent(), /send_email/);
        assertNoProblems(problems);
      } finally {
        await context.close();
      }
    });

    test('a call whose approval the person undid stays undecided after a reload', async () => {
      // The allowance approves each call once: Undo on its card is the person's word, which a
      // reload (the session's tools allowed again on the new client) must not overrule.
      const where = { thread: threadId(`allow_undo_${dialect}`), dialect };
      const { context, page, problems } = await openPage(env.browser);
      try {
        await gotoThread(page, env.endpoint.url, where);
        await send(page, 'Delete /tmp/undo.txt and email team@example.com about Undo');
        await waitPaused(page, 2);
        const del = card(page, /Delete|Deleting/);
        await del.getByRole('button', { name: 'Always allow delete_file this session' }).click();
        assert.match(await del.locator('.badge').textContent(), /Approved/);
        await del.getByRole('button', { name: /^Undo delete_file/ }).click();
        assert.match(await del.locator('.badge').textContent(), /Needs your decision/);

        await page.reload();
        await waitPaused(page, 2);
        await page.getByRole('region', { name: /Allowed this session/ }).waitFor();
        assert.match(await card(page, /Delete|Deleting/).locator('.badge').textContent(), /Needs your decision/);
        assert.match(await card(page, /email/i).locator('.badge').textContent(), /Needs your decision/);
        assertNoProblems(problems);
      } finally {
        await context.close();
      }
    });
  });
}
