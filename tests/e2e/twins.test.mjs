// Against an endpoint that gives every call the tool's name as its callId, as Neuron's Gemini
// provider does (NEURON_CALL_IDS=name): two calls of one tool in a step share a callId, and
// Neuron keys the decisions by callId, so one decision answers both. Each call still gets a card
// of its own, showing its own arguments and saying that one decision answers both: no call goes
// unseen behind another's card.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  approve, assertNoProblems, card, cards, deny, gotoThread, lastAnswer, openPage, send, startEndpoint, submit,
  threadId, waitCompleted, waitPaused, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';
import { readEffects } from '../../www/server/testkit.mjs';

const dataDir = mkdtempSync(path.join(tmpdir(), 'toolgate-e2e-twins-'));
const env = withEndpointAndBrowser({ NEURON_CALL_IDS: 'name', DATA_DIR: dataDir });
after(() => rmSync(dataDir, { recursive: true, force: true }));

const effects = (thread) => readEffects(dataDir).filter((e) => e.threadId === thread);

describe('neuron, two calls under one callId', () => {
  test('each call has its card; one decision answers both, and both run', async () => {
    const { context, page, problems } = await openPage(env.browser);
    const thread = threadId('twins');
    try {
      await gotoThread(page, env.endpoint.url, { thread, dialect: 'neuron' });
      await send(page, 'delete /tmp/twin-a.log and delete /tmp/twin-b.log; email team@example.com about Twins');
      await waitPaused(page, 3);
      const [a, b, mail] = [0, 1, 2].map((i) => cards(page).nth(i));
      assert.equal(await a.getAttribute('data-call-id'), 'delete_file');
      assert.equal(await b.getAttribute('data-call-id'), 'delete_file');
      assert.match(await a.locator('.card-inputs').textContent(), /\/tmp\/twin-a\.log/);
      assert.match(await b.locator('.card-inputs').textContent(), /\/tmp\/twin-b\.log/);
      for (const twin of [a, b]) {
        const note = twin.locator('.card-twins');
        assert.ok(await note.isVisible());
        assert.match(await note.textContent(), /one other by the same id: one decision answers both/);
      }
      assert.equal(await mail.locator('.card-twins').isVisible(), false);
      // Each card is named by its own call, so a screen reader's list tells them apart.
      assert.equal(await card(page, /twin-a\.log/).count(), 1);
      assert.equal(await card(page, /twin-b\.log/).count(), 1);

      // Approving one shows both approved: that is what the server will do.
      await approve(a);
      await page.waitForFunction(() => [...document.querySelectorAll('#cards article.card')]
        .slice(0, 2).every((c) => c.dataset.state === 'approved'));
      assert.equal(await mail.getAttribute('data-state'), 'pending');
      assert.equal((await page.locator('#decided-count').textContent()).trim(), '2 of 3 decided');

      await deny(mail, 'Not now');
      await submit(page);
      await waitCompleted(page);
      const answer = await lastAnswer(page);
      assert.match(answer, /delete_file \/tmp\/twin-a\.log: done\./);
      assert.match(answer, /delete_file \/tmp\/twin-b\.log: done\./);
      assert.ok(answer.includes('send_email to team@example.com: rejected — "Not now".'), answer);
      assert.deepEqual(effects(thread).map((e) => e.inputs.path), ['/tmp/twin-a.log', '/tmp/twin-b.log']);
      // The thread shows each call with its own result, paired by place, not by callId alone.
      const results = () => page.locator('#messages .tool-done').evaluateAll((els) => els.map((el) =>
        [el.querySelector('.kv')?.textContent ?? '', el.querySelector('.tool-result pre')?.textContent ?? '']));
      const pairs = (rows) => rows.map(([inputs, result]) => [/\/tmp\/twin-\w\.log/.exec(inputs)?.[0], result]);
      assert.deepEqual(pairs(await results()), [
        ['/tmp/twin-a.log', 'Deleted /tmp/twin-a.log'],
        ['/tmp/twin-b.log', 'Deleted /tmp/twin-b.log'],
      ]);

      // A later turn calls the tool again, under the same callId: each call keeps its own result.
      await send(page, 'delete /tmp/twin-c.log');
      await waitPaused(page, 1);
      assert.equal(await cards(page).first().locator('.card-twins').isVisible(), false);
      await approve(cards(page).first());
      await submit(page);
      await waitCompleted(page);
      await page.waitForFunction(() => document.querySelectorAll('#messages .tool-done').length === 3);
      assert.deepEqual(pairs(await results()), [
        ['/tmp/twin-a.log', 'Deleted /tmp/twin-a.log'],
        ['/tmp/twin-b.log', 'Deleted /tmp/twin-b.log'],
        ['/tmp/twin-c.log', 'Deleted /tmp/twin-c.log'],
      ]);
      assertNoProblems(problems);
    } finally {
      await context.close();
    }
  });

  // Neuron's append-only history keeps an answered tool_call showing "pending" for ever (the
  // outcome is on the tool_call_result after it). A later pause whose card reuses that callId
  // must not hide the earlier call from the transcript: the cards stand for the paused message's
  // calls alone.
  test('an earlier call under the paused callId stays in the transcript (append-only history)', async () => {
    const endpoint = await startEndpoint({ NEURON_CALL_IDS: 'name', NEURON_HISTORY: 'append-only' });
    const { context, page, problems } = await openPage(env.browser);
    const thread = threadId('twins-append');
    try {
      await gotoThread(page, endpoint.url, { thread, dialect: 'neuron' });
      await send(page, 'delete /tmp/first.log');
      await waitPaused(page, 1);
      await approve(cards(page).first());
      await submit(page);
      await waitCompleted(page);
      await send(page, 'delete /tmp/second.log');
      await waitPaused(page, 1);
      assert.match(await cards(page).first().locator('.card-inputs').textContent(), /\/tmp\/second\.log/);
      const done = page.locator('#messages .tool-done');
      await done.first().waitFor();
      assert.equal(await done.count(), 1);
      assert.match(await done.locator('.kv').textContent(), /\/tmp\/first\.log/);
      assert.equal(await done.locator('.tool-result pre').textContent(), 'Deleted /tmp/first.log');
      assertNoProblems(problems);
    } finally {
      await context.close();
      await endpoint.close();
    }
  });

  // Only the paused message's calls leave the transcript for their cards, in both dialects, and
  // also at a second pause of one run (Sidenet: its continuation goes on in the paused message).
  for (const dialect of ['neuron', 'sidenet']) {
    test(`${dialect}: a paused call shows as its card, not also in the transcript`, async () => {
      const { context, page, problems } = await openPage(env.browser);
      try {
        await gotoThread(page, env.endpoint.url, { thread: threadId(`twins-hidden-${dialect}`), dialect });
        await send(page, 'delete /tmp/hidden.log and deploy billing');
        await waitPaused(page, 1);
        assert.match(await cards(page).first().textContent(), /hidden\.log/);
        assert.equal(await page.locator('#messages .tool-pending').count(), 0);
        await approve(cards(page).first());
        await submit(page);
        await page.locator('#cards article.card', { hasText: 'production' }).waitFor();
        await waitPaused(page, 1);
        assert.equal(await page.locator('#messages .tool-pending').count(), 0);
        await approve(cards(page).first());
        await submit(page);
        await waitCompleted(page);
        assertNoProblems(problems);
      } finally {
        await context.close();
      }
    });
  }
});
