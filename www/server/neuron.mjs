// Neuron dialect: GET /threads/{id}, POST /threads/{id}/chat.
// The chat history is the system of record; a paused run is the tail
// tool_call message with at least one tool whose approval is "pending".
//
// Neuron's own revisions disagree on what a decision payload means (PROTOCOLS.md §1);
// `config.neuronDecisions` picks one, so that clients can be tested against each:
// - `strict` (default, the newest): unknown or ungated callIds, malformed values, an empty map
//   and decisions with nothing paused are refused (400 / 409); entries overwrite stored ones,
//   omitted entries keep theirs.
// - `incremental`: entries overwrite stored ones, omitted entries keep theirs; unknown and
//   ungated callIds are ignored, an empty map is a no-op.
// - `cumulative`: each payload is the whole set so far: omitted callIds revert to pending, and
//   the tail keeps its pending snapshot (the set is held aside) until every gated call has a
//   decision; then the set is written to the tail and the run goes on. Unknown callIds are
//   ignored.
//
// `config.neuronHistory` says whether the paused message may be changed:
// - `update` (default): decisions are written on the paused tool_call message.
// - `append-only` (Neuron's newest history): the paused tool_call message is never modified after
//   it is written, and messages take the newest shape (no `resume_token`, no `parameters`, an
//   ungated tool's `approval` left out). Decisions (read as `neuronDecisions` says) are held aside on the run
//   (`run.decided`), completeness is judged from them, and the outcomes (approval, rejectReason,
//   result) are recorded only on the tool_call_result message that follows once the step runs.
//
// `config.neuronCallIds` says how calls are identified:
// - `unique` (default): a fresh `toolu_…` id per call, as Anthropic and OpenAI give.
// - `name`: the tool's name, as Neuron's Gemini provider sets it, so two calls of one tool in a
//   step share a callId (and so do calls of it in later turns). Neuron keys the decisions by
//   callId, so one decision answers every call under it: so does this endpoint.
//
// `config.neuronReply` shapes the chat POST's 200 answer:
// - `message` (default): `{ status, message: <last message> }`.
// - `approvals` (Laravel's JSON endpoint): `{ status, approvals: [{ id, name, reason }] }`, the
//   gated calls still awaiting a decision (none once completed), and no `message`.
import {
  TOOLS,
  approvalPolicy,
  isGated,
  runTool,
  rejectionResult,
  planSteps,
  finalMessage,
  plainReply,
} from './agent.mjs';
import { json, hex, isPlainObject } from './util.mjs';

const D = 'neuron';

// `config.neuronConflictStatus`: 409 (default), or 200 as the seed's own controller answers (it
// returns `['status' => 'conflict', ...]`, which Laravel sends as a 200).
const conflict = (ctx, error) => json(ctx.config.neuronConflictStatus, { status: 'conflict', error });
const bad = (error) => json(400, { error });

function newRecord(id) {
  return { id, seq: 0, messages: [], run: null };
}

function nextId(rec) {
  rec.seq += 1;
  return `msg_${rec.seq}`;
}

function tail(rec) {
  return rec.messages[rec.messages.length - 1];
}

/** The paused tool_call message, or null. */
function pausedTail(rec) {
  const t = tail(rec);
  if (!rec.run || !t || t.type !== 'tool_call') return null;
  return t.tools.some((x) => x.approval === 'pending') ? t : null;
}

/** The decision held aside for a call (append-only history), or undefined. */
function decidedAside(run, callId) {
  const d = run?.decided;
  return d && Object.prototype.hasOwnProperty.call(d, callId) ? d[callId] : undefined;
}

/** The pending calls of the paused message that still have no decision (held ones count as decided). */
function undecided(rec, t) {
  const held = rec.run?.held;
  return t.tools.filter(
    (x) =>
      x.approval === 'pending' &&
      decidedAside(rec.run, x.callId) === undefined &&
      !(held && Object.prototype.hasOwnProperty.call(held, x.callId)),
  );
}

/** A decision value as the outcome fields of a tool. */
function outcomeOf(v) {
  if (v === 'approve') return { approval: 'approved', rejectReason: null };
  return { approval: 'rejected', rejectReason: Array.isArray(v) ? v[1] : null };
}

export async function getThread(ctx, id) {
  const rec = (await ctx.store.read(D, id)) || newRecord(id);
  return json(200, { id, messages: rec.messages });
}

/** Shape checks that need no state: returns an error plan or null. */
function validateBody(body, mode) {
  if (!isPlainObject(body)) return bad('Request body must be a JSON object');
  const hasMessage = Object.prototype.hasOwnProperty.call(body, 'message');
  const hasDecisions = Object.prototype.hasOwnProperty.call(body, 'decisions');
  if (hasMessage && hasDecisions) return bad('Send either "message" or "decisions", not both');
  if (!hasMessage && !hasDecisions) return bad('Expected a "message" or a "decisions" field');
  if (hasMessage) {
    if (typeof body.message !== 'string') return bad('"message" must be a string');
    if (body.message.trim() === '') return bad('"message" must not be empty');
    return null;
  }
  const d = body.decisions;
  if (!isPlainObject(d)) return bad('"decisions" must be an object keyed by callId');
  const keys = Object.keys(d);
  if (keys.length === 0 && mode === 'strict') return bad('"decisions" must not be empty');
  for (const k of keys) {
    const v = d[k];
    const ok =
      v === 'approve' ||
      v === 'reject' ||
      (Array.isArray(v) && v.length === 2 && v[0] === 'reject' && typeof v[1] === 'string');
    if (!ok)
      return bad(
        `Malformed decision for ${JSON.stringify(k)}: expected "approve", "reject" or ["reject", "<reason>"]`,
      );
  }
  return null;
}

export async function chat(ctx, id, body) {
  const invalid = validateBody(body, ctx.config.neuronDecisions);
  if (invalid) return invalid;
  return ctx.store.lock(`${D}:${id}`, async () => {
    const rec = (await ctx.store.read(D, id)) || newRecord(id);
    const plan = 'message' in body ? newMessage(ctx, rec, body.message) : decide(ctx, rec, body.decisions);
    if (plan.error) return plan.error;
    await ctx.store.write(D, id, rec);
    const paused = pausedTail(rec);
    const status = paused ? 'awaiting_approval' : 'completed';
    if (ctx.config.neuronReply === 'approvals') {
      const approvals = paused
        ? undecided(rec, paused).map((x) => ({ id: x.callId, name: x.name, reason: x.approvalReason ?? null }))
        : [];
      return json(200, { status, approvals });
    }
    return json(200, { status, message: tail(rec) });
  });
}

function newMessage(ctx, rec, text) {
  if (pausedTail(rec)) {
    const n = undecided(rec, pausedTail(rec)).length;
    return {
      error: conflict(
        ctx,
        `Thread ${rec.id} is awaiting approval: ${n} tool call${n === 1 ? '' : 's'} require${n === 1 ? 's' : ''} approval before execution; decide them before sending a new message`,
      ),
    };
  }
  rec.run = null;
  rec.messages.push({ __id: nextId(rec), role: 'user', content: text });
  const steps = planSteps(text);
  if (steps.length === 0) {
    rec.messages.push({ __id: nextId(rec), role: 'assistant', content: plainReply(text) });
    return {};
  }
  rec.run = { steps, stepIndex: 0, awaitingStep: null, calls: [] };
  advance(ctx, rec);
  return {};
}

function decide(ctx, rec, decisions) {
  const mode = ctx.config.neuronDecisions;
  const t = pausedTail(rec);
  if (!t) return { error: conflict(ctx, `Thread ${rec.id} has no tool call awaiting approval`) };
  const byId = new Map(t.tools.map((x) => [x.callId, x]));
  const gated = (tool) => tool && tool.approval !== null && tool.approval !== undefined;
  if (mode === 'strict') {
    for (const k of Object.keys(decisions)) {
      const tool = byId.get(k);
      if (!tool) return { error: bad(`Unknown callId ${JSON.stringify(k)}: not a tool call on the paused message`) };
      if (!gated(tool))
        return { error: bad(`Tool call ${JSON.stringify(k)} (${tool.name}) does not require approval`) };
    }
  }
  const entries = Object.entries(decisions).filter(([k]) => gated(byId.get(k)));
  if (ctx.config.neuronHistory === 'append-only') {
    // The paused message stays as written: the decisions are held on the run (a cumulative
    // payload replaces them, otherwise entries overwrite and omitted ones keep theirs), and the
    // step runs once every pending call has one.
    const prior = mode === 'cumulative' ? {} : rec.run.decided || {};
    rec.run.decided = { ...prior, ...Object.fromEntries(entries) };
    advance(ctx, rec);
    return {};
  }
  if (mode === 'cumulative') {
    // The whole set so far, held aside: the tail shows nothing until it is complete.
    rec.run.held = Object.fromEntries(entries);
    const pending = t.tools.filter((x) => x.approval === 'pending');
    if (!pending.every((x) => x.callId in rec.run.held)) return {};
    rec.run.held = null;
  }
  // Entries in the payload overwrite stored ones; omitted entries keep their state. A decision
  // answers every call under its callId, as Neuron's actions keyed by callId do.
  for (const [k, v] of entries) for (const x of t.tools) if (x.callId === k && gated(x)) Object.assign(x, outcomeOf(v));
  advance(ctx, rec);
  return {};
}

function toolObject(call, callId, expiresMs, newest) {
  const policy = approvalPolicy(call.name, call.inputs);
  const gated = isGated(policy);
  // Neuron 4 gives an approval request a deadline (shown, not enforced here).
  const deadline = gated && expiresMs > 0 ? { expiresAt: new Date(Date.now() + expiresMs).toISOString() } : {};
  const tool = {
    callId,
    name: call.name,
    description: TOOLS[call.name].description,
    parameters: [],
    inputs: call.inputs,
    result: null,
    approval: gated ? 'pending' : null,
    approvalReason: typeof policy === 'string' && gated ? policy : null,
    rejectReason: null,
    ...deadline,
  };
  // The newest shape (with the append-only history): no `parameters` (older versions only), and
  // an ungated tool's `approval` left out rather than null (PROTOCOLS.md §1: treat both the same).
  if (newest) {
    delete tool.parameters;
    if (!gated) delete tool.approval;
  }
  return tool;
}

/** Run the agent on until it pauses or finishes. */
function advance(ctx, rec) {
  const run = rec.run;
  for (;;) {
    const t = tail(rec);
    if (run.awaitingStep === run.stepIndex && t && t.type === 'tool_call') {
      // Decisions held aside (append-only history) count; the tail itself is left as it is.
      if (t.tools.some((x) => x.approval === 'pending' && decidedAside(run, x.callId) === undefined)) return; // paused
      const executed = t.tools.map((written, index) => {
        const held = written.approval === 'pending' ? decidedAside(run, written.callId) : undefined;
        const tool = held === undefined ? written : { ...written, ...outcomeOf(held) };
        let result;
        if (tool.approval === 'rejected') {
          result = rejectionResult(tool.rejectReason);
        } else {
          result = runTool(tool.name, tool.inputs);
          // Known by its message and place too: calls can share a callId (`neuronCallIds`).
          ctx.store.recordEffect({ dialect: D, threadId: rec.id, callId: tool.callId, messageId: t.__id, index, name: tool.name, inputs: tool.inputs });
        }
        return { ...structuredClone(tool), result };
      });
      rec.messages.push({ __id: nextId(rec), role: 'tool', content: [], type: 'tool_call_result', tools: executed });
      const step = run.steps[run.stepIndex];
      executed.forEach((tool, i) => run.calls.push({ index: step[i].index, name: tool.name, inputs: tool.inputs, result: tool.result }));
      run.stepIndex += 1;
      run.awaitingStep = null;
      delete run.decided;
      continue;
    }
    if (run.stepIndex >= run.steps.length) {
      rec.messages.push({ __id: nextId(rec), role: 'assistant', content: finalMessage(run.calls) });
      rec.run = null;
      return;
    }
    const newest = ctx.config.neuronHistory === 'append-only';
    const byName = ctx.config.neuronCallIds === 'name';
    const tools = run.steps[run.stepIndex].map((call) =>
      toolObject(call, byName ? call.name : `toolu_${hex(12)}`, ctx.config.neuronExpiresMs, newest),
    );
    const msg = { __id: nextId(rec), role: 'assistant', content: [], type: 'tool_call', tools };
    if (tools.some((x) => x.approval === 'pending') && !newest) {
      // Neuron <= 4.0 style; 4.0.1 retires it. Clients must not need it.
      const withToken = { __id: msg.__id, resume_token: `workflow_${hex(8)}`, ...msg };
      rec.messages.push(withToken);
    } else {
      rec.messages.push(msg);
    }
    run.awaitingStep = run.stepIndex;
  }
}
