// Shared harness of the demo's end-to-end tests (kept outside tests/e2e/ so `node --test` does not run
// it as a test file): the reference endpoint, headless Chromium through playwright-core, page problem
// tracking (page errors, console errors, CSP violations) and the page's user-level actions.
import { after, before } from 'node:test';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const ARTIFACTS = path.join(ROOT, 'artifacts');
export const DESKTOP = { width: 1280, height: 860 };
export const PHONE = { width: 390, height: 844 };

/** Fails with a clear message when the package has not been built. */
export function requirePkg() {
  const file = path.join(ROOT, 'pkg', 'toolgate.js');
  if (!existsSync(file)) {
    throw new Error(`pkg/toolgate.js is missing: build the package first (bash scripts/build.sh, or npm run build)`);
  }
  if (!/\bApprovalClient\b/.test(readFileSync(file, 'utf8'))) {
    throw new Error('pkg/toolgate.js has no ApprovalClient export: rebuild the package (bash scripts/build.sh)');
  }
}

/** Starts `node www/server/main.mjs` on a free port with a fresh data directory. */
export async function startEndpoint(extraEnv = {}) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'toolgate-e2e-'));
  const child = spawn(process.execPath, [path.join(ROOT, 'www/server/main.mjs')], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', QUIET: '1', DATA_DIR: dataDir, CHUNK_DELAY_MS: '5', ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the endpoint did not start within 10 s:\n${output}`)), 10_000);
    const onData = (chunk) => {
      output += chunk;
      const m = /toolgate endpoint listening on (http:\/\/\S+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (c) => (output += c));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the endpoint exited (${code}) before listening:\n${output}`));
    });
  });
  return {
    url,
    async close() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function chromiumPath() {
  if (process.env.CHROMIUM) return process.env.CHROMIUM;
  for (const p of ['/usr/bin/chromium', '/usr/bin/chromium-browser']) if (existsSync(p)) return p;
  try {
    return execFileSync('which', ['chromium'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('Chromium not found: install it (bash scripts/setup.sh) or set CHROMIUM=/path/to/chromium');
  }
}

export function launchBrowser() {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-quic', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
}

/**
 * A new context and page that records every problem: uncaught page errors, console errors and
 * warnings about CSP, and `securitypolicyviolation` events.
 */
export async function openPage(browser, { viewport = DESKTOP } = {}) {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1, reducedMotion: 'reduce' });
  const problems = [];
  await context.exposeBinding('__e2eCspViolation', (_source, v) => problems.push(`CSP violation: ${v}`));
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__e2eCspViolation(`${e.violatedDirective} blocked ${e.blockedURI || '(inline)'} ${e.sample || ''}`);
    });
  });
  const page = await context.newPage();
  if (process.env.E2E_DEBUG) {
    // E2E_DEBUG=1 node --test tests/e2e/*.test.mjs  logs the page's requests and responses.
    page.on('request', (r) => console.log('>>', viewport.width, r.method(), r.url(), r.postData() ?? ''));
    page.on('response', (r) => console.log('<<', viewport.width, r.status(), r.url()));
  }
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(`console ${m.type()}: ${m.text()}`);
  });
  return { context, page, problems };
}

export function pageUrl(base, { thread, dialect }) {
  return `${base}/?thread=${encodeURIComponent(thread)}&dialect=${dialect}`;
}

let counter = 0;
export const threadId = (label) => `e2e_${label}_${process.pid}_${++counter}_${Date.now().toString(36)}`;

/** Opens a thread and waits until it is loaded. */
export async function gotoThread(page, base, where) {
  await page.goto(pageUrl(base, where));
  await page.waitForFunction(() => {
    const p = document.getElementById('app')?.dataset.phase;
    return p && p !== 'loading';
  }, null, { timeout: 10_000 });
}

export const cards = (page) => page.locator('#cards article.card');
/** The composer's Stop button (shown while a message, decisions or a reply are on their way). */
export const stopButton = (page) => page.getByRole('button', { name: 'Stop', exact: true });
/** The snapshot's phase, as the demo shows it on #app. */
export const phaseOf = (page) => page.locator('#app').getAttribute('data-phase');
export const card = (page, name) => page.getByRole('article', { name });

export async function send(page, text) {
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.fill(text);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
}

export async function waitPaused(page, count) {
  await page.locator('#app[data-phase="awaiting_approval"]').waitFor({ timeout: 15_000 });
  await cards(page).nth(count - 1).waitFor({ timeout: 5_000 });
  const n = await cards(page).count();
  if (n !== count) throw new Error(`expected ${count} approval cards, found ${n}`);
}

export async function approve(cardLocator) {
  await cardLocator.getByRole('button', { name: 'Approve' }).click();
}

export async function deny(cardLocator, reason) {
  await cardLocator.getByRole('button', { name: 'Deny' }).click();
  const field = cardLocator.getByRole('textbox', { name: /^Reason/ });
  await field.fill(reason ?? '');
  await cardLocator.getByRole('button', { name: 'Confirm deny' }).click();
}

export async function submit(page) {
  await page.getByRole('button', { name: 'Submit decisions' }).click();
}

export async function waitCompleted(page) {
  await page.locator('#app[data-phase="completed"]').waitFor({ timeout: 15_000 });
  await page.locator('#approvals').waitFor({ state: 'hidden', timeout: 5_000 });
}

/** No quiet reload in flight (Neuron reads the thread again after each POST; it may land after
 * the phase shows the answer). */
export async function waitQuiet(page) {
  await page.locator('#app[data-syncing="false"]').waitFor({ timeout: 15_000 });
}

/** A freshly loaded thread with nothing paused (a load reports "idle" or "completed"). */
export async function waitSettled(page) {
  await page.locator('#app[data-phase="completed"], #app[data-phase="idle"]').waitFor({ timeout: 15_000 });
  await page.locator('#approvals').waitFor({ state: 'hidden', timeout: 5_000 });
}

/** The text of the last assistant bubble. */
export async function lastAnswer(page) {
  return (await page.locator('#messages .msg-assistant .bubble-text').last().textContent()) ?? '';
}

export async function screenshot(page, name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, name);
  await page.screenshot({ path: file, animations: 'disabled', caret: 'hide' });
  return file;
}

export function assertNoProblems(problems, label = 'page') {
  if (problems.length) throw new Error(`${label} reported problems:\n  ${problems.join('\n  ')}`);
}

/**
 * Runs `fn({ page, context })` in a page of its own (`openPage`), then requires that the page
 * reported no problem; the context is closed whatever happens. Returns what `fn` returns.
 */
export async function withPage(browser, fn, options) {
  const { context, page, problems } = await openPage(browser, options);
  try {
    const out = await fn({ page, context });
    assertNoProblems(problems);
    return out;
  } finally {
    await context.close();
  }
}

/**
 * Starts the reference endpoint (with `extraEnv`) and Chromium before a test file's tests and stops
 * both after them: `env.endpoint` and `env.browser` are set once `before` has run.
 */
export function withEndpointAndBrowser(extraEnv = {}) {
  const env = { endpoint: undefined, browser: undefined };
  before(async () => {
    requirePkg();
    [env.endpoint, env.browser] = await Promise.all([startEndpoint(extraEnv), launchBrowser()]);
  });
  after(async () => {
    await env.browser?.close();
    await env.endpoint?.close();
  });
  return env;
}
