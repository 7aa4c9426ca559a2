//! The TypeScript declarations of the public API (hand-written, checked by a strict `tsc` test),
//! and reading a `Suspension` back from JS.

use wasm_bindgen::prelude::*;

use wasm_bindgen::JsCast;

use super::input::{self, Array};
use crate::approval::Suspension;
use crate::error::Error;
use crate::json::Value;
use crate::thread::Message;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** Every stable error code. */
export type ErrorCode =
  | "parse_error" | "not_suspended" | "unknown_call_id" | "empty_decisions" | "invalid_argument"
  | "invalid_state" | "input_locked" | "busy" | "conflict" | "http_status" | "network" | "timeout"
  | "unauthorized" | "expired" | "stream_error" | "aborted";

/** What toolgate throws: `err.name === "ToolgateError"`, with a stable `code`. */
export interface ToolgateError extends Error {
  name: "ToolgateError";
  code: ErrorCode;
  /** The message without the code prefix. */
  detail: string;
  /** A JSON path into the input, e.g. `$.messages[2].tools[0].approval`. */
  path: string | null;
  /** Where the parser stopped in the input text: the line (1-based) and the column of the last
   *  character read (0 when none was read on that line, as for an empty input). For a parsed JS
   *  value they point into its JSON text, which the caller never saw. */
  line: number | null;
  column: number | null;
}

/** A JSON value, as parsed. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A thread: a JSON string, UTF-8 JSON bytes, or an already-parsed document
 *  (`{ id?, messages }` or a bare array of messages). */
export type ThreadInput = string | Uint8Array | ArrayBuffer | ThreadDocument | NeuronMessage[];

export interface ThreadDocument {
  id?: string | number | null;
  messages: NeuronMessage[];
  [key: string]: unknown;
}

export type ApprovalState = "pending" | "approved" | "rejected";

/** A tool entry of a Neuron `tool_call` or `tool_call_result` message. */
export interface NeuronTool {
  /** A string on every gated tool; null or absent only on one that is not gated. */
  callId?: string | null;
  name?: string;
  description?: string | null;
  inputs?: { [key: string]: Json } | Json[] | null;
  result?: Json;
  /** `null` or absent: not gated. */
  approval?: ApprovalState | null;
  approvalReason?: string | null;
  rejectReason?: string | null;
  parameters?: Json;
  deferred?: Json;
  [key: string]: unknown;
}

/**
 * A serialized Neuron message. Unknown fields and message types are kept as they came. Checked:
 * `role`, `type`, `__id`, and on `tool_call` / `tool_call_result` messages `tools` and each
 * tool's `callId`, `approval` and `inputs`; the other fields are typed as the protocol has them
 * and come as the server wrote them.
 */
export interface NeuronMessage {
  __id?: string | number | null;
  role?: string;
  content?: Json;
  type?: "tool_call" | "tool_call_result" | string | null;
  tools?: NeuronTool[];
  resume_token?: string;
  [key: string]: unknown;
}

/** `parseThread`'s result: plain objects, nothing lost. */
export interface Thread {
  id: string | null;
  messages: NeuronMessage[];
}

/** A gated tool on the tail: what an approval card shows. */
export interface GatedTool {
  callId: string;
  name: string;
  description: string | null;
  inputs: { [key: string]: Json };
  approval: ApprovalState;
  /** Why the tool asks (tool to human): the card's headline. */
  approvalReason: string | null;
  /** Why it was rejected (human to model). */
  rejectReason: string | null;
  /** Neuron 4: the request's deadline (the tool's `expiresAt`, as the server sent it). */
  expiresAt?: string;
}

/** Where a thread stands, by its last message. */
export interface Suspension {
  suspended: boolean;
  messageId: string | null;
  resumeToken: string | null;
  pending: GatedTool[];
  decided: GatedTool[];
}

/** One decision in wire form. */
export type DecisionValue = "approve" | "reject" | ["reject", string];

/** The body to POST to resume: `{ decisions: { [callId]: DecisionValue } }`. */
export interface DecisionPayload {
  decisions: { [callId: string]: DecisionValue };
}

/** `new ApprovalClient(options)`: every key but `threadId` is optional, and `null` is its default
 *  (in `routes` and `retry` too); a value of the wrong type throws `invalid_argument` with the
 *  key's path. */
export interface ApprovalClientOptions {
  /** The server's protocol. Default `"neuron"`. */
  dialect?: "neuron" | "sidenet";
  /** The server's origin and prefix, e.g. `"https://api.example.com"`; `""` (default) is same origin. */
  baseUrl?: string;
  threadId: string;
  /** Extra request headers (they win over the defaults), e.g. `{ Authorization: "Bearer ..." }`. */
  headers?: { [name: string]: string } | [string, string][] | Headers | Map<string, string>;
  /** Path templates relative to `baseUrl`; `{threadId}` (and `{agentId}`) are replaced, percent-encoded. */
  routes?: {
    /** Neuron `/threads/{threadId}/chat` (default), Sidenet `/v1/chat`. */
    chat?: string;
    /** Neuron `/threads/{threadId}` (default), Sidenet `/v1/threads/{threadId}`. */
    thread?: string;
    /** Sidenet: the replay of a paused run, `/v1/chat/stream?threadId={threadId}`. */
    stream?: string;
    /** Sidenet, `transport: "collect"`: `/v1/agents/{agentId}/run`. */
    run?: string;
  };
  /** Submit as soon as every gated tool has a decision. Default `false`. */
  autoSubmit?: boolean;
  /** Keep drafts in `localStorage` (per dialect, base URL and thread), shared with the other tabs
   *  of the thread (the last save wins; a tab left on a pause another tab moved past loads the
   *  thread again). Default `true`. */
  persist?: boolean;
  /** Per request; for a stream, the wait for the headers and then between chunks. Default 30000. */
  timeoutMs?: number;
  /** Retries of loads, and of Sidenet continuations the server has not accepted (never of a new
   *  message, nor of a Neuron decision submission: after no clear answer it is checked against the
   *  thread, not sent again). `attempts` counts every try. Defaults 3, 300, 5000. */
  retry?: { attempts?: number; backoffMs?: number; maxBackoffMs?: number };
  /** Neuron: reload the thread quietly after each POST. Default `true`. */
  reloadAfterPost?: boolean;
  /** Sends `Authorization: Bearer <token>` (an `Authorization` in `headers` wins). */
  token?: string | null;
  /** Sidenet: the agent version for new messages. */
  agentVersionId?: string | null;
  /** Sidenet: a streamed `POST /v1/chat` (default) or the collected output of `routes.run`. */
  transport?: "stream" | "collect";
  /** Sidenet, `transport: "collect"`: the agent id (required there). */
  agentId?: string | null;
  /** Performs every request instead of the global `fetch`, called as `fetch(url, init)` with
   *  `init.method`, `init.headers` (a `Headers`), `init.body` (a string, on POSTs) and
   *  `init.signal` (aborts on timeout, `abort()` and `free()`): to refresh a token per request,
   *  send cookies cross-origin (`credentials: "include"`), trace or proxy. It must resolve to a
   *  `Response`; whatever it throws or rejects with (or resolves to instead) is a `network`
   *  failure. */
  fetch?: (
    url: string,
    init: RequestInit & { headers: Headers; signal: AbortSignal },
  ) => Promise<Response>;
}

/** Where the client stands. (`conflict` lasts only while the thread is read again after the
 *  server refused a message or decisions; the phase then is where that read leaves it, with
 *  `error.code` `"conflict"`.) */
export type Phase =
  | "idle" | "loading" | "sending" | "streaming" | "awaiting_approval" | "submitting" | "completed"
  | "expired" | "conflict" | "error";

/** A Sidenet (AI SDK UI) message, as its thread route returns it. */
export interface UiMessage {
  id?: string;
  role?: string;
  parts?: Json[];
  [key: string]: unknown;
}

/** A tool of a message. */
export interface ToolView {
  callId: string;
  name: string;
  inputs: { [key: string]: Json };
  result: Json | null;
  /** `null`: not gated. */
  approval: ApprovalState | null;
  approvalReason: string | null;
  rejectReason: string | null;
  /** `denied` and `error`: Sidenet only. */
  status: "pending" | "approved" | "rejected" | "called" | "done" | "denied" | "error";
}

/** One message, dialect-neutral, with the wire message in `raw`. */
export interface MessageView {
  id: string | null;
  index: number;
  role: string | null;
  kind: "text" | "tool_call" | "tool_result" | "other";
  text: string;
  tools: ToolView[];
  raw: NeuronMessage | UiMessage;
}

/** A gated tool on the paused tail, with the local draft overlaid: what an approval card shows. */
export interface GatedView {
  callId: string;
  name: string;
  description: string | null;
  inputs: { [key: string]: Json };
  /** The draft's decision, else the server's. */
  approval: ApprovalState;
  /** Why the tool asks: the card's headline. */
  approvalReason: string | null;
  rejectReason: string | null;
  /** A local draft decides this tool. */
  draft: boolean;
  /**
   * The server's decision: the tail's (Neuron). Sidenet: `approved` or `rejected` once the server
   * accepted the person's decision for this call while the card is still shown (the reply to it
   * was stopped or cut before the call left the pause), or another tab's continuation took it
   * (with `persist`, until that tab's reply ends or this tab loads); `draft` is false then, the
   * card is settled, and approving, rejecting or clearing it throws `invalid_state`.
   */
  serverApproval: ApprovalState;
  serverRejectReason: string | null;
  /** Sidenet only. */
  runId?: string;
  /** Sidenet only. */
  agentVersionId?: string;
  /** Neuron 4: the request's deadline (the tool's `expiresAt`, as the server sent it). */
  expiresAt?: string;
}

/** The paused tail. */
export interface SuspensionView {
  messageId: string | null;
  /** Sidenet only. */
  runId?: string;
  /** Sidenet only. */
  agentVersionId?: string;
  /**
   * Every gated tool, in tail order: one card each. Two can share a `callId` (Neuron's Gemini
   * provider uses the tool's name): a decision answers all of them, as the server applies it, so
   * key cards by their place, not by `callId` alone.
   */
  tools: GatedView[];
  /** The undecided ones. */
  pending: GatedView[];
  decided: GatedView[];
  undecided: string[];
  complete: boolean;
}

/** The outcome of the last decision submission. */
export interface SubmissionView {
  callIds: string[];
  status: "awaiting_approval" | "completed";
  stillPending: { callId: string; name: string; approvalReason: string | null }[];
  /** Sent, yet still pending on the tail. */
  notApplied: string[];
}

export interface SnapshotError {
  code: ErrorCode;
  message: string;
}

/** What the UI renders; `getSnapshot()` returns the same object, frozen all the way down, until something changes. `messages` stays the same array until the messages change, and then each message that did not change (from the first that changed on, all are new) keeps its object; the snapshot after a streamed text delta shares every object of the one before but itself and `streaming`. */
export interface Snapshot {
  readonly version: number;
  readonly phase: Phase;
  readonly dialect: "neuron" | "sidenet";
  readonly threadId: string;
  /** A thread load has succeeded at least once. */
  readonly loaded: boolean;
  /** A request (or a retry timer) is outstanding for a command. */
  readonly busy: boolean;
  /** A quiet reload is in flight (Neuron: after a POST, or to catch up with another tab; commands preempt it). */
  readonly syncing: boolean;
  /** Changes iff `messages` changed (the array is reused otherwise). */
  readonly messagesVersion: number;
  readonly messages: readonly MessageView[];
  /** A message being streamed (Sidenet). */
  readonly streaming: MessageView | null;
  readonly suspension: SuspensionView | null;
  /** The local drafts. */
  readonly decisions: { readonly [callId: string]: DecisionValue };
  readonly canSend: boolean;
  /** A decision was made since the thread last changed: `submit()` has something to send. */
  readonly canSubmit: boolean;
  readonly error: SnapshotError | null;
  /** A message that was not (or not surely) delivered. */
  readonly unsentText: string | null;
  readonly lastSubmission: SubmissionView | null;
  /** callIds whose drafts were dropped because the pause changed. */
  readonly droppedDrafts: string[];
  /** The tools allowed with `allowTool`, whose calls are approved without asking. */
  readonly allowedTools: string[];
  /** Sidenet: why the last answer ended, as its `finish` chunk says (`"stop"`, `"length"`, `"content-filter"`, `"tool-calls"`, `"error"`, `"other"`, ...); `null` before one, after a new command, and on Neuron. */
  readonly finishReason: string | null;
}
"#;

/// The declarations of the exported classes and functions, with their docs. The exports are
/// `skip_typescript` and their Rust comments are not doc comments: wasm-bindgen would otherwise
/// copy every doc into the JS glue as well (1.3 KiB of gzip), where no tool reads it (the glue
/// points TypeScript and editors to this `.d.ts`). `skip_jsdoc` drops the `@param` tags too.
/// Keep these in step with the exports by hand (the strict `tsc` test uses them).
#[wasm_bindgen(typescript_custom_section)]
const TS_API: &'static str = r#"
/**
 * The approval client for one thread: `new ApprovalClient(options)`.
 */
export class ApprovalClient {
    /**
     * Releases the wasm memory it holds; a second call does nothing. Any later call on the object
     * throws `invalid_state` ("the object was freed"). From a listener that one of its own methods
     * triggered (or any code the client runs), the client is freed once that method returns.
     */
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Cancels the request in flight, if any; its promise rejects with `aborted`. Drafts are kept.
     */
    abort(): void;
    /**
     * Allows a tool for the client's life ("allow for this session"): its calls are approved
     * without asking, those of the current pause still undecided and those of every later pause,
     * each once (a draft the person clears or changes stays so). When that leaves nothing for a
     * person to decide, the decisions are submitted at once; the snapshot shows that submission
     * (`submitting`, then `lastSubmission`). Throws `invalid_argument` when `name` is no string
     * or blank.
     */
    allowTool(name: string): void;
    /**
     * Stops allowing a tool: later pauses ask for it again (drafts already made stay). Throws
     * `invalid_argument` when `name` is no string or blank.
     */
    disallowTool(name: string): void;
    /**
     * Approves a gated tool (a local draft until `submit`). Throws `busy`, `not_suspended`,
     * `unknown_call_id`, `invalid_state` (Sidenet: the server already accepted its decision, sent
     * before the reply was stopped).
     */
    approve(callId: string): void;
    /**
     * Drops the draft for a tool. Throws `busy`, `not_suspended`, `unknown_call_id`,
     * `invalid_state` (as `approve`).
     */
    clear(callId: string): void;
    /**
     * The current snapshot: the same object, frozen all the way down, until something changes.
     * Called from code a method runs synchronously (an abort listener of a custom `fetch` as a
     * request is cancelled), the last snapshot it returned (listeners announce the change after
     * the method); `invalid_state` if it never returned one.
     */
    getSnapshot(): Snapshot;
    /**
     * `GET` the thread and find any pending approvals. Rejects with `busy` while another command's
     * request is in flight.
     */
    load(): Promise<void>;
    /**
     * A client for one thread. Throws `invalid_argument` for bad options. With `persist` on (the
     * default), drafts saved earlier for this thread are read from `localStorage` and restored on
     * the first load, and drafts other tabs save later are taken in (until `free()`).
     */
    constructor(options: ApprovalClientOptions);
    /**
     * The way out of a locked composer: rejects every undecided tool with `reason`, submits, then
     * sends `text` once the run has completed (not paused: the same as `send`).
     */
    rejectAllAndSend(text: string, reason?: string | null): Promise<void>;
    /**
     * Rejects a gated tool, with an optional reason the model reads verbatim. Throws `busy`,
     * `not_suspended`, `unknown_call_id`, `invalid_state` (as `approve`), `invalid_argument` (a
     * reason that is no string).
     */
    reject(callId: string, reason?: string | null): void;
    /**
     * Sends a new user message. Rejects with `invalid_argument` (blank), `busy`, `input_locked`
     * (the conversation awaits approval), `conflict` (the server refused it: 409), ...
     */
    send(text: string): Promise<void>;
    /**
     * POSTs the decisions (the cumulative set for this pause). Rejects with `busy`,
     * `not_suspended`, `empty_decisions`, ...
     */
    submit(): Promise<void>;
    /**
     * Calls `listener` (synchronously, with no arguments) after each change; returns the function
     * that unsubscribes it (idempotent, harmless after `free()`).
     */
    subscribe(listener: () => void): () => void;
}

/**
 * The decision set for one suspension: `new Decisions(suspensionOrThread)`.
 */
export class Decisions {
    /**
     * Releases the wasm memory it holds; a second call does nothing. Any later call on the object
     * throws `invalid_state` ("the object was freed").
     */
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Approve a gated tool of the suspended tail (revisable until the set is complete).
     */
    approve(callId: string): void;
    /**
     * Drop the local decision for a tool (its decision on the tail, if any, still counts).
     * Throws `unknown_call_id` for a callId that is no gated tool of the tail (so do `approve`,
     * `reject` and `get`).
     */
    clear(callId: string): void;
    /**
     * The effective decision in wire form: `"approve"`, `"reject"`, `["reject", reason]`, or `null`.
     */
    get(callId: string): DecisionValue | null;
    /**
     * From a `Suspension` returned by `pendingApprovals`, or from any thread input. Throws
     * `not_suspended` when no tool of the tail awaits approval, `parse_error` for bad input.
     */
    constructor(source: Suspension | ThreadInput);
    /**
     * Reject a gated tool, with an optional reason for the model (blank means none).
     */
    reject(callId: string, reason?: string | null): void;
    /**
     * `{ decisions: { callId: "approve" | "reject" | ["reject", reason] } }`, keys in tail order
     * (built from a `Suspension`: its `pending` tools', then its `decided` ones').
     * Throws `empty_decisions` when there is no decision yet (and so does `JSON.stringify` of
     * the set, which calls it).
     */
    toJSON(): DecisionPayload;
    /**
     * Whether every gated tool of the tail has a decision.
     */
    readonly isComplete: boolean;
    /**
     * The callIds still without a decision, in tail order.
     */
    readonly undecided: string[];
}

/**
 * `isToolgateError(e)`: whether `e` is an error thrown by toolgate.
 */
export function isToolgateError(value: unknown): value is ToolgateError;

/**
 * `parseThread(input)`: the whole thread as plain objects, `{ id, messages }`. The document is
 * checked here (JSON and thread shape, every message), then `JSON.parse` builds the messages
 * from the original text: nothing of a message is lost, key order included. The thread keeps
 * `id` (a numeric one as its text, `null` when absent) and `messages`; other top-level members
 * of the document are not kept.
 */
export function parseThread(input: ThreadInput): Thread;

/**
 * `pendingApprovals(input, options?)`: where the thread stands, by its last message alone.
 */
export function pendingApprovals(input: ThreadInput, options?: PendingOptions): Suspension;

/** How much of a thread `pendingApprovals` checks. */
export interface PendingOptions {
    /** `"all"` (the default): the whole document, so a broken one always throws. `"tail"`: for
     *  documents that end with their `messages` array (`{ ..., "messages": [...] }`): a string
     *  or bytes are read backwards from their end to the last message, and only that is read and
     *  checked: the same answer on a well-formed document, in time that does not grow with the
     *  thread, but a document broken before its last message goes unnoticed. A document that
     *  ends otherwise (another member after `messages`), an empty array, or a last object with
     *  no `role` key is read whole, as with `"all"`; another array after `messages` whose last
     *  object has a `role` key is taken for the messages (README). A parsed value is read as
     *  with `"all"`. */
    check?: "all" | "tail";
}
"#;

#[wasm_bindgen(module = "/src/wasm/fast.js")]
extern "C" {
    /// `new Decisions(source)`'s reading of a `Suspension` object (see `fast.js`): `undefined`
    /// when `source` is none, else `[json, tail]`: what `JSON.stringify` made of it (as
    /// `stringify` returns it) and, unless that is no text, the error to throw or a tail message
    /// with its gated tools.
    #[wasm_bindgen(js_name = readSuspension)]
    pub(crate) fn read_suspension(source: &JsValue) -> JsValue;
}

/// Reads a `Suspension` given back from JS (as `pendingApprovals` made it), for `new Decisions`,
/// from what `readSuspension` made of it (`read`): only what the decision set reads (whether it
/// is suspended, `messageId`, and each gated tool's `callId`, `approval`, `rejectReason` and
/// order). `readSuspension` checks the shape and writes a `tool_call` message with the gated
/// tools of `pending`, then those of `decided` (the order of the decision set), and `"s"` when
/// `pending` is not empty: a suspension is suspended by that alone, whatever its tools'
/// approvals say.
/// The crate's errors come as `Ok(Err(_))`, `readSuspension`'s (a JS `ToolgateError`) as `Err`.
pub(crate) fn suspension_from_js(read: JsValue) -> Result<Result<Suspension, Error>, JsValue> {
    let read: Array = read.unchecked_into();
    // The crate's parser reads the JSON text first, as for any value given: what it refuses in
    // `JSON.stringify`'s output (a 128th level of nesting) is the first error.
    let json = match input::stringified(read.get(0), "$") {
        Ok(json) => json,
        Err(e) => return Ok(Err(e)),
    };
    if let Err(e) = Value::parse(&json) {
        return Ok(Err(e.with_path("$")));
    }
    drop(json);
    let tail = read.get(1);
    let parsed = match input::string_of(&tail) {
        Some(text) => Message::parse_str(&text),
        None => return Err(tail),
    };
    // The tail's text and value let go of here, once for both outcomes.
    drop(tail);
    let message = match parsed {
        Ok(message) => message,
        Err(e) => return Ok(Err(e)),
    };
    let mut suspension = Suspension::from_message(&message);
    suspension.suspended = message.get("s").is_some();
    Ok(Ok(suspension))
}
