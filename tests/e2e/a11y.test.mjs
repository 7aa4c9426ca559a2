// Accessibility and usability of the demo (the s13 audit): what a screen reader hears (accessible names
// and descriptions, read from Chromium's accessibility tree), where the focus goes, what untrusted text
// looks like, and the layout at zoomed, short and narrow sizes.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  DESKTOP, approve, assertNoProblems, card, cards, deny, gotoThread, lastAnswer, openPage, send, startEndpoint, submit,
  threadId, waitCompleted, waitPaused, waitSettled, withEndpointAndBrowser, withPage,
} from '../e2e-support/harness.mjs';

// A data directory of our own, to put threads with hand-made tool calls in (the scripted agent only
// makes its own tools).
const dataDir = mkdtempSync(path.join(tmpdir(), 'toolgate-e2e-a11y-'));
const env = withEndpointAndBrowser({ DATA_DIR: dataDir });
after(() => rmSync(dataDir, { recursive: true, force: true }));

const RLO = '\u202E';
const ZWSP = '\u200B';
const FAMILY = '👨\u200D👩\u200D👧'; // one emoji: its zero-width joiners are not hidden characters
// Characters that display as nothing or turn text around (the joiner is checked apart, above).
const INVISIBLE = /[\u00AD\u061C\u200B\u200C\u200E\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/u;

/** Writes a Neuron thread paused on `tools` (the endpoint's own file format) and returns its id. */
function plantPausedThread(label, tools) {
  const id = threadId(label);
  mkdirSync(path.join(dataDir, 'neuron'), { recursive: true });
  const record = {
    id,
    seq: 2,
    messages: [
      { __id: 'msg_1', role: 'user', content: 'please do these' },
      {
        __id: 'msg_2', role: 'assistant', content: [], type: 'tool_call', resume_token: 'workflow_a11y',
        tools: tools.map(([callId, name, inputs, approvalReason]) => ({
          callId, name, description: 'demo tool', parameters: [], inputs, result: null, approval: 'pending',
          approvalReason, rejectReason: null,
        })),
      },
    ],
    run: { steps: [[]], stepIndex: 0, awaitingStep: 0, calls: [] },
  };
  writeFileSync(path.join(dataDir, 'neuron', `${id}.json`), JSON.stringify(record));
  return id;
}

/** The accessibility tree's nodes (not ignored) as { role, name, description }. */
async function axNodes(page) {
  const cdp = await page.context().newCDPSession(page);
  try {
    const { nodes } = await cdp.send('Accessibility.getFullAXTree');
    return nodes.filter((n) => !n.ignored).map((n) => ({
      role: n.role?.value ?? '', name: n.name?.value ?? '', description: n.description?.value ?? '',
    }));
  } finally {
    await cdp.detach();
  }
}

/** What has focus, in a few words ("body" when it was lost). */
const focused = (page) => page.evaluate(() => {
  const el = document.activeElement;
  if (!el || el === document.body) return 'body';
  return `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''} ${el.textContent.trim().slice(0, 60)}`;
});

/** Counts animation frames at which the focus was on the page's body (lost), from now on. */
const watchFocusLoss = (page) => page.evaluate(() => {
  window.__lost = 0;
  const tick = () => {
    if (document.activeElement === document.body || !document.activeElement) window.__lost++;
    window.__watch = requestAnimationFrame(tick);
  };
  tick();
});
const focusLosses = (page) => page.evaluate(() => (cancelAnimationFrame(window.__watch), window.__lost));

const box = (page) => page.getByRole('textbox', { name: 'Message' });
const status = async (page) => (await page.locator('#status').textContent()) ?? '';

describe('approval cards can be told apart by name', () => {
  for (const dialect of ['neuron', 'sidenet']) {
    test(`${dialect}: two calls of one tool: the cards and their buttons are named by tool and arguments`, async () => {
      await withPage(env.browser, async ({ page }) => {
        await gotoThread(page, env.endpoint.url, { thread: threadId(`names_${dialect}`), dialect });
        await send(page, 'delete /srv/a.txt and delete /srv/b.txt');
        await waitPaused(page, 2);
        const ax = await axNodes(page);
        const articles = ax.filter((n) => n.role === 'article');
        assert.equal(articles.length, 2, JSON.stringify(articles));
        assert.notEqual(articles[0].name, articles[1].name, 'the two cards have one name');
        articles.forEach((a, i) => {
          const file = i === 0 ? '/srv/a.txt' : '/srv/b.txt';
          assert.match(a.name, /delete_file/, `card ${i + 1} name: ${a.name}`);
          assert.ok(a.name.includes(file), `card ${i + 1} name: ${a.name}`);
          // The arguments and the state describe the card.
          assert.ok(a.description.includes(file) && /path/.test(a.description), `card ${i + 1} description: ${a.description}`);
          assert.match(a.description, /Needs your decision/);
        });
        for (const label of ['Approve', 'Deny']) {
          const names = ax.filter((n) => n.role === 'button' && n.name.startsWith(label)).map((n) => n.name);
          assert.equal(names.length, 2, JSON.stringify(names));
          assert.ok(names[0].includes('/srv/a.txt') && names[1].includes('/srv/b.txt'), `${label} buttons: ${names}`);
        }
      });
    });
  }
});

test('hidden and direction-changing characters are shown as tokens, with a warning, and isolated', async () => {
  const thread = plantPausedThread('hidden', [
    ['c0', 'delete_file', { path: '/srv/ok.txt' }, 'Deleting a file is irreversible'],
    ['c1', 'delete_file', { path: `/srv/uploads/invoice_march_${RLO}fdp.exe` }, 'Deleting a file is irreversible'],
    ['c2', 'pay_invoice', { to: `billing@acme${ZWSP}.example`, amount: `${RLO}00.01`, memo: `thanks ${FAMILY} שלום 500` }, 'Payments are final'],
    ['c3', `${RLO}elif_daer`, { path: '/etc/passwd' }, ''],
  ]);
  await withPage(env.browser, async ({ page }) => {
    await gotoThread(page, env.endpoint.url, { thread, dialect: 'neuron' });
    await waitPaused(page, 4);
    const seen = await cards(page).evaluateAll((els) => els.map((c) => ({
      name: c.querySelector('.tool-name').innerText,
      title: c.querySelector('.card-title').innerText,
      values: [...c.querySelectorAll('.card-inputs dd')].map((d) => d.innerText),
      warning: (() => {
        const w = c.querySelector('.card-warning');
        return w && w.getClientRects().length ? w.innerText : '';
      })(),
      isolated: [...c.querySelectorAll('.card-inputs dd > *, .tool-name > *')].every((e) => getComputedStyle(e).unicodeBidi === 'isolate'),
      text: c.innerText,
    })));
    // What is displayed is what runs, hidden characters included, as tokens.
    assert.deepEqual(seen[1].values, ['/srv/uploads/invoice_march_⟨U+202E⟩fdp.exe']);
    assert.deepEqual(seen[2].values.slice(0, 2), ['billing@acme⟨U+200B⟩.example', '⟨U+202E⟩00.01']);
    assert.ok(seen[2].values[2].includes(FAMILY), `the emoji stays one emoji: ${seen[2].values[2]}`);
    assert.equal(seen[3].name, '⟨U+202E⟩elif_daer');
    assert.equal(seen[3].title, 'Run ⟨U+202E⟩elif_daer');
    seen.forEach((c, i) => {
      assert.doesNotMatch(c.text, INVISIBLE, `card ${i + 1} displays an invisible character`);
      assert.ok(c.isolated, `card ${i + 1}: every name and value is isolated`);
    });
    // A visible warning on the cards that have them, and only there.
    assert.equal(seen[0].warning, '');
    for (const i of [1, 2, 3]) assert.match(seen[i].warning, /hidden or direction-changing characters/, `card ${i + 1}`);

    // "Always allow" the tool whose name pretends to be read_file: the status and the Allowed bar
    // show its real name too.
    await cards(page).nth(3).getByRole('button', { name: /Always allow/ }).click();
    const allowed = page.getByRole('region', { name: /Allowed this session/ });
    await allowed.waitFor();
    const allowedText = await allowed.evaluate((el) => el.innerText);
    assert.ok(allowedText.includes('⟨U+202E⟩elif_daer'), allowedText);
    assert.doesNotMatch(allowedText, INVISIBLE);
    const said = await page.locator('#status').evaluate((el) => el.innerText);
    assert.ok(said.includes('⟨U+202E⟩elif_daer is allowed for this session'), said);
    assert.doesNotMatch(said, INVISIBLE);
  });
});

test('a long unbreakable tool name wraps: no card is wider than the page, every badge is on screen', async () => {
  const thread = plantPausedThread('longname', [
    ['c1', 'delete_file', { path: '/srv/a.txt' }, 'Deleting a file is irreversible'],
    ['c2', `x_${'verylongtoolname'.repeat(12)}`, { p: 'x' }, 'Long'],
  ]);
  await withPage(env.browser, async ({ page }) => {
    await gotoThread(page, env.endpoint.url, { thread, dialect: 'neuron' });
    await waitPaused(page, 2);
    const m = await page.evaluate(() => ({
      viewport: document.documentElement.clientWidth,
      cards: [...document.querySelectorAll('#cards .card')].map((c) => ({
        right: c.getBoundingClientRect().right,
        badgeRight: c.querySelector('.card-top .badge').getBoundingClientRect().right,
      })),
      conversation: [document.getElementById('conversation').scrollWidth, document.getElementById('conversation').clientWidth],
    }));
    const app = await page.locator('#app').boundingBox();
    for (const [i, c] of m.cards.entries()) {
      assert.ok(c.right <= app.x + app.width + 0.5, `card ${i + 1} ends at ${c.right}, the page at ${app.x + app.width}`);
      assert.ok(c.badgeRight <= c.right, `card ${i + 1}: its badge (right ${c.badgeRight}) is outside the card (${c.right})`);
    }
    assert.ok(m.conversation[0] <= m.conversation[1], `the conversation scrolls sideways: ${m.conversation}`);
  }, { viewport: DESKTOP });
});

describe('zoomed, short and narrow windows: the page scrolls and nothing is cut off', () => {
  // 640x360 and 320x180 are 1280x720 at 200 % and 400 % zoom; 320x568 a small phone.
  for (const viewport of [{ width: 640, height: 360 }, { width: 320, height: 180 }, { width: 320, height: 568 }]) {
    test(`${viewport.width}x${viewport.height}: a paused run's header, cards and message box can all be reached`, async () => {
      await withPage(env.browser, async ({ page }) => {
        await gotoThread(page, env.endpoint.url, { thread: threadId(`reflow_${viewport.width}`), dialect: 'neuron' });
        await send(page, 'delete /tmp/a.txt and email ops@example.com about Reflow');
        await waitPaused(page, 2);
        // The way a person scrolls: the wheel, over the page.
        await page.mouse.move(viewport.width / 2, viewport.height / 2);
        for (let i = 0; i < 20; i++) await page.mouse.wheel(0, -400);
        await page.waitForTimeout(100);
        const top = await page.locator('.topbar').evaluate((el) => el.getBoundingClientRect().top);
        assert.ok(top >= 0, `the header cannot be scrolled back into view (top ${top})`);
        // Each card can be seen whole.
        for (let i = 0; i < 2; i++) {
          const c = cards(page).nth(i);
          const seen = await c.evaluate((el) => {
            el.scrollIntoView({ block: 'start' });
            const r = el.getBoundingClientRect();
            const clip = el.closest('.conversation').getBoundingClientRect();
            return { height: r.height, visible: Math.min(r.bottom, innerHeight, clip.bottom) - Math.max(r.top, 0, clip.top) };
          });
          assert.ok(seen.visible >= Math.min(seen.height, viewport.height) - 1,
            `card ${i + 1}: ${Math.round(seen.visible)} of its ${Math.round(seen.height)} px can be shown`);
        }
        for (let i = 0; i < 40; i++) await page.mouse.wheel(0, 400);
        await page.waitForTimeout(100);
        const composer = await page.locator('#composer').evaluate((el) => el.getBoundingClientRect().bottom);
        assert.ok(composer <= viewport.height + 0.5, `the message box cannot be scrolled into view (bottom ${composer})`);
        // Nothing is wider than the window, and the box keeps most of the width beside "Reject all and send".
        const widths = await page.evaluate(() => ({
          doc: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
          box: document.getElementById('composer-input').getBoundingClientRect().width,
        }));
        assert.ok(widths.doc[0] <= widths.doc[1], `the page scrolls sideways: ${widths.doc}`);
        assert.ok(widths.box >= viewport.width * 0.6, `the message box is ${widths.box}px wide`);
      }, { viewport });
    });
  }
});

describe('focus is never lost to the page', () => {
  test('pressing Send keeps the focus', async () => {
    await withPage(env.browser, async ({ page }) => {
      await gotoThread(page, env.endpoint.url, { thread: threadId('focus_send'), dialect: 'neuron' });
      await box(page).fill('read notes.txt');
      await watchFocusLoss(page);
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      await waitCompleted(page);
      assert.equal(await focusLosses(page), 0, 'the focus was on the body while the message went');
      assert.notEqual(await focused(page), 'body');
    });
  });

  test('Retry in the error alert keeps the focus, and the message box has it once the error is resolved', async () => {
    const { context, page, problems } = await openPage(env.browser);
    try {
      await gotoThread(page, env.endpoint.url, { thread: threadId('focus_retry'), dialect: 'neuron' });
      await context.route(/\/threads\//, (r) => r.abort('connectionrefused'));
      await send(page, 'read notes.txt');
      await page.locator('#alert-region .alert').waitFor({ timeout: 15_000 });
      // The server answers again, slowly: the retry runs a while.
      await context.unroute(/\/threads\//);
      await context.route(/\/threads\//, async (r) => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        await r.continue();
      });
      await watchFocusLoss(page);
      await page.getByRole('button', { name: 'Retry' }).click();
      await waitCompleted(page);
      assert.equal(await focusLosses(page), 0, 'the focus was on the body during or after the retry');
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'composer-input');
      assertNoProblems(problems.filter((p) => !/net::ERR_CONNECTION_REFUSED/.test(p)));
    } finally {
      await context.close();
    }
  });

  test('"Ask again" moves the focus on to the next allowed tool, then to the message box', async () => {
    await withPage(env.browser, async ({ page }) => {
      await gotoThread(page, env.endpoint.url, { thread: threadId('focus_ask'), dialect: 'neuron' });
      await page.evaluate(() => sessionStorage.setItem('toolgate-demo:allowed', JSON.stringify(['delete_file', 'send_email'])));
      await page.reload();
      await waitSettled(page);
      const allowed = page.getByRole('region', { name: /Allowed this session/ });
      await allowed.getByRole('button', { name: 'Ask again before running delete_file' }).click();
      assert.match(await focused(page), /^button .*Ask again before running send_email/);
      await page.keyboard.press('Enter');
      assert.equal(await allowed.isVisible(), false);
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'composer-input');
    });
  });

  test('Back to another thread while the focus is on a card: the message box gets it', async () => {
    await withPage(env.browser, async ({ page }) => {
      await gotoThread(page, env.endpoint.url, { thread: threadId('focus_back'), dialect: 'neuron' });
      await send(page, 'read notes.txt');
      await waitCompleted(page);
      await page.getByRole('button', { name: 'New thread' }).click();
      await send(page, 'delete /tmp/back.txt');
      await waitPaused(page, 1);
      await page.waitForFunction(() => document.activeElement?.matches('#cards article.card'));
      await page.goBack();
      await page.locator('#messages .msg-user', { hasText: 'read notes.txt' }).waitFor();
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'composer-input');
    });
  });
});

test('arrow keys in the dialect radios do not switch threads; the offered button does', async () => {
  await withPage(env.browser, async ({ page }) => {
    const thread = threadId('arrows');
    await gotoThread(page, env.endpoint.url, { thread, dialect: 'neuron' });
    await send(page, 'delete /tmp/a.txt and email ops@example.com about Arrows');
    await waitPaused(page, 2);
    const entries = await page.evaluate(() => history.length);
    await page.getByRole('radio', { name: 'Neuron' }).focus();
    for (const key of ['ArrowRight', 'ArrowLeft', 'ArrowRight']) await page.keyboard.press(key);
    await page.waitForTimeout(200);
    assert.equal(new URL(page.url()).searchParams.get('thread'), thread);
    assert.equal(await page.evaluate(() => history.length), entries, 'no thread was opened');
    assert.equal(await cards(page).count(), 2, 'the paused thread still shows');
    assert.equal(await page.getByRole('radio', { name: 'Sidenet' }).isChecked(), true);
    await page.keyboard.press('Tab');
    assert.match(await focused(page), /Start a Sidenet thread/);
    await page.keyboard.press('Enter');
    await page.locator('#empty').waitFor();
    assert.equal(new URL(page.url()).searchParams.get('dialect'), 'sidenet');
    assert.notEqual(new URL(page.url()).searchParams.get('thread'), thread);
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'composer-input');
  });
});

test('the locked box and an early "Submit decisions" say why they do nothing', async () => {
  await withPage(env.browser, async ({ page }) => {
    await gotoThread(page, env.endpoint.url, { thread: threadId('locked'), dialect: 'neuron' });
    await send(page, 'delete /tmp/a.txt and email ops@example.com about Locked');
    await waitPaused(page, 2);
    const ax = await axNodes(page);
    const boxNode = ax.find((n) => n.role === 'textbox' && n.name === 'Message');
    assert.match(boxNode.description, /Locked until you decide/);
    assert.doesNotMatch(boxNode.description, /Enter to send/);
    // Nothing decided: Submit cannot act yet, and says so (its reason is its description).
    assert.match(ax.find((n) => n.role === 'button' && n.name === 'Submit decisions').description, /0 of 2 decided/);
    // (Pressed from the keyboard: Playwright's click waits for an aria-disabled button to be enabled.)
    await page.getByRole('button', { name: 'Submit decisions' }).focus();
    await page.keyboard.press('Enter');
    assert.match(await status(page), /Decide 2 more calls first, or use Reject all and send/);
    assert.equal(await cards(page).count(), 2);
    // One decided: Enter in the locked box does not send, and says what to do.
    await approve(card(page, /Delet/));
    await box(page).fill('something else');
    await box(page).press('Enter');
    assert.match(await status(page), /Decide 1 more call first, or use Reject all and send/);
    assert.equal(await box(page).inputValue(), 'something else', 'nothing was sent');
  });
});

test('"Always allow" is confirmed in the status, until the next step', async () => {
  await withPage(env.browser, async ({ page }) => {
    await gotoThread(page, env.endpoint.url, { thread: threadId('allowed'), dialect: 'neuron' });
    await send(page, 'delete /tmp/allowed.txt and email ops@example.com about Allowed');
    await waitPaused(page, 2);
    await card(page, /Delet/).getByRole('button', { name: 'Always allow delete_file this session' }).click();
    await page.waitForTimeout(300);
    assert.match(await status(page), /delete_file is allowed for this session/);
    // The next decision moves the status on.
    await approve(card(page, /email/i));
    assert.match(await status(page), /All 2 decided/);
  });
});

test('the agent\'s reply is said in the status once the run is done', async () => {
  await withPage(env.browser, async ({ page }) => {
    await gotoThread(page, env.endpoint.url, { thread: threadId('said'), dialect: 'neuron' });
    await send(page, 'delete /tmp/said.txt and email ops@example.com about Said');
    await waitPaused(page, 2);
    await approve(card(page, /Delet/));
    await deny(card(page, /email/i), 'Not now');
    await submit(page);
    await waitCompleted(page);
    const said = await status(page);
    assert.match(said, /delete_file \/tmp\/said\.txt: done\./);
    assert.match(said, /send_email to ops@example\.com: rejected/);
  });
});

/** Contrast ratio of two CSS colours (rgb()/rgba() as computed; alpha ignored). */
function contrast(a, b) {
  const lum = (c) => {
    const [r, g, bl] = c.match(/[\d.]+/g).slice(0, 3).map((v) => {
      const x = Number(v) / 255;
      return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

test('contrast: field borders, the chosen dialect, the approved badge and the locked placeholder', async () => {
  await withPage(env.browser, async ({ page }) => {
    await gotoThread(page, env.endpoint.url, { thread: threadId('contrast'), dialect: 'neuron' });
    await send(page, 'delete /tmp/a.txt and email ops@example.com about Contrast');
    await waitPaused(page, 2);
    await approve(card(page, /Delet/));
    const c = await page.evaluate(() => {
      const cs = (el, pseudo) => getComputedStyle(el, pseudo);
      const input = document.getElementById('composer-input');
      const open = document.getElementById('open-id');
      const chosen = document.querySelector('.segmented input:checked + span');
      const badge = document.querySelector('#cards .badge-approved');
      return {
        box: [cs(input).borderTopColor, cs(input).backgroundColor],
        open: [cs(open).borderTopColor, cs(open).backgroundColor],
        chosen: [cs(chosen).backgroundColor, cs(document.getElementById('dialect-switch')).backgroundColor],
        badge: [cs(badge).color, cs(badge).backgroundColor],
        placeholder: [cs(input, '::placeholder').color, cs(input).backgroundColor],
      };
    });
    assert.ok(contrast(...c.box) >= 3, `message box border ${c.box}: ${contrast(...c.box).toFixed(2)}`);
    assert.ok(contrast(...c.open) >= 3, `thread id field border ${c.open}: ${contrast(...c.open).toFixed(2)}`);
    assert.ok(contrast(...c.chosen) >= 3, `chosen dialect ${c.chosen}: ${contrast(...c.chosen).toFixed(2)}`);
    assert.ok(contrast(...c.badge) >= 4.5, `approved badge ${c.badge}: ${contrast(...c.badge).toFixed(2)}`);
    assert.ok(contrast(...c.placeholder) >= 4.5, `locked placeholder ${c.placeholder}: ${contrast(...c.placeholder).toFixed(2)}`);
  });
});

test('with reduced motion, moving to a card does not scroll smoothly', async () => {
  // (openPage asks for reduced motion.)
  await withPage(env.browser, async ({ page }) => {
    await gotoThread(page, env.endpoint.url, { thread: threadId('motion'), dialect: 'neuron' });
    await page.evaluate(() => {
      window.__scrolls = [];
      const original = Element.prototype.scrollIntoView;
      Element.prototype.scrollIntoView = function (options) {
        window.__scrolls.push(typeof options === 'object' ? options?.behavior ?? 'auto' : 'auto');
        return original.call(this, options);
      };
    });
    await send(page, 'delete /tmp/a.txt and email ops@example.com about Motion');
    await waitPaused(page, 2);
    await approve(card(page, /Delet/)); // focus moves on to the next card
    const scrolls = await page.evaluate(() => window.__scrolls);
    assert.ok(scrolls.length > 0, 'no card was scrolled to');
    assert.ok(!scrolls.includes('smooth'), `scrolls: ${scrolls}`);
  });
});

test('decorative glyphs are not part of names', async () => {
  await withPage(env.browser, async ({ page }) => {
    await gotoThread(page, env.endpoint.url, { thread: threadId('glyphs'), dialect: 'neuron' });
    await page.locator('#empty').waitFor();
    const examples = (await axNodes(page)).filter((n) => n.role === 'button' && /tickets/.test(n.name));
    assert.deepEqual(examples.map((n) => n.name), ['Buy 3 tickets at 45']);
    await send(page, 'delete /tmp/a.txt');
    await waitPaused(page, 1);
    const headings = (await axNodes(page)).filter((n) => n.role === 'heading' && /Approval needed/.test(n.name));
    assert.deepEqual(headings.map((n) => n.name), ['Approval needed']);
  });
});

// (Review of the s13 fixes.) Default-ignorable characters that are not format characters (Cf) also
// display as nothing: variation selectors, the combining grapheme joiner, Khmer inherent vowels,
// Mongolian free variation selectors. An ordinary emoji's variation selector stays part of it.
test('every default-ignorable character is a token with a warning; an emoji\'s variation selector is not', async () => {
  const gaps = {
    cgj: '\u034F', vs1: '\uFE00', vs15: '\uFE0E', vs16: '\uFE0F', vs17: '\u{E0100}', vs256: '\u{E01EF}',
    khmer_aq: '\u17B4', khmer_aa: '\u17B5', mongolian_fvs1: '\u180B', mongolian_fvs4: '\u180F',
  };
  const emoji = `love ❤️ and ☺︎, keycap 1️⃣, flag 🏳️‍🌈, family ${FAMILY}`;
  const thread = plantPausedThread('ignorable', [
    ['plain', 'delete_file', { path: '/srv/a.txt' }, 'Deleting a file is irreversible'],
    ['emoji', 'send_email', { to: 'team@example.com', subject: emoji }, 'Outbound email'],
    ...Object.entries(gaps).map(([name, c]) => [name, 'delete_file', { path: `/srv/a${c}.txt` }, 'Deleting a file is irreversible']),
  ]);
  await withPage(env.browser, async ({ page }) => {
    await gotoThread(page, env.endpoint.url, { thread, dialect: 'neuron' });
    await waitPaused(page, 2 + Object.keys(gaps).length);
    const seen = Object.fromEntries(await cards(page).evaluateAll((els) => els.map((c) => [c.dataset.callId, {
      values: [...c.querySelectorAll('.card-inputs dd')].map((d) => d.innerText),
      warning: (() => {
        const w = c.querySelector('.card-warning');
        return w && w.getClientRects().length ? w.innerText : '';
      })(),
    }])));
    assert.deepEqual(seen.plain, { values: ['/srv/a.txt'], warning: '' });
    assert.deepEqual(seen.emoji, { values: ['team@example.com', emoji], warning: '' }, 'ordinary emoji get no token');
    for (const [name, c] of Object.entries(gaps)) {
      const code = c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0');
      assert.deepEqual(seen[name].values, [`/srv/a⟨U+${code}⟩.txt`], name);
      assert.match(seen[name].warning, /hidden or direction-changing characters/, name);
    }
  });
});

test('"Open" opens the thread in the dialect chosen in the radios, as "New thread" does', async () => {
  await withPage(env.browser, async ({ page }) => {
    await gotoThread(page, env.endpoint.url, { thread: threadId('choose'), dialect: 'neuron' });
    await page.getByRole('radio', { name: 'Sidenet' }).check();
    await page.locator('#switch-dialect').waitFor();
    const other = threadId('opened');
    await page.locator('#open-id').fill(other);
    await page.locator('#open-id').press('Enter');
    await page.waitForFunction((id) => new URL(location.href).searchParams.get('thread') === id, other);
    await page.locator('#empty').waitFor();
    const url = new URL(page.url());
    assert.equal(url.searchParams.get('dialect'), 'sidenet');
    assert.equal(await page.getByRole('radio', { name: 'Sidenet' }).isChecked(), true);
    assert.equal(await page.locator('#switch-dialect').isHidden(), true, 'nothing more to start');
    assert.match(await page.locator('#status').innerText(), /New Sidenet thread/);
    // Nothing chosen: Open stays in the thread's dialect.
    const third = threadId('same');
    await page.locator('#open-id').fill(third);
    await page.locator('#open-id').press('Enter');
    await page.waitForFunction((id) => new URL(location.href).searchParams.get('thread') === id, third);
    assert.equal(new URL(page.url()).searchParams.get('dialect'), 'sidenet');
  });
});

test('a streamed delta rebuilds the streaming message only: the settled messages keep their nodes', async (t) => {
  // An endpoint of its own that paces its chunks 40 ms apart: at the suite's 5 ms a loaded machine
  // can read the whole reply in one go (one render, one observed delta), which tells nothing.
  const slow = await startEndpoint({ CHUNK_DELAY_MS: '40' });
  t.after(() => slow.close());
  await withPage(env.browser, async ({ page }) => {
    await gotoThread(page, slow.url, { thread: threadId('stream'), dialect: 'sidenet' });
    await send(page, 'hello there');
    await waitSettled(page);
    await page.locator('#messages .msg-assistant').first().waitFor();
    // Watches the list: when the reply starts streaming, the items already there are noted; at each
    // later delta (the streaming text changed), they must still be the same nodes, in the list.
    await page.evaluate(() => {
      const list = document.getElementById('messages');
      const w = (window.__stream = { settled: null, text: null, deltas: 0, rebuilt: 0 });
      w.observer = new MutationObserver(() => {
        const live = list.querySelector('.msg-streaming');
        if (!live) return;
        if (!w.settled) {
          w.settled = [...list.children].filter((li) => li !== live);
          w.text = live.textContent;
          return;
        }
        if (live.textContent === w.text) return;
        w.text = live.textContent;
        w.deltas++;
        if (w.settled.some((li, i) => li.parentNode !== list || list.children[i] !== li)) w.rebuilt++;
      });
      w.observer.observe(list, { childList: true, subtree: true, characterData: true });
    });
    await send(page, 'tell me more about what you can do for me today, please');
    await waitSettled(page);
    await page.waitForFunction(() => !document.querySelector('#messages .msg-streaming'));
    const w = await page.evaluate(() => {
      const s = window.__stream;
      s.observer.disconnect();
      return { settled: s.settled?.length ?? 0, deltas: s.deltas, rebuilt: s.rebuilt };
    });
    assert.ok(w.settled >= 3, `the earlier exchange and the new message were shown while streaming: ${JSON.stringify(w)}`);
    assert.ok(w.deltas >= 2, `the reply was streamed in several deltas: ${JSON.stringify(w)}`);
    assert.equal(w.rebuilt, 0, `no delta rebuilt the settled messages: ${JSON.stringify(w)}`);
    // Once done, the reply is a settled message like the others.
    assert.match(await lastAnswer(page), /You said: "tell me more/);
    assert.equal(await page.locator('#messages > li').count(), 4);
  });
});
