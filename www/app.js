// The toolgate demo: an agent chat that pauses before gated tools, over the package's public API only
// (`/pkg/toolgate.js`, as any web frontend would use it). No framework: the client's snapshot is
// rendered into the DOM with a small `h()` helper; everything from the server is text, never HTML.
import init, { ApprovalClient, isToolgateError } from '/pkg/toolgate.js';
import { $, h, setText, shown } from './dom.js';
import { hiddenTool, messageContext, messageItem } from './render.js';
import { ApprovalCard } from './cards.js';

const DIALECTS = ['neuron', 'sidenet'];
const DIALECT_NAMES = { neuron: 'Neuron', sidenet: 'Sidenet' };
const THREAD_ID = /^[A-Za-z0-9_-]{1,128}$/;
const REJECT_ALL_REASON = 'The user sent a new request instead of deciding on this call.';
const PREFS = 'toolgate-demo:';
// Error codes of a message the server surely did not take (refused, or never sent); any other
// failure (network, timeout, an HTTP error, a reply cut short) may have come after the server stored
// it, so the demo says the message may not have been sent, and checks the thread before sending it
// again.
const REFUSED = new Set(['conflict', 'input_locked', 'unauthorized', 'busy', 'invalid_argument', 'expired']);
// The tools allowed for this browser session (sessionStorage: gone when the tab closes), given to
// every thread's client.
const ALLOWED = 'toolgate-demo:allowed';
const EXAMPLES = [
  'Delete /tmp/old-logs.txt and email team@example.com about Logs cleanup',
  'Buy 3 tickets at 45',
  'Read notes.txt and deploy billing',
  'Read /etc/motd',
];

const ui = {
  app: $('app'),
  threadId: $('thread-id'),
  newThread: $('new-thread'),
  openForm: $('open-form'),
  openId: $('open-id'),
  recent: $('recent-threads'),
  dialectInputs: [...document.querySelectorAll('input[name="dialect"]')],
  switchDialect: $('switch-dialect'),
  busy: $('busy'),
  status: $('status'),
  alerts: $('alert-region'),
  conversation: $('conversation'),
  empty: $('empty'),
  examples: $('examples'),
  messages: $('messages'),
  approvals: $('approvals'),
  approvalsSub: $('approvals-sub'),
  notices: $('approval-notices'),
  cards: $('cards'),
  autoSubmit: $('auto-submit'),
  decidedCount: $('decided-count'),
  submit: $('submit'),
  composer: $('composer'),
  input: $('composer-input'),
  send: $('send'),
  rejectAll: $('reject-all'),
  stop: $('stop'),
  lockNote: $('lock-note'),
  hint: $('composer-hint'),
  allowed: $('allowed'),
  allowedList: $('allowed-list'),
};

/** The open thread: one ApprovalClient and what the page remembers about it. */
let session = null;

/** A dialect chosen in the radio group for a new thread, not opened yet (null: the thread's own). */
let chosenDialect = null;

/**
 * What the message box and the alert held for each thread the person left (`dialect:thread` →
 * `{ text, inBox, held }`), for this page's life: switching threads shows the other thread's box
 * (empty for a new one), and what was typed here, or not sent here, comes back with this thread.
 */
const drafts = new Map();
const draftKey = (thread, dialect) => `${dialect}:${thread}`;

// ---------------------------------------------------------------------------------------------
// Start-up

function pref(name, fallback) {
  try {
    const v = localStorage.getItem(PREFS + name);
    return v === null ? fallback : JSON.parse(v);
  } catch {
    return fallback;
  }
}

function setPref(name, value) {
  try {
    localStorage.setItem(PREFS + name, JSON.stringify(value));
  } catch {
    /* storage full or disabled: preferences are a nicety */
  }
}

function allowedTools() {
  try {
    const v = JSON.parse(sessionStorage.getItem(ALLOWED) ?? '[]');
    // (A blank name, which only a hand-edited storage holds, would make allowTool throw.)
    return Array.isArray(v) ? v.filter((n) => typeof n === 'string' && n.trim() !== '') : [];
  } catch {
    return [];
  }
}

function setAllowed(names) {
  try {
    sessionStorage.setItem(ALLOWED, JSON.stringify(names));
  } catch {
    /* storage disabled: the allowance lasts as long as this client */
  }
}

function freshThreadId() {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return `t_${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}

function fromLocation() {
  const p = new URLSearchParams(location.search);
  const dialect = DIALECTS.includes(p.get('dialect')) ? p.get('dialect') : pref('dialect', 'neuron');
  const thread = THREAD_ID.test(p.get('thread') ?? '') ? p.get('thread') : null;
  return { dialect: DIALECTS.includes(dialect) ? dialect : 'neuron', thread };
}

function writeLocation(thread, dialect, push) {
  const url = `${location.pathname}?thread=${encodeURIComponent(thread)}&dialect=${dialect}`;
  if (push) history.pushState(null, '', url);
  else history.replaceState(null, '', url);
}

async function main() {
  buildExamples();
  wireControls();
  setText(ui.status, 'Loading toolgate…');
  try {
    await init();
  } catch (e) {
    fatal('The toolgate package could not be loaded. Build it with `npm run build` (or start with `npm start`).', e);
    return;
  }
  const { thread, dialect } = fromLocation();
  const id = thread ?? freshThreadId();
  writeLocation(id, dialect, false);
  openThread(id, dialect);
}

function fatal(message, error) {
  setText(ui.status, message);
  ui.alerts.replaceChildren(
    h('div', { class: 'alert alert-error' }, h('p', { class: 'alert-title' }, 'The demo cannot start'), h('p', null, message),
      error ? h('p', { class: 'alert-detail' }, String(error?.message ?? error)) : null),
  );
}

function buildExamples() {
  ui.examples.replaceChildren(
    ...EXAMPLES.map((text) =>
      h('li', null, h('button', { type: 'button', class: 'example', onclick: () => useExample(text) }, text)),
    ),
  );
}

function useExample(text) {
  ui.input.value = text;
  autosize();
  ui.input.focus();
  render();
}

// ---------------------------------------------------------------------------------------------
// Threads

function openThread(thread, dialect) {
  // The first open (the page starting): the box was usable while the package loaded, and what was
  // typed there is meant for the thread the page opens, so it stays. (Disabling the box until then
  // would drop the keys of someone typing as the page appears.) Later opens show the box as that
  // thread was left; what was typed for the thread being left is kept for it (`closeSession`).
  const first = !session;
  // A switch rebuilds the conversation, the cards and the alerts: focus that was in them (or was
  // already lost to the page's body) goes to the message box, not to the body (Back / Forward).
  const active = document.activeElement;
  const refocus = !first && (!active || active === document.body
    || [ui.conversation, ui.alerts, ui.allowed].some((el) => el.contains(active)));
  chosenDialect = null;
  if (session) closeSession();
  let client;
  try {
    client = new ApprovalClient({ dialect, baseUrl: location.origin, threadId: thread, autoSubmit: false });
    for (const name of allowedTools()) client.allowTool(name);
  } catch (e) {
    fatal(`Cannot open thread ${thread}.`, e);
    return;
  }
  const s = {
    client,
    thread,
    dialect,
    pauseKey: null,
    messagesKey: null,
    cards: new Map(),
    lastOp: null,
    notice: null,
    alertKey: null,
    dismissedAlert: null,
    wasSuspended: false,
    // A message that was not (or not surely) delivered, `{ text, maybeSent }`: `inBox` when it was
    // put back into the message box (while the box still holds exactly it), `held` when the person
    // had typed something new meanwhile (shown in the alert, with "Put it back"); `seenUnsent`, the
    // client's `unsentText` already taken in (it stays in the snapshot until the next send).
    inBox: null,
    held: [],
    seenUnsent: null,
  };
  const saved = drafts.get(draftKey(thread, dialect));
  drafts.delete(draftKey(thread, dialect));
  if (saved) {
    s.inBox = saved.inBox;
    s.held = saved.held;
  }
  session = s;
  s.stop = client.subscribe(() => {
    if (session === s) scheduleRender();
  });
  setPref('dialect', dialect);
  remember(thread, dialect);
  if (!first) ui.input.value = saved?.text ?? '';
  autosize();
  ui.messages.replaceChildren();
  ui.cards.replaceChildren();
  render();
  if (refocus) ui.input.focus();
  command('load', () => client.load());
}

function closeSession() {
  const s = session;
  session = null;
  s.stop?.();
  try {
    s.client.abort();
  } catch {
    /* nothing in flight */
  }
  // A message the switch stopped on its way (the client keeps it in `unsentText`; it may have
  // reached the server) is held for this thread, to be checked before it goes again.
  const text = ui.input.value;
  let unsent = null;
  try {
    const snap = s.client.getSnapshot();
    unsent = snap.unsentText;
    if (unsent && unsent !== text && unsent !== s.seenUnsent && !s.held.some((u) => u.text === unsent)) {
      s.held.push({ text: unsent, maybeSent: true, users: userCount(snap) });
    }
  } catch {
    /* no snapshot yet */
  }
  if (text.trim() !== '' || s.held.length) {
    drafts.set(draftKey(s.thread, s.dialect), { text, inBox: s.inBox?.text === text ? s.inBox : null, held: s.held });
  }
  // Free after the aborted operations have settled.
  setTimeout(() => s.client.free(), 0);
}

function remember(thread, dialect) {
  // (Anything but a list, from an older version or a hand edit, is no list of recent threads.)
  const stored = pref('recent', []);
  const list = (Array.isArray(stored) ? stored : []).filter((r) => r && !(r.thread === thread && r.dialect === dialect));
  list.unshift({ thread, dialect });
  setPref('recent', list.slice(0, 8));
  ui.recent.replaceChildren(
    ...list.filter((r) => r.dialect === dialect && THREAD_ID.test(r.thread)).map((r) => h('option', { value: r.thread })),
  );
}

// ---------------------------------------------------------------------------------------------
// Commands

/**
 * Runs a client command; failures are shown from the snapshot (or as a notice when it has none).
 * Resolves to true when the command failed (was refused at once or rejected later), else false.
 */
async function command(kind, fn) {
  const s = session;
  if (!s) return true;
  s.lastOp = { kind, fn };
  s.notice = null;
  // A new attempt: its error shows even when it is the one dismissed before.
  s.dismissedAlert = null;
  s.delivered = false;
  try {
    await fn();
    return false;
  } catch (e) {
    if (session !== s) return true;
    if (isToolgateError(e)) {
      if (e.code === 'aborted') return true;
      const snap = s.client.getSnapshot();
      if (!snap.error) {
        s.notice = { code: e.code, message: e.detail || e.message };
        render();
      }
    } else {
      s.notice = { code: 'internal', message: String(e?.message ?? e) };
      render();
    }
    return true;
  }
}

/**
 * Stops what is in flight: a message or decisions on their way, a reply streaming. The client keeps
 * the drafts, a message that may not have arrived comes back into the box (`unsentText`), and the
 * cards a stopped reply announced stay answerable (the run is paused on them).
 */
function stopRequest() {
  const s = session;
  if (!s) return;
  try {
    s.client.abort();
  } catch {
    /* nothing in flight */
  }
  const snap = s.client.getSnapshot();
  flash(s, snap.suspension ? 'Stopped. The agent still waits for your decisions below.' : 'Stopped.');
  ui.input.focus();
  render();
}

function sendMessage() {
  const s = session;
  if (!s) return;
  const text = ui.input.value;
  if (text.trim() === '') {
    ui.input.focus();
    return;
  }
  const snap = s.client.getSnapshot();
  if (snap.suspension) return; // locked: "Reject all and send" is the way out
  if (!snap.canSend) return;
  // The message put back after a send that may have arrived: the thread is checked first.
  if (s.inBox?.maybeSent && s.inBox.text === text) {
    resend(s, s.inBox);
    return;
  }
  s.inBox = null;
  ui.input.value = '';
  autosize();
  command('send', () => startSend(s, () => s.client.send(text))).then((failed) => restoreIfFailed(s, text, failed));
}

/**
 * Starts a client command that sends a message. Once it has started, the client's `unsentText` is
 * cleared: a failure of this send is a new one, taken in again even if its text is the same.
 */
function startSend(s, fn) {
  const p = fn();
  if (!s.client.getSnapshot().unsentText) s.seenUnsent = null;
  return p;
}

/**
 * A message that did not go out is kept: the command failed, whether the client refused it at once
 * (`busy`, a notice, not `snapshot.error`: the client does not keep its text) or the request failed
 * (the client keeps it in `unsentText`, not or not surely delivered), and it is not on the thread.
 */
function restoreIfFailed(s, text, failed, maybeSent = false) {
  if (session !== s) return;
  const snap = s.client.getSnapshot();
  if (snap.unsentText === text) takeUnsent(s, snap);
  if (failed || snap.error) {
    const unsent = snap.unsentText === text || !snap.messages.some((m) => m.role === 'user' && m.text === text);
    const kept = s.held.some((u) => u.text === text) || (s.inBox?.text === text && ui.input.value === text);
    if (unsent && !kept) keepUnsent(s, { text, maybeSent });
  }
  render();
}

/** Takes in the client's `unsentText` once (each failure once): the box, or the alert. */
function takeUnsent(s, snap) {
  const text = snap.unsentText;
  if (!text || s.seenUnsent === text) return;
  s.seenUnsent = text;
  const code = snap.error?.code ?? s.notice?.code;
  keepUnsent(s, { text, maybeSent: !REFUSED.has(code) });
}

/**
 * Nothing typed is lost: the unsent message goes back into the message box when the box is empty
 * (or holds just it); when the person has typed something new since, their text stays and the
 * message is shown in the alert, with a way to put it back.
 */
function keepUnsent(s, item) {
  if (s.held.some((u) => u.text === item.text)) return;
  // How many user messages the thread showed without it: a later load shows it delivered only if
  // there is one more, ending with this text (the same text sent earlier is not this one).
  item.users = userCount(s.client.getSnapshot());
  const box = ui.input.value;
  if (box === item.text || box.trim() === '') {
    ui.input.value = item.text;
    autosize();
    s.inBox = item;
  } else {
    s.held.push(item);
  }
}

/**
 * "Put it back": the message goes into the box, before what the person typed since (the order they
 * wrote them in), on its own line. Both are kept, nothing is replaced; the person edits and sends.
 * (Not a swap: that would move their new text into an alert about a message that was not sent.)
 */
function putBack(s, item) {
  if (session !== s) return;
  s.held = s.held.filter((u) => u !== item);
  const box = ui.input.value;
  if (box.trim() === '') {
    ui.input.value = item.text;
    s.inBox = item;
  } else {
    ui.input.value = `${item.text}\n${box}`;
    s.inBox = null;
  }
  autosize();
  ui.input.focus();
  render();
}

function discardUnsent(s, item) {
  if (session !== s) return;
  s.held = s.held.filter((u) => u !== item);
  ui.input.focus();
  render();
}

/** How many user messages the thread shows. */
function userCount(snap) {
  return snap.messages.filter((m) => m.role === 'user').length;
}

/** The text of the thread's last user message, or null. */
function lastUserText(snap) {
  for (let i = snap.messages.length - 1; i >= 0; i--) {
    if (snap.messages[i].role === 'user') return snap.messages[i].text;
  }
  return null;
}

/**
 * Sends an unsent message again (`item`, from the box or the alert). One that may have arrived (no
 * clear answer: network, timeout, an HTTP error) is never sent again blindly: the thread is loaded
 * first, and when its last user message is this text, it was delivered and is dropped here. Only the
 * box's copy of the message is cleared, never text the person typed since.
 */
function resend(s, item) {
  const { text } = item;
  const settle = () => {
    s.held = s.held.filter((u) => u !== item);
    if (s.inBox === item) {
      s.inBox = null;
      if (ui.input.value === text) {
        ui.input.value = '';
        autosize();
      }
    }
  };
  command('send', async () => {
    if (item.maybeSent) {
      await s.client.load();
      if (session !== s) return;
      const now = s.client.getSnapshot();
      if (userCount(now) > item.users && lastUserText(now) === text) {
        settle();
        s.delivered = true;
        render();
        return;
      }
    }
    const p = startSend(s, () => s.client.send(text));
    settle();
    render();
    await p;
  }).then((failed) => restoreIfFailed(s, text, failed, item.maybeSent));
}

function rejectAllAndSend() {
  const s = session;
  if (!s) return;
  const text = ui.input.value;
  if (text.trim() === '') {
    ui.input.focus();
    flash(s, 'Type the new request first, then choose Reject all and send.');
    renderNow();
    return;
  }
  // Disabled while a request runs (as Submit is): nothing happens, the text stays where it is.
  if (ui.rejectAll.getAttribute('aria-disabled') === 'true') return;
  s.inBox = null;
  ui.input.value = '';
  autosize();
  // All of them, as the button says: the calls approved but not submitted yet too (the client's
  // rejectAllAndSend keeps the drafts made, and would run them), and on Neuron the approvals a
  // partial submission sent, which the server still takes back until the run resumes. (A call
  // whose decision the server has acted on refuses the change: it stays as it is.)
  for (const t of s.client.getSnapshot().suspension?.tools ?? []) {
    if (t.approval === 'approved') {
      try {
        s.client.reject(t.callId, REJECT_ALL_REASON);
      } catch {}
    }
  }
  command('send', () => startSend(s, () => s.client.rejectAllAndSend(text, REJECT_ALL_REASON))).then((failed) => restoreIfFailed(s, text, failed));
  ui.input.focus();
}

function submitDecisions() {
  const s = session;
  if (!s) return;
  if (!s.client.getSnapshot().canSubmit) return;
  command('submit', () => s.client.submit());
}

/**
 * Paused, with every card decided and nothing left to send here: another tab sent the decisions
 * (its reply is on its way there), so this page has nothing to submit or reject, only to wait.
 */
function sentElsewhere(snap) {
  const tools = snap.suspension?.tools ?? [];
  return tools.length > 0 && !snap.busy && !snap.canSubmit && tools.every((t) => !t.draft && t.approval !== 'pending');
}
const SENT_ELSEWHERE = 'The decisions were sent from another tab: waiting for the agent to go on there.';

/** Why the locked box or "Submit decisions" does nothing now, and what to do instead. */
function notYetMessage(snap) {
  const n = snap.suspension?.undecided.length ?? 0;
  if (snap.busy || PHASE_BUSY.has(snap.phase)) return 'Wait a moment: a request is still running.';
  if (sentElsewhere(snap)) return SENT_ELSEWHERE;
  if (n > 0) return `Decide ${n} more call${n === 1 ? '' : 's'} first, or use Reject all and send.`;
  return 'Every call is decided: submit your decisions first, or use Reject all and send.';
}

/** Shows `notYetMessage` in the status (a press that cannot act says why, instead of nothing). */
function explainNotYet() {
  const s = session;
  if (!s) return;
  flash(s, notYetMessage(s.client.getSnapshot()));
  renderNow();
}

function maybeAutoSubmit() {
  const s = session;
  if (!s || !ui.autoSubmit.checked) return;
  const snap = s.client.getSnapshot();
  if (snap.suspension?.complete && snap.canSubmit) submitDecisions();
}

function retry() {
  const s = session;
  if (!s) return;
  const snap = s.client.getSnapshot();
  // The unsent message, where the page keeps it: in the alert, or the box holding just it. (Once the
  // person edited it or put it back beside new text, it is theirs to send.)
  const text = snap.unsentText;
  const item = text && (s.held.find((u) => u.text === text)
    ?? (s.inBox?.text === text && ui.input.value === text ? s.inBox : null));
  if (item && snap.canSend) {
    resend(s, item);
  } else if (snap.suspension && snap.canSubmit && s.lastOp?.kind === 'submit') {
    command('submit', () => s.client.submit());
  } else {
    command('load', () => s.client.load());
  }
}

function reloadThread() {
  const s = session;
  if (s) command('load', () => s.client.load());
}

function askAgain() {
  const s = session;
  if (!s) return;
  const lastUser = [...s.client.getSnapshot().messages].reverse().find((m) => m.role === 'user' && m.text);
  // Into an empty box only: what the person typed is theirs.
  if (lastUser && ui.input.value.trim() === '') ui.input.value = lastUser.text;
  autosize();
  ui.input.focus();
  s.dismissedAlert = s.alertKey;
  render();
}

const cardActions = {
  approve: (id) => session?.client.approve(id),
  reject: (id, reason) => (reason === undefined ? session?.client.reject(id) : session?.client.reject(id, reason)),
  clear: (id) => session?.client.clear(id),
  decided: (id) => afterDecision(id),
  allow: (name) => allowTool(name, true),
};

/** Allows a tool for the session (its calls approved without asking), or stops allowing it. */
function allowTool(name, allow) {
  const s = session;
  if (!s) return;
  if (allow) s.client.allowTool(name);
  else s.client.disallowTool(name);
  setAllowed([...s.client.getSnapshot().allowedTools]);
  // (A flash: `render` would otherwise replace it with the phase's text at once.)
  flash(s, allow
    ? [shown(name), ' is allowed for this session: its calls are approved without asking.']
    : [shown(name), ' is no longer allowed: the agent asks before running it.']);
  renderNow();
}

/** "Ask again" in the Allowed bar: focus goes on to the next tool's button (the list is rebuilt), or the box. */
function askAgainFor(name) {
  const at = session?.client.getSnapshot().allowedTools.indexOf(name) ?? -1;
  allowTool(name, false);
  const buttons = ui.allowedList.querySelectorAll('button');
  if (buttons.length) buttons[Math.min(Math.max(at, 0), buttons.length - 1)].focus();
  else ui.input.focus();
}

function guard(fn) {
  return (...args) => {
    try {
      const r = fn(...args);
      if (r && typeof r.then === 'function') r.catch(() => {});
    } catch (e) {
      if (session) {
        session.notice = { code: e?.code ?? 'internal', message: e?.detail ?? String(e?.message ?? e) };
        render();
      }
    }
  };
}
for (const k of ['approve', 'reject', 'clear', 'allow']) cardActions[k] = guard(cardActions[k]);

/** After a decision: move on to the next undecided card, or to the submit button. */
function afterDecision(callId) {
  const s = session;
  if (!s) return;
  renderNow();
  const snap = s.client.getSnapshot();
  const tools = snap.suspension?.tools ?? [];
  const keys = cardKeys(tools);
  const at = tools.findIndex((t) => t.callId === callId);
  const order = [...tools.keys()];
  const next = [...order.slice(at + 1), ...order.slice(0, Math.max(at, 0))].find((i) => tools[i].approval === 'pending');
  const card = next === undefined ? undefined : s.cards.get(keys[next]);
  if (card) card.focus();
  else ui.submit.focus();
  maybeAutoSubmit();
}

// ---------------------------------------------------------------------------------------------
// Controls

function autosize() {
  // CSSOM writes are allowed by the CSP (only inline style attributes in markup are not).
  ui.input.style.height = 'auto';
  ui.input.style.height = `${Math.min(ui.input.scrollHeight + 2, 200)}px`;
}

function wireControls() {
  ui.composer.addEventListener('submit', (e) => {
    e.preventDefault();
    sendMessage();
  });
  ui.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      // Locked: Enter does not send; the status says what to do instead.
      if (session?.client.getSnapshot().suspension) explainNotYet();
      else sendMessage();
    }
  });
  ui.input.addEventListener('input', () => {
    // An edited message is the person's new text.
    if (session?.inBox && ui.input.value !== session.inBox.text) session.inBox = null;
    autosize();
    render();
  });
  ui.rejectAll.addEventListener('click', rejectAllAndSend);
  ui.stop.addEventListener('click', stopRequest);
  ui.submit.addEventListener('click', () => {
    if (ui.submit.getAttribute('aria-disabled') === 'true') explainNotYet();
    else submitDecisions();
  });
  ui.autoSubmit.checked = !!pref('autoSubmit', false);
  ui.autoSubmit.addEventListener('change', () => {
    setPref('autoSubmit', ui.autoSubmit.checked);
    maybeAutoSubmit();
  });
  ui.newThread.addEventListener('click', () => {
    const id = freshThreadId();
    const dialect = chosenDialect ?? session?.dialect ?? 'neuron';
    writeLocation(id, dialect, true);
    openThread(id, dialect);
    ui.input.focus();
  });
  ui.openForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const id = ui.openId.value.trim();
    if (!THREAD_ID.test(id)) {
      ui.openId.setAttribute('aria-invalid', 'true');
      if (session) {
        flash(session, 'A thread id is 1 to 128 letters, digits, "_" or "-".');
        renderNow();
      }
      ui.openId.focus();
      return;
    }
    ui.openId.removeAttribute('aria-invalid');
    ui.openId.value = '';
    // In the dialect chosen in the radios, as "New thread" does (not opened yet: the thread's own).
    const dialect = chosenDialect ?? session?.dialect ?? 'neuron';
    writeLocation(id, dialect, true);
    openThread(id, dialect);
  });
  // Each dialect keeps its own threads on the server, so another dialect means a new thread. Choosing
  // it in the radio group only offers that ("Start a Sidenet thread"): arrow keys move through the
  // radios and change the choice on every press, which must not open a thread each time (nor leave
  // a paused one) by itself.
  for (const input of ui.dialectInputs) {
    input.addEventListener('change', () => {
      if (!input.checked || !session) return;
      chosenDialect = input.value === session.dialect ? null : input.value;
      if (chosenDialect) {
        flash(session, `${DIALECT_NAMES[chosenDialect]} chosen. Start a ${DIALECT_NAMES[chosenDialect]} thread to use it; this thread stays as it is.`);
      } else session.flash = null;
      renderNow();
    });
  }
  ui.switchDialect.addEventListener('click', () => {
    const dialect = chosenDialect;
    if (!dialect) return;
    const id = freshThreadId();
    writeLocation(id, dialect, true);
    openThread(id, dialect);
    ui.input.focus();
  });
  window.addEventListener('popstate', () => {
    const { thread, dialect } = fromLocation();
    if (thread && (thread !== session?.thread || dialect !== session?.dialect)) openThread(thread, dialect);
  });
  window.addEventListener('pagehide', () => {
    try {
      session?.client.abort();
    } catch {
      /* ignore */
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Rendering

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  queueMicrotask(() => {
    renderQueued = false;
    render();
  });
}

function renderNow() {
  renderQueued = false;
  render();
}

const PHASE_BUSY = new Set(['loading', 'sending', 'streaming', 'submitting', 'conflict']);
const STOPPABLE = new Set(['sending', 'streaming', 'submitting']);
const UNSTOPPABLE = new Set(['loading', 'conflict']);

/**
 * A short-lived status message (what a press did, or why it did nothing), as text and `shown()`
 * nodes. It shows until the phase or the number of undecided calls changes; without it, the render
 * that follows a press would replace the message with the phase's text before anyone heard it.
 */
function flash(s, parts) {
  s.flash = { parts: Array.isArray(parts) ? parts : [parts], key: flashKey(s.client.getSnapshot()) };
}

const flashKey = (snap) => `${snap.phase}|${snap.suspension?.undecided.length ?? ''}`;

/** Sets the status region's content (text and `shown()` nodes), only when its text changes. */
function setStatus(parts) {
  const list = Array.isArray(parts) ? parts : [parts];
  const text = list.map((p) => (typeof p === 'string' ? p : p.textContent)).join('');
  if (ui.status.textContent !== text) ui.status.replaceChildren(...list);
}

/** The agent's last reply, in one line of at most about 200 characters (for the status). */
function lastReply(snap) {
  // (Only a reply to the last user message: none yet means nothing to say.)
  let m = null;
  for (let i = snap.messages.length - 1; i >= 0 && snap.messages[i].role !== 'user'; i--) {
    if (snap.messages[i].text) {
      m = snap.messages[i];
      break;
    }
  }
  if (!m) return '';
  const chars = [...m.text.replace(/\s+/g, ' ').trim()];
  return chars.length > 200 ? `${chars.slice(0, 199).join('')}…` : chars.join('');
}

function statusText(snap, s) {
  if (s.flash) {
    if (s.flash.key === flashKey(snap)) return s.flash.parts;
    s.flash = null;
  }
  const n = snap.suspension?.tools.length ?? 0;
  const undecided = snap.suspension?.undecided.length ?? 0;
  switch (snap.phase) {
    case 'loading':
      return 'Loading the thread…';
    case 'sending':
      return 'Sending your message…';
    case 'streaming':
      return 'The agent is replying…';
    case 'submitting':
      return 'Sending your decisions…';
    case 'conflict':
      return 'The thread changed on the server. Reloading it…';
    case 'awaiting_approval':
      if (sentElsewhere(snap)) return SENT_ELSEWHERE;
      if (undecided === 0) return `Paused. All ${n} decided: submit your decisions to continue.`;
      return `Paused for your approval: ${undecided} of ${n} tool call${n === 1 ? '' : 's'} still need${undecided === 1 ? 's' : ''} a decision.`;
    case 'completed': {
      // An answer a length limit or a filter cut short says so (Sidenet's finish reason).
      let head = 'Done. The agent has finished.';
      if (snap.finishReason === 'length') head = 'Done, but the answer was cut short: it reached its length limit.';
      if (snap.finishReason === 'content-filter') head = 'Done, but a content filter stopped the answer.';
      // The reply, in one line: the message list is not a live region (it is rebuilt on every
      // streamed piece, which a log region would read out again and again), so the status says it.
      const reply = lastReply(snap);
      return reply ? [head, ' Reply: ', shown(reply)] : head;
    }
    case 'expired':
      return 'The paused run expired.';
    case 'error':
      return `Something went wrong: ${describeError(snap.error).title}.`;
    default:
      if (!snap.loaded) return 'Ready.';
      return snap.messages.length ? 'Ready.' : `New ${DIALECT_NAMES[s.dialect]} thread. Ask the agent something.`;
  }
}

function describeError(error) {
  const code = error?.code ?? '';
  switch (code) {
    case 'network':
    case 'timeout':
      return { title: 'the server could not be reached', hint: 'Check the connection, then retry.' };
    case 'conflict':
      return { title: 'the thread changed on the server', hint: 'It was reloaded: check the cards and decide again if needed.' };
    case 'expired':
      return { title: 'the approval expired', hint: 'The agent stopped waiting. The thread is intact: ask again.' };
    case 'unauthorized':
      return { title: 'the server refused the credentials', hint: 'Sign in again, then reload the thread.' };
    case 'http_status':
      return { title: 'the server answered with an error', hint: 'Retry, or reload the thread.' };
    case 'stream_error':
      return { title: 'the reply stream broke off', hint: 'Reload the thread to see where it stands.' };
    case 'input_locked':
      return { title: 'the agent is waiting for your decisions', hint: 'Decide the cards, or use Reject all and send.' };
    case 'busy':
      return { title: 'another request is still running', hint: 'Wait for it to finish.' };
    default:
      return { title: 'the request failed', hint: 'Retry, or reload the thread.' };
  }
}

function renderAlert(snap, s) {
  const expired = snap.phase === 'expired';
  const error = snap.error ?? (expired ? { code: 'expired', message: '' } : null) ?? s.notice;
  s.alertKey = error ? `${snap.phase}|${error.code}|${error.message}` : null;
  const showing = error && s.alertKey !== s.dismissedAlert ? error : null;
  // The message put back into the box, while the box holds just it.
  const inBox = s.inBox && ui.input.value === s.inBox.text ? s.inBox : null;
  // Each alert is built once and kept while it says the same thing; what changes while it shows (a
  // request running) is updated in place. Rebuilding it would send the focus on its buttons (Retry,
  // Reload thread) to the page's body, and make the assertive region read it all out again.
  const wanted = [];
  if (showing) wanted.push([`error|${s.alertKey}|${inBox ? inBox.maybeSent : '-'}`, () => errorAlert(s, showing, inBox)]);
  for (const item of s.held) {
    item.alertId ??= ++alertSeq;
    wanted.push([`held|${item.alertId}|${item.maybeSent}`, () => heldAlert(s, item)]);
  }
  if (s.delivered && !showing) wanted.push(['delivered', () => deliveredAlert(s)]);
  const before = s.alertViews ?? new Map();
  const views = new Map(wanted.map(([key, build]) => [key, before.get(key) ?? build()]));
  s.alertViews = views;
  const els = [...views.values()].map((v) => v.el);
  const hadFocus = ui.alerts.contains(document.activeElement);
  for (const el of [...ui.alerts.children]) if (!els.includes(el)) el.remove();
  els.forEach((el, i) => {
    if (ui.alerts.children[i] !== el) ui.alerts.insertBefore(el, ui.alerts.children[i] ?? null);
  });
  for (const v of views.values()) v.update?.(snap);
  // An alert resolved (or dismissed) while focus was on it: focus goes to the message box.
  if (hadFocus && !ui.alerts.contains(document.activeElement)) ui.input.focus();
}

let alertSeq = 0;

/**
 * A button that stays focusable while it cannot act (aria-disabled, not disabled: a disabled button
 * drops the focus): a press acts only while it is not aria-disabled.
 */
function softButton(props, label, action) {
  const b = h('button', { type: 'button', ...props, onclick: () => {
    if (b.getAttribute('aria-disabled') !== 'true') action();
  } }, label);
  return b;
}

function errorAlert(s, error, inBox) {
  const d = describeError(error);
  const isExpired = error.code === 'expired';
  const actions = [];
  const whileBusy = []; // what cannot act while a request runs
  if (isExpired) {
    actions.push(h('button', { type: 'button', class: 'btn btn-primary', onclick: askAgain }, 'Ask again'));
  } else if (!['input_locked', 'busy', 'conflict', 'empty_decisions', 'not_suspended', 'invalid_state'].includes(error.code)) {
    // (Not for a command the client refused as it stood: the same press would be refused again.)
    whileBusy.push(softButton({ class: 'btn btn-primary' }, 'Retry', retry));
  }
  whileBusy.push(softButton({ class: 'btn btn-quiet' }, 'Reload thread', reloadThread));
  actions.push(...whileBusy);
  actions.push(
    h('button', { type: 'button', class: 'btn btn-link', onclick: () => { s.dismissedAlert = s.alertKey; s.notice = null; render(); ui.input.focus(); } }, 'Dismiss'),
  );
  const title = d.title.charAt(0).toUpperCase() + d.title.slice(1);
  let note = null;
  if (inBox) {
    note = inBox.maybeSent
      ? 'Your message may not have been sent; it is back in the message box. Retry checks the thread first, so it is not sent twice.'
      : 'Your message was not sent; it is back in the message box.';
  }
  const el = h('div', { class: `alert ${isExpired || error.code === 'conflict' ? 'alert-warn' : 'alert-error'}`, dataset: { code: error.code } },
    h('span', { class: 'alert-icon', 'aria-hidden': 'true' }, isExpired ? '◷' : '!'),
    h('div', { class: 'alert-body' },
      h('p', { class: 'alert-title' }, title + '.'),
      h('p', null, d.hint),
      error.message ? h('p', { class: 'alert-detail' }, shown(error.message)) : null,
      note ? h('p', { class: 'alert-detail' }, note) : null,
      h('div', { class: 'alert-actions' }, actions)));
  return {
    el,
    update: (snap) => {
      for (const b of whileBusy) b.setAttribute('aria-disabled', String(!!snap.busy));
    },
  };
}

/** A message not (surely) sent while the person had typed something new: shown here, as text. */
function heldAlert(s, item) {
  const sendIt = softButton({ class: 'btn btn-quiet' }, 'Send it', () => resend(s, item));
  const el = h('div', { class: 'alert alert-warn alert-unsent', dataset: { unsent: item.maybeSent ? 'maybe' : 'not' } },
    h('span', { class: 'alert-icon', 'aria-hidden': 'true' }, '!'),
    h('div', { class: 'alert-body' },
      h('p', { class: 'alert-title' }, item.maybeSent ? 'Your message may not have been sent.' : 'Your message was not sent.'),
      h('p', null, item.maybeSent
        ? 'You typed something new since, so it is kept here. Sending it again checks the thread first, so it is not sent twice.'
        : 'You typed something new since, so it is kept here.'),
      h('blockquote', { class: 'unsent-text' }, item.text),
      h('div', { class: 'alert-actions' },
        h('button', { type: 'button', class: 'btn btn-primary', onclick: () => putBack(s, item) }, 'Put it back'),
        sendIt,
        h('button', { type: 'button', class: 'btn btn-link', onclick: () => discardUnsent(s, item) }, 'Discard it'))));
  return {
    el,
    update: (snap) => sendIt.setAttribute('aria-disabled', String(!!snap.busy || !snap.canSend)),
  };
}

function deliveredAlert(s) {
  const el = h('div', { class: 'alert alert-info', dataset: { code: 'delivered' } },
    h('span', { class: 'alert-icon', 'aria-hidden': 'true' }, '✓'),
    h('div', { class: 'alert-body' },
      h('p', { class: 'alert-title' }, 'Your message had reached the server.'),
      h('p', null, 'It is on the thread, so it was not sent again.'),
      h('div', { class: 'alert-actions' },
        h('button', { type: 'button', class: 'btn btn-link', onclick: () => { s.delivered = false; render(); ui.input.focus(); } }, 'Dismiss'))));
  return { el };
}

function render() {
  const s = session;
  if (!s) return;
  const snap = s.client.getSnapshot();
  const suspended = !!snap.suspension;

  // Header
  setText(ui.threadId, s.thread);
  ui.threadId.title = `Thread ${s.thread} (${DIALECT_NAMES[s.dialect]})`;
  // The radios show the thread's dialect, or the one chosen for a new thread (not opened yet).
  for (const input of ui.dialectInputs) input.checked = input.value === (chosenDialect ?? s.dialect);
  ui.switchDialect.hidden = !chosenDialect;
  if (chosenDialect) setText(ui.switchDialect, `Start a ${DIALECT_NAMES[chosenDialect]} thread`);
  ui.app.dataset.phase = snap.phase;
  // A quiet reload in flight (Neuron, after a POST): what the end-to-end tests wait out before
  // comparing what is shown.
  ui.app.dataset.syncing = String(snap.syncing);

  // Status and busy indicator
  const busy = snap.busy || PHASE_BUSY.has(snap.phase);
  ui.busy.hidden = !busy;
  ui.conversation.setAttribute('aria-busy', String(snap.phase === 'loading' && !snap.loaded));
  setStatus(statusText(snap, s));
  // Unsent text comes back (into the box, or the alert when the person typed since), once.
  takeUnsent(s, snap);
  renderAlert(snap, s);


  // Messages and the streaming message.
  const streamingNow = snap.streaming ?? null;
  renderMessages(snap, s, streamingNow);
  ui.empty.hidden = !(snap.loaded && snap.messages.length === 0 && !streamingNow && !suspended);

  renderApprovals(snap, s);
  renderAllowed(snap);

  // Composer: locked while suspended, with a way out.
  const hasText = ui.input.value.trim() !== '';
  ui.composer.classList.toggle('is-locked', suspended);
  ui.lockNote.hidden = !suspended;
  ui.send.hidden = suspended;
  ui.rejectAll.hidden = !suspended;
  // aria-disabled, not disabled: pressing Send disables it while the message goes, and a disabled
  // button would drop the focus to the page's body.
  ui.send.setAttribute('aria-disabled', String(!snap.canSend || !hasText));
  ui.rejectAll.setAttribute('aria-disabled', String(!hasText || snap.busy || sentElsewhere(snap)));
  // Stop, while a message, decisions or a reply are on their way, or a command's retry waits
  // (`busy`); not a load, nothing to lose there.
  const stopHadFocus = document.activeElement === ui.stop;
  ui.stop.hidden = !((snap.busy || STOPPABLE.has(snap.phase)) && !UNSTOPPABLE.has(snap.phase));
  if (ui.stop.hidden && stopHadFocus) ui.input.focus();
  ui.input.placeholder = suspended ? 'New request…' : 'Message the agent';
  // Locked: the box is described by the lock note, and its hint no longer says "Enter to send".
  ui.input.setAttribute('aria-describedby', suspended ? 'lock-note composer-hint' : 'composer-hint');
  setText(ui.hint, suspended
    ? 'Enter does not send while the agent waits for your decisions. Shift+Enter for a new line.'
    : 'Enter to send, Shift+Enter for a new line.');
  setText(ui.send, snap.phase === 'sending' || snap.phase === 'streaming' ? 'Sending…' : 'Send');
  if (!suspended && s.wasSuspended && snap.phase === 'completed' && ui.approvals.contains(document.activeElement) === false
      && (document.activeElement === document.body || document.activeElement === null)) {
    ui.input.focus();
  }
  s.wasSuspended = suspended;
}

/**
 * The list item of a settled message, kept with the message object and reused while the message
 * and what its item shows of other messages stay the same: the client keeps a message's object
 * until it changes, so a turn builds the items of its own messages alone (a text selection in an
 * earlier message survives it too). What the item reads besides the message, per tool:
 * whether the cards show it, its result from a later message, whether it is shown with its call.
 */
const items = new WeakMap();
function settledItem(m, context, opts) {
  const deps = [opts.dialect];
  for (const t of m.tools ?? []) deps.push(hiddenTool(m, t, opts), context.results.get(t), context.paired.has(t));
  const kept = items.get(m);
  if (kept && kept.deps.length === deps.length && kept.deps.every((d, i) => d === deps[i])) return kept.el;
  const el = messageItem(m, context, opts);
  items.set(m, { el, deps });
  return el;
}

/**
 * The settled messages' items are looked at only when the messages change (the client keeps the
 * same frozen array until `messagesVersion` changes), or the calls the cards show, and built only
 * for the messages that changed (`settledItem`); a streamed delta rebuilds the streaming message's
 * item alone (a long thread would otherwise be built again, every string of it scanned for hidden
 * characters, at each delta or turn).
 */
function renderMessages(snap, s, streamingNow) {
  const hidden = new Set((snap.suspension?.tools ?? []).map((t) => t.callId));
  const paused = snap.suspension?.messageId ?? null;
  const messagesKey = `${snap.messagesVersion}|${paused}|${[...hidden].join(',')}`;
  const settledChanged = messagesKey !== s.messagesKey || snap.messages !== s.messagesRef;
  if (!settledChanged && streamingNow === s.streamingRef) return;
  const nearBottom = isNearBottom();
  const opts = { dialect: s.dialect, hidden, paused };
  if (settledChanged) {
    s.messagesKey = messagesKey;
    s.messagesRef = snap.messages;
    s.messagesContext = messageContext(snap.messages);
    s.messageEls = snap.messages.map((m) => settledItem(m, s.messagesContext, opts)).filter(Boolean);
  }
  const streamingEl = streamingNow ? messageItem(streamingNow, s.messagesContext, { ...opts, streaming: true }) : null;
  if (settledChanged) {
    ui.messages.replaceChildren(...s.messageEls, ...(streamingEl ? [streamingEl] : []));
  } else if (s.streamingEl?.parentNode === ui.messages) {
    if (streamingEl) s.streamingEl.replaceWith(streamingEl);
    else s.streamingEl.remove();
  } else if (streamingEl) {
    ui.messages.append(streamingEl);
  }
  s.streamingRef = streamingNow;
  s.streamingEl = streamingEl;
  if (nearBottom || streamingNow) scrollToBottom();
}

/**
 * Each card's key: its callId, and from the second call under one callId on, its number too. A
 * server may give several calls one callId (Neuron's Gemini provider uses the tool's name): each
 * still gets a card of its own, so that no call goes unseen.
 */
function cardKeys(tools) {
  const seen = new Map();
  return tools.map((t) => {
    const n = seen.get(t.callId) ?? 0;
    seen.set(t.callId, n + 1);
    return n ? `${t.callId}\u0000${n}` : t.callId;
  });
}

function renderApprovals(snap, s) {
  const sus = snap.suspension;
  if (!sus) {
    const hadFocus = ui.approvals.contains(document.activeElement);
    ui.approvals.hidden = true;
    if (s.cards.size) {
      s.cards.clear();
      ui.cards.replaceChildren();
    }
    s.pauseKey = null;
    if (hadFocus) ui.input.focus();
    return;
  }
  ui.approvals.hidden = false;
  const busy = snap.busy || snap.phase === 'submitting';
  const ids = sus.tools.map((t) => t.callId);
  const keys = cardKeys(sus.tools);
  // Keyed update: cards keep their DOM (and focus, and a reason being typed) across renders.
  for (const [key, card] of s.cards) {
    if (!keys.includes(key)) {
      card.el.remove();
      s.cards.delete(key);
    }
  }
  sus.tools.forEach((tool, i) => {
    let card = s.cards.get(keys[i]);
    if (!card) {
      card = new ApprovalCard(tool.callId, cardActions);
      s.cards.set(keys[i], card);
    }
    // The other calls under its callId, which one decision answers with it.
    const twins = ids.filter((id) => id === tool.callId).length - 1;
    card.update(tool, { busy, dialect: s.dialect, allowed: snap.allowedTools, twins });
    if (ui.cards.children[i] !== card.el) ui.cards.insertBefore(card.el, ui.cards.children[i] ?? null);
  });

  const n = sus.tools.length;
  const decided = n - sus.undecided.length;
  setText(ui.approvalsSub, n === 1
    ? 'The agent wants to run a tool that needs your go-ahead.'
    : `The agent wants to run ${n} tools that need your go-ahead. Decide each one.`);
  setText(ui.decidedCount, `${decided} of ${n} decided`);
  ui.submit.setAttribute('aria-disabled', String(!snap.canSubmit || busy));
  setText(ui.submit, snap.phase === 'submitting' ? 'Submitting…' : 'Submit decisions');

  const notices = [];
  if (snap.droppedDrafts?.length) {
    notices.push(h('p', { class: 'notice' }, `${snap.droppedDrafts.length} of your draft decisions no longer applied (the pending calls changed) and were dropped.`));
  }
  const last = snap.lastSubmission;
  if (last?.notApplied?.length) {
    // Still drafts (a server that holds a partial set aside until it is whole): they go again
    // with the next submission. Otherwise they were lost on the way: decide again.
    const n = last.notApplied.length;
    const kept = last.notApplied.every((id) => snap.decisions[id] !== undefined);
    notices.push(h('p', { class: 'notice' }, kept
      ? `${n} decision${n === 1 ? ' is' : 's are'} not on the thread yet; kept, ${n === 1 ? 'it goes' : 'they go'} again with your next submission.`
      : `${n} decision${n === 1 ? ' was' : 's were'} not applied by the server; decide again and resubmit.`));
  } else if (last?.status === 'awaiting_approval' && last.stillPending?.length && decided === 0) {
    notices.push(h('p', { class: 'notice' }, 'Your decisions were applied. The agent needs a decision on the calls below.'));
  }
  ui.notices.replaceChildren(...notices);

  // Focus moves to the first card when the run pauses (a new pause, not every render).
  const key = `${sus.messageId ?? ''}|${ids.join(',')}`;
  if (key !== s.pauseKey) {
    s.pauseKey = key;
    const first = s.cards.get(keys[Math.max(0, ids.indexOf(sus.pending[0]?.callId))]);
    // Not away from what the person is typing in: the message box holding text, a deny reason,
    // the thread id to open.
    const at = document.activeElement;
    const typing = at === ui.input ? ui.input.value !== '' : !!at?.matches('input:not([type=checkbox]), textarea');
    if (first && !typing) {
      requestAnimationFrame(() => {
        revealApprovals();
        first.focus();
      });
    }
  }
}

/** The tools allowed this session, each with a way to stop allowing it. */
function renderAllowed(snap) {
  const names = snap.allowedTools;
  const key = names.join('\n');
  ui.allowed.hidden = names.length === 0;
  if (ui.allowedList.dataset.key === key) return;
  ui.allowedList.dataset.key = key;
  ui.allowedList.replaceChildren(...names.map((name) =>
    h('li', { class: 'allowed-tool' },
      shown(name, null, 'code'),
      h('button', { type: 'button', class: 'btn btn-link', onclick: guard(() => askAgainFor(name)) },
        'Ask again', h('span', { class: 'sr-only' }, ' before running ', shown(name))))));
}

/**
 * What scrolls the thread: the conversation box, or the page itself when a short or narrow window
 * (or a zoomed one) lets the whole page scroll (style.css: the conversation's overflow is visible).
 */
function scroller() {
  return getComputedStyle(ui.conversation).overflowY === 'visible' ? document.scrollingElement : ui.conversation;
}

/** Shows the whole approval panel when it fits (it is last in the conversation), else its top. */
function revealApprovals() {
  const c = scroller();
  // When the page scrolls, the Allowed bar and the message box come after the panel.
  const after = c === ui.conversation ? 0 : ui.allowed.offsetHeight + ui.composer.offsetHeight;
  if (ui.approvals.offsetHeight + after <= c.clientHeight) c.scrollTop = c.scrollHeight;
  else ui.approvals.scrollIntoView({ block: 'start' });
}

function isNearBottom() {
  const c = scroller();
  return c.scrollHeight - c.scrollTop - c.clientHeight < 80;
}

function scrollToBottom() {
  const c = scroller();
  requestAnimationFrame(() => {
    c.scrollTop = c.scrollHeight;
  });
}

main();
