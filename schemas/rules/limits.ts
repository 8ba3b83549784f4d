/**
 * The rate, throttle and quota values of a policy, a key, an organisation and a per-API `limit`,
 * with one meaning for every part: the webhooks (SecurityPolicy), the gateway's management API
 * and the dashboard's (policies, keys, organisations, through rules/access.ts), and the gateway
 * when it counts (gateway/limits/allowance.ts). docs/gateway.md says the same to users.
 *
 * - `-1` turns a limit off; an absent value counts as -1 (the CRD's defaults).
 * - `rate` and `per` go together: both above 0, or both off.
 * - `0` in `rate`, `per` or `quota_max` would allow no requests. A user who writes it almost
 *   always means "no limit" (the reference gateway reads a rate of 0 that way in places), so it
 *   is refused when written, naming -1. One found in a store anyway (written before this rule, or
 *   straight into Redis) is taken at its word: it allows no requests (fail closed, never off).
 * - A quota above 0 needs its period (`quota_renewal_rate` above 0).
 * - Throttling is on when `throttle_interval` and `throttle_retry_limit` are both above 0; one of
 *   them above 0 with the other -1 is refused. 0 in either is admitted with a warning (the seed
 *   calls both "not recommended"): a retry limit of 0 is throttling off, and an interval of 0 is
 *   throttling off here too (the reference retries at once, which a sliding window refuses again:
 *   the client gets 429 either way). Throttling the rule refuses is off when counting.
 */
import type { ApiLimit } from '../generated/models.ts';
import { FieldProblemType, type FieldProblem, type FieldWarning } from './field-problem.ts';
import type { Unchecked } from './read.ts';

/** The limit fields a policy, a key, an organisation and a per-API `limit` share. */
export type LimitValues = Pick<
  ApiLimit,
  'rate' | 'per' | 'throttle_interval' | 'throttle_retry_limit' | 'quota_max' | 'quota_renewal_rate'
>;

/** What the rule finds: problems refuse the object; warnings do not. */
export interface LimitVerdict {
  problems: FieldProblem[];
  warnings: FieldWarning[];
}

/** A value as the rule reads it: a number, or -1 (off) when absent or not a number. */
export function limitValue(limits: Unchecked<LimitValues>, field: keyof LimitValues): number {
  const v = limits[field];
  return typeof v === 'number' && Number.isFinite(v) ? v : -1;
}

/**
 * The rule over one set of limit values. `base` prefixes every path (`spec.`,
 * `access_rights["orders"].limit.`, or '' at the root).
 */
export function limitVerdict(limits: Unchecked<LimitValues>, base = ''): LimitVerdict {
  const value = (k: keyof LimitValues): number => limitValue(limits, k);
  const problems: FieldProblem[] = [];
  const warnings: FieldWarning[] = [];
  const invalid = (field: keyof LimitValues, message: string): void => {
    problems.push({ path: `${base}${field}`, type: FieldProblemType.Invalid, message });
  };
  /** The other half of the rate is missing: Required when absent, Invalid when set off. */
  const missing = (field: keyof LimitValues, message: string): void => {
    const type = limits[field] === undefined ? FieldProblemType.Required : FieldProblemType.Invalid;
    problems.push({ path: `${base}${field}`, type, message });
  };
  const shown = (k: keyof LimitValues): string => (limits[k] === undefined ? 'not set' : String(value(k)));

  const rate = value('rate');
  const per = value('per');
  if (rate === 0) {
    invalid(
      'rate',
      'rate 0 allows no requests: set the requests allowed per `per` seconds, or -1 to disable rate limiting',
    );
  } else if (per === 0) {
    invalid(
      'per',
      'per 0 is an empty window: set the window in seconds (such as 60), or -1 to disable rate limiting',
    );
  } else if (rate > 0 && per < 0) {
    missing(
      'per',
      `rate is ${rate} but per is ${shown('per')}: rate and per go together: set per to the window in seconds (such as 60), or set both to -1 to disable rate limiting`,
    );
  } else if (per > 0 && rate < 0) {
    missing(
      'rate',
      `per is ${per} but rate is ${shown('rate')}: rate and per go together: set rate to the requests allowed per window, or set both to -1 to disable rate limiting`,
    );
  }

  const interval = value('throttle_interval');
  const retries = value('throttle_retry_limit');
  if (interval > 0 && retries < 0) {
    invalid(
      'throttle_retry_limit',
      `throttle_interval is ${interval} but throttle_retry_limit is ${retries}: throttling needs both above 0: set throttle_retry_limit (such as 3), or set both to -1 to disable throttling`,
    );
  } else if (retries > 0 && interval < 0) {
    invalid(
      'throttle_interval',
      `throttle_retry_limit is ${retries} but throttle_interval is ${interval}: throttling needs both above 0: set throttle_interval in seconds (such as 1), or set both to -1 to disable throttling`,
    );
  }
  if (interval === 0) {
    warnings.push({
      path: `${base}throttle_interval`,
      message:
        '0 retries without waiting (busy waiting): set a positive interval in seconds, or -1 to disable throttling',
    });
  }
  if (retries === 0) {
    warnings.push({
      path: `${base}throttle_retry_limit`,
      message: '0 turns throttling off: set a positive retry limit, or -1 to say so explicitly',
    });
  }
  if (interval > 0 && retries > 0 && (rate < 0 || per < 0)) {
    warnings.push({
      path: base.replace(/\.$/, ''),
      message:
        'throttling applies only to requests over the rate limit, and the rate limit is disabled: set rate and per, or set the throttle values to -1',
    });
  }

  const quotaMax = value('quota_max');
  const renewal = value('quota_renewal_rate');
  if (quotaMax === 0) {
    invalid(
      'quota_max',
      'quota_max 0 allows no requests: set the requests allowed per period, or -1 for no quota',
    );
  } else if (quotaMax > 0 && renewal <= 0) {
    problems.push({
      path: `${base}quota_renewal_rate`,
      type: FieldProblemType.Required,
      message: `quota_max is ${quotaMax} but quota_renewal_rate is ${renewal}: set the quota period in seconds (3600 hourly, 86400 daily, 2592000 for 30 days)`,
    });
  }
  return { problems, warnings };
}

/** Whether a limit counts (`on`), is off, or allows no requests (`closed`: values the rule refuses). */
export type LimitMode = 'on' | 'off' | 'closed';

/** How the gateway counts one set of limit values, by the rule above. */
export interface LimitModes {
  rate: LimitMode;
  /** Throttling is on only with the rate on and both values above 0 that the rule accepts. */
  throttle: boolean;
  quota: LimitMode;
}

const RATE_FIELDS = new Set(['rate', 'per']);
const THROTTLE_FIELDS = new Set(['throttle_interval', 'throttle_retry_limit']);
const QUOTA_FIELDS = new Set(['quota_max', 'quota_renewal_rate']);

/** The modes of stored limit values: what passed the rule counts; what it refuses fails closed. */
export function limitModes(limits: Unchecked<LimitValues>): LimitModes {
  const refused = new Set(limitVerdict(limits).problems.map((p) => p.path));
  const has = (fields: Set<string>): boolean => [...refused].some((f) => fields.has(f));
  const on = (k: keyof LimitValues): boolean => limitValue(limits, k) > 0;
  const rate: LimitMode = has(RATE_FIELDS) ? 'closed' : on('rate') && on('per') ? 'on' : 'off';
  return {
    rate,
    throttle: rate === 'on' && !has(THROTTLE_FIELDS) && on('throttle_interval') && on('throttle_retry_limit'),
    quota: has(QUOTA_FIELDS) ? 'closed' : on('quota_max') && on('quota_renewal_rate') ? 'on' : 'off',
  };
}
