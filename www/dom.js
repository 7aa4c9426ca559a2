// A tiny DOM builder. Everything that comes from the model or the server is untrusted: it only ever
// becomes text nodes (`textContent`) or attribute values set with `setAttribute` — never HTML.

const FORBIDDEN = new Set(['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'srcdoc', 'style']);

/**
 * h('button', { class: 'btn', onclick: fn, 'aria-pressed': 'true' }, 'Approve')
 * - props: `class`, `dataset` (object), `on<event>` (function), `value` / `checked` / `disabled` /
 *   `hidden` (properties), anything else an attribute. `null`, `undefined` and `false` are skipped.
 * - children: strings and numbers become text nodes; nodes are appended; arrays are flattened;
 *   `null`, `undefined` and `false` are skipped.
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (FORBIDDEN.has(key)) throw new Error(`h(): the ${key} prop is not allowed`);
    if (key === 'class') el.className = String(value);
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on')) {
      if (typeof value !== 'function') throw new Error(`h(): ${key} must be a function`);
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === 'value' || key === 'checked' || key === 'disabled' || key === 'hidden') {
      el[key] = value;
    } else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

/** Sets a node's text only when it differs (so live regions announce real changes only). */
export function setText(el, text) {
  const value = String(text ?? '');
  if (el.textContent !== value) el.textContent = value;
}

export const $ = (id) => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el;
};

let uid = 0;
/** A fresh id for aria-labelledby / aria-describedby (never derived from server data). */
export const nextId = (prefix) => `${prefix}-${++uid}`;

// ---------------------------------------------------------------------------------------------
// Untrusted text that must look like what it is. Tool names, arguments and reasons come from the
// model or the server, and the card promises the call "runs exactly as shown": characters that
// display as nothing (zero-width spaces, soft hyphens, tag characters) or that reorder the text
// around them (bidi overrides and isolates such as U+202E) could make a value look like another
// ("invoice_march_" + U+202E + "fdp.exe" displays as "invoice_march_exe.pdf"). They are shown as
// visible tokens (⟨U+202E⟩) instead, and each untrusted piece is isolated (<bdi>), so that
// right-to-left text in one value cannot reorder the words around it.

// Control (Cc), format (Cf), line/paragraph separators, lone surrogates, and the blank Hangul fillers.
const HIDDEN_CHAR = /^[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\u115F\u1160\u3164\uFFA0]$/u;
const PICTO = /^\p{Extended_Pictographic}$/u;
// What may sit between an emoji and a zero-width joiner: variation selector 16, skin tones.
const EMOJI_MOD = /^[\uFE0F\u{1F3FB}-\u{1F3FF}]$/u;

/** Whether the code point at `i` of `chars` (an array of code points as strings) is to be shown. */
function isHiddenAt(chars, i) {
  const c = chars[i];
  if (c === '\n' || c === '\t') return false; // line breaks and tabs show as what they are
  if (c === '\r' && chars[i + 1] === '\n') return false;
  if (!HIDDEN_CHAR.test(c)) return false;
  if (c === '\u200D') {
    // The zero-width joiner inside an emoji sequence (👨‍👩‍👧) is what makes it one emoji.
    let j = i - 1;
    while (j >= 0 && EMOJI_MOD.test(chars[j])) j--;
    if (j >= 0 && PICTO.test(chars[j]) && i + 1 < chars.length && PICTO.test(chars[i + 1])) return false;
  }
  return true;
}

const token = (c) => `⟨U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`;

// Any character `isHiddenAt` may take for one, but line feeds and tabs (and carriage returns,
// looked at apart): most text has none, and is then one run after one native test, not split into
// code points (a streamed reply is shown again at every delta).
const MAYBE_HIDDEN = /[\0-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F\p{Cf}\p{Zl}\p{Zp}\p{Cs}\u115F\u1160\u3164\uFFA0]/u;
const plain = (s) => !MAYBE_HIDDEN.test(s) && !s.includes('\r');

/** `text` split into runs: `{ text, hidden }`, a hidden run being one invisible character. */
function runs(text) {
  const s = String(text ?? '');
  if (plain(s)) return s ? [{ text: s, hidden: false }] : [];
  const chars = [...s];
  const out = [];
  let plainRun = '';
  chars.forEach((c, i) => {
    if (isHiddenAt(chars, i)) {
      if (plainRun) out.push({ text: plainRun, hidden: false });
      plainRun = '';
      out.push({ text: c, hidden: true });
    } else plainRun += c;
  });
  if (plainRun) out.push({ text: plainRun, hidden: false });
  return out;
}

/** Whether `text` holds a character that `shown()` / `shownText()` turn into a token. */
export function hasHidden(text) {
  if (plain(String(text ?? ''))) return false;
  const chars = [...String(text ?? '')];
  return chars.some((_, i) => isHiddenAt(chars, i));
}

/** Whether any string (value or key) in a JSON value holds a hidden character. */
export function hasHiddenDeep(value) {
  if (typeof value === 'string') return hasHidden(value);
  if (Array.isArray(value)) return value.some(hasHiddenDeep);
  if (value && typeof value === 'object') return Object.entries(value).some(([k, v]) => hasHidden(k) || hasHiddenDeep(v));
  return false;
}

/**
 * Untrusted text as an isolated element (`<bdi>` unless `tag` says otherwise; its own direction,
 * which cannot leak into the sentence around it), its hidden characters shown as tokens. Text nodes
 * only.
 */
export function shown(text, props = null, tag = 'bdi') {
  const el = h(tag, props);
  for (const r of runs(text)) {
    el.append(r.hidden ? h('span', { class: 'hidden-char', title: 'Hidden or direction-changing character' }, token(r.text)) : r.text);
  }
  if (tag !== 'bdi') el.classList.add('isolate');
  return el;
}

/** Untrusted text for an attribute or a plain string (aria-label, status): hidden characters as tokens. */
export function shownText(text) {
  return runs(text).map((r) => (r.hidden ? token(r.text) : r.text)).join('');
}
