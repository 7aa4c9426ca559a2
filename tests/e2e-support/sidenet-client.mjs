// What the tests of the Sidenet client against real agent frameworks (tests/e2e/ai-sdk.test.mjs,
// tests/e2e/pydantic-ai.test.mjs) share: the package loaded in Node, a client of an endpoint, and
// what a UI renders of a snapshot, for comparing a live client with one that loaded the thread.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, requirePkg } from './harness.mjs';

/** The package (pkg/), initialised in Node. */
export async function loadPackage() {
  requirePkg();
  const tg = await import(pathToFileURL(path.join(ROOT, 'pkg', 'toolgate.js')).href);
  await tg.default({ module_or_path: readFileSync(path.join(ROOT, 'pkg', 'toolgate_bg.wasm')) });
  return tg;
}

/** A Sidenet client of `baseUrl`: streamed replies on the chat route, or (`'collect'`) collected ones on the agent's run route. */
export const sidenetClient = (tg, baseUrl, threadId, transport = 'stream') =>
  new tg.ApprovalClient({ dialect: 'sidenet', baseUrl, threadId, transport, agentId: 'agent_1', persist: false, timeoutMs: 10_000 });

/**
 * What a UI renders of the messages: a loaded client must show the same as the live one. (Not a
 * rejection's reason: the protocol does not carry it, so a client without the drafts' record, as
 * here with `persist: false`, cannot know it after a reload.)
 */
export const shown = (snapshot) =>
  snapshot.messages.map((m) => ({
    role: m.role,
    kind: m.kind,
    text: m.text,
    tools: m.tools.map((t) => ({
      callId: t.callId,
      name: t.name,
      inputs: t.inputs,
      result: t.result,
      approval: t.approval,
      approvalReason: t.approvalReason,
      status: t.status,
    })),
  }));

/** The callIds of the cards. */
export const cardIds = (snapshot) => snapshot.suspension?.pending.map((p) => p.callId) ?? [];

/** The tool of a call, in whichever message. */
export const tool = (snapshot, callId) => snapshot.messages.flatMap((m) => m.tools).find((t) => t.callId === callId);

/** The answer: the last text of the last message (its text parts are joined by newlines). */
export const lastText = (snapshot) => snapshot.messages.at(-1).text.split('\n').at(-1);

/** The snapshot of a new client that loaded the thread. */
export async function reloaded(tg, baseUrl, threadId, transport) {
  const again = sidenetClient(tg, baseUrl, threadId, transport);
  try {
    await again.load();
    return again.getSnapshot();
  } finally {
    again.free();
  }
}
