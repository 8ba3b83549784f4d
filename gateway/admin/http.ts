/**
 * Small pieces of the management API: its response shapes, the secret check, and reading a
 * bounded JSON body.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { SvcError } from '../../lib/errors.ts';
import { nestingMessage, tooDeep } from '../../schemas/rules/nesting.ts';

/** A handler's answer: status, JSON body, extra headers. */
export interface AdminResponse {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** The largest management request body (a ConfigMap holds at most 1 MiB). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** `{"status":"ok"|"error","message":"..."}` */
export function statusBody(status: number, kind: 'ok' | 'error', message: string): AdminResponse {
  return { status, body: { status: kind, message } };
}

/** `{"key":"<id>","status":"ok","action":"added"|"modified"|"deleted"}` */
export function writeBody(key: string, action: 'added' | 'modified' | 'deleted'): AdminResponse {
  return { status: 200, body: { key, status: 'ok', action } };
}

/** Compares the `X-Svc-Authorization` header with the secret in constant time. */
export function secretChecker(secret: string): (given: string | string[] | undefined) => boolean {
  const want = createHash('sha256').update(secret).digest();
  return (given) => {
    if (typeof given !== 'string' || given === '') return false;
    return timingSafeEqual(createHash('sha256').update(given).digest(), want);
  };
}

/** A request body that is not the JSON object expected. */
export class MalformedBody extends SvcError {
  constructor(message = 'Request malformed', status = 400) {
    super('GW_ERR_REQUEST_MALFORMED', message, { status });
  }
}

/**
 * Reads the body as a JSON object; anything else is `Request malformed`, and so is an object
 * nested deeper than the rule of schemas/rules/nesting.ts allows (every check after this one may
 * walk it recursively).
 */
export async function readJsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new MalformedBody('Request body too large', 413);
    chunks.push(chunk);
  }
  let value: unknown;
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new MalformedBody();
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new MalformedBody();
  const deep = tooDeep(value);
  if (deep !== undefined) throw new MalformedBody(`Request malformed: ${nestingMessage('the body', deep)}`);
  return value as Record<string, unknown>;
}

/**
 * Drops properties whose value is `null`, at any depth: classic tooling writes unset optional
 * fields as `null` (`"limit": null`), which means the same as leaving them out.
 */
export function withoutNulls(value: Record<string, unknown>): Record<string, unknown> {
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (v === null || typeof v !== 'object') return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = strip(x);
    return out;
  };
  return strip(value) as Record<string, unknown>;
}
