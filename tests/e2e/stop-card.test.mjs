// The demo's Stop button, against a slow Sidenet stream (chunks 600 ms apart): a reply stopped
// after it announced one call of two (the approval chunk read, the reply not ended) leaves that
// card, answerable: the run is paused on it, and the continuation announces the call still waiting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  approve, assertNoProblems, card, cards, deny, gotoThread, openPage, phaseOf as phase, send, stopButton as stop, submit,
  threadId, waitCompleted, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser({ CHUNK_DELAY_MS: '600' });

test('sidenet: a reply stopped after it announced a call leaves that card answerable, and the run goes on', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, { thread: threadId('stop_card'), dialect: 'sidenet' });
    await send(page, 'delete /var/log/app.log and buy 4 tickets at 60');
    // Stopped as soon as the reply announced the first call (its tool in the streaming message
    // awaits approval; no card yet: the cards show when the reply ends), before the second.
    await page.locator('#messages .tool-pending').first().waitFor({ timeout: 30_000 });
    await stop(page).click();
    await stop(page).waitFor({ state: 'hidden', timeout: 2_000 });
    // The card announced before Stop, alone; on a slow machine the second approval chunk may be
    // read before the Stop lands (chunks 600 ms apart): then both, each kept all the same.
    const n = await cards(page).count();
    assert.ok(n === 1 || n === 2, `${n} cards after Stop`);
    assert.equal(await phase(page), 'awaiting_approval');
    assert.match(await page.locator('#status').textContent(), /^Stopped\. The agent still waits/);

    const first = cards(page).first();
    assert.equal(await first.getByRole('button', { name: 'Approve' }).isVisible(), true, 'the card is answerable');
    await approve(first);
    if (n === 1) {
      await submit(page);
      // The continuation announces the call still waiting: its card, answered in turn.
      await page.locator('#app[data-phase="awaiting_approval"]').waitFor({ timeout: 20_000 });
    }
    const open = card(page, /tickets/i);
    await open.waitFor({ timeout: 20_000 });
    await deny(open, 'Not now');
    await submit(page);
    await waitCompleted(page);
    assert.equal(await cards(page).count(), 0);
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});
