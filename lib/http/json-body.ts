/**
 * Reading a JSON request body, for the gateway's management API and the dashboard's API: bounded
 * in size, a JSON object only, nested no deeper than the rule of schemas/rules/nesting.ts allows
 * (every check after this one may walk it recursively). Each part answers the problem in its own
 * vocabulary (`refuse`), so its status codes and messages are its own.
 */
import type { IncomingMessage } from 'node:http';
import { nestingMessage, tooDeep } from '../../schemas/rules/nesting.ts';
import { isPlainObject } from '../plain-object.ts';

/** Why a body is refused: larger than allowed, not a JSON object, or nested too deep (`message`). */
export type BodyProblem =
  { kind: 'too-large' } | { kind: 'not-an-object' } | { kind: 'too-deep'; message: string };

/** Turns a problem into the error the caller throws. */
export type Refuse = (problem: BodyProblem) => Error;

/** The raw body as UTF-8, at most `maxBytes`. */
export async function readBodyText(req: IncomingMessage, maxBytes: number, refuse: Refuse): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw refuse({ kind: 'too-large' });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The body as a JSON object, at most `maxBytes`; anything else is refused. */
export async function readJsonObject(
  req: IncomingMessage,
  maxBytes: number,
  refuse: Refuse,
): Promise<Record<string, unknown>> {
  const text = await readBodyText(req, maxBytes, refuse);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw refuse({ kind: 'not-an-object' });
  }
  if (!isPlainObject(value)) throw refuse({ kind: 'not-an-object' });
  const deep = tooDeep(value);
  if (deep !== undefined) throw refuse({ kind: 'too-deep', message: nestingMessage('the body', deep) });
  return value;
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

/**
 * The string fields of a form or a JSON body (JSON when `contentType` says so, as the reference
 * reads both); undefined when a JSON body is not a JSON object. Fields that are not strings are
 * left out.
 */
export function stringFields(
  text: string,
  contentType: string | undefined,
): Record<string, string> | undefined {
  if (!(contentType ?? '').toLowerCase().includes('json'))
    return Object.fromEntries(new URLSearchParams(text));
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isPlainObject(parsed)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed)) if (typeof v === 'string') out[k] = v;
  return out;
}
