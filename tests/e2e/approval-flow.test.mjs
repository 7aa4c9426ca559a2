// The main path, in both dialects, on a desktop and a phone-sized window: a message pauses on two gated
// tools, one is approved, the other denied with a reason, the decisions are submitted, and the run
// completes. Screenshots of the paused and completed states go to artifacts/.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DESKTOP, PHONE, approve, assertNoProblems, card, deny, gotoThread, lastAnswer, openPage,
  screenshot, submit, threadId, waitCompleted, waitPaused, waitSettled, send, cards, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const REQUEST = 'Delete /tmp/old-logs.txt and email team@example.com about Logs cleanup';
const REASON = 'Do not email the whole team; ask Maya first.';

const env = withEndpointAndBrowser();

for (const dialect of ['neuron', 'sidenet']) {
  describe(`${dialect}: pause on two gated tools, approve one, deny one with a reason`, () => {
    test('completes with the decisions applied', async () => {
      const where = { thread: threadId(dialect), dialect };
      const desk = await openPage(env.browser, { viewport: DESKTOP });
      const phone = await openPage(env.browser, { viewport: PHONE });
      try {
        const { page } = desk;
        await gotoThread(page, env.endpoint.url, where);
        await send(page, REQUEST);
        await waitPaused(page, 2);

        // One card per gated tool: tool name, the reason as headline, the real inputs as key/value.
        const del = card(page, /Delete|Deleting/);
        const mail = card(page, /email/i);
        await del.waitFor();
        await mail.waitFor();
        assert.match(await del.locator('.tool-name').textContent(), /^delete_file$/);
        assert.match(await mail.locator('.tool-name').textContent(), /^send_email$/);
        const mailInputs = await mail.locator('.kv-row').allTextContents();
        assert.ok(mailInputs.some((t) => t.includes('to') && t.includes('team@example.com')), mailInputs.join(' | '));
        assert.ok(mailInputs.some((t) => t.includes('subject') && t.includes('Logs cleanup')), mailInputs.join(' | '));
        assert.ok((await del.locator('.kv').textContent()).includes('/tmp/old-logs.txt'));

        // Focus moved to the first card; the composer is locked with a way out.
        await page.waitForFunction(() => document.activeElement?.matches('article.card'));
        assert.equal(await page.getByRole('button', { name: 'Send', exact: true }).count(), 0);
        assert.ok(await page.getByRole('button', { name: 'Reject all and send' }).isVisible());
        assert.match(await page.locator('#status').textContent(), /2 of 2 tool calls/);
        await screenshot(page, `paused-${dialect}.png`);

        // The same thread on a phone-sized window shows the same pause.
        await gotoThread(phone.page, env.endpoint.url, where);
        await waitPaused(phone.page, 2);
        // The page itself never scrolls (only the conversation does): the header and the
        // composer stay in view, whatever the cards hold.
        for (const p of [page, phone.page]) {
          const [height, scroll] = await p.evaluate(() => [innerHeight, document.scrollingElement.scrollHeight]);
          assert.ok(scroll <= height, `the page overflows: ${scroll} > ${height}`);
        }
        await screenshot(phone.page, `paused-${dialect}-phone.png`);

        // A decision on one card renders the others unchanged: not a node of the email card is
        // replaced or touched (a selection or a screen reader's place in it stays).
        await mail.evaluate((el) => {
          window.__mailMutations = [];
          window.__mailRecord = (records) => {
            for (const r of records) window.__mailMutations.push(`${r.type} ${r.attributeName ?? ''} ${r.target.className || r.target.nodeName}`);
          };
          window.__mailObserver = new MutationObserver(window.__mailRecord);
          window.__mailObserver.observe(el, { subtree: true, childList: true, attributes: true, characterData: true });
        });
        await approve(del);
        await page.waitForFunction(() => document.querySelector('#decided-count')?.textContent.includes('1 of 2 decided'));
        const touched = await page.evaluate(() => {
          window.__mailRecord(window.__mailObserver.takeRecords());
          window.__mailObserver.disconnect();
          return window.__mailMutations;
        });
        assert.deepEqual(touched, [], 'the undecided card was re-rendered');
        await deny(mail, REASON);
        assert.match(await del.locator('.badge').textContent(), /Approved/);
        assert.match(await mail.locator('.badge').textContent(), /Denied/);
        assert.ok((await mail.locator('.card-decision').textContent()).includes(REASON));
        // Where the reason goes, said as it is: Neuron sends it, a Sidenet continuation has no room
        // for one.
        assert.equal((await mail.locator('.card-decision').textContent()).includes('not sent to the agent'),
          dialect === 'sidenet');

        // Decided cards stay revisable until submitted: flip and flip back.
        await deny(del, '');
        assert.match(await del.locator('.badge').textContent(), /Denied/);
        await approve(del);
        assert.match(await del.locator('.badge').textContent(), /Approved/);
        assert.match(await page.locator('#decided-count').textContent(), /2 of 2 decided/);

        await submit(page);
        await waitCompleted(page);
        const answer = await lastAnswer(page);
        assert.match(answer, /delete_file \/tmp\/old-logs\.txt: done\./);
        if (dialect === 'neuron') {
          // Neuron carries the reason to the model verbatim: the final answer quotes it.
          assert.ok(answer.includes(`"${REASON}"`), answer);
        } else {
          // Sidenet declines carry no reason on the wire; the transcript still shows the user's reason.
          assert.match(answer, /send_email to team@example\.com: not approved by the user\./);
        }
        // The transcript marks the denied call as such, with the reason.
        const denied = page.locator('#messages .tool-rejected');
        await denied.first().waitFor();
        assert.match(await denied.first().textContent(), /send_email/);
        assert.match(await denied.first().locator('.badge').textContent(), /Rejected|Denied/);
        if (dialect === 'neuron') assert.ok((await denied.first().textContent()).includes(REASON));
        assert.equal(await cards(page).count(), 0);
        // The composer is open again.
        assert.ok(await page.getByRole('button', { name: 'Send', exact: true }).isVisible());
        await screenshot(page, `completed-${dialect}.png`);

        await phone.page.reload();
        await waitSettled(phone.page);
        assert.equal(await lastAnswer(phone.page), answer);
        await screenshot(phone.page, `completed-${dialect}-phone.png`);

        assertNoProblems(desk.problems, 'desktop page');
        assertNoProblems(phone.problems, 'phone page');
      } finally {
        await desk.context.close();
        await phone.context.close();
      }
    });
  });
}

test('neuron: after a partial submission the approved card says the server has it, not that it waits for a submit', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, { thread: threadId('partialsent'), dialect: 'neuron' });
    await send(page, 'delete /tmp/a.txt and email ops@example.com about hi');
    await waitPaused(page, 2);
    const del = card(page, /Delet/);
    await approve(del);
    assert.match(await del.locator('.card-decision').textContent(), /once you submit/);
    await submit(page);
    await page.waitForFunction(() => /sent/.test(document.querySelector('#cards article.card .badge')?.textContent ?? ''));
    assert.match(await del.locator('.badge').textContent(), /Approved · sent/);
    const said = await del.locator('.card-decision').textContent();
    assert.doesNotMatch(said, /once you submit/);
    assert.match(said, /the server has your approval/);
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});
