/**
 * How a key's `apply_policies` shape its session (GATEWAY-BEHAVIOUR §5), as one pure function.
 * Policies contribute only their `partitions` set to true (all of them when none is): access
 * rights are united (versions and allowed URLs merged), the highest quota wins (-1 beats all),
 * the rate with the shortest interval per request wins (a disabled rate beats all), the highest
 * throttle values win, the deepest GraphQL `max_query_depth` wins (`complexity`); a policy with `hmac_enabled` lets the key sign requests with its
 * `hmac_string`. A part no policy contributes stays the key's own. A policy that is
 * missing or `deny` (never published) refuses the key; a `draft` or inactive one disables it.
 */
import type {
  AccessDefinition,
  AllowedUrl,
  GatewayPolicy,
  GatewaySession,
  GraphqlTypeFields,
} from '../../schemas/generated/models.ts';

/** The session with its policies applied, or why the key can't be used. */
export type Applied =
  { ok: true; session: GatewaySession } | { ok: false; reason: 'missing' | 'inactive'; policy: string };

/** The parts of a policy that apply. */
function partsOf(p: GatewayPolicy): { acl: boolean; rate: boolean; quota: boolean; complexity: boolean } {
  const parts = p.partitions ?? {};
  const any =
    parts.acl === true || parts.rate_limit === true || parts.quota === true || parts.complexity === true;
  if (!any) return { acl: true, rate: true, quota: true, complexity: true };
  return {
    acl: parts.acl === true,
    rate: parts.rate_limit === true,
    quota: parts.quota === true,
    complexity: parts.complexity === true,
  };
}

/**
 * The merge of two lists into one item per key (`keyOf`): an item merged (`merge`) with what
 * came before it under its key. Undefined when both lists are.
 */
function mergedByKey<T>(
  keyOf: (t: T) => string,
  merge: (seen: T | undefined, t: T) => T,
): (a: readonly T[] | undefined, b: readonly T[] | undefined) => T[] | undefined {
  return (a, b) => {
    if (a === undefined && b === undefined) return undefined;
    const out = new Map<string, T>();
    for (const t of [...(a ?? []), ...(b ?? [])]) out.set(keyOf(t), merge(out.get(keyOf(t)), t));
    return [...out.values()];
  };
}

/** GraphQL type fields of two access rights, united per type. */
const mergeTypeFields = mergedByKey<GraphqlTypeFields>(
  (t) => t.name,
  (seen, t) => ({ name: t.name, fields: union(seen?.fields, t.fields) ?? [] }),
);

/** Seconds per request of a rate; 0 for a disabled (unlimited) rate, the best. */
function intervalOf(rate: number | undefined, per: number | undefined): number {
  if (rate === undefined || per === undefined || rate <= 0 || per <= 0) return 0;
  return per / rate;
}

function union(a: readonly string[] | undefined, b: readonly string[] | undefined): string[] | undefined {
  if (a === undefined) return b === undefined ? undefined : [...b];
  if (b === undefined) return [...a];
  return [...new Set([...a, ...b])];
}

/** Allowed URLs of two access rights, their methods united per URL. */
const mergeUrls = mergedByKey<AllowedUrl>(
  (u) => u.url,
  (seen, u) => ({ url: u.url, methods: (union(seen?.methods, u.methods) ?? []) as AllowedUrl['methods'] }),
);

function mergeAccess(into: Record<string, AccessDefinition>, from: Record<string, AccessDefinition>): void {
  for (const [apiId, ar] of Object.entries(from)) {
    const seen = into[apiId];
    if (seen === undefined) {
      into[apiId] = structuredClone(ar);
      continue;
    }
    const versions = union(seen.versions, ar.versions);
    const urls = mergeUrls(seen.allowed_urls, ar.allowed_urls);
    // A field one policy restricts stays restricted; fields allowed by either are allowed.
    const restricted = mergeTypeFields(seen.restricted_types, ar.restricted_types);
    const allowed = mergeTypeFields(seen.allowed_types, ar.allowed_types);
    into[apiId] = {
      ...seen,
      ...(versions === undefined ? {} : { versions }),
      ...(urls === undefined ? {} : { allowed_urls: urls }),
      ...(restricted === undefined ? {} : { restricted_types: restricted }),
      ...(allowed === undefined ? {} : { allowed_types: allowed }),
      ...(ar.endpoints === undefined ? {} : { endpoints: [...(seen.endpoints ?? []), ...ar.endpoints] }),
    };
  }
}

/** Applies `key.apply_policies`, looked up with `policy`; the key itself is not changed. */
export function applyPolicies(
  key: GatewaySession,
  policy: (id: string) => GatewayPolicy | undefined,
): Applied {
  const ids = key.apply_policies ?? [];
  if (ids.length === 0) return { ok: true, session: key };
  const session: GatewaySession = structuredClone(key);
  let access: Record<string, AccessDefinition> | undefined;
  let rate: { rate?: number; per?: number; ti?: number; trl?: number } | undefined;
  let quota: { max?: number; renewal?: number } | undefined;
  let depth: number | undefined;
  const tags = new Set(session.tags ?? []);
  const meta: Record<string, unknown> = {};
  for (const id of ids) {
    const p = policy(id);
    if (p === undefined || p.state === 'deny') return { ok: false, reason: 'missing', policy: id };
    if (p.state === 'draft' || p.active === false || p.is_inactive === true) {
      return { ok: false, reason: 'inactive', policy: id };
    }
    const parts = partsOf(p);
    if (parts.acl) mergeAccess((access ??= {}), p.access_rights ?? {});
    if (parts.rate) {
      if (rate === undefined || intervalOf(p.rate, p.per) < intervalOf(rate.rate, rate.per)) {
        rate = { ...rate, rate: p.rate, per: p.per };
      }
      rate.ti = Math.max(rate.ti ?? -1, p.throttle_interval ?? -1);
      rate.trl = Math.max(rate.trl ?? -1, p.throttle_retry_limit ?? -1);
    }
    if (parts.quota) {
      const max = p.quota_max ?? -1;
      const best = quota?.max;
      if (best === undefined || (best !== -1 && (max === -1 || max > best))) {
        quota = { max, renewal: p.quota_renewal_rate };
      }
    }
    if (parts.complexity) {
      // The deepest allowance wins; -1 (or 0: unset) is unlimited and beats all.
      const d = p.max_query_depth ?? -1;
      if (depth === undefined || (depth > 0 && (d <= 0 || d > depth))) depth = d;
    }
    if (p.hmac_enabled === true) session.hmac_enabled = true;
    for (const t of p.tags ?? []) tags.add(t);
    Object.assign(meta, p.meta_data ?? {});
  }
  if (access !== undefined) session.access_rights = access;
  if (rate !== undefined) {
    session.rate = rate.rate ?? -1;
    session.per = rate.per ?? -1;
    session.throttle_interval = rate.ti ?? -1;
    session.throttle_retry_limit = rate.trl ?? -1;
  }
  if (quota !== undefined) {
    session.quota_max = quota.max ?? -1;
    if (quota.renewal !== undefined) session.quota_renewal_rate = quota.renewal;
  }
  if (depth !== undefined) session.max_query_depth = depth <= 0 ? -1 : depth;
  if (tags.size > 0) session.tags = [...tags];
  if (Object.keys(meta).length > 0) session.meta_data = { ...meta, ...(session.meta_data ?? {}) };
  return { ok: true, session };
}
