// Rendering of the conversation: messages, tool calls and their inputs/results. Model and server data
// only ever become text (see dom.js), isolated, with hidden and direction-changing characters shown
// as tokens (`shown()`).
import { h, shown } from './dom.js';

/** A readable view of a JSON value: strings as written, objects as nested key/value lists. */
export function valueView(value, depth = 0) {
  if (value === null || value === undefined) return h('span', { class: 'v v-null' }, 'null');
  if (typeof value === 'string') {
    return value === '' ? h('span', { class: 'v v-empty' }, '(empty)') : shown(value, { class: 'v v-str' });
  }
  if (typeof value === 'number' || typeof value === 'boolean') {
    return h('span', { class: 'v v-lit' }, String(value));
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return h('span', { class: 'v v-empty' }, '(none)');
    if (value.every((x) => x === null || typeof x !== 'object')) {
      // On one line, each item isolated on its own: a comma inside an item, or a right-to-left
      // one, cannot run into its neighbours (["a, b"] does not read as ["a", "b"]).
      return h('span', { class: 'v v-items' }, value.map((x, i) => [i ? ', ' : null, valueView(x, depth)]));
    }
  }
  if (depth >= 3) return shown(JSON.stringify(value, null, 2), { class: 'v v-json' }, 'pre');
  if (Array.isArray(value)) {
    return h('ol', { class: 'v v-list' }, value.map((x) => h('li', null, valueView(x, depth + 1))));
  }
  return kvView(value, depth + 1);
}

/** `<dl>` of an object's entries (or the value itself when it is not an object). */
export function kvView(obj, depth = 0) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return valueView(obj, depth);
  const entries = Object.entries(obj);
  if (entries.length === 0) return h('p', { class: 'kv-none' }, 'No arguments');
  return h(
    'dl',
    { class: 'kv' },
    entries.map(([k, v]) => h('div', { class: 'kv-row' }, h('dt', null, shown(k)), h('dd', null, valueView(v, depth)))),
  );
}

const resultText = (r) => (typeof r === 'string' ? r : JSON.stringify(r, null, 2));

/** What happened to a tool call in the transcript, in words (colour is never the only carrier). */
function outcome(tool, result, dialect, part) {
  const approval = result?.approval ?? tool.approval;
  // Rejected, whatever its outcome says (a server may record a decline as an error).
  if (approval === 'rejected') {
    return { state: 'rejected', icon: '✕', label: dialect === 'sidenet' ? 'Denied' : 'Rejected' };
  }
  // Approved and run, then failed; else it never ran (its run abandoned, its input refused).
  if (part?.state === 'output-error') {
    return { state: 'error', icon: '!', label: approval === 'approved' ? 'Approved · failed' : 'Not run' };
  }
  const value = result?.result ?? tool.result;
  if (approval === 'pending') return { state: 'pending', icon: '‖', label: 'Awaiting approval' };
  if (approval === 'approved') {
    return value == null
      ? { state: 'approved', icon: '✓', label: 'Approved' }
      : { state: 'done', icon: '✓', label: 'Approved · ran' };
  }
  return value == null
    ? { state: 'called', icon: '…', label: 'Running' }
    : { state: 'done', icon: '✓', label: 'Ran' };
}

/** The Sidenet wire part of a tool call (for states the neutral view does not name). */
function wirePart(message, tool) {
  const parts = message?.raw?.parts;
  if (!Array.isArray(parts)) return undefined;
  // The k-th tool of a callId is its k-th part: a message can hold two calls under one callId.
  const k = (message.tools ?? []).filter((t) => t.callId === tool.callId).indexOf(tool);
  return parts.filter((p) => p && p.toolCallId === tool.callId)[Math.max(k, 0)];
}

function toolBlock(tool, result, dialect, part) {
  const o = outcome(tool, result, dialect, part);
  const rejectReason = result?.rejectReason ?? tool.rejectReason;
  const value = result?.result ?? tool.result;
  return h(
    'div',
    { class: `tool tool-${o.state}`, dataset: { callId: tool.callId } },
    h(
      'div',
      { class: 'tool-head' },
      h('span', { class: 'tool-glyph', 'aria-hidden': 'true' }, '⚙'),
      shown(tool.name, { class: 'tool-name' }, 'code'),
      h('span', { class: `badge badge-${o.state}` }, h('span', { 'aria-hidden': 'true' }, o.icon), ' ', o.label),
    ),
    tool.approvalReason && o.state !== 'called' ? h('p', { class: 'tool-why' }, shown(tool.approvalReason)) : null,
    kvView(tool.inputs),
    o.state === 'rejected' && (rejectReason || dialect !== 'sidenet')
      ? h(
          'p',
          { class: 'tool-reason' },
          h('span', { class: 'tool-reason-label' }, 'Reason: '),
          rejectReason ? h('q', null, shown(rejectReason)) : h('span', { class: 'muted' }, 'none given'),
        )
      : null,
    value != null
      ? h('div', { class: 'tool-result' }, h('span', { class: 'tool-result-label' }, o.state === 'error' ? 'Error' : 'Result'), shown(resultText(value), null, 'pre'))
      : null,
  );
}

function bubble(role, text, extraClass = '') {
  const who = role === 'user' ? 'You' : role === 'assistant' ? 'Agent' : role || 'System';
  return h(
    'div',
    { class: `bubble ${extraClass}` },
    h('span', { class: 'sr-only' }, `${who}: `),
    shown(text, { class: 'bubble-text' }, 'p'),
  );
}

/**
 * What the items of a thread's messages share: Neuron puts results in a separate tool_call_result
 * message, folded into their calls. Built once per `messages` array. A result is paired with a
 * call of the last tool_call message before it, by callId and then by place: a callId can be
 * reused (a later turn's call, providers that count calls per step) and shared (neuron-ai's
 * Gemini provider gives each call the tool's name), so a callId alone could give a call another
 * call's result. `results` maps a call's tool to its result's; `paired` holds the results shown
 * with their calls (the others show on their own).
 */
export function messageContext(messages) {
  const results = new Map();
  const paired = new Set();
  // The calls of the last tool_call message that have no result yet, in order.
  let open = [];
  // (A call without an id, from a provider that gives none, has callId "": it cannot be paired.)
  for (const m of messages) {
    const tools = (m.tools ?? []).filter((t) => t.callId);
    if (m.kind !== 'tool_result') {
      if (tools.length) open = tools;
      continue;
    }
    for (const t of tools) {
      const i = open.findIndex((c) => c.callId === t.callId);
      if (i < 0) continue;
      results.set(open[i], t);
      paired.add(t);
      open = open.filter((_, j) => j !== i);
    }
  }
  return { results, paired };
}

/**
 * Is tool `t` of message `m` left out of the transcript: a call the approval cards show (`hidden`,
 * their callIds) still awaiting a decision, in the paused message (`paused`, its id; any message
 * when the pause names none). Only there: an earlier call under the same callId (a reused one, or
 * an append-only history's answered call, which shows "pending" for ever) stays.
 */
export function hiddenTool(m, t, { hidden, paused }) {
  return hidden.has(t.callId) && t.approval === 'pending' && (paused == null || m.id === paused);
}

/**
 * The list item of one message (null when it shows nothing). `context` is `messageContext` of the
 * thread's messages; `hidden` and `paused` the calls the approval cards show (see `hiddenTool`);
 * `streaming`, the message being streamed.
 */
export function messageItem(m, context, { dialect, hidden = new Set(), paused = null, streaming = false }) {
  const { results, paired } = context;
  const role = m.role === 'user' ? 'user' : m.role === 'assistant' || m.role === 'tool' ? 'assistant' : 'other';
  const tools = (m.tools ?? []).filter((t) => {
    if (hiddenTool(m, t, { hidden, paused })) return false;
    if (m.kind === 'tool_result') return !paired.has(t);
    return true;
  });
  const text = m.text ?? '';
  if (!text && tools.length === 0 && !streaming) return null;
  const li = h('li', { class: `msg msg-${role}${streaming ? ' msg-streaming' : ''}` });
  if (role !== 'user') li.append(h('span', { class: 'avatar', 'aria-hidden': 'true' }, role === 'assistant' ? 'AI' : '•'));
  const body = h('div', { class: 'msg-body' });
  if (tools.length) {
    body.append(h('div', { class: 'tools' }, tools.map((t) =>
      toolBlock(t, results.get(t), dialect, wirePart(m, t)))));
  }
  if (text || streaming) body.append(bubble(m.role, text, streaming ? 'is-streaming' : ''));
  li.append(body);
  return li;
}

/**
 * The message list items (the messages, then the one being streamed). `hidden` and `paused`: the
 * calls the approval cards show (see `hiddenTool`).
 */
export function messageItems(messages, { dialect, hidden = new Set(), paused = null, streaming = null }) {
  const context = messageContext(messages);
  const items = messages.map((m) => messageItem(m, context, { dialect, hidden, paused }));
  if (streaming) items.push(messageItem(streaming, context, { dialect, hidden, paused, streaming: true }));
  return items.filter(Boolean);
}
