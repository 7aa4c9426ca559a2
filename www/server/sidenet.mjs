// Sidenet dialect: POST /v1/chat (UI message stream), GET /v1/chat/stream
// (replay inside the grace window), POST /v1/agents/{id}/run (collected
// chunks), GET /v1/threads/{id} (history as AI SDK UI messages).
//
// The thread record keeps the UI messages, the model-side tool results, and
// the paused run (a snapshot keyed by run id) inside it.
import {
  TOOLS,
  approvalPolicy,
  isGated,
  runTool,
  toolFailure,
  DECLINED_RESULT,
  planSteps,
  finalMessage,
  plainReply,
  splitDeltas,
} from './agent.mjs';
import { validThreadId } from './store.mjs';
import { json, empty, stream, hex, isPlainObject } from './util.mjs';

const D = 'sidenet';
const ABANDONED = 'Run abandoned: no approval decision arrived within the grace window';

const bad = (error) => json(400, { error });
const conflict = (error, code) => json(409, { error, code });

function newRecord(id) {
  return { id, messages: [], toolResults: [], run: null };
}

/** Abandon a paused run whose grace window has passed. Returns true when it did. */
function expire(ctx, rec, now = Date.now()) {
  const run = rec.run;
  if (!run || !run.pending?.length) return false;
  if (now - run.pausedAt <= ctx.config.graceMs) return false;
  const msg = rec.messages.find((m) => m.id === run.messageId);
  for (const part of msg?.parts || []) {
    if (part.state === 'approval-requested' && run.pending.some((p) => p.toolCallId === part.toolCallId)) {
      part.state = 'output-error';
      part.errorText = ABANDONED;
    }
  }
  rec.abandonedRuns = [...(rec.abandonedRuns || []), run.runId];
  rec.run = null;
  return true;
}

function lastUserText(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (!isPlainObject(m) || m.role !== 'user') continue;
    if (typeof m.content === 'string') return m.content;
    if (Array.isArray(m.parts)) {
      const text = m.parts
        .filter((p) => isPlainObject(p) && p.type === 'text' && typeof p.text === 'string')
        .map((p) => p.text)
        .join('');
      return text;
    }
    if (Array.isArray(m.content)) {
      return m.content
        .filter((p) => isPlainObject(p) && p.type === 'text' && typeof p.text === 'string')
        .map((p) => p.text)
        .join('');
    }
    return '';
  }
  return null;
}

/** Validate a /v1/chat or /v1/agents/{id}/run body. Returns { error } or the parsed request. */
export function parseChatBody(body) {
  if (!isPlainObject(body)) return { error: bad('Request body must be a JSON object') };
  if (!('threadId' in body)) return { error: bad('"threadId" is required') };
  if (!validThreadId(body.threadId))
    return { error: bad('"threadId" must match [A-Za-z0-9_-]{1,128}') };
  if (!Array.isArray(body.messages)) return { error: bad('"messages" must be an array') };
  if ('agentVersionId' in body && body.agentVersionId !== undefined && typeof body.agentVersionId !== 'string')
    return { error: bad('"agentVersionId" must be a string') };
  if ('approval' in body && body.approval !== undefined && body.approval !== null) {
    const a = body.approval;
    if (!isPlainObject(a)) return { error: bad('"approval" must be an object') };
    if (typeof a.runId !== 'string' || a.runId === '') return { error: bad('"approval.runId" is required') };
    if (typeof a.approved !== 'boolean') return { error: bad('"approval.approved" must be a boolean') };
    // Absent: the most recent pending call. Present: it names one call, so it must be a non-empty
    // string (an empty one must not fall back to a call the client did not name).
    if (a.toolCallId !== undefined && (typeof a.toolCallId !== 'string' || a.toolCallId === ''))
      return { error: bad('"approval.toolCallId" must be a non-empty string (or left out)') };
    return { threadId: body.threadId, agentVersionId: body.agentVersionId, approval: a };
  }
  const text = lastUserText(body.messages);
  if (text === null) return { error: bad('"messages" must contain a user message (or send an "approval")') };
  if (text.trim() === '') return { error: bad('The last user message has no text') };
  return { threadId: body.threadId, agentVersionId: body.agentVersionId, text };
}

/**
 * Run one chat request against the thread. Returns a stream plan (the chunks
 * are computed and the state persisted before anything is written).
 */
export async function chat(ctx, req, { approvalForm = null, agentId = null } = {}) {
  return ctx.store.lock(`${D}:${req.threadId}`, async () => {
    const rec = (await ctx.store.read(D, req.threadId)) || newRecord(req.threadId);
    let changed = expire(ctx, rec);
    const out = [];
    let result;
    if (req.approval) result = continueRun(ctx, rec, req, out, approvalForm, agentId);
    else result = newTurn(ctx, rec, req, out, approvalForm, agentId);
    if (result?.error) {
      if (changed) await ctx.store.write(D, req.threadId, rec);
      return result.error;
    }
    await ctx.store.write(D, req.threadId, rec);
    return stream(out);
  });
}

function approvalChunks(run, pending, form) {
  if (form === 'ai-sdk') {
    return pending.map((p) => ({
      data: { type: 'tool-approval-request', approvalId: p.approvalId ?? p.toolCallId, toolCallId: p.toolCallId },
    }));
  }
  return pending.map((p) => ({
    data: {
      type: 'data-tool-call-approval',
      id: p.toolCallId,
      data: {
        runId: run.runId,
        toolCallId: p.toolCallId,
        toolName: p.toolName,
        reason: p.reason,
        args: p.args,
        agentVersionId: run.agentVersionId,
        threadId: run.threadId,
      },
    },
  }));
}

function dataRun(run) {
  return { data: { type: 'data-run', data: { runId: run.runId, agentVersionId: run.agentVersionId, threadId: run.threadId } } };
}

function streamHead(run, messageId, form, out) {
  out.push({ comment: 'keep-alive' });
  out.push({ data: { type: 'start', messageId } });
  if (form === 'ai-sdk' && run) out.push(dataRun(run));
}

function pauseEnd(form, out) {
  // The pause finishes the turn: no finish reason (Sidenet / Mastra form).
  // The AI SDK form finishes its step with finishReason "tool-calls".
  if (form === 'ai-sdk') {
    out.push({ data: { type: 'finish-step' } });
    out.push({ data: { type: 'finish', finishReason: 'tool-calls' } });
  }
  out.push({ done: true });
}

function textOut(out, text) {
  const id = `txt_${hex(6)}`;
  out.push({ data: { type: 'text-start', id } });
  const deltas = splitDeltas(text);
  deltas.forEach((delta, i) => {
    if (i === Math.floor(deltas.length / 2)) out.push({ comment: 'keep-alive' });
    out.push({ data: { type: 'text-delta', id, delta } });
  });
  out.push({ data: { type: 'text-end', id } });
}

function finishOut(out) {
  out.push({ data: { type: 'finish-step' } });
  out.push({ data: { type: 'finish', finishReason: 'stop' } });
  out.push({ done: true });
}

function newTurn(ctx, rec, req, out, form, agentId) {
  if (rec.run) {
    return {
      error: conflict(
        `Thread ${rec.id} has a run awaiting approval (${rec.run.runId}); answer it or let it expire before sending a new message`,
        'run_paused',
      ),
    };
  }
  if (req.agentVersionId && req.agentVersionId !== ctx.config.agentVersion) {
    return { error: conflict(`Unknown agentVersionId ${JSON.stringify(req.agentVersionId)}`, 'agent_version_mismatch') };
  }
  rec.messages.push({ id: `msg_${hex(8)}`, role: 'user', parts: [{ type: 'text', text: req.text }] });
  const assistant = { id: `msg_${hex(8)}`, role: 'assistant', parts: [] };
  rec.messages.push(assistant);
  const steps = planSteps(req.text);
  if (steps.length === 0) {
    streamHead(null, assistant.id, form, out);
    out.push({ data: { type: 'start-step' } });
    const text = plainReply(req.text);
    textOut(out, text);
    assistant.parts.push({ type: 'text', text });
    finishOut(out);
    return {};
  }
  rec.run = {
    runId: `run_${hex(4)}`,
    threadId: rec.id,
    agentId,
    agentVersionId: ctx.config.agentVersion,
    messageId: assistant.id,
    approvalForm: form,
    steps,
    stepIndex: 0,
    pending: [],
    calls: [],
    pausedAt: null,
  };
  streamHead(rec.run, assistant.id, form, out);
  advance(ctx, rec, out, form);
  return {};
}

/**
 * Runs a call: its part settles `output-available` with the output, or `output-error` with the
 * failure's text when the tool fails (`toolFailure`), and the chunk that says so goes out.
 */
function execute(ctx, rec, call, part, out) {
  const failure = toolFailure(call.name, call.inputs);
  const result = failure === null ? runTool(call.name, call.inputs) : { error: failure };
  ctx.store.recordEffect({ dialect: D, threadId: rec.id, runId: rec.run.runId, callId: part.toolCallId, name: call.name, inputs: call.inputs });
  rec.toolResults.push({ runId: rec.run.runId, toolCallId: part.toolCallId, toolName: call.name, args: call.inputs, result });
  rec.run.calls.push({ index: call.index, name: call.name, inputs: call.inputs, result });
  if (failure !== null) {
    part.state = 'output-error';
    part.errorText = failure;
    out.push({ data: { type: 'tool-output-error', toolCallId: part.toolCallId, errorText: failure } });
  } else {
    part.state = 'output-available';
    part.output = result;
    out.push({ data: { type: 'tool-output-available', toolCallId: part.toolCallId, output: result } });
  }
}

/** Run the agent on from the current step until it pauses or finishes. */
function advance(ctx, rec, out, form) {
  const run = rec.run;
  const msg = rec.messages.find((m) => m.id === run.messageId);
  while (run.stepIndex < run.steps.length) {
    const step = run.steps[run.stepIndex];
    out.push({ data: { type: 'start-step' } });
    const parts = step.map((call) => {
      const toolCallId = `call_${hex(6)}`;
      const part = { type: `tool-${call.name}`, toolCallId, state: 'input-available', input: call.inputs };
      msg.parts.push(part);
      out.push({ data: { type: 'tool-input-start', toolCallId, toolName: call.name } });
      out.push({ data: { type: 'tool-input-available', toolCallId, toolName: call.name, input: call.inputs } });
      return part;
    });
    step.forEach((call, i) => {
      const part = parts[i];
      if (isGated(approvalPolicy(call.name, call.inputs))) {
        part.state = 'approval-requested';
        // The AI SDK names each approval with an id of its own, not the call's (a client that
        // mixes the two up must meet that here); the Sidenet form names the call.
        const approvalId = run.approvalForm === 'ai-sdk' ? `apr_${hex(6)}` : part.toolCallId;
        part.approval = { id: approvalId };
        run.pending.push({
          approvalId,
          toolCallId: part.toolCallId,
          toolName: call.name,
          args: call.inputs,
          reason: TOOLS[call.name].headline(call.inputs),
          index: call.index,
        });
      } else {
        execute(ctx, rec, call, part, out);
      }
    });
    if (run.pending.length) {
      out.push(...approvalChunks(run, run.pending, form));
      run.pausedAt = Date.now();
      pauseEnd(form, out);
      return;
    }
    out.push({ data: { type: 'finish-step' } });
    run.stepIndex += 1;
  }
  out.push({ data: { type: 'start-step' } });
  const text = finalMessage(run.calls);
  textOut(out, text);
  msg.parts.push({ type: 'text', text });
  rec.run = null;
  finishOut(out);
}

function continueRun(ctx, rec, req, out, formParam, agentId) {
  const a = req.approval;
  const run = rec.run;
  if (!run) {
    const abandoned = (rec.abandonedRuns || []).includes(a.runId);
    return {
      error: conflict(
        abandoned
          ? `Run ${a.runId} was abandoned: the grace window passed without a decision`
          : `Thread ${rec.id} has no paused run ${a.runId}`,
        abandoned ? 'run_abandoned' : 'run_not_found',
      ),
    };
  }
  if (run.runId !== a.runId)
    return { error: conflict(`Run ${a.runId} is not the paused run of thread ${rec.id}`, 'run_mismatch') };
  // A run paused through one agent's route is that agent's: another agent has no such run.
  if (agentId !== null && run.agentId && agentId !== run.agentId)
    return { error: conflict(`Run ${a.runId} is not a run of agent ${agentId}`, 'run_mismatch') };
  const version = req.agentVersionId ?? ctx.config.agentVersion;
  if (version !== run.agentVersionId)
    return {
      error: conflict(
        `agentVersionId ${JSON.stringify(version)} does not match the version that paused run ${run.runId}`,
        'agent_version_mismatch',
      ),
    };
  let pending;
  if (a.toolCallId !== undefined) {
    pending = run.pending.find((p) => p.toolCallId === a.toolCallId);
    if (!pending)
      return {
        error: conflict(
          `Tool call ${a.toolCallId} is not awaiting approval in run ${run.runId} (unknown or already answered)`,
          'tool_call_not_pending',
        ),
      };
  } else {
    pending = run.pending[run.pending.length - 1];
  }
  const form = formParam ?? run.approvalForm ?? null;
  const msg = rec.messages.find((m) => m.id === run.messageId);
  const part = msg.parts.find((p) => p.toolCallId === pending.toolCallId);
  streamHead(run, run.messageId, form, out);
  run.pending = run.pending.filter((p) => p !== pending);
  const call = { index: pending.index, name: pending.toolName, inputs: pending.args };
  if (a.approved) {
    part.approval = { id: pending.approvalId ?? part.toolCallId, approved: true };
    execute(ctx, rec, call, part, out);
  } else {
    part.state = 'output-denied';
    part.approval = { id: pending.approvalId ?? part.toolCallId, approved: false, reason: pending.reason };
    rec.toolResults.push({ runId: run.runId, toolCallId: part.toolCallId, toolName: call.name, args: call.inputs, result: DECLINED_RESULT });
    run.calls.push({ ...call, result: DECLINED_RESULT });
    out.push({ data: { type: 'tool-output-denied', toolCallId: part.toolCallId } });
  }
  if (run.pending.length) {
    out.push(...approvalChunks(run, run.pending, form));
    run.pausedAt = Date.now();
    pauseEnd(form, out);
    return {};
  }
  out.push({ data: { type: 'finish-step' } });
  run.stepIndex += 1;
  advance(ctx, rec, out, form);
  return {};
}

/** GET /v1/chat/stream?threadId=...: replay the pending approval inside the grace window. */
export async function replay(ctx, threadId, formParam) {
  return ctx.store.lock(`${D}:${threadId}`, async () => {
    const rec = await ctx.store.read(D, threadId);
    if (!rec || !rec.run) return empty(204);
    if (expire(ctx, rec)) {
      await ctx.store.write(D, threadId, rec);
      return empty(204);
    }
    const run = rec.run;
    const form = formParam ?? run.approvalForm ?? null;
    const out = [];
    streamHead(run, run.messageId, form, out);
    for (const p of run.pending) {
      out.push({ data: { type: 'tool-input-start', toolCallId: p.toolCallId, toolName: p.toolName } });
      out.push({ data: { type: 'tool-input-available', toolCallId: p.toolCallId, toolName: p.toolName, input: p.args } });
    }
    out.push(...approvalChunks(run, run.pending, form));
    pauseEnd(form, out);
    run.pausedAt = Date.now();
    await ctx.store.write(D, threadId, rec);
    return stream(out);
  });
}

export async function getThread(ctx, threadId) {
  return ctx.store.lock(`${D}:${threadId}`, async () => {
    const rec = await ctx.store.read(D, threadId);
    if (!rec) return json(200, { id: threadId, messages: [] });
    if (expire(ctx, rec)) await ctx.store.write(D, threadId, rec);
    return json(200, { id: threadId, messages: rec.messages });
  });
}

/** Collect a stream plan into the request/response form of /v1/agents/{id}/run. */
export function collect(plan) {
  if (!plan.stream) return plan;
  const chunks = plan.stream.filter((x) => x.data).map((x) => x.data);
  // A paused run has no finish chunk, and its output no `finishReason` at all.
  const finish = chunks.find((c) => c.type === 'finish');
  return json(200, finish ? { chunks, finishReason: finish.finishReason } : { chunks });
}
