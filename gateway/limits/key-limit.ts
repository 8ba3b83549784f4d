/**
 * What the key's two limit steps (middleware/rate-limit and middleware/quota) share: the opening
 * (the request's key, its counter ID and its allowance on the API, or the answer at once), the
 * refusal of a limit crossed or closed, and the answer when the counters are unreachable.
 */
import type { GatewaySession } from '../../schemas/generated/models.ts';
import type { RequestContext } from '../pipeline/context.ts';
import { reject } from '../pipeline/compose.ts';
import { GatewayError } from '../pipeline/errors.ts';
import type { Rejection } from '../pipeline/middleware.ts';
import { allowanceOf, quotaLimited, rateLimited, type Allowance } from './allowance.ts';
import { counterIdOf } from './counters.ts';

/** The key's limits a step counts on this request. */
export interface KeyLimit {
  session: GatewaySession;
  /** The ID the key's counters are kept under. */
  keyId: string;
  a: Allowance;
}

/** Where a limit step's refusals are counted (the gateway's metrics, when kept). */
export interface RefusalCounter {
  refused(reason: 'rate_limit' | 'quota'): void;
}

const KINDS = {
  rate: {
    limited: rateLimited,
    event: 'RateLimitExceeded',
    message: 'Key Rate Limit Exceeded',
    reason: 'rate_limit',
    error: () => GatewayError.rateLimitExceeded(),
  },
  quota: {
    limited: quotaLimited,
    event: 'QuotaExceeded',
    message: 'Quota exceeded',
    reason: 'quota',
    error: () => GatewayError.quotaExceeded(),
  },
} as const;

/** The key's rate limit or quota refuses the request: its event, the refusal counted, its error. */
export function refuseLimit(
  ctx: RequestContext,
  kind: 'rate' | 'quota',
  metrics: RefusalCounter | undefined,
): Rejection {
  const k = KINDS[kind];
  ctx.emit(k.event, k.message);
  metrics?.refused(k.reason);
  return reject(ctx, k.error());
}

/**
 * The opening of a key's limit step: the key and its allowance of `kind` on the API, or the
 * step's answer at once (`{ answer }`): a request without a key's session is disallowed, a limit
 * that does not count passes (undefined), and stored values the limits rule refuses (rate or
 * quota 0, a rate without its window, a quota without its period) allow no requests.
 */
export function openKeyLimit(
  ctx: RequestContext,
  apiId: string,
  kind: 'rate' | 'quota',
  metrics: RefusalCounter | undefined,
): KeyLimit | { answer: Rejection | undefined } {
  const session = ctx.session;
  if (session === undefined || ctx.state.keyId === undefined)
    return { answer: reject(ctx, GatewayError.accessDisallowed()) };
  const keyId = counterIdOf(ctx.state.keyId, session);
  const a = allowanceOf(session, apiId);
  if (!KINDS[kind].limited(a)) return { answer: undefined };
  if (a.modes[kind] === 'closed') return { answer: refuseLimit(ctx, kind, metrics) };
  return { session, keyId, a };
}

/** The counters could not be reached: the request passes uncounted when failing open, else 503. */
export function countersDown(ctx: RequestContext, failOpen: boolean): Rejection | undefined {
  return failOpen ? undefined : reject(ctx, GatewayError.limitsUnavailable());
}
