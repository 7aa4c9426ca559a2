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
