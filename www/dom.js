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

// What is shown as a token: controls (Cc) but line feeds and tabs, format characters (Cf), every
// default-ignorable code point (which fonts draw as nothing: variation selectors U+FE00–FE0F and
// U+E0100–E01EF, the combining grapheme joiner U+034F, the Khmer inherent vowels U+17B4/17B5, the
// Mongolian free variation selectors U+180B–180F, the blank Hangul fillers, ...), line and paragraph
// separators, and lone surrogates; save where the context makes them part of an emoji (`hiddenAt`).
// Global: text is split around its matches only; most text has none, and takes one native scan.
const HIDDEN = /[\0-\x08\x0B-\x1F\x7F-\x9F\p{Cf}\p{Default_Ignorable_Code_Point}\p{Zl}\p{Zp}\p{Cs}]/gu;
const PICTO = /^\p{Extended_Pictographic}$/u;
// What may sit between an emoji and a zero-width joiner: variation selector 16, skin tones.
const EMOJI_MOD = /^[\uFE0F\u{1F3FB}-\u{1F3FF}]$/u;

/** The code point of `s` that ends at index `i` ('' at the start). */
function cpBefore(s, i) {
  if (i <= 0) return '';
  const lo = s.charCodeAt(i - 1);
  if (lo >= 0xDC00 && lo <= 0xDFFF && i >= 2) {
    const hi = s.charCodeAt(i - 2);
    if (hi >= 0xD800 && hi <= 0xDBFF) return s.slice(i - 2, i);
  }
  return s[i - 1];
}

/** The code point of `s` that starts at index `i` ('' at the end). */
const cpAt = (s, i) => (i < s.length ? String.fromCodePoint(s.codePointAt(i)) : '');

/** Whether `c`, a match of HIDDEN at index `i` of `s`, is to be shown as a token. */
function hiddenAt(s, i, c) {
  if (c === '\r') return s[i + 1] !== '\n'; // a CRLF line end shows as what it is
  if (c === '\u200D') {
    // The zero-width joiner inside an emoji sequence (👨‍👩‍👧) is what makes it one emoji.
    let j = i;
    let before = cpBefore(s, j);
    while (before && EMOJI_MOD.test(before)) {
      j -= before.length;
      before = cpBefore(s, j);
    }
    return !(before && PICTO.test(before) && PICTO.test(cpAt(s, i + 1)));
  }
  if (c === '\uFE0E' || c === '\uFE0F') {
    // Text or emoji presentation of an emoji (❤️), or of a keycap (1️⃣: a digit, #, *, then U+20E3).
    const before = cpBefore(s, i);
    if (before && PICTO.test(before)) return false;
    if (/^[0-9#*]$/.test(before) && s[i + 1] === '\u20E3') return false;
  }
  return true;
}

const token = (c) => `⟨U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`;

/** `text` split into runs: `{ text, hidden }`, a hidden run being one invisible character. */
function runs(text) {
  const s = String(text ?? '');
  const out = [];
  let from = 0;
  HIDDEN.lastIndex = 0;
  for (let m; (m = HIDDEN.exec(s)) !== null;) {
    const c = m[0];
    if (!hiddenAt(s, m.index, c)) continue;
    if (m.index > from) out.push({ text: s.slice(from, m.index), hidden: false });
    out.push({ text: c, hidden: true });
    from = m.index + c.length;
  }
  if (from < s.length) out.push({ text: from ? s.slice(from) : s, hidden: false });
  return out;
}

/** Whether `text` holds a character that `shown()` / `shownText()` turn into a token. */
export function hasHidden(text) {
  const s = String(text ?? '');
  HIDDEN.lastIndex = 0;
  for (let m; (m = HIDDEN.exec(s)) !== null;) {
    if (hiddenAt(s, m.index, m[0])) {
      HIDDEN.lastIndex = 0;
      return true;
    }
  }
  return false;
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
