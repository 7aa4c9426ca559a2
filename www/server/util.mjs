// Small shared helpers: response plans and ids.
import { randomBytes } from 'node:crypto';

/** A JSON response plan. Handlers return plans; the HTTP layer writes them (and injects faults). */
export const json = (status, body, headers = {}) => ({ status, json: body, headers });
export const empty = (status, headers = {}) => ({ status, headers });
/** A stream plan: items are { data } (one `data:` JSON line), { comment }, or { done: true }. */
export const stream = (items) => ({ status: 200, stream: items });

export class HttpError extends Error {
  constructor(status, message, extra = {}) {
    super(message);
    this.status = status;
    this.extra = extra;
  }
}

export const hex = (bytes) => randomBytes(bytes).toString('hex');

export const isPlainObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
