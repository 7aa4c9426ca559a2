// The composer and the thread controls: Sidenet replies stream in progressively with a busy indicator;
// the locked composer's way out ("Reject all and send"); "New thread" and "Open" with the id in the URL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  assertNoProblems, gotoThread, lastAnswer, openPage, send, threadId, waitCompleted, waitPaused, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

// Slower chunks, so the stream can be watched.
const env = withEndpointAndBrowser({ CHUNK_DELAY_MS: '40' });

test('sidenet: the reply streams in progressively while a busy indicator shows', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, { thread: threadId('stream'), dialect: 'sidenet' });
    await page.evaluate(() => {
      window.__seen = { lengths: [], busy: false };
      new MutationObserver(() => {
        const t = document.querySelector('#messages .msg-streaming .bubble-text');
        if (t) window.__seen.lengths.push(t.textContent.length);
        if (!document.getElementById('busy').hidden) window.__seen.busy = true;
      }).observe(document.getElementById('app'), { subtree: true, childList: true, characterData: true, attributes: true });
    });
    await send(page, 'hello there, could you tell me what you are able to do for me today');
    await waitCompleted(page);
    const seen = await page.evaluate(() => window.__seen);
    const distinct = new Set(seen.lengths.filter((n) => n > 0));
    assert.ok(distinct.size >= 2, `expected the text to grow in steps, saw lengths ${[...distinct]}`);
    assert.ok(seen.busy, 'the busy indicator showed');
    assert.equal(await page.locator('#busy').isVisible(), false);
    assert.match(await lastAnswer(page), /I am a scripted agent/);
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});

for (const dialect of ['neuron', 'sidenet']) {
  test(`${dialect}: "Reject all and send" is the way out of a locked composer`, async () => {
    const { context, page, problems } = await openPage(env.browser);
    try {
      await gotoThread(page, env.endpoint.url, { thread: threadId(`out_${dialect}`), dialect });
      await send(page, 'delete /tmp/a.txt and email ops@example.com about hi');
      await waitPaused(page, 2);
      const box = page.getByRole('textbox', { name: 'Message' });
      assert.equal(await page.getByRole('button', { name: 'Send', exact: true }).count(), 0);
      await box.fill('read notes.txt');
      await page.getByRole('button', { name: 'Reject all and send' }).click();
      await page.locator('#messages .msg-user', { hasText: 'read notes.txt' }).waitFor();
      await waitCompleted(page);
      assert.match(await lastAnswer(page), /read_file notes\.txt: done\./);
      assert.equal(await page.locator('#messages .tool-rejected').count(), 2);
      assert.ok(await page.getByRole('button', { name: 'Send', exact: true }).isVisible());
      assertNoProblems(problems);
    } finally {
      await context.close();
    }
  });
}

test('"New thread" and "Open" switch threads and keep the id in the URL', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    const first = threadId('first');
    await gotoThread(page, env.endpoint.url, { thread: first, dialect: 'neuron' });
    await send(page, 'read notes.txt');
    await waitCompleted(page);
    await page.getByRole('button', { name: 'New thread' }).click();
    await page.locator('#empty').waitFor();
    const fresh = new URL(page.url()).searchParams.get('thread');
    assert.ok(fresh && fresh !== first, fresh);
    assert.equal(await page.locator('#thread-id').textContent(), fresh);
    assert.equal(await page.locator('#messages .msg').count(), 0);

    await page.getByLabel('Thread id to open').fill(first);
    await page.getByRole('button', { name: 'Open', exact: true }).click();
    await page.locator('#messages .msg-user', { hasText: 'read notes.txt' }).waitFor();
    assert.equal(new URL(page.url()).searchParams.get('thread'), first);

    // Choosing the other dialect offers a thread in it; the button starts one.
    await page.getByRole('radio', { name: 'Sidenet' }).check();
    assert.equal(new URL(page.url()).searchParams.get('thread'), first, 'choosing alone stays on the thread');
    await page.getByRole('button', { name: 'Start a Sidenet thread' }).click();
    await page.locator('#empty').waitFor();
    assert.equal(new URL(page.url()).searchParams.get('dialect'), 'sidenet');
    // Back goes back to the first thread.
    await page.goBack();
    await page.locator('#messages .msg-user', { hasText: 'read notes.txt' }).waitFor();
    assert.equal(await page.getByRole('radio', { name: 'Neuron' }).isChecked(), true);
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});
