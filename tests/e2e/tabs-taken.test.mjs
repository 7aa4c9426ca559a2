// Sidenet, the same thread open in two tabs: while tab A's continuation of one call streams, tab B
// shows that call as settled (the decision sent in A, nothing to click on its card), and its own
// submission can only answer the other call; a decision made in a third tab meanwhile does not make
// B read the run mid-reply. Chunks are slow here, so the reply is seen streaming.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  approve, assertNoProblems, card, cards, deny, gotoThread, openPage, send, startEndpoint, submit, threadId,
  waitCompleted, waitPaused, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser({ CHUNK_DELAY_MS: '120' });

test('sidenet: a call another tab is sending shows as settled here, and the rest stays answerable', async () => {
  const where = { thread: threadId('tabs_taken'), dialect: 'sidenet' };
  const { context, page: a, problems } = await openPage(env.browser);
  const b = await context.newPage();
  b.on('pageerror', (e) => problems.push(`page B error: ${e.message}`));
  b.on('console', (m) => m.type() === 'error' && problems.push(`page B console error: ${m.text()}`));
  try {
    await gotoThread(a, env.endpoint.url, where);
    await send(a, 'delete /var/log/app.log and buy 4 tickets at 60');
    await waitPaused(a, 2);
    await gotoThread(b, env.endpoint.url, where);
    await waitPaused(b, 2);

    // A approves the tickets and sends that alone; while its reply streams, B shows the tickets
    // as sent (settled: no Approve, Deny or Undo) and the deletion still open.
    await approve(card(a, /tickets/i));
    await card(b, /tickets/i).locator('.badge', { hasText: /Approved/ }).waitFor({ timeout: 5_000 });
    await submit(a);
    const tickets = card(b, /tickets/i);
    await b.locator('#cards article.card[data-settled="true"]').waitFor({ timeout: 5_000 });
    assert.match(await tickets.locator('.badge').textContent(), /Approved · sent/);
    for (const name of ['Approve', 'Deny', 'Undo']) {
      assert.equal(await tickets.getByRole('button', { name, exact: true }).isVisible(), false, `${name} on the settled card`);
    }
    assert.equal(await card(b, /Delet/).getAttribute('data-settled'), 'false');

    // Once A's reply has ended, B shows the deletion alone, answers it and the run completes.
    await b.waitForFunction(() => document.querySelectorAll('#cards article.card').length === 1, null, { timeout: 15_000 });
    await b.locator('#app[data-phase="awaiting_approval"]').waitFor({ timeout: 15_000 });
    await deny(card(b, /Delet/), 'Not this one');
    await submit(b);
    await waitCompleted(b);
    await waitCompleted(a);
    assert.equal(await cards(b).count(), 0);
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});

test('sidenet: a decision made in a third tab while the reply streams does not make the other tab load mid-reply', async (t) => {
  // An endpoint of its own, chunks 250 ms apart: A's reply must still stream while C decides and B
  // shows it (a few clicks and a storage event), on a slow machine too.
  const slow = await startEndpoint({ CHUNK_DELAY_MS: '250' });
  t.after(() => slow.close());
  const where = { thread: threadId('tabs_third'), dialect: 'sidenet' };
  const { context, page: a, problems } = await openPage(env.browser);
  const pages = { b: await context.newPage(), c: await context.newPage() };
  for (const [name, p] of Object.entries(pages)) {
    p.on('pageerror', (e) => problems.push(`page ${name} error: ${e.message}`));
    p.on('console', (m) => m.type() === 'error' && problems.push(`page ${name} console error: ${m.text()}`));
  }
  const { b, c } = pages;
  // B's requests to the API, from the moment A submits.
  let watching = false;
  const fromB = [];
  b.on('request', (r) => watching && r.url().includes('/v1/') && fromB.push(`${r.method()} ${r.url()}`));
  try {
    await gotoThread(a, slow.url, where);
    await send(a, 'delete /var/log/app.log and buy 4 tickets at 60');
    await waitPaused(a, 2);
    for (const p of [b, c]) {
      await gotoThread(p, slow.url, where);
      await waitPaused(p, 2);
    }

    await approve(card(a, /tickets/i));
    watching = true;
    await submit(a);
    for (const p of [b, c]) await p.locator('#cards article.card[data-settled="true"]').waitFor({ timeout: 5_000 });

    // While A's reply streams, C denies the deletion: B shows the denial, keeps the tickets as
    // sent, and reads nothing from the server (the reply has not ended).
    await deny(card(c, /Delet/), 'Not this one');
    await card(b, /Delet/).locator('.badge', { hasText: /Denied/ }).waitFor({ timeout: 5_000 });
    const streaming = await a.locator('#app').getAttribute('data-phase');
    assert.equal(await card(b, /tickets/i).getAttribute('data-settled'), 'true', 'the tickets card in B');
    if (streaming === 'submitting' || streaming === 'streaming') {
      assert.deepEqual(fromB, [], `B's requests while A's reply streamed (A: ${streaming})`);
    } else {
      assert.fail(`A's reply ended before the test could look (A: ${streaming}); slow the chunks down`);
    }

    // Once A's reply ends, B and C show the deletion alone, the denial kept; B submits it.
    for (const p of [a, b, c]) {
      await p.waitForFunction(() => document.querySelectorAll('#cards article.card').length === 1, null, { timeout: 15_000 });
    }
    await b.locator('#app[data-phase="awaiting_approval"]').waitFor({ timeout: 15_000 });
    await card(b, /Delet/).locator('.badge', { hasText: /Denied/ }).waitFor({ timeout: 5_000 });
    await submit(b);
    for (const p of [a, b, c]) await waitCompleted(p);
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});

test('sidenet: when another tab sent every decision, this tab says so, offers nothing that would fail, and keeps the focus on the card', async (t) => {
  // Slow chunks: A's reply must still stream while B is looked at.
  const slow = await startEndpoint({ CHUNK_DELAY_MS: '250' });
  t.after(() => slow.close());
  const where = { thread: threadId('tabs_all_sent'), dialect: 'sidenet' };
  const { context, page: a, problems } = await openPage(env.browser);
  const b = await context.newPage();
  b.on('pageerror', (e) => problems.push(`page B error: ${e.message}`));
  b.on('console', (m) => m.type() === 'error' && problems.push(`page B console error: ${m.text()}`));
  try {
    await gotoThread(a, slow.url, where);
    await send(a, 'buy 4 tickets at 60');
    await waitPaused(a, 1);
    await gotoThread(b, slow.url, where);
    await waitPaused(b, 1);

    // In B the person has a new request in the box and is typing a reason to deny the tickets.
    await b.getByRole('textbox', { name: 'Message' }).fill('read notes.txt');
    const tickets = card(b, /tickets/i);
    await tickets.getByRole('button', { name: 'Deny' }).click();
    await tickets.getByRole('textbox', { name: /^Reason/ }).fill('too many');
    // A approves them and sends that.
    await approve(card(a, /tickets/i));
    await submit(a);
    await b.locator('#cards article.card[data-settled="true"]').waitFor({ timeout: 5_000 });
    const phase = await a.locator('#app').getAttribute('data-phase');
    assert.ok(phase === 'submitting' || phase === 'streaming', `A's reply ended before the test could look (A: ${phase})`);
    // The focus stays on the card (its reason box closed), not the page's body.
    assert.equal(await b.evaluate(() => document.activeElement?.matches('article.card')), true);
    // B says the decisions went from another tab, and "Reject all and send" does nothing.
    assert.match(await b.locator('#status').textContent(), /sent from another tab/);
    assert.equal(await b.getByRole('button', { name: 'Reject all and send' }).getAttribute('aria-disabled'), 'true');

    await waitCompleted(a);
    await waitCompleted(b);
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});
