/**
 * Small pieces of the management API: its response shapes, the secret check, and reading a
 * bounded JSON body.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { SvcError } from '../../lib/errors.ts';
import { readJsonObject as readJsonObjectOf, type BodyProblem } from '../../lib/http/json-body.ts';

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

/**
 * An update (PUT) names its object by the path's `id`: written into `body[field]`; a body that
 * names another gets 400 with `message` (the reference's words for it), and nothing is written.
 */
export function idFromPath(
  body: Record<string, unknown>,
  field: string,
  id: string,
  message: string,
): AdminResponse | undefined {
  if (body[field] !== undefined && body[field] !== id) return statusBody(400, 'error', message);
  body[field] = id;
  return undefined;
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

/** The management API's answer to a body it can't read (lib/http/json-body.ts). */
function refuse(problem: BodyProblem): MalformedBody {
  if (problem.kind === 'too-large') return new MalformedBody('Request body too large', 413);
  if (problem.kind === 'too-deep') return new MalformedBody(`Request malformed: ${problem.message}`);
  return new MalformedBody();
}

/**
 * Reads the body as a JSON object; anything else is `Request malformed`, and so is an object
 * nested deeper than the rule of schemas/rules/nesting.ts allows (every check after this one may
 * walk it recursively).
 */
export async function readJsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  return readJsonObjectOf(req, MAX_BODY_BYTES, refuse);
}
