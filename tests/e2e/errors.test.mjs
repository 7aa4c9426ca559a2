// Errors are shown in words with a way forward: a conflict from a second tab, a network failure with
// Retry, and (Sidenet) a pause abandoned after the grace window and an approved call that fails
// when it runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  approve, assertNoProblems, card, deny, gotoThread, lastAnswer, openPage, send,
  screenshot, submit, threadId, waitCompleted, waitPaused, waitSettled, withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

const env = withEndpointAndBrowser({ GRACE_MS: '1500' });

const alert = (page) => page.locator('#alert-region .alert');

test('neuron: decisions made in another tab end in a conflict shown in words, with a reload', async () => {
  const where = { thread: threadId('conflict'), dialect: 'neuron' };
  const a = await openPage(env.browser);
  const b = await openPage(env.browser);
  try {
    await gotoThread(a.page, env.endpoint.url, where);
    await send(a.page, 'delete /tmp/x.log and email a@example.com about x');
    await waitPaused(a.page, 2);
    await gotoThread(b.page, env.endpoint.url, where);
    await waitPaused(b.page, 2);

    // Tab A decides and submits; tab B, still showing the old pause, submits too.
    await approve(card(a.page, /Delet/));
    await approve(card(a.page, /email/i));
    await submit(a.page);
    await waitCompleted(a.page);
    await deny(card(b.page, /Delet/), 'no');
    await deny(card(b.page, /email/i), 'no');
    await submit(b.page);
    await alert(b.page).waitFor({ timeout: 10_000 });
    assert.match(await alert(b.page).textContent(), /changed on the server/i);
    await screenshot(b.page, 'conflict-neuron.png');
    await b.page.getByRole('button', { name: 'Reload thread' }).click();
    await waitSettled(b.page);
    // The thread as it really is: the calls ran (tab A's decisions), none of tab B's applied.
    assert.match(await lastAnswer(b.page), /delete_file \/tmp\/x\.log: done\. send_email to a@example\.com: done\./);
    assertNoProblems(a.problems, 'tab A');
    // Tab B's console may carry the browser's own line for the 409 response.
    assertNoProblems(b.problems.filter((p) => !/status of 409/.test(p)), 'tab B');
  } finally {
    await a.context.close();
    await b.context.close();
  }
});

test('neuron: a network failure is shown with Retry, and Retry sends the message', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, { thread: threadId('net'), dialect: 'neuron' });
    await context.route(/\/threads\//, (r) => r.abort('connectionrefused'));
    await send(page, 'read notes.txt');
    await alert(page).waitFor({ timeout: 15_000 });
    assert.match(await alert(page).textContent(), /could not be reached/i);
    // The message is not lost.
    assert.equal(await page.getByRole('textbox', { name: 'Message' }).inputValue(), 'read notes.txt');
    await context.unroute(/\/threads\//);
    await page.getByRole('button', { name: 'Retry' }).click();
    await waitCompleted(page);
    assert.match(await lastAnswer(page), /read_file notes\.txt: done\./);
    assert.equal(await alert(page).count(), 0);
    assert.equal(await page.locator('#messages .msg-user').count(), 1);
    assertNoProblems(problems.filter((p) => !/net::ERR_CONNECTION_REFUSED/.test(p)));
  } finally {
    await context.close();
  }
});

test('sidenet: a pause abandoned after the grace window is shown as expired, with a way forward', async () => {
  const where = { thread: threadId('expired'), dialect: 'sidenet' };
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, where);
    await send(page, 'delete /tmp/y.log');
    await waitPaused(page, 1);
    // Nobody decides within the grace window (1.5 s here): the server abandons the run.
    await new Promise((r) => setTimeout(r, 2200));
    await approve(card(page, /Delet/));
    await submit(page);
    await alert(page).waitFor({ timeout: 10_000 });
    assert.match(await alert(page).textContent(), /expired/i);
    await page.locator('#approvals').waitFor({ state: 'hidden', timeout: 5_000 });
    assert.equal(await page.locator('#cards .card').count(), 0);
    // The transcript says the call did not run.
    const tool = page.locator('#messages .tool', { hasText: 'delete_file' });
    assert.match(await tool.locator('.badge').textContent(), /Not run/);
    await screenshot(page, 'expired-sidenet.png');
    await page.getByRole('button', { name: 'Ask again' }).click();
    assert.equal(await page.getByRole('textbox', { name: 'Message' }).inputValue(), 'delete /tmp/y.log');
    // A reload shows the same transcript, the abandoned call still marked as not run.
    await page.reload();
    await waitSettled(page);
    assert.match(await page.locator('#messages .tool .badge').first().textContent(), /Not run/);
    assertNoProblems(problems.filter((p) => !/status of 409/.test(p)));
  } finally {
    await context.close();
  }
});

test('sidenet: "Ask again" after a pause expired puts the request into an empty box only, never over what was typed', async () => {
  const where = { thread: threadId('askagain'), dialect: 'sidenet' };
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, where);
    await send(page, 'delete /tmp/z.log');
    await waitPaused(page, 1);
    await new Promise((r) => setTimeout(r, 2200));
    // Opened again once the grace window is over: the load finds the run abandoned.
    await page.reload();
    const ask = page.getByRole('button', { name: 'Ask again' });
    await ask.waitFor({ timeout: 10_000 });
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.fill('something else, typed first');
    await ask.click();
    assert.equal(await box.inputValue(), 'something else, typed first');
    assertNoProblems(problems.filter((p) => !/status of 409/.test(p)));
  } finally {
    await context.close();
  }
});

test('neuron: an error dismissed shows again when the next attempt fails the same way', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, { thread: threadId('dismiss'), dialect: 'neuron' });
    await page.route('**/chat', (route) =>
      route.request().method() === 'POST'
        ? route.fulfill({ status: 400, contentType: 'application/json', body: '{"error":"bad request"}' })
        : route.continue());
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.fill('read a.txt');
    await box.press('Enter');
    await alert(page).waitFor({ timeout: 10_000 });
    await page.getByRole('button', { name: 'Dismiss' }).click();
    await alert(page).waitFor({ state: 'detached', timeout: 5_000 });
    // The message came back into the box; the same failure again shows the alert again.
    assert.equal(await box.inputValue(), 'read a.txt');
    await box.press('Enter');
    await alert(page).waitFor({ timeout: 10_000 });
    assert.match(await alert(page).textContent(), /bad request|400/i);
    assertNoProblems(problems.filter((p) => !/status of 400/.test(p)));
  } finally {
    await context.close();
  }
});

test('sidenet: an approved call that fails when it runs shows as approved and failed, with the error, after a reload too', async () => {
  const where = { thread: threadId('failed'), dialect: 'sidenet' };
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, where);
    await send(page, 'delete /locked/db.sqlite');
    await waitPaused(page, 1);
    await approve(card(page, /Delet/));
    await submit(page);
    await waitCompleted(page);
    const tool = () => page.locator('#messages .tool', { hasText: 'delete_file' });
    assert.match(await tool().locator('.badge').textContent(), /Approved · failed/);
    assert.match(await tool().textContent(), /EBUSY: \/locked\/db\.sqlite is locked/);
    assert.match(await lastAnswer(page), /failed \(EBUSY/);
    await page.reload();
    await waitSettled(page);
    assert.match(await tool().locator('.badge').textContent(), /Approved · failed/);
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});
