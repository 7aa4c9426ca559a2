// Type-checked (tsc --strict --noEmit) against the built package's declarations: every export is
// used the way a frontend would, and misuse that the types must reject is marked @ts-expect-error.
import init, {
  parseThread,
  pendingApprovals,
  Decisions,
  ApprovalClient,
  isToolgateError,
  type ApprovalClientOptions,
  type DecisionPayload,
  type DecisionValue,
  type ErrorCode,
  type GatedTool,
  type GatedView,
  type Json,
  type MessageView,
  type Phase,
  type Snapshot,
  type SnapshotError,
  type SubmissionView,
  type SuspensionView,
  type ToolView,
  type Suspension,
  type Thread,
} from '../../pkg/toolgate.js';

export async function example(threadJson: string, bytes: Uint8Array, id: string): Promise<void> {
  await init();
  const s: Suspension = pendingApprovals(threadJson);
  pendingApprovals(bytes);
  pendingApprovals(threadJson, { check: 'tail' });
  pendingApprovals(bytes, { check: 'all' });
  pendingApprovals(bytes, {});
  // @ts-expect-error: only 'all' or 'tail'
  pendingApprovals(bytes, { check: 'head' });
  pendingApprovals({ id: 'thread_42', messages: [] });
  pendingApprovals([{ role: 'user', content: 'hi' }]);
  if (s.suspended) {
    const d = new Decisions(s);
    d.approve('toolu_01A2B3C4D5E6F7');
    d.reject('toolu_08G9H0I1J2K3L4', 'Do not email the whole team');
    d.reject('toolu_08G9H0I1J2K3L4');
    d.clear('toolu_08G9H0I1J2K3L4');
    const v: DecisionValue | null = d.get('toolu_01A2B3C4D5E6F7');
    if (Array.isArray(v)) {
      const reason: string = v[1];
      void reason;
    }
    const complete: boolean = d.isComplete;
    const undecided: string[] = d.undecided;
    const body: DecisionPayload = d.toJSON();
    void complete;
    void undecided;
    await fetch(`/threads/${id}/chat`, { method: 'POST', body: JSON.stringify(body) });
    d.free();
    // @ts-expect-error approvals are bare: no approve-with-comment
    d.approve('toolu_01A2B3C4D5E6F7', 'looks fine');
  }
  const tools: GatedTool[] = [...s.pending, ...s.decided];
  for (const t of tools) {
    const headline: string = t.approvalReason ?? t.name;
    const inputs: { [key: string]: Json } = t.inputs;
    const state: 'pending' | 'approved' | 'rejected' = t.approval;
    const due: string | undefined = t.expiresAt;
    void due;
    void headline;
    void inputs;
    void state;
  }
  const thread: Thread = parseThread(threadJson);
  const id2: string | null = thread.id;
  void id2;
  for (const m of thread.messages) {
    if (m.type === 'tool_call' && m.tools) {
      for (const tool of m.tools) {
        // (No callId on a tool that is not gated, from a provider that gives none.)
        const callId: string | null | undefined = tool.callId;
        void callId;
      }
    }
  }
  // @ts-expect-error a number is not a thread
  pendingApprovals(42);
}

export function handle(e: unknown): ErrorCode | null {
  if (isToolgateError(e)) {
    const code: ErrorCode = e.code;
    const where: string | null = e.path;
    const line: number | null = e.line;
    void where;
    void line;
    return code;
  }
  return null;
}

// The approval client, the way a React app drives it (useSyncExternalStore).
export async function drive(baseUrl: string, threadId: string, token: string): Promise<void> {
  const options: ApprovalClientOptions = {
    dialect: 'neuron',
    baseUrl,
    threadId,
    headers: { Authorization: `Bearer ${token}` },
    routes: { chat: '/threads/{threadId}/chat', thread: '/threads/{threadId}' },
    autoSubmit: false,
    persist: true,
    timeoutMs: 10000,
    retry: { attempts: 5, backoffMs: 200, maxBackoffMs: 2000 },
  };
  const client = new ApprovalClient(options);
  new ApprovalClient({ threadId, headers: [['X-Trace', '1']], reloadAfterPost: false }).free();
  new ApprovalClient({
    threadId,
    fetch: async (url, init) => {
      init.headers.set('Authorization', `Bearer ${token}`);
      const signal: AbortSignal = init.signal;
      return fetch(url, { ...init, signal, credentials: 'include' });
    },
  }).free();
  // @ts-expect-error fetch is a function
  new ApprovalClient({ threadId, fetch: 'https://proxy.example.com' });
  new ApprovalClient({
    dialect: 'sidenet',
    baseUrl,
    threadId,
    token,
    agentVersionId: 'agv_1',
    transport: 'collect',
    agentId: 'agent_1',
  }).free();
  const render = (s: Snapshot): string => {
    const phase: Phase = s.phase;
    const messages: readonly MessageView[] = s.messages;
    for (const m of messages) {
      const tools: ToolView[] = m.tools;
      const kind: 'text' | 'tool_call' | 'tool_result' | 'other' = m.kind;
      void tools;
      void kind;
    }
    const streaming: MessageView | null = s.streaming;
    const suspension: SuspensionView | null = s.suspension;
    const cards: GatedView[] = suspension ? suspension.pending : [];
    const headline: string | null = cards[0]?.approvalReason ?? null;
    const deadline: string | undefined = cards[0]?.expiresAt;
    void deadline;
    const error: SnapshotError | null = s.error;
    const code: ErrorCode | undefined = error?.code;
    const last: SubmissionView | null = s.lastSubmission;
    const draft: DecisionValue | undefined = s.decisions['toolu_1'];
    const n: number = s.version + s.messagesVersion;
    const flags: boolean = s.canSend && s.canSubmit && s.busy && s.syncing && s.loaded;
    const allowed: string[] = s.allowedTools;
    const finishReason: string | null = s.finishReason;
    void allowed;
    void finishReason;
    void streaming;
    void headline;
    void code;
    void last;
    void draft;
    void n;
    void flags;
    return phase;
  };
  const stop: () => void = client.subscribe(() => render(client.getSnapshot()));
  try {
    client.allowTool('read_file');
    client.disallowTool('read_file');
    await client.load();
    await client.send('Delete old logs');
    const s = client.getSnapshot();
    if (s.phase === 'awaiting_approval' && s.suspension) {
      const [first, second] = s.suspension.pending;
      if (first) client.approve(first.callId);
      if (second) client.reject(second.callId, 'Do not email the whole team');
      if (second) client.reject(second.callId);
      if (second) client.reject(second.callId, null);
      if (first) client.clear(first.callId);
      await client.submit();
    }
    await client.rejectAllAndSend('Do something else instead', 'reason');
    await client.rejectAllAndSend('Do something else instead');
  } catch (e) {
    if (isToolgateError(e) && e.code === 'input_locked') client.abort();
  } finally {
    stop();
    client.free();
  }
  // @ts-expect-error a tool is named by a string
  client.allowTool(['read_file']);
  // @ts-expect-error threadId is required
  new ApprovalClient({ baseUrl });
  // @ts-expect-error no such dialect
  new ApprovalClient({ threadId, dialect: 'carrier-pigeon' });
  // @ts-expect-error approvals are bare: no approve-with-comment
  client.approve('toolu_1', 'looks fine');
  // @ts-expect-error a listener takes no snapshot argument
  client.subscribe((s: Snapshot) => render(s));
  // @ts-expect-error the snapshot is read-only
  client.getSnapshot().phase = 'idle';
  // @ts-expect-error send returns a promise, not a snapshot
  const wrong: Snapshot = await client.send('hi');
  void wrong;
}
