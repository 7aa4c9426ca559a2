// The scripted agent: deterministic, driven by the user's words, no model.
//
// A user message is split into requests; each request becomes a sequence of
// tool calls (one per agent step). Step i of the run is the i-th call of every
// request, so "read a; deploy b" runs read_file + run_tests in step 1 and
// deploy in step 2.

export const REJECTION_TEMPLATE =
  'TOOL NOT EXECUTED. The user rejected this action. User instruction: %s. Do not attempt this tool again. Follow the user\'s instruction or reconsider your plan.';
export const DEFAULT_REJECTION = 'No specific instruction provided.';
export const DECLINED_RESULT = 'Tool call was not approved by the user';
export const COMMAND_WORDS = ['read', 'delete', 'email', 'buy', 'deploy'];
export const TICKET_LIMIT = 100;

const money = (n) => (Number.isInteger(n) ? String(n) : n.toFixed(2));

/**
 * Each tool: description, approval policy (false | true | reason string, like
 * Neuron's approvalPolicy()), a simulated run, a label for the final message,
 * and a one-sentence headline (what Sidenet shows as the approval card reason).
 */
export const TOOLS = {
  read_file: {
    description: 'Read a file from the filesystem',
    policy: () => false,
    run: (i) => `Contents of ${i.path}: "hello from ${i.path}"`,
    label: (i) => `read_file ${i.path}`,
    headline: (i) => `Read the file ${i.path}`,
  },
  delete_file: {
    description: 'Delete a file from the filesystem',
    policy: () => 'Deleting a file is irreversible',
    run: (i) => `Deleted ${i.path}`,
    label: (i) => `delete_file ${i.path}`,
    headline: (i) => `Delete the file ${i.path}; this cannot be undone`,
  },
  send_email: {
    description: 'Send an email to a recipient',
    policy: () => 'Outbound email reaches people outside this workspace',
    run: (i) => `Email sent to ${i.to} with subject "${i.subject}"`,
    label: (i) => `send_email to ${i.to}`,
    headline: (i) => `Send an email to ${i.to} about "${i.subject}"`,
  },
  buy_ticket: {
    description: 'Buy tickets',
    policy: (i) =>
      i.amount > TICKET_LIMIT
        ? `Buying ${i.quantity} tickets costs ${money(i.amount)}, above the ${TICKET_LIMIT} limit`
        : false,
    run: (i) => `Bought ${i.quantity} tickets at ${money(i.price)} for a total of ${money(i.amount)}`,
    label: (i) => `buy_ticket ${i.quantity} x ${money(i.price)}`,
    headline: (i) => `Buy ${i.quantity} tickets at ${money(i.price)} each, ${money(i.amount)} in total`,
  },
  run_tests: {
    description: 'Run the test suite of a service',
    policy: () => false,
    run: (i) => `All 42 tests passed for ${i.service}`,
    label: (i) => `run_tests ${i.service}`,
    headline: (i) => `Run the tests of ${i.service}`,
  },
  deploy: {
    description: 'Deploy a service to production',
    policy: (i) => `Deploying ${i.service} to production affects live users`,
    run: (i) => `Deployed ${i.service} to production`,
    label: (i) => `deploy ${i.service}`,
    headline: (i) => `Deploy ${i.service} to production`,
  },
};

export function approvalPolicy(name, inputs) {
  return TOOLS[name].policy(inputs);
}

/** Gated when the policy returns true or a (non-empty) string. */
export function isGated(policyResult) {
  return policyResult === true || (typeof policyResult === 'string' && policyResult.length > 0);
}

export function runTool(name, inputs) {
  return TOOLS[name].run(inputs);
}

/**
 * Why running a call fails, or null: deleting a path under /locked/ (a tool that fails when it
 * runs, as real ones do; the Sidenet dialect reports it as `tool-output-error`).
 */
export function toolFailure(name, inputs) {
  if (name === 'delete_file' && /^\/locked\//.test(String(inputs.path))) {
    return `EBUSY: ${inputs.path} is locked by another process`;
  }
  return null;
}

export function rejectionResult(reason) {
  const text = typeof reason === 'string' && reason.length > 0 ? reason : DEFAULT_REJECTION;
  return REJECTION_TEMPLATE.replace('%s', () => text);
}

// Requests are separated by newlines, ";" and a whitespace-bounded "and" before a command word.
// The "and" is matched alone (a lookbehind for one whitespace, a lookahead over the whitespace
// after it): the whitespace around it stays in the pieces, which parseRequest trims. No quantified
// whitespace on both sides of a literal, so a long whitespace run cannot make the split backtrack
// (each position is tried in constant time, the lookahead only after an "and").
const SPLIT = new RegExp(`\\r?\\n|;|(?<=\\s)and(?=\\s+(?:${COMMAND_WORDS.join('|')})\\b)`, 'i');

/** One request -> its calls, one per step: [{ name, inputs }]. Null when not a command. */
export function parseRequest(segment) {
  const s = segment.trim();
  let m;
  if ((m = /^read\s+(\S.*)$/i.exec(s))) return [{ name: 'read_file', inputs: { path: m[1].trim() } }];
  if ((m = /^delete\s+(\S.*)$/i.exec(s))) return [{ name: 'delete_file', inputs: { path: m[1].trim() } }];
  if ((m = /^email\s+(\S+)\s+about\s+(\S.*)$/i.exec(s)))
    return [{ name: 'send_email', inputs: { to: m[1], subject: m[2].trim() } }];
  if ((m = /^buy\s+(\d+)\s+tickets?\s+at\s+\$?(\d+(?:\.\d+)?)$/i.exec(s))) {
    const quantity = Number(m[1]);
    const price = Number(m[2]);
    const amount = Math.round(quantity * price * 100) / 100;
    return [{ name: 'buy_ticket', inputs: { quantity, price, amount } }];
  }
  if ((m = /^deploy\s+(\S.*)$/i.exec(s))) {
    const service = m[1].trim();
    return [
      { name: 'run_tests', inputs: { service } },
      { name: 'deploy', inputs: { service, environment: 'production' } },
    ];
  }
  return null;
}

/**
 * The run's plan: steps[i] = [{ index, name, inputs }]. Empty when the message
 * holds no command (the agent then just replies).
 */
export function planSteps(text) {
  const requests = String(text)
    .split(SPLIT)
    .map(parseRequest)
    .filter(Boolean);
  const steps = [];
  let index = 0;
  const depth = Math.max(0, ...requests.map((r) => r.length));
  for (let i = 0; i < depth; i++) {
    const step = [];
    for (const r of requests) if (r[i]) step.push({ index: 0, ...r[i] });
    steps.push(step);
  }
  for (const step of steps) for (const call of step) call.index = index++;
  return steps;
}

/** What the model concludes from a tool result it was given. */
export function outcomeOf(result) {
  if (result && typeof result === 'object' && typeof result.error === 'string') return `failed (${result.error}).`;
  const s = typeof result === 'string' ? result : JSON.stringify(result);
  if (s === DECLINED_RESULT) return 'not approved by the user.';
  const m = /^TOOL NOT EXECUTED\. The user rejected this action\. User instruction: ([\s\S]*)\. Do not attempt this tool again\. Follow the user's instruction or reconsider your plan\.$/.exec(s);
  if (m) return `rejected — "${m[1]}".`;
  return 'done.';
}

/** The final assistant message: each tool's outcome, rejection reasons quoted. */
export function finalMessage(calls) {
  return [...calls]
    .sort((a, b) => a.index - b.index)
    .map((c) => `${TOOLS[c.name].label(c.inputs)}: ${outcomeOf(c.result)}`)
    .join(' ');
}

export function plainReply(text) {
  const t = String(text).trim().replace(/\s+/g, ' ');
  const quoted = t.length > 60 ? `${t.slice(0, 57)}...` : t;
  return `You said: "${quoted}". I am a scripted agent: I can read, delete, email, buy tickets and deploy. Try "delete /tmp/old.log".`;
}

/** Split text into several deltas (word groups), always at least two when possible. */
export function splitDeltas(text, words = 4) {
  const parts = String(text).match(/\S+\s*/g) || [String(text)];
  const out = [];
  const lead = String(text).match(/^\s*/)[0];
  for (let i = 0; i < parts.length; i += words) out.push(parts.slice(i, i + words).join(''));
  if (lead && out.length) out[0] = lead + out[0];
  return out.length ? out : [''];
}
