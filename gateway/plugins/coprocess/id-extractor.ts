/**
 * The identity extractor of a gRPC plugin server's auth_check (schemas/rules/id-extractor.ts),
 * as the reference gateway runs it: the identity read from a header, a form parameter (the
 * URL-encoded body's values, then the query's, joined as Go's `r.Form` joins them) or the body,
 * whole or as a match of a regular expression; and the sessions the hook answered, kept per
 * identity until the deadline the hook set in each (`id_extractor_deadline`, Unix seconds), so
 * that the hook is not asked again meanwhile. Each gateway process keeps its own (at most
 * `MAX_IDENTITIES` per API, the oldest dropped first), and a reload of the API starts afresh.
 * Identities are kept as SHA-256 hashes, never as the credential they may be.
 */
import { createHash } from 'node:crypto';
import type { GatewaySession } from '../../../schemas/generated/models.ts';
import type { IdExtractor } from '../../../schemas/rules/id-extractor.ts';
import type { RequestContext } from '../../pipeline/context.ts';

/** The most identities one API keeps sessions of. */
export const MAX_IDENTITIES = 10_000;

/** What the request gives the extractor to read. */
export interface ExtractorInput {
  headers: RequestContext['headers'];
  /** The query, with or without its `?`. */
  query: string;
  /** The request body (read only for the sources that need it). */
  body: () => Promise<Buffer | undefined>;
}

function headerValue(headers: ExtractorInput['headers'], name: string): string {
  const v = headers[name.toLowerCase()];
  // As Go's Header.Get: the first value.
  return (Array.isArray(v) ? v[0] : v) ?? '';
}

function isUrlEncoded(headers: ExtractorInput['headers']): boolean {
  const type = headerValue(headers, 'content-type').split(';')[0]?.trim().toLowerCase();
  return type === 'application/x-www-form-urlencoded';
}

/**
 * The identity of the request, or undefined when it has none (the reference's 400
 * `Authorization field missing`): a header's first value, a form parameter's values joined, the
 * body as text; with `regex`, the `matchIndex`-th match of the expression in it.
 */
export async function extractIdentity(x: IdExtractor, input: ExtractorInput): Promise<string | undefined> {
  let value: string;
  if (x.from === 'header') {
    value = headerValue(input.headers, x.headerName);
  } else if (x.from === 'form') {
    const values: string[] = [];
    if (isUrlEncoded(input.headers)) {
      const body = await input.body();
      if (body === undefined) return undefined;
      values.push(...new URLSearchParams(body.toString('utf8')).getAll(x.paramName));
    }
    values.push(...new URLSearchParams(input.query.replace(/^\?/, '')).getAll(x.paramName));
    if (values.length === 0) return undefined;
    value = values.join('');
  } else {
    const body = await input.body();
    if (body === undefined) return undefined;
    value = body.toString('utf8');
  }
  if (x.with === 'regex') {
    const matches = value.match(new RegExp(x.expression, 'g')) ?? [];
    const found = matches[x.matchIndex];
    if (found === undefined) return undefined;
    value = found;
  }
  return value === '' ? undefined : value;
}

/** A session an auth hook answered for one identity, kept until its deadline. */
interface Kept {
  keyId: string;
  session: GatewaySession;
  /** Milliseconds since the epoch. */
  deadline: number;
}

/** The sessions of one API's identities (see the module comment). */
export class IdentitySessions {
  readonly #kept = new Map<string, Kept>();
  readonly #max: number;

  constructor(max = MAX_IDENTITIES) {
    this.#max = max;
  }

  /** The hash an identity is kept under. */
  static hashOf(identity: string): string {
    return createHash('sha256').update(identity).digest('hex');
  }

  /** The session kept for `identity` whose deadline is ahead of `now`, or undefined. */
  get(identity: string, now = Date.now()): { keyId: string; session: GatewaySession } | undefined {
    const hash = IdentitySessions.hashOf(identity);
    const kept = this.#kept.get(hash);
    if (kept === undefined) return undefined;
    if (kept.deadline <= now) {
      this.#kept.delete(hash);
      return undefined;
    }
    // A copy: the chain may change the request's session.
    return { keyId: kept.keyId, session: structuredClone(kept.session) };
  }

  /**
   * Keeps the session the hook answered for `identity` until `deadlineSeconds` (Unix seconds, as
   * the protocol's `id_extractor_deadline`); a deadline not ahead of `now` keeps nothing.
   */
  set(
    identity: string,
    keyId: string,
    session: GatewaySession,
    deadlineSeconds: number,
    now = Date.now(),
  ): void {
    const deadline = deadlineSeconds * 1000;
    const hash = IdentitySessions.hashOf(identity);
    this.#kept.delete(hash);
    if (!(deadline > now)) return;
    if (this.#kept.size >= this.#max) {
      const oldest = this.#kept.keys().next();
      if (oldest.done !== true) this.#kept.delete(oldest.value);
    }
    this.#kept.set(hash, { keyId, session: structuredClone(session), deadline });
  }

  /** How many identities are kept. */
  get size(): number {
    return this.#kept.size;
  }
}
