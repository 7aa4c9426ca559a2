// The demo builds the item of a settled message once: the client keeps a message's object until it
// changes, so a turn adds the items of its own messages and keeps the nodes of the ones before it,
// in both dialects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  approve, assertNoProblems, card, gotoThread, openPage, send, submit, threadId, waitCompleted, waitPaused,
  waitQuiet, waitSettled, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser();

for (const dialect of ['neuron', 'sidenet']) {
  test(`${dialect}: a turn keeps the items of the messages before it`, async () => {
    const { context, page, problems } = await openPage(env.browser);
    try {
      await gotoThread(page, env.endpoint.url, { thread: threadId('keep'), dialect });
      await waitSettled(page);
      for (const text of ['hello', 'read /tmp/notes.txt']) {
        await send(page, text);
        await waitCompleted(page);
      }
      // Mark the items shown once Neuron's quiet reload after the last POST has landed: it shows
      // the messages as the server stored them (the user's with its id, the tool steps before the
      // answer), which are new objects, so marking before it could count its items as renewed.
      await waitQuiet(page);
      const before = await page.evaluate(() => {
        const items = [...document.querySelectorAll('#messages > li')];
        items.forEach((li, i) => (li.__kept = i));
        return items.length;
      });
      assert.ok(before >= 4, `${before} items`);
      // A turn with a pause: the card hides its call while it is shown, then the result comes.
      await send(page, 'delete /tmp/keep.log');
      await waitPaused(page, 1);
      await approve(card(page, /Delete|Deleting/));
      await submit(page);
      await waitCompleted(page);
      await waitQuiet(page); // (Neuron: the quiet reload after the POST lands, and keeps them.)
      const after = await page.evaluate(() => {
        const items = [...document.querySelectorAll('#messages > li')];
        return { count: items.length, kept: items.map((li) => li.__kept ?? null) };
      });
      assert.ok(after.count > before, `${after.count} items after ${before}`);
      assert.deepEqual(after.kept.slice(0, before), [...Array(before).keys()], 'the earlier items are the same nodes');
      assert.ok(after.kept.slice(before).every((k) => k === null), 'the turn\'s items are new');
      assertNoProblems(problems);
    } finally {
      await context.close();
    }
  });
}
