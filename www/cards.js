// The approval cards: one per gated tool on the paused tail (the seed's rendering guidance): the tool
// name, the reason as the headline, the real inputs as key/value, Approve / Deny with an optional reason
// (Neuron sends it verbatim; a Sidenet continuation carries none, so there it stays with the card and
// the form says so), the decision shown and revisable until the set is submitted; and "Always allow",
// which approves this tool's calls without asking for the rest of the session.
import { h, hasHidden, hasHiddenDeep, nextId, setText, shown, shownText } from './dom.js';
import { kvView } from './render.js';

export class ApprovalCard {
  /**
   * @param {object} actions { approve(callId), reject(callId, reason|undefined), clear(callId),
   *                          decided(callId), allow(toolName) }  (decided: move focus on)
   */
  constructor(callId, actions) {
    this.callId = callId;
    this.actions = actions;
    this.view = null;
    this.inputsJson = null;
    const titleId = nextId('card-title');
    const stateId = nextId('card-state');
    const formId = nextId('deny-form');
    const reasonId = nextId('deny-reason');
    const hintId = nextId('deny-hint');
    const callId_ = nextId('card-call');
    const inputsId = nextId('card-inputs');
    const approveId = nextId('approve');
    const denyId = nextId('deny');
    const undoId = nextId('undo');
    this.warningId = nextId('card-warning');
    this.stateId = stateId;
    this.inputsId = inputsId;

    this.badge = h('span', { class: 'badge', id: stateId });
    this.name = h('code', { class: 'tool-name' });
    this.title = h('h3', { class: 'card-title', id: titleId });
    this.desc = h('span', { class: 'card-desc' });
    this.inputs = h('div', { class: 'card-inputs', id: inputsId });
    this.decision = h('p', { class: 'card-decision' });
    // Other calls under this call's callId (a server may give several calls one: Neuron's Gemini
    // provider uses the tool's name): the decision is sent by callId, so one answers them all.
    this.twins = h('p', { class: 'card-twins', hidden: true });
    // Neuron 4: the request's deadline (`expiresAt`), in local time when it reads as a date.
    this.deadline = h('p', { class: 'card-deadline', hidden: true });
    // Which call this is, in words ("delete_file /srv/a.txt"): never shown (the card shows it in full),
    // it names the card and its buttons, so that two calls of one tool, or their four "Approve"
    // buttons in a screen reader's list, can be told apart.
    this.callLabel = h('span', { id: callId_, hidden: true });
    // Shown when a name, a reason or an argument holds characters that display as nothing or turn the
    // text around (see dom.js): they are on the card as tokens, and this says why.
    this.warning = h('p', { class: 'card-warning', id: this.warningId, hidden: true },
      h('span', { 'aria-hidden': 'true', class: 'card-warning-icon' }, '!'),
      h('span', null, 'Careful: this call contains hidden or direction-changing characters, shown as ',
        h('span', { class: 'hidden-char' }, '⟨U+…⟩'), '. Check it closely before you approve.'));

    this.approveBtn = h('button', { type: 'button', id: approveId, class: 'btn btn-approve', 'aria-pressed': 'false',
      'aria-labelledby': `${approveId} ${callId_}`, onclick: () => this.onApprove() },
      h('span', { 'aria-hidden': 'true', class: 'btn-icon' }, '✓'), 'Approve');
    this.denyBtn = h('button', { type: 'button', id: denyId, class: 'btn btn-deny', 'aria-pressed': 'false', 'aria-expanded': 'false',
      'aria-controls': formId, 'aria-labelledby': `${denyId} ${callId_}`, onclick: () => this.openDeny() },
      h('span', { 'aria-hidden': 'true', class: 'btn-icon' }, '✕'), 'Deny');
    this.undoBtn = h('button', { type: 'button', id: undoId, class: 'btn btn-link', 'aria-labelledby': `${undoId} ${callId_}`,
      onclick: () => this.onUndo() }, 'Undo');
    this.allowName = h('span', { class: 'sr-only' });
    this.allowBtn = h('button', { type: 'button', class: 'btn btn-link btn-allow', onclick: () => this.onAllow() },
      'Always allow', this.allowName);

    this.reason = h('textarea', { id: reasonId, class: 'deny-input', rows: '2', 'aria-describedby': hintId,
      placeholder: 'e.g. Do not email the whole team', onkeydown: (e) => this.onReasonKey(e) });
    this.confirmBtn = h('button', { type: 'button', class: 'btn btn-deny-confirm', onclick: () => this.confirmDeny() }, 'Confirm deny');
    this.cancelBtn = h('button', { type: 'button', class: 'btn btn-quiet', onclick: () => this.closeDeny(true) }, 'Cancel');
    this.reasonLabel = h('label', { for: reasonId, class: 'deny-label' });
    this.reasonHint = h('p', { class: 'deny-hint', id: hintId });
    this.form = h('div', { class: 'deny-form', id: formId, hidden: true, role: 'group', 'aria-label': 'Deny this call' },
      this.reasonLabel,
      this.reason,
      this.reasonHint,
      h('div', { class: 'deny-actions' }, this.confirmBtn, this.cancelBtn));

    // Named "<tool> <arguments> <headline>", described by the arguments and the state.
    this.el = h('article', { class: 'card', tabindex: '-1', 'aria-labelledby': `${callId_} ${titleId}`,
      'aria-describedby': `${inputsId} ${stateId}`, dataset: { callId } },
      this.callLabel,
      h('div', { class: 'card-top' }, h('span', { class: 'tool-glyph', 'aria-hidden': 'true' }, '⚙'), this.name, this.desc, this.badge),
      this.title,
      this.twins,
      this.deadline,
      this.warning,
      this.inputs,
      this.decision,
      h('div', { class: 'card-actions' }, this.approveBtn, this.denyBtn, this.undoBtn, this.allowBtn),
      this.form);
  }

  /**
   * @param view GatedView
   * @param ctx { busy, dialect, allowed: string[] (the snapshot's allowedTools), twins: how many
   *   other cards have this card's callId }
   */
  update(view, ctx) {
    this.view = view;
    this.busy = ctx.busy;
    // Every snapshot renders every card: one whose call, state and context did not change is left
    // as it is (no node replaced under a selection or a screen reader's cursor, no work).
    const twins = ctx.twins || 0;
    const key = JSON.stringify([view, !!ctx.busy, ctx.dialect, !!ctx.allowed?.includes(view.name), twins]);
    if (key === this.key) return;
    this.key = key;
    const state = view.approval; // draft, else the server's
    this.el.dataset.state = state;
    // Server text: shown isolated, hidden characters as tokens (rebuilt only when it changes).
    rebuild(this.name, view.name, () => [shown(view.name)]);
    rebuild(this.title, [view.approvalReason, view.name], () => (view.approvalReason ? [shown(view.approvalReason)] : ['Run ', shown(view.name)]));
    rebuild(this.desc, view.description || '', () => [shown(view.description || '')]);
    const due = typeof view.expiresAt === 'string' ? view.expiresAt : '';
    this.deadline.hidden = !due;
    rebuild(this.deadline, due, () => {
      const at = Date.parse(due);
      return ['Decide by ', Number.isFinite(at)
        ? h('time', { datetime: due }, new Date(at).toLocaleString())
        : shown(due)];
    });
    this.desc.hidden = !view.description;
    this.twins.hidden = !twins;
    setText(this.twins, twins
      ? `The server knows this call and ${twins === 1 ? 'one other' : `${twins} others`} by the same id: one decision answers ${twins === 1 ? 'both' : `all ${twins + 1}`}.`
      : '');
    const json = JSON.stringify(view.inputs);
    // Another call under the same callId (servers that number calls per step reuse them): a reason
    // typed for the call before is not this one's.
    const call = `${view.name}\u0000${json}`;
    if (this.call !== undefined && call !== this.call) {
      const typing = this.form.contains(document.activeElement);
      this.closeDeny(false);
      this.reason.value = '';
      if (typing) this.el.focus({ preventScroll: true });
    }
    this.call = call;
    if (json !== this.inputsJson) {
      this.inputsJson = json;
      this.inputs.replaceChildren(h('h4', { class: 'sr-only' }, 'Arguments'), kvView(view.inputs));
    }
    setText(this.callLabel, callSummary(view));
    const hidden = [view.name, view.approvalReason, view.description].some(hasHidden) || hasHiddenDeep(view.inputs);
    this.warning.hidden = !hidden;
    // (A description pointing at a hidden element would still be read: only while it shows.)
    this.el.setAttribute('aria-describedby', `${hidden ? `${this.warningId} ` : ''}${this.inputsId} ${this.stateId}`);
    // Neuron sends a rejection's reason to the model; a Sidenet continuation has no field for one
    // (the model hears "not approved"): there the reason is the person's note on the card.
    const toAgent = ctx.dialect !== 'sidenet';
    setText(this.reasonLabel, toAgent ? 'Reason for the agent (optional)' : 'Reason (optional, kept with the card)');
    setText(this.reasonHint, toAgent
      ? 'Sent to the agent as written. Enter to confirm, Esc to cancel.'
      : 'Sidenet tells the agent only that the call was not approved: to say why, send a message once the run goes on. Enter to confirm, Esc to cancel.');
    const sent = !view.draft && state !== 'pending';
    // Sidenet: a decision the server accepted (the reply stopped before the call left the pause)
    // is settled: it cannot be changed any more, so the card offers nothing to click.
    const settled = sent && ctx.dialect === 'sidenet';
    this.el.dataset.settled = String(settled);
    // A card settled (sent from another tab) while the focus was in it, on a button about to hide
    // or in the reason box about to close: the focus stays on the card, not the page's body.
    const lost = settled && this.el !== document.activeElement && this.el.contains(document.activeElement);
    if (settled) this.closeDeny(false);
    this.badge.className = `badge badge-${state}`;
    this.badge.replaceChildren(
      h('span', { 'aria-hidden': 'true' }, state === 'approved' ? '✓' : state === 'rejected' ? '✕' : '‖'),
      ' ',
      state === 'approved' ? 'Approved' : state === 'rejected' ? 'Denied' : 'Needs your decision',
      sent ? ' · sent' : '',
    );
    if (state === 'rejected') {
      this.decision.replaceChildren(
        ...(view.rejectReason
          ? [toAgent ? 'You denied this call. Reason for the agent: ' : 'You denied this call. Your reason (not sent to the agent): ',
              h('q', null, shown(view.rejectReason))]
          : ['You denied this call, without a reason.']),
        settled ? ' The server accepted it.' : '',
      );
    } else if (state === 'approved') {
      const allowed = ctx.allowed?.includes(view.name);
      this.decision.replaceChildren(...(settled
        ? ['You approved this call. The server accepted it.']
        : allowed && view.draft
          ? ['Approved without asking: you allowed ', shown(view.name), ' for this session.']
          : sent
            ? ['You approved this call, and the server has your approval: it runs as shown.']
            : ['You approved this call. It runs exactly as shown once you submit.']));
    } else this.decision.replaceChildren();
    this.decision.hidden = state === 'pending';
    this.approveBtn.setAttribute('aria-pressed', String(state === 'approved'));
    this.denyBtn.setAttribute('aria-pressed', String(state === 'rejected'));
    this.approveBtn.hidden = settled;
    this.denyBtn.hidden = settled;
    if (lost) this.el.focus({ preventScroll: true });
    this.undoBtn.hidden = !view.draft;
    // "Always allow" while this call still waits on a person, for a tool not allowed yet.
    rebuild(this.allowName, view.name, () => [' ', shown(view.name), ' this session']);
    this.allowBtn.hidden = sent || !view.name || !!ctx.allowed?.includes(view.name);
    for (const b of [this.approveBtn, this.denyBtn, this.undoBtn, this.allowBtn, this.confirmBtn]) {
      b.setAttribute('aria-disabled', String(!!ctx.busy));
    }
  }

  onApprove() {
    if (this.busy) return;
    this.closeDeny(false);
    this.actions.approve(this.callId);
    this.actions.decided(this.callId);
  }

  openDeny() {
    if (this.busy) return;
    if (this.form.hidden) {
      this.reason.value = this.view?.approval === 'rejected' ? this.view.rejectReason ?? '' : '';
    }
    this.form.hidden = false;
    this.denyBtn.setAttribute('aria-expanded', 'true');
    this.reason.focus();
  }

  closeDeny(focusBack) {
    if (this.form.hidden) return;
    this.form.hidden = true;
    this.denyBtn.setAttribute('aria-expanded', 'false');
    if (focusBack) this.denyBtn.focus();
  }

  confirmDeny() {
    if (this.busy) return;
    const text = this.reason.value;
    // Verbatim: what was typed is what the agent receives; only a blank field means "no reason".
    this.actions.reject(this.callId, text.trim() === '' ? undefined : text);
    this.closeDeny(false);
    this.actions.decided(this.callId);
  }

  onAllow() {
    if (this.busy || !this.view) return;
    this.closeDeny(false);
    this.actions.allow(this.view.name);
    this.actions.decided(this.callId);
  }

  onUndo() {
    if (this.busy) return;
    this.actions.clear(this.callId);
    this.approveBtn.focus();
  }

  onReasonKey(e) {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      this.confirmDeny();
    } else if (e.key === 'Escape') {
      e.preventDefault();
      this.closeDeny(true);
    }
  }

  focus() {
    this.el.focus({ preventScroll: true });
    // No smooth scrolling for people who asked the system for less motion.
    const still = window.matchMedia?.('(prefers-reduced-motion: reduce)').matches;
    this.el.scrollIntoView({ block: 'nearest', behavior: still ? 'auto' : 'smooth' });
  }
}

/** Replaces `el`'s children with `build()` when `key` differs from the last one it was built for. */
function rebuild(el, key, build) {
  const k = JSON.stringify(key ?? null);
  if (el.dataset.key === k) return;
  el.dataset.key = k;
  el.replaceChildren(...build());
}

/**
 * The call in a few words, for its accessible names: the tool and its argument values
 * ("delete_file /srv/a.txt", "send_email ops@example.com, Friday deploy"), hidden characters as
 * tokens, cut at about 100 characters.
 */
function callSummary(view) {
  const inputs = view.inputs;
  const values = inputs !== null && typeof inputs === 'object' && !Array.isArray(inputs) ? Object.values(inputs) : [inputs];
  const text = values
    .filter((v) => v !== null && v !== undefined && v !== '')
    .map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))
    .join(', ');
  const summary = shownText(`${view.name}${text ? ` ${text}` : ''}`).replace(/\s+/g, ' ').trim();
  const chars = [...summary];
  return chars.length > 100 ? `${chars.slice(0, 99).join('')}…` : summary;
}
