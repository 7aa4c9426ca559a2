// Tool inputs, reasons and messages are untrusted: they are shown as text and run nothing, under the
// endpoint's strict Content-Security-Policy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  approve, assertNoProblems, card, deny, gotoThread, openPage, send,
  submit, threadId, waitCompleted, waitPaused, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const PATH = '<img src=x onerror=window.__pwned=1>';
const ADDR = '<img/src=x/onerror=window.__pwned=2>@example.com';
const SUBJECT = '<script>window.__pwned=3</script>';
const REASON = '<img src=x onerror=window.__pwned=4><script>window.__pwned=5</script> no thanks';

const env = withEndpointAndBrowser();

async function assertInert(page) {
  assert.equal(await page.evaluate(() => window.__pwned), undefined, 'injected code ran');
  assert.equal(await page.locator('#messages img, #cards img, #alert-region img, #messages script, #cards script').count(), 0);
}

for (const dialect of ['neuron', 'sidenet']) {
  test(`${dialect}: markup in tool inputs, reasons and messages is shown as text and runs nothing`, async () => {
    const { context, page, problems } = await openPage(env.browser);
    try {
      await gotoThread(page, env.endpoint.url, { thread: threadId(`xss_${dialect}`), dialect });
      const message = `delete ${PATH} and email ${ADDR} about ${SUBJECT}`;
      await send(page, message);
      await waitPaused(page, 2);
      // The user's own message, verbatim.
      assert.equal(await page.locator('#messages .msg-user .bubble-text').first().textContent(), message);
      const del = card(page, /Delet/);
      const mail = card(page, /email/i);
      assert.equal(await del.locator('dd').first().textContent(), PATH);
      const mailRows = await mail.locator('.kv-row').evaluateAll((rows) =>
        Object.fromEntries(rows.map((r) => [r.querySelector('dt').textContent, r.querySelector('dd').textContent])));
      assert.deepEqual(mailRows, { to: ADDR, subject: SUBJECT });
      await assertInert(page);

      await approve(del);
      await deny(mail, REASON);
      assert.ok((await mail.locator('.card-decision').textContent()).includes(REASON));
      await assertInert(page);
      await page.reload();
      await waitPaused(page, 2);
      await assertInert(page);

      await submit(page);
      await waitCompleted(page);
      const text = await page.locator('#messages').textContent();
      assert.ok(text.includes(PATH) && text.includes(ADDR) && text.includes(SUBJECT), text);
      if (dialect === 'neuron') assert.ok(text.includes(REASON), 'the reason is quoted as text');
      await page.waitForTimeout(100); // let any (wrongly) created image fail and fire onerror
      await assertInert(page);
      assertNoProblems(problems);
    } finally {
      await context.close();
    }
  });
}

test('a list of plain values shows each item apart: a comma inside one, or a right-to-left one, cannot blend with its neighbours', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, { thread: threadId('items'), dialect: 'neuron' });
    const views = await page.evaluate(async () => {
      const { valueView } = await import('/render.js');
      const items = (v) => {
        const el = valueView(v);
        return { text: el.textContent, parts: [...el.children].map((c) => [c.tagName, c.textContent]) };
      };
      return {
        two: items(['/tmp/a.log', '/tmp/b.log']),
        one: items(['/tmp/a.log, /tmp/b.log']),
        mixed: items(['alice@x.com', 'מנהל', '42', null, '']),
      };
    });
    assert.deepEqual(views.two.parts, [['BDI', '/tmp/a.log'], ['BDI', '/tmp/b.log']]);
    assert.deepEqual(views.one.parts, [['BDI', '/tmp/a.log, /tmp/b.log']]);
    assert.notDeepEqual(views.one.parts, views.two.parts);
    // Each string isolated in its own <bdi>; null and the empty string in words.
    assert.deepEqual(views.mixed.parts, [['BDI', 'alice@x.com'], ['BDI', 'מנהל'], ['BDI', '42'], ['SPAN', 'null'], ['SPAN', '(empty)']]);
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});
