// A Sidenet endpoint whose agent is the AI SDK itself (the `ai` package, a dev dependency): its
// `streamText` with `toolApproval`, its UI message stream, its SSE framing and the UI messages its
// `onFinish` hands back, persisted as the thread's history. Only the model is scripted (the SDK's
// own `MockLanguageModelV4`), so what toolgate reads here is what a server built on the AI SDK
// writes, chunk for chunk, in whatever form the installed version writes it.
//
// What the AI SDK leaves to the server is done here as a Sidenet server would: a run id named by a
// `data-run` chunk, one `approval` per POST recorded on its tool part as the SDK's own
// `addToolApprovalResponse` does (`approval-responded`), the run continued by `streamText` once no
// call of it waits, the calls still waiting announced again after a partial answer, and a replay
// route for a client that reconnects mid-pause, which sends the stream that paused again, whole.
// `POST /v1/agents/{id}/run` answers the same chunks collected in one JSON body. The model fails
// mid-reply on `crash`. Kept outside tests/e2e/ so `node --test` does not run it as a test file.
//
// Two majors of the SDK: 7 (the `ai` dev dependency) and 6 (`ai-6`, an alias of the last `ai@6`),
// whose servers are still about. What 7 adds and 6 lacks: the `toolApproval` policy of
// `streamText` (6 gates a tool by its own `needsApproval`, with no reason for the card and no
// automatic approval: its server's policy lets a call through ungated), the standalone
// `toUIMessageStream`, `isStepCount` (6: `stepCountIs`) and the `MockLanguageModelV4` (6: `V3`).
import { randomUUID } from 'node:crypto';
import { serveUIStream, streamOf } from './ui-stream-server.mjs';

export const AGENT_VERSION = 'agv_ai_sdk_1';
/** The SDK majors the endpoint runs on, and the package of each. */
export const SDKS = { 7: 'ai', 6: 'ai-6' };
const SECRET = 'toolgate-test-approval-secret';
export const EMAIL_REASON = 'Emails leave the company: check the recipient';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/**
 * What the scripted model calls for a user's text: `[toolName, input]` pairs for each
 * `email <to> «<body>»`, `read <path>`, `delete <path>` and `run «<command>»` in it, in one step
 * (`garbled`: a send_email call whose input is not JSON; `ghost`: a call of a tool there is not); a
 * text with ` then ` in it is that many steps, each after the results of the one before.
 */
function plan(text, step) {
  const part = text.split(' then ')[step];
  if (part === undefined) return [];
  const calls = [];
  for (const m of part.matchAll(/email (\S+@\S+) «([^»]*)»/g)) calls.push(['send_email', { to: m[1], body: m[2] }]);
  for (const m of part.matchAll(/read (\/\S+)/g)) calls.push(['read_file', { path: m[1] }]);
  for (const m of part.matchAll(/delete (\/\S+)/g)) calls.push(['delete_file', { path: m[1] }]);
  for (const m of part.matchAll(/run «([^»]*)»/g)) calls.push(['run_command', { command: m[1] }]);
  // A call whose input does not parse, and a call of a tool the server does not have.
  if (/\bgarbled\b/.test(part)) calls.push(['send_email', '{"to": 5']);
  if (/\bghost\b/.test(part)) calls.push(['ghost_tool', {}]);
  return calls;
}

/** A tool result as the model's prompt carries it, in words. */
function outcome(result) {
  const out = result.output;
  if (out?.type === 'execution-denied') return `${result.toolName}: not approved${out.reason ? ` (${out.reason})` : ''}`;
  const value = out?.type === 'json' ? JSON.stringify(out.value) : String(out?.value);
  return `${result.toolName}: ${value}`;
}

/**
 * Starts the endpoint on 127.0.0.1 (a free port), on the SDK of major `sdk` (7 or 6). Returns
 * `{ url, effects, prompts, requests, threads, emailReason, close }`: `effects` lists every tool the
 * SDK executed (`{ callId, name, input }`), `prompts` every prompt the model got, `requests` every
 * request; `emailReason` is the reason send_email's card carries (none on 6).
 */
export async function startAiSdkEndpoint({ sdk = 7 } = {}) {
  const ai = await import(SDKS[sdk]);
  const { convertToModelMessages, createUIMessageStream, createUIMessageStreamResponse, dynamicTool, jsonSchema, streamText, tool } = ai;
  const aiTest = await import(`${SDKS[sdk]}/test`);
  const { convertArrayToReadableStream } = aiTest;
  const MockLanguageModel = sdk >= 7 ? aiTest.MockLanguageModelV4 : aiTest.MockLanguageModelV3;
  const stepCount = sdk >= 7 ? ai.isStepCount : ai.stepCountIs;
  const object = (properties) => jsonSchema({ type: 'object', properties, required: Object.keys(properties) });
  const threads = new Map(); // threadId -> { messages: UIMessage[], run: { runId, messageId } | null }
  const effects = [];
  const prompts = [];
  const requests = []; // { method, path, threadId (of a GET), body (of a POST) }

  const model = new MockLanguageModel({
    doStream: async ({ prompt }) => {
      prompts.push(prompt);
      const last = prompt[prompt.length - 1];
      const user = prompt.findLastIndex((m) => m.role === 'user');
      const text = prompt[user].content.map((p) => p.text ?? '').join('');
      // The step: how many tool results came back since the user's message.
      const calls = plan(text, prompt.slice(user).filter((m) => m.role === 'tool').length);
      const parts = [{ type: 'stream-start', warnings: [] }];
      if (/\bcrash\b/.test(text) && last.role === 'user') {
        parts.push({ type: 'text-start', id: 'txt_c' }, { type: 'text-delta', id: 'txt_c', delta: 'Let me' });
        parts.push({ type: 'error', error: new Error('provider overloaded') });
        return { stream: convertArrayToReadableStream(parts) };
      }
      // As reasoning models do: a reasoning block first (the SDK streams it as reasoning chunks).
      parts.push({ type: 'reasoning-start', id: 'rs_1' }, { type: 'reasoning-delta', id: 'rs_1', delta: 'Thinking it over.' }, { type: 'reasoning-end', id: 'rs_1' });
      if (calls.length) {
        // A sentence before the calls, as models write one.
        parts.push({ type: 'text-start', id: 'txt_0' }, { type: 'text-delta', id: 'txt_0', delta: 'On it.' }, { type: 'text-end', id: 'txt_0' });
        for (const [toolName, input] of calls) {
          // As providers stream a call: its input in pieces, then the whole call.
          const id = `call_${randomUUID().slice(0, 8)}`;
          const json = typeof input === 'string' ? input : JSON.stringify(input);
          const dynamic = toolName === 'run_command' || undefined;
          parts.push({ type: 'tool-input-start', id, toolName, dynamic });
          for (let i = 0; i < json.length; i += 7) parts.push({ type: 'tool-input-delta', id, delta: json.slice(i, i + 7) });
          parts.push({ type: 'tool-input-end', id });
          parts.push({ type: 'tool-call', toolCallId: id, toolName, input: json, dynamic });
        }
        parts.push({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_use' }, usage });
      } else {
        const answer = last.role === 'tool' ? last.content.map(outcome).join('; ') : 'Nothing to do.';
        parts.push({ type: 'text-start', id: 'txt_1' });
        // Two deltas, so the reply is streamed.
        const half = Math.ceil(answer.length / 2);
        parts.push({ type: 'text-delta', id: 'txt_1', delta: answer.slice(0, half) });
        parts.push({ type: 'text-delta', id: 'txt_1', delta: answer.slice(half) });
        parts.push({ type: 'text-end', id: 'txt_1' });
        parts.push({ type: 'finish', finishReason: { unified: 'stop', raw: 'end_turn' }, usage });
      }
      return { stream: convertArrayToReadableStream(parts) };
    },
  });

  const run = (name) => async (input, { toolCallId }) => {
    effects.push({ callId: toolCallId, name, input });
    if (input.to?.startsWith('bounce@')) throw new Error(`mailbox ${input.to} does not exist`);
    if (name === 'run_command') return { exitCode: 0, stdout: `ran ${input.command}` };
    if (name === 'send_email') return { sent: true, to: input.to };
    if (name === 'read_file') return `contents of ${input.path}`;
    return { deleted: input.path };
  };
  // On 6 each tool gates itself (`needsApproval`, below); on 7 the `toolApproval` policy does.
  const gate = (needsApproval) => (sdk >= 7 ? {} : { needsApproval });
  const tools = {
    send_email: tool({ description: 'Send an email', inputSchema: object({ to: { type: 'string' }, body: { type: 'string' } }), execute: run('send_email'), ...gate(true) }),
    // A tool that streams its progress (an async generator: the SDK sends each yield as a
    // preliminary output, the last as the output).
    read_file: tool({
      description: 'Read a file',
      inputSchema: object({ path: { type: 'string' } }),
      async *execute(input, options) {
        yield `reading ${input.path}...`;
        yield await run('read_file')(input, options);
      },
    }),
    delete_file: tool({
      description: 'Delete a file',
      inputSchema: object({ path: { type: 'string' } }),
      execute: run('delete_file'),
      ...gate(async ({ path }) => !path.startsWith('/tmp/')),
    }),
    // A tool known only at run time (as an MCP server's): `dynamic-tool` parts in the UI messages.
    run_command: dynamicTool({ description: 'Run a shell command', inputSchema: object({ command: { type: 'string' } }), execute: run('run_command'), ...gate(true) }),
  };
  // send_email waits for a person; delete_file is approved by the server's own policy (on 7 an
  // automatic approval: the SDK streams its request and response, no card; on 6, of a path under
  // /tmp/, a call let through ungated, else one that waits); read_file is not gated; the dynamic
  // run_command waits for a person, with no reason given.
  const toolApproval = { send_email: { type: 'user-approval', reason: EMAIL_REASON }, delete_file: 'approved', run_command: 'user-approval' };
  const policy = sdk >= 7 ? { toolApproval } : {};

  const isTool = (p) => p.type?.startsWith('tool-') || p.type === 'dynamic-tool';
  const toolName = (p) => (p.type === 'dynamic-tool' ? p.toolName : p.type.slice('tool-'.length));
  const waiting = (message) => (message?.parts ?? []).filter((p) => isTool(p) && p.state === 'approval-requested' && !p.approval?.isAutomatic);
  const threadOf = (id) => {
    if (!threads.has(id)) threads.set(id, { messages: [], run: null });
    return threads.get(id);
  };

  /** A stream's chunks as they go out, kept in `into` (for the replay of the stream that paused). */
  const recorded = (stream, into) =>
    stream.pipeThrough(
      new TransformStream({
        transform(chunk, controller) {
          into.push(chunk);
          controller.enqueue(chunk);
        },
      }),
    );

  /** The agent on from the thread's messages: the SDK's stream, `data-run` first. */
  function agentStream(thread, runId) {
    const chunks = [];
    const stream = createUIMessageStream({
      originalMessages: thread.messages,
      execute: async ({ writer }) => {
        writer.write({ type: 'data-run', data: { runId, agentVersionId: AGENT_VERSION } });
        const result = streamText({
          model,
          messages: await convertToModelMessages(thread.messages),
          tools,
          ...policy,
          experimental_toolApprovalSecret: SECRET,
          stopWhen: stepCount(5),
          // The model's failures go to the client as `error` chunks, not to the test's output.
          onError: () => {},
        });
        // Metadata on the message, as apps attach it (on the `start` and `finish` chunks).
        const messageMetadata = ({ part }) => (part.type === 'start' ? { model: 'mock' } : part.type === 'finish' ? { model: 'mock', finishedAt: 1 } : undefined);
        writer.merge(sdk >= 7 ? ai.toUIMessageStream({ stream: result.stream, messageMetadata }) : result.toUIMessageStream({ messageMetadata }));
      },
      onFinish: ({ messages }) => {
        thread.messages = messages;
        const last = messages[messages.length - 1];
        // Paused: the replay route sends this stream again, whole (as resumable streams do).
        thread.run = waiting(last).length ? { runId, messageId: last.id, chunks } : null;
      },
    });
    return recorded(stream, chunks);
  }

  /** The calls of the paused run still waiting, announced again after a partial answer. */
  function announce(thread) {
    const message = thread.messages.find((m) => m.id === thread.run.messageId);
    const chunks = [{ type: 'start', messageId: message.id }, { type: 'data-run', data: { runId: thread.run.runId, agentVersionId: AGENT_VERSION } }];
    for (const p of waiting(message)) {
      chunks.push({ type: 'tool-input-available', toolCallId: p.toolCallId, toolName: toolName(p), input: p.input, ...(p.type === 'dynamic-tool' && { dynamic: true }) });
      chunks.push({ type: 'tool-approval-request', approvalId: p.approval.id, toolCallId: p.toolCallId, reason: p.approval.requestReason });
    }
    chunks.push({ type: 'finish', finishReason: 'tool-calls' });
    thread.run.chunks = chunks;
    return streamOf(chunks);
  }

  /** A stream of the chunks given. */

  async function chat(body) {
    if (typeof body?.threadId !== 'string' || !Array.isArray(body.messages)) return { status: 400, json: { error: 'threadId and messages are required' } };
    const thread = threadOf(body.threadId);
    if (body.approval) {
      const { runId, toolCallId, approved } = body.approval;
      if (!thread.run || thread.run.runId !== runId) return { status: 409, json: { error: `no paused run ${runId}`, code: 'run_not_found' } };
      if (body.agentVersionId !== undefined && body.agentVersionId !== AGENT_VERSION) return { status: 409, json: { error: 'agent version mismatch', code: 'agent_version_mismatch' } };
      const message = thread.messages.find((m) => m.id === thread.run.messageId);
      const part = waiting(message).find((p) => p.toolCallId === toolCallId);
      if (!part) return { status: 409, json: { error: `${toolCallId} is not awaiting approval`, code: 'tool_call_not_pending' } };
      // What the SDK's addToolApprovalResponse does to the part on a client.
      part.state = 'approval-responded';
      part.approval = { ...part.approval, approved: approved === true };
      if (waiting(message).length) return { stream: announce(thread) };
      return { stream: agentStream(thread, thread.run.runId) };
    }
    if (thread.run) return { status: 409, json: { error: `run ${thread.run.runId} is awaiting approval`, code: 'run_paused' } };
    const text = body.messages.at(-1)?.parts?.find((p) => p.type === 'text')?.text;
    if (typeof text !== 'string') return { status: 400, json: { error: 'a user message with a text part is required' } };
    thread.messages.push({ id: `msg_${randomUUID().slice(0, 8)}`, role: 'user', parts: [{ type: 'text', text }] });
    return { stream: agentStream(thread, `run_${randomUUID().slice(0, 8)}`) };
  }

  const { url, close } = await serveUIStream({ chat, threads, requests, createUIMessageStreamResponse });
  return {
    url,
    effects,
    prompts,
    requests,
    threads,
    emailReason: sdk >= 7 ? EMAIL_REASON : null,
    close,
  };
}
