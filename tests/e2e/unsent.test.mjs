// Nothing typed is lost, nothing is sent twice: a message that fails while the person types on is
// kept in the alert (as text) with "Put it back", and Retry leaves the new text alone; text typed
// while the page starts stays in the box (and a thread's draft comes back with it); a message whose
// send may have arrived is said to be maybe unsent, and Retry or Send checks the thread first.
// Requests are held or failed at the network layer (page.route), so every failure is deterministic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  assertNoProblems, gotoThread, openPage, pageUrl, threadId, waitSettled, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser();

const CHAT = /\/(threads\/[^/]+\/chat|v1\/chat)$/;
const THREAD = /\/(threads\/[^/]+|v1\/threads\/[^/]+)$/;
const alerts = (page) => page.locator('#alert-region');
const box = (page) => page.getByRole('textbox', { name: 'Message' });
const userMessages = (page) => page.locator('#messages .msg-user');
// The browser's own console lines for the failed requests.
const quiet = (problems) => problems.filter((p) => !/net::ERR_|status of 500/.test(p));

/** The bodies of the message POSTs (not decisions) the page sent. */
function watchMessagePosts(page, text) {
  const posts = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && CHAT.test(r.url()) && (r.postData() ?? '').includes(text)) posts.push(r.postData());
  });
  return posts;
}

/**
 * The kept message `text` went again and landed once: it shows, nothing is kept any more, the
 * thread has that one user message, and two POSTs carried it (the failed or stopped one, then it).
 */
async function landedOnce(page, text, posts) {
  await userMessages(page).filter({ hasText: text }).waitFor({ timeout: 15_000 });
  await waitSettled(page);
  assert.equal(await alerts(page).locator('.alert-unsent').count(), 0, 'nothing kept');
  assert.equal(await userMessages(page).count(), 1, 'one user message');
  assert.equal(posts.length, 2, 'the failed (or stopped) POST and the one that landed');
}

/**
 * Sends `text`; the POST is held until the person has typed `typed`, then dropped (never reaching
 * the server). Returns once the failure is shown.
 */
async function failWhileTyping(page, text, typed) {
  let arrived;
  const held = new Promise((r) => (arrived = r));
  let release;
  const released = new Promise((r) => (release = r));
  await page.route(CHAT, async (route) => {
    if (route.request().method() !== 'POST') return route.continue();
    arrived();
    await released;
    await route.abort('connectionreset');
  });
  await box(page).fill(text);
  await box(page).press('Enter');
  await held;
  await box(page).fill(typed);
  release();
  await page.locator('#app[data-phase="error"]').waitFor({ timeout: 15_000 });
  await page.unroute(CHAT);
}

for (const dialect of ['neuron', 'sidenet']) {
  test(`${dialect}: a message that fails while the person types on is kept in the alert, and Retry keeps the new text`, async () => {
    const { context, page, problems } = await openPage(env.browser);
    try {
      await gotoThread(page, env.endpoint.url, { thread: threadId(`overtyped_${dialect}`), dialect });
      const TEXT = 'read notes.txt <b>now</b>';
      const TYPED = 'a draft typed while it was in flight';
      const posts = watchMessagePosts(page, 'read notes.txt');
      await failWhileTyping(page, TEXT, TYPED);

      // The new text stays in the box; the message is in the alert, as text, with what happened.
      assert.equal(await box(page).inputValue(), TYPED);
      const kept = alerts(page).locator('.alert-unsent');
      await kept.waitFor();
      assert.equal(await kept.locator('.unsent-text').textContent(), TEXT);
      assert.equal(await kept.locator('.unsent-text b').count(), 0, 'shown as text, never as HTML');
      assert.match(await kept.textContent(), /may not have been sent/);
      assert.doesNotMatch(await alerts(page).textContent(), /it is back in the message box/);

      // Retry sends the kept message and leaves the box alone.
      await page.getByRole('button', { name: 'Retry' }).click();
      await landedOnce(page, 'read notes.txt', posts);
      assert.equal(await box(page).inputValue(), TYPED);
      assertNoProblems(quiet(problems));
    } finally {
      await context.close();
    }
  });
}

test('neuron: "Put it back" puts the kept message into the box beside the new text, losing neither', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, { thread: threadId('putback'), dialect: 'neuron' });
    await failWhileTyping(page, 'read notes.txt', 'and then deploy billing');
    await page.getByRole('button', { name: 'Put it back' }).click();
    assert.equal(await box(page).inputValue(), 'read notes.txt\nand then deploy billing');
    assert.equal(await alerts(page).locator('.alert-unsent').count(), 0);
    // Retry now only reloads: the message is the person's draft again, not sent behind their back.
    await page.getByRole('button', { name: 'Retry' }).click();
    await waitSettled(page);
    assert.equal(await box(page).inputValue(), 'read notes.txt\nand then deploy billing');
    assert.equal(await userMessages(page).count(), 0);
    assertNoProblems(quiet(problems));
  } finally {
    await context.close();
  }
});

test('neuron: a kept message outlives a reload of the thread and a switch away and back, and "Send it" sends it once', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    const thread = threadId('keptswitch');
    await gotoThread(page, env.endpoint.url, { thread, dialect: 'neuron' });
    const posts = watchMessagePosts(page, 'read notes.txt');
    await failWhileTyping(page, 'read notes.txt', 'a new draft');
    await page.getByRole('button', { name: 'Reload thread' }).click();
    await waitSettled(page);
    assert.equal(await alerts(page).locator('.alert-error').count(), 0, 'the error is gone with the reload');
    assert.equal(await alerts(page).locator('.alert-unsent .unsent-text').textContent(), 'read notes.txt');

    await page.getByRole('button', { name: 'New thread' }).click();
    await page.locator('#empty').waitFor();
    assert.equal(await alerts(page).locator('.alert-unsent').count(), 0);
    await page.goBack();
    await page.locator('#thread-id', { hasText: thread }).waitFor();
    await waitSettled(page);
    assert.equal(await box(page).inputValue(), 'a new draft');
    await page.getByRole('button', { name: 'Send it' }).click();
    await landedOnce(page, 'read notes.txt', posts);
    assert.equal(await box(page).inputValue(), 'a new draft');
    assertNoProblems(quiet(problems));
  } finally {
    await context.close();
  }
});

test('neuron: text typed while the page starts stays in the box, and a thread\'s draft comes back with it', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    // The package arrives slowly: the page shows its composer while it starts.
    let release;
    const released = new Promise((r) => (release = r));
    await page.route('**/toolgate_bg.wasm', async (route) => {
      await released;
      await route.continue();
    });
    const thread = threadId('early');
    await page.goto(pageUrl(env.endpoint.url, { thread, dialect: 'neuron' }), { waitUntil: 'domcontentloaded' });
    await box(page).fill('delete /tmp/typed-early.log');
    await box(page).press('Enter'); // nothing to send to yet: the text stays
    release();
    await waitSettled(page);
    assert.equal(await box(page).inputValue(), 'delete /tmp/typed-early.log');
    assert.equal(await userMessages(page).count(), 0);

    // Switching threads shows the other thread's box (empty: a new one); coming back brings the draft.
    await page.getByRole('button', { name: 'New thread' }).click();
    await page.locator('#empty').waitFor();
    assert.equal(await box(page).inputValue(), '');
    await page.goBack();
    await page.locator('#thread-id', { hasText: thread }).waitFor();
    await waitSettled(page);
    assert.equal(await box(page).inputValue(), 'delete /tmp/typed-early.log');
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});

/**
 * The first message POST reaches the server, which stores it, but the page gets a 500 (or a dropped
 * connection); the thread reads fail while `failReads.on`, so the client cannot tell whether it landed.
 */
async function appliedButFailed(page, dialect, failure) {
  const failReads = { on: true };
  await page.route(THREAD, (route) => (route.request().method() === 'GET' && failReads.on
    ? route.fulfill({ status: 500, contentType: 'application/json', body: '{"error":"Injected fault"}' })
    : route.continue()));
  let first = true;
  await page.route(CHAT, async (route) => {
    if (route.request().method() !== 'POST' || !first) return route.continue();
    first = false;
    const response = await route.fetch(); // the server applies it
    await response.body().catch(() => {});
    if (failure === 'drop') await route.abort('connectionreset');
    else await route.fulfill({ status: 500, contentType: 'application/json', body: '{"error":"Injected fault after applying"}' });
  });
  return failReads;
}

for (const [dialect, failure, how] of [['neuron', 'error', 'Retry'], ['sidenet', 'drop', 'Retry'], ['neuron', 'error', 'Send']]) {
  test(`${dialect}: a send that may have arrived says so, and ${how} finds it on the thread instead of sending it twice`, async () => {
    const { context, page, problems } = await openPage(env.browser);
    try {
      await gotoThread(page, env.endpoint.url, { thread: threadId(`maybe_${dialect}_${how}`), dialect });
      const TEXT = 'buy 5 tickets at 10';
      const posts = watchMessagePosts(page, TEXT);
      const failReads = await appliedButFailed(page, dialect, failure);
      await box(page).fill(TEXT);
      await box(page).press('Enter');
      const alert = alerts(page).locator('.alert').first();
      await alert.locator('.alert-title').waitFor({ timeout: 20_000 });
      await page.locator('#app[data-phase="error"]').waitFor({ timeout: 20_000 });
      assert.equal(await box(page).inputValue(), TEXT);
      assert.match(await alert.textContent(), /may not have been sent; it is back in the message box/);
      assert.doesNotMatch(await alert.textContent(), /was not sent/);

      // The server is reachable again: Retry (or Send) reads the thread first, finds the message.
      failReads.on = false;
      if (how === 'Retry') await page.getByRole('button', { name: 'Retry' }).click();
      else await page.getByRole('button', { name: 'Send', exact: true }).click();
      await alerts(page).locator('[data-code="delivered"]').waitFor({ timeout: 15_000 });
      assert.equal(posts.length, 1, 'sent once');
      assert.equal(await box(page).inputValue(), '');
      assert.equal(await userMessages(page).count(), 1);
      // The server's record agrees.
      await page.reload();
      await page.locator('#app:not([data-phase="loading"])').waitFor();
      await userMessages(page).first().waitFor();
      assert.equal(await userMessages(page).count(), 1);
      assertNoProblems(quiet(problems));
    } finally {
      await context.close();
    }
  });
}

test('neuron: a send the server refused says it was not sent, and Send sends it at once', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, { thread: threadId('refused'), dialect: 'neuron' });
    const TEXT = 'read notes.txt';
    const posts = watchMessagePosts(page, TEXT);
    let first = true;
    await page.route(CHAT, (route) => {
      if (route.request().method() !== 'POST' || !first) return route.continue();
      first = false;
      return route.fulfill({ status: 409, contentType: 'application/json', body: '{"status":"conflict"}' });
    });
    await box(page).fill(TEXT);
    await box(page).press('Enter');
    const alert = alerts(page).locator('.alert').first();
    await alert.locator('.alert-title').waitFor({ timeout: 15_000 });
    await page.locator('#app:not([data-phase="loading"]):not([data-phase="sending"]):not([data-phase="conflict"])').waitFor();
    assert.equal(await box(page).inputValue(), TEXT);
    assert.match(await alert.textContent(), /Your message was not sent; it is back in the message box/);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await userMessages(page).first().waitFor({ timeout: 15_000 });
    await waitSettled(page);
    assert.equal(posts.length, 2);
    assert.equal(await userMessages(page).count(), 1);
    assertNoProblems(problems.filter((p) => !/status of 409/.test(p)));
  } finally {
    await context.close();
  }
});

for (const dialect of ['neuron', 'sidenet']) {
  test(`${dialect}: a message that repeats the last one and never reached the server is sent by Retry, not taken for delivered`, async () => {
    const { context, page } = await openPage(env.browser);
    try {
      await gotoThread(page, env.endpoint.url, { thread: threadId(`repeat_${dialect}`), dialect });
      const TEXT = 'hello there';
      const input = page.getByRole('textbox', { name: 'Message' });
      const userMessages = page.locator('#messages .msg-user');
      await input.fill(TEXT);
      await input.press('Enter');
      await userMessages.first().waitFor({ timeout: 15_000 });
      await waitSettled(page);
      // The same text again: its POST never reaches the server (the connection resets).
      let first = true;
      await page.route(/\/(threads\/[^/]+\/chat|v1\/chat)$/, (route) => {
        if (route.request().method() !== 'POST' || !first) return route.continue();
        first = false;
        return route.abort('connectionreset');
      });
      await input.fill(TEXT);
      await input.press('Enter');
      await page.locator('#app[data-phase="error"]').waitFor({ timeout: 20_000 });
      await page.getByRole('button', { name: 'Retry' }).click();
      // The thread's last user message is the earlier one: Retry sends this one.
      await userMessages.nth(1).waitFor({ timeout: 15_000 });
      await waitSettled(page);
      await page.reload();
      await userMessages.first().waitFor({ timeout: 15_000 });
      await waitSettled(page);
      assert.equal(await userMessages.count(), 2, 'both messages are on the server');
    } finally {
      await context.close();
    }
  });
}

test('neuron: a message on its way when the person switches threads is kept for its thread, and sent once', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    const thread = threadId('switchmid');
    await gotoThread(page, env.endpoint.url, { thread, dialect: 'neuron' });
    const posts = watchMessagePosts(page, 'read mid.txt');
    // The POST is held (the page aborts it when it leaves the thread): it never reaches the server.
    let arrived;
    const held = new Promise((r) => (arrived = r));
    await page.route(CHAT, async (route) => {
      if (route.request().method() !== 'POST') return route.continue();
      arrived();
      await new Promise(() => {});
    });
    await box(page).fill('read mid.txt');
    await box(page).press('Enter');
    await held;
    await page.getByRole('button', { name: 'New thread' }).click();
    await page.locator('#empty').waitFor();
    await page.unroute(CHAT);
    await page.goBack();
    await page.locator('#thread-id', { hasText: thread }).waitFor();
    await waitSettled(page);
    assert.equal(await alerts(page).locator('.alert-unsent .unsent-text').textContent(), 'read mid.txt');
    await page.getByRole('button', { name: 'Send it' }).click();
    await landedOnce(page, 'read mid.txt', posts);
    assertNoProblems(quiet(problems));
  } finally {
    await context.close();
  }
});
