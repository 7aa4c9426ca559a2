// The approval cards: one per gated tool on the paused tail (the seed's rendering guidance): the tool
// name, the reason as the headline, the real inputs as key/value, Approve / Deny with an optional reason
// (Neuron sends it verbatim; a Sidenet continuation carries none, so there it stays with the card and
// the form says so), the decision shown and revisable until the set is submitted; and "Always allow",
// which approves this tool's calls without asking for the rest of the session.
import { h, nextId, setText } from './dom.js';
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

    this.badge = h('span', { class: 'badge', id: stateId });
    this.name = h('code', { class: 'tool-name' });
    this.title = h('h3', { class: 'card-title', id: titleId });
    this.desc = h('span', { class: 'card-desc' });
    this.inputs = h('div', { class: 'card-inputs' });
    this.decision = h('p', { class: 'card-decision' });

    this.approveBtn = h('button', { type: 'button', class: 'btn btn-approve', 'aria-pressed': 'false', onclick: () => this.onApprove() },
      h('span', { 'aria-hidden': 'true', class: 'btn-icon' }, '✓'), 'Approve');
    this.denyBtn = h('button', { type: 'button', class: 'btn btn-deny', 'aria-pressed': 'false', 'aria-expanded': 'false', 'aria-controls': formId, onclick: () => this.openDeny() },
      h('span', { 'aria-hidden': 'true', class: 'btn-icon' }, '✕'), 'Deny');
    this.undoBtn = h('button', { type: 'button', class: 'btn btn-link', onclick: () => this.onUndo() }, 'Undo');
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

    this.el = h('article', { class: 'card', tabindex: '-1', 'aria-labelledby': titleId, 'aria-describedby': stateId, dataset: { callId } },
      h('div', { class: 'card-top' }, h('span', { class: 'tool-glyph', 'aria-hidden': 'true' }, '⚙'), this.name, this.desc, this.badge),
      this.title,
      this.inputs,
      this.decision,
      h('div', { class: 'card-actions' }, this.approveBtn, this.denyBtn, this.undoBtn, this.allowBtn),
      this.form);
  }

  /** @param view GatedView  @param ctx { busy, dialect, allowed: string[] (the snapshot's allowedTools) } */
  update(view, ctx) {
    this.view = view;
    this.busy = ctx.busy;
    const state = view.approval; // draft, else the server's
    this.el.dataset.state = state;
    setText(this.name, view.name);
    setText(this.title, view.approvalReason || `Run ${view.name}`);
    setText(this.desc, view.description || '');
    this.desc.hidden = !view.description;
    const json = JSON.stringify(view.inputs);
    if (json !== this.inputsJson) {
      this.inputsJson = json;
      this.inputs.replaceChildren(h('h4', { class: 'sr-only' }, 'Arguments'), kvView(view.inputs));
    }
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
              h('q', null, view.rejectReason)]
          : ['You denied this call, without a reason.']),
        settled ? ' The server accepted it.' : '',
      );
    } else if (state === 'approved') {
      const allowed = ctx.allowed?.includes(view.name);
      this.decision.replaceChildren(settled
        ? 'You approved this call. The server accepted it.'
        : allowed && view.draft
          ? `Approved without asking: you allowed ${view.name} for this session.`
          : 'You approved this call. It runs exactly as shown once you submit.');
    } else this.decision.replaceChildren();
    this.decision.hidden = state === 'pending';
    this.approveBtn.setAttribute('aria-pressed', String(state === 'approved'));
    this.denyBtn.setAttribute('aria-pressed', String(state === 'rejected'));
    this.approveBtn.hidden = settled;
    this.denyBtn.hidden = settled;
    this.undoBtn.hidden = !view.draft;
    // "Always allow" while this call still waits on a person, for a tool not allowed yet.
    setText(this.allowName, ` ${view.name} this session`);
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
    this.el.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
  }
}
