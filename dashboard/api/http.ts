/**
 * The pieces every handler shares: the request context, the answer shapes of the dashboard
 * (`{"Status":"OK"|"Error","Message":...,"Meta":...}`), bounded body reading and the page asked
 * for. The organisation's documents as handlers read and write them are in documents.ts.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { SvcError } from '../../lib/errors.ts';
import { readBodyText, readJsonObject, stringFields, type BodyProblem } from '../../lib/http/json-body.ts';
import type { Logger } from '../../lib/log.ts';
import type { DashboardConfig } from '../config/schema.ts';
import type { Caller } from '../rbac/rbac.ts';
import type { Slice, Store } from '../store/store.ts';

/** What the handlers work with. */
export interface DashboardDeps {
  config: Readonly<DashboardConfig>;
  store: Store;
  log: Logger;
  version: string;
  /** Milliseconds since the epoch. */
  now(): number;
}

/** One call: the request, its URL, the path parameters, and who made it. */
export interface Ctx {
  req: IncomingMessage;
  url: URL;
  params: string[];
  deps: DashboardDeps;
  log: Logger;
  /** The authenticated user; undefined on admin and open routes. */
  caller: Caller | undefined;
}

/** A handler's answer. */
export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** A handler of one method on one route. */
export type Handler = (c: Ctx) => Promise<Reply>;

/** The largest request body (a ConfigMap holds at most 1 MiB). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** `{"Status":"OK","Message":...,"Meta":...}` with status 200 (and extra fields, as streams' `ID`). */
export function ok(message: string, meta: unknown = null, extra: Record<string, unknown> = {}): Reply {
  return { status: 200, body: { Status: 'OK', Message: message, Meta: meta, ...extra } };
}

/** `{"Status":"Error","Message":...,"Meta":null}` */
export function fail(status: number, message: string): Reply {
  return { status, body: { Status: 'Error', Message: message, Meta: null } };
}

/** A 200 with a JSON body. */
export function json(body: unknown): Reply {
  return { status: 200, body };
}

/** A refused request, thrown from deep inside a handler (a write's transaction). */
export class Refusal extends SvcError {
  constructor(status: number, message: string) {
    super('DB_ERR_REFUSED', message, { status });
  }
}

/** The caller of a user route (the router guarantees one). */
export function callerOf(c: Ctx): Caller {
  if (c.caller === undefined) throw new Error('user route without a caller');
  return c.caller;
}

/** The dashboard's answer to a body it can't read (lib/http/json-body.ts). */
function refuse(problem: BodyProblem): Refusal {
  if (problem.kind === 'too-large') return new Refusal(413, 'Request body too large');
  if (problem.kind === 'too-deep') return new Refusal(400, `Request malformed: ${problem.message}`);
  return new Refusal(400, 'Request malformed: the body must be a JSON object');
}

/** The raw body, at most MAX_BODY_BYTES. */
export async function readText(req: IncomingMessage): Promise<string> {
  return readBodyText(req, MAX_BODY_BYTES, refuse);
}

/**
 * The string fields of a form or a JSON body (JSON when its content type says so), as the
 * reference's OAuth endpoints read them; a JSON body that is not an object is 400.
 */
export async function readFields(req: IncomingMessage): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await readText(req);
  } catch (err) {
    if (err instanceof Refusal) throw err;
    throw refuse({ kind: 'not-an-object' });
  }
  // An empty body is no fields, whatever its type says.
  if (text.trim() === '') return {};
  const fields = stringFields(text, req.headers['content-type']);
  if (fields === undefined) throw refuse({ kind: 'not-an-object' });
  return fields;
}

/**
 * The body as a JSON object; anything else is 400 `Request malformed`, and so is an object nested
 * deeper than the rule of schemas/rules/nesting.ts allows.
 */
export async function readObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  try {
    return await readJsonObject(req, MAX_BODY_BYTES, refuse);
  } catch (err) {
    // A body that could not be read to the end (the client went away) is malformed too.
    if (err instanceof Refusal) throw err;
    throw refuse({ kind: 'not-an-object' });
  }
}

/** The page a list asks for (`?p=`, 1-based; absent is 1; -1 is every item) and its slice. */
export function pageOf(c: Ctx): { slice: Slice; pages: (total: number) => number } {
  const raw = c.url.searchParams.get('p');
  const size = c.deps.config.page_size;
  const p = raw === null || raw === '' ? 1 : Number(raw);
  if (p === -1) return { slice: {}, pages: (total) => (total === 0 ? 0 : 1) };
  if (!Number.isInteger(p) || p < 1) {
    throw new Refusal(400, 'p: must be a page number, 1 or more (or -1 for every item)');
  }
  return { slice: { offset: (p - 1) * size, limit: size }, pages: (total) => Math.ceil(total / size) };
}

/** A time parameter (`?<name>=`): milliseconds since the epoch or an ISO 8601 date; `fallback` when absent. */
export function timeParam(c: Ctx, name: string, fallback: number): number {
  const raw = c.url.searchParams.get(name);
  if (raw === null || raw === '') return fallback;
  const n = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw);
  if (!Number.isFinite(n))
    throw new Refusal(400, `${name}: must be milliseconds since the epoch or an ISO 8601 date`);
  return n;
}

/** SHA-256 of the canonical JSON (sorted keys) of a value; null for no value. */
export function hashOf(value: unknown): string | null {
  if (value === undefined) return null;
  const canonical = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canonical);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
    );
  };
  return createHash('sha256')
    .update(JSON.stringify(canonical(value)))
    .digest('hex');
}
