// The demo's Stop button, against slow Sidenet streams (chunks 250 ms apart, so a reply is seen
// streaming): it shows only while something is on its way, and stops a reply without locking
// anything. (stop-card.test.mjs: a reply stopped after it announced a call.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  assertNoProblems, gotoThread, openPage, phaseOf as phase, send, stopButton as stop, threadId, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser({ CHUNK_DELAY_MS: '250' });

test('sidenet: Stop shows while a reply streams, stops it, and the next message goes', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, { thread: threadId('stop_text'), dialect: 'sidenet' });
    assert.equal(await stop(page).isVisible(), false, 'Stop before anything is sent');
    await send(page, 'tell me about yourself');
    await stop(page).waitFor({ timeout: 5_000 });
    // Some of the reply has arrived, not all of it.
    await page.locator('#messages .msg-assistant .bubble-text').last().filter({ hasText: /\S/ }).waitFor({ timeout: 5_000 });
    assert.equal(await phase(page), 'streaming');
    await stop(page).click();

    await stop(page).waitFor({ state: 'hidden', timeout: 2_000 });
    assert.notEqual(await phase(page), 'streaming');
    assert.match(await page.locator('#status').textContent(), /^Stopped\./);
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'composer-input', 'focus after Stop');
    // The client is free for the next message, which streams to its end.
    await send(page, 'read /etc/hosts please');
    await page.locator('#app[data-phase="streaming"], #app[data-phase="sending"]').waitFor({ timeout: 5_000 });
    await page.locator('#app[data-phase="completed"]').waitFor({ timeout: 20_000 });
    assert.equal(await stop(page).isVisible(), false, 'Stop once the reply ended');
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});
