// The composer and the thread controls: Sidenet replies stream in progressively with a busy indicator;
// the locked composer's way out ("Reject all and send"); "New thread" and "Open" with the id in the URL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  approve, assertNoProblems, card, gotoThread, lastAnswer, openPage, send, submit, threadId, waitCompleted, waitPaused,
  withEndpointAndBrowser,
} from '../e2e-support/harness.mjs';

// The thread's record of the rejections: a Neuron reply to a decision POST carries the agent's
// message, not the tool_call it decided, so the transcript shows them once the quiet read that
// follows the run's end lands, which can be after the phase reads `completed`.
async function rejectedShown(page, n) {
  await page.waitForFunction((k) => document.querySelectorAll('#messages .tool-rejected').length === k, n, { timeout: 10_000 }).catch(() => {});
}

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
      await rejectedShown(page, 2);
      assert.equal(await page.locator('#messages .tool-rejected').count(), 2);
      assert.ok(await page.getByRole('button', { name: 'Send', exact: true }).isVisible());
      assertNoProblems(problems);
    } finally {
      await context.close();
    }
  });
}

for (const dialect of ['neuron', 'sidenet']) {
  test(`${dialect}: "Reject all and send" rejects a call approved but not submitted too`, async () => {
    const { context, page, problems } = await openPage(env.browser);
    try {
      await gotoThread(page, env.endpoint.url, { thread: threadId(`outapproved_${dialect}`), dialect });
      await send(page, 'delete /tmp/a.txt and email ops@example.com about hi');
      await waitPaused(page, 2);
      await approve(card(page, /Delet/));
      await page.getByRole('textbox', { name: 'Message' }).fill('read notes.txt');
      await page.getByRole('button', { name: 'Reject all and send' }).click();
      await page.locator('#messages .msg-user', { hasText: 'read notes.txt' }).waitFor();
      await waitCompleted(page);
      // Nothing ran but the new request: both calls rejected, the approved one among them.
      await rejectedShown(page, 2);
      assert.equal(await page.locator('#messages .tool-rejected').count(), 2);
      assert.doesNotMatch(await page.locator('#messages').textContent(), /Deleted \/tmp\/a\.txt/);
      assertNoProblems(problems);
    } finally {
      await context.close();
    }
  });
}

test('neuron: "Reject all and send" rejects an approval a partial submission sent too', async () => {
  // On Neuron the server keeps an approval sent while another call still waits, and takes a change
  // of it until the run resumes: "all" includes it.
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, { thread: threadId('outsent_neuron'), dialect: 'neuron' });
    await send(page, 'delete /tmp/a.txt and email ops@example.com about hi');
    await waitPaused(page, 2);
    await approve(card(page, /Delet/));
    await submit(page);
    await card(page, /Delet/).locator('.badge', { hasText: /Approved · sent/ }).waitFor();
    await page.locator('#app[data-syncing="false"]').waitFor();
    await page.getByRole('textbox', { name: 'Message' }).fill('read notes.txt');
    await page.getByRole('button', { name: 'Reject all and send' }).click();
    await page.locator('#messages .msg-user', { hasText: 'read notes.txt' }).waitFor();
    await waitCompleted(page);
    await rejectedShown(page, 2);
    assert.equal(await page.locator('#messages .tool-rejected').count(), 2);
    assert.doesNotMatch(await page.locator('#messages').textContent(), /Deleted \/tmp\/a\.txt/);
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});

test('a stored list of recent threads that is no list does not stop the demo', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    await page.goto(env.endpoint.url + '/');
    await page.evaluate(() => localStorage.setItem('toolgate-demo:recent', '{"thread":"x"}'));
    await gotoThread(page, env.endpoint.url, { thread: threadId('recent_bad'), dialect: 'neuron' });
    await send(page, 'read notes.txt');
    await waitCompleted(page);
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});

test('sidenet: a reply that pauses again does not take the focus from a deny reason being typed', async () => {
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, { thread: threadId('focusreason'), dialect: 'sidenet' });
    await send(page, 'delete /tmp/a.txt and email ops@example.com about hi');
    await waitPaused(page, 2);
    const mail = card(page, /email/i);
    await approve(card(page, /Delet/));
    await mail.getByRole('button', { name: /Deny/ }).click();
    // The approval goes; the reply (slow chunks) pauses again on the email while the reason is typed.
    await submit(page);
    const reason = mail.locator('textarea');
    await reason.click();
    const text = 'Not to ops, they are on leave this week';
    for (const ch of text) {
      await page.keyboard.type(ch);
      await new Promise((r) => setTimeout(r, 30));
    }
    await page.waitForFunction(
      () => document.getElementById('app').dataset.phase === 'awaiting_approval' && document.querySelectorAll('#cards article.card').length === 1,
      null,
      { timeout: 15_000 },
    );
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await reason.inputValue(), text);
    assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'TEXTAREA');
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});

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

test('neuron: a reason being typed for a call is not kept for another call that reuses its callId', async () => {
  // Servers that number calls per step reuse callIds: the read after a partial submission shows
  // another tool under the callId whose deny reason is being typed (the thread rewritten here).
  const { context, page, problems } = await openPage(env.browser);
  try {
    await gotoThread(page, env.endpoint.url, { thread: threadId('reusedid'), dialect: 'neuron' });
    await send(page, 'delete /tmp/a.txt and email ops@example.com about hi');
    await waitPaused(page, 2);
    const del = card(page, /Delet/);
    const callId = await del.getAttribute('data-call-id');
    assert.ok(callId);
    await approve(card(page, /email/i));
    await del.getByRole('button', { name: 'Deny' }).click();
    await del.getByRole('textbox', { name: /^Reason/ }).fill('not that file');
    await page.route('**/threads/**', async (route) => {
      if (route.request().method() !== 'GET') return route.fallback();
      const response = await route.fetch();
      const doc = await response.json();
      for (const m of doc.messages ?? []) {
        for (const t of m.tools ?? []) {
          if (t.callId === callId && t.name === 'delete_file') Object.assign(t, { name: 'deploy', inputs: { service: 'api' } });
        }
      }
      await route.fulfill({ response, json: doc });
    });
    await submit(page);
    const reused = page.locator(`#cards article.card[data-call-id="${callId}"]`);
    await page.waitForFunction((id) => document.querySelector(`#cards article.card[data-call-id="${id}"]`)?.textContent.includes('deploy'), callId, { timeout: 10_000 });
    assert.equal(await reused.getByRole('textbox', { name: /^Reason/ }).isVisible(), false, 'the deny form of the call before');
    assert.equal(await reused.locator('textarea').inputValue(), '');
    assertNoProblems(problems);
  } finally {
    await context.close();
  }
});
