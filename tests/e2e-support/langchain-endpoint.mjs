// A Sidenet endpoint whose agent is LangChain's: `createAgent` with tools and its
// `humanInTheLoopMiddleware` (a LangGraph interrupt before gated calls run, resumed with a
// `Command` carrying the decisions), a `MemorySaver` checkpointer, the graph's stream turned into
// an AI SDK UI message stream by `@ai-sdk/langchain`'s `toUIMessageStream` (which reads an
// interrupt's action requests as `tool-approval-request` chunks), and the UI messages that
// stream builds kept as the thread's history. Only the model is scripted (a chat model of its
// own here, streaming its text and its tool calls as LangChain's providers do), so what toolgate
// reads is what a server built on LangChain and its AI SDK adapter writes.
//
// What LangChain leaves to the server is done here as a Sidenet server would: a run id named by a
// `data-run` chunk, one `approval` per POST recorded on its part (`approval-responded`), the run
// resumed once every call of the interrupt is answered (the decisions in the interrupt's order;
// a rejection's message is the endpoint's), the calls still waiting announced again after a
// partial answer, and a replay route that sends the stream that paused again, whole.
// `POST /v1/agents/{id}/run` answers the same chunks collected in one JSON body. Kept outside
// tests/e2e/ so `node --test` does not run it as a test file.
import { randomUUID } from 'node:crypto';
import { serveUIStream, streamOf } from './ui-stream-server.mjs';
import { createAgent, humanInTheLoopMiddleware, tool, AIMessage, HumanMessage, ToolMessage } from 'langchain';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessageChunk } from '@langchain/core/messages';
import { ChatGenerationChunk } from '@langchain/core/outputs';
import { MemorySaver, Command } from '@langchain/langgraph';
import { toUIMessageStream } from '@ai-sdk/langchain';
import { createUIMessageStream, createUIMessageStreamResponse } from 'ai';
import { z } from 'zod';

export const AGENT_VERSION = 'agv_langchain_1';
/** The message a rejection resumes the run with (LangChain's tool message for the declined call). */
export const DECLINED = 'The person declined this call.';

/**
 * What the scripted model calls for a user's text at a step: `email <to> «<body>»`, `read <path>`
 * and `delete <path>`; a text with ` then ` in it is that many steps.
 */
function plan(text, step) {
  const part = text.split(' then ')[step];
  if (part === undefined) return [];
  const calls = [];
  for (const m of part.matchAll(/email (\S+@\S+) «([^»]*)»/g)) calls.push(['send_email', { to: m[1], body: m[2] }]);
  for (const m of part.matchAll(/read (\/\S+)/g)) calls.push(['read_file', { path: m[1] }]);
  for (const m of part.matchAll(/delete (\/\S+)/g)) calls.push(['delete_file', { path: m[1] }]);
  return calls;
}

/**
 * The model: a sentence and the step's calls, or, with none left, the results it got, in words.
 * Streamed as providers stream: the text in two pieces, then the calls with their arguments.
 */
class ScriptedModel extends BaseChatModel {
  _llmType() {
    return 'scripted';
  }

  bindTools() {
    return this;
  }

  reply(messages) {
    const user = messages.findLastIndex((m) => HumanMessage.isInstance(m));
    const text = String(messages[user].content);
    const step = messages.slice(user).filter((m) => AIMessage.isInstance(m)).length;
    const calls = plan(text, step);
    const id = `ai_${randomUUID().slice(0, 8)}`;
    if (calls.length) {
      return new AIMessage({ content: 'On it.', id, tool_calls: calls.map(([name, args]) => ({ name, args, id: `call_${randomUUID().slice(0, 8)}`, type: 'tool_call' })) });
    }
    const lastAi = messages.findLastIndex((m) => AIMessage.isInstance(m));
    const results = lastAi > user ? messages.slice(lastAi + 1).filter((m) => ToolMessage.isInstance(m)).map((m) => `${m.name}: ${m.content}`) : [];
    return new AIMessage({ content: results.join('; ') || 'Nothing to do.', id });
  }

  async _generate(messages) {
    const message = this.reply(messages);
    return { generations: [{ text: String(message.content), message }], llmOutput: {} };
  }

  async *_streamResponseChunks(messages, _options, runManager) {
    const message = this.reply(messages);
    const text = String(message.content);
    const half = Math.ceil(text.length / 2);
    for (const piece of [text.slice(0, half), text.slice(half)]) {
      yield new ChatGenerationChunk({ text: piece, message: new AIMessageChunk({ content: piece, id: message.id }) });
      await runManager?.handleLLMNewToken(piece);
    }
    if (message.tool_calls?.length) {
      const tool_call_chunks = message.tool_calls.map((c, index) => ({ name: c.name, args: JSON.stringify(c.args), id: c.id, index, type: 'tool_call_chunk' }));
      yield new ChatGenerationChunk({ text: '', message: new AIMessageChunk({ content: '', id: message.id, tool_call_chunks }) });
    }
  }
}

/**
 * Starts the endpoint on 127.0.0.1 (a free port). Returns `{ url, effects, requests, threads,
 * close }`: `effects` lists every tool LangChain ran (`{ name, input }`), `requests` every request.
 */
export async function startLangChainEndpoint() {
  const threads = new Map(); // threadId -> { messages: UIMessage[], run: { runId, messageId, chunks, calls, decisions } | null }
  const effects = [];
  const requests = [];

  const run = (name) => async (input) => {
    effects.push({ name, input });
    if (name === 'send_email') return JSON.stringify({ sent: true, to: input.to });
    if (name === 'read_file') return `contents of ${input.path}`;
    return JSON.stringify({ deleted: input.path });
  };
  const tools = [
    tool(run('send_email'), { name: 'send_email', description: 'Send an email', schema: z.object({ to: z.string(), body: z.string() }) }),
    tool(run('read_file'), { name: 'read_file', description: 'Read a file', schema: z.object({ path: z.string() }) }),
    tool(run('delete_file'), { name: 'delete_file', description: 'Delete a file', schema: z.object({ path: z.string() }) }),
  ];
  // send_email and delete_file wait for a person (approve or reject); read_file is not gated.
  const gated = { allowedDecisions: ['approve', 'reject'] };
  const agent = createAgent({
    model: new ScriptedModel({}),
    tools,
    middleware: [humanInTheLoopMiddleware({ interruptOn: { send_email: gated, delete_file: gated } })],
    checkpointer: new MemorySaver(),
  });

  const threadOf = (id) => {
    if (!threads.has(id)) threads.set(id, { messages: [], run: null });
    return threads.get(id);
  };
  const waiting = (message) => (message?.parts ?? []).filter((p) => p.state === 'approval-requested');

  /** The graph on from its checkpoint with `input`: the adapter's stream, `data-run` first. */
  function agentStream(thread, threadId, runId, input) {
    const chunks = [];
    const stream = createUIMessageStream({
      originalMessages: thread.messages,
      execute: async ({ writer }) => {
        writer.write({ type: 'data-run', data: { runId, agentVersionId: AGENT_VERSION } });
        const graph = await agent.stream(input, { configurable: { thread_id: threadId }, streamMode: ['values', 'messages'] });
        writer.merge(toUIMessageStream(graph));
      },
      onFinish: ({ messages }) => {
        thread.messages = messages;
        const last = messages.at(-1);
        const calls = waiting(last).map((p) => p.toolCallId);
        thread.run = calls.length ? { runId, messageId: last.id, chunks, calls, decisions: new Map() } : null;
      },
    });
    return stream.pipeThrough(
      new TransformStream({
        transform(chunk, controller) {
          chunks.push(chunk);
          controller.enqueue(chunk);
        },
      }),
    );
  }

  /** The calls of the paused run still waiting, announced again after a partial answer. */
  function announce(thread, left) {
    const message = thread.messages.find((m) => m.id === thread.run.messageId);
    const chunks = [{ type: 'start', messageId: message.id }, { type: 'data-run', data: { runId: thread.run.runId, agentVersionId: AGENT_VERSION } }];
    for (const p of message.parts.filter((x) => left.includes(x.toolCallId))) {
      chunks.push({ type: 'tool-input-available', toolCallId: p.toolCallId, toolName: p.toolName, input: p.input, dynamic: true });
      chunks.push({ type: 'tool-approval-request', approvalId: p.approval.id, toolCallId: p.toolCallId });
    }
    chunks.push({ type: 'finish', finishReason: 'tool-calls' });
    thread.run.chunks = chunks;
    return streamOf(chunks);
  }

  async function chat(body) {
    if (typeof body?.threadId !== 'string' || !Array.isArray(body.messages)) return { status: 400, json: { error: 'threadId and messages are required' } };
    const thread = threadOf(body.threadId);
    if (body.approval) {
      const { runId, toolCallId, approved } = body.approval;
      const r = thread.run;
      if (!r || r.runId !== runId) return { status: 409, json: { error: `no paused run ${runId}`, code: 'run_not_found' } };
      if (body.agentVersionId !== undefined && body.agentVersionId !== AGENT_VERSION) return { status: 409, json: { error: 'agent version mismatch', code: 'agent_version_mismatch' } };
      if (!r.calls.includes(toolCallId) || r.decisions.has(toolCallId)) return { status: 409, json: { error: `${toolCallId} is not awaiting approval`, code: 'tool_call_not_pending' } };
      r.decisions.set(toolCallId, approved === true);
      // Recorded on the part as the AI SDK's addToolApprovalResponse does.
      const part = thread.messages.find((m) => m.id === r.messageId).parts.find((p) => p.toolCallId === toolCallId);
      part.state = 'approval-responded';
      part.approval = { ...part.approval, approved: approved === true };
      const left = r.calls.filter((c) => !r.decisions.has(c));
      if (left.length) return { stream: announce(thread, left) };
      const decisions = r.calls.map((c) => (r.decisions.get(c) ? { type: 'approve' } : { type: 'reject', message: DECLINED }));
      return { stream: agentStream(thread, body.threadId, runId, new Command({ resume: { decisions } })) };
    }
    if (thread.run) return { status: 409, json: { error: `run ${thread.run.runId} is awaiting approval`, code: 'run_paused' } };
    const text = body.messages.at(-1)?.parts?.find((p) => p.type === 'text')?.text;
    if (typeof text !== 'string') return { status: 400, json: { error: 'a user message with a text part is required' } };
    thread.messages.push({ id: `msg_${randomUUID().slice(0, 8)}`, role: 'user', parts: [{ type: 'text', text }] });
    return { stream: agentStream(thread, body.threadId, `run_${randomUUID().slice(0, 8)}`, { messages: [new HumanMessage(text)] }) };
  }

  const { url, close } = await serveUIStream({ chat, threads, requests, createUIMessageStreamResponse });
  return {
    url,
    effects,
    requests,
    threads,
    close,
  };
}
