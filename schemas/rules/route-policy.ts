/**
 * The rules of SvcRoutePolicy (schemas/kinds/route-policy.ts), written once for the webhook and
 * the operator: which ApiDefinition fields a policy carries, the settings it gives every API
 * generated from the routes it targets, and why an API carrying them would be refused (the
 * classic API's own rules, so a policy the webhook admits never makes a generated API refused).
 * Which policy applies where (targets, precedence, conflicts) is the operator's
 * (operator/translate/gateway-api/policies.ts).
 */
import { KEYED_FLAGS } from './auth.ts';
import { checkClassicApi, classicApiWarnings } from './api-definition.ts';
import { quote, type FieldProblem, type FieldWarning } from './field-problem.ts';
import { isTrue, list, model } from './read.ts';
import { withSecretRefs } from './secret-refs.ts';

/**
 * The ApiDefinition fields a policy carries: authentication (keyless, auth token, basic, JWT,
 * static mTLS, HMAC signatures) and access (client IP lists, the API-wide rate limit, the
 * switches of keys' limits and quotas). Their schemas are ApiDefinition's.
 */
export const ROUTE_POLICY_FIELDS = [
  'use_keyless',
  'use_standard_auth',
  'use_basic_auth',
  'basic_auth',
  'enable_jwt',
  'jwt_signing_method',
  'jwt_source',
  'jwt_identity_base_field',
  'jwt_policy_field_name',
  'jwt_skip_kid',
  'jwt_scope_claim_name',
  'jwt_expires_at_validation_skew',
  'jwt_issued_at_validation_skew',
  'jwt_not_before_validation_skew',
  'jwt_default_policies',
  'use_mutual_tls_auth',
  'client_certificate_refs',
  'enable_signature_checking',
  'hmac_allowed_clock_skew',
  'hmac_allowed_algorithms',
  'base_identity_provided_by',
  'strip_auth_data',
  'auth',
  'auth_configs',
  'enable_ip_whitelisting',
  'allowed_ips',
  'enable_ip_blacklisting',
  'blacklisted_ips',
  'global_rate_limit',
  'disable_rate_limit',
  'disable_quota',
  'enforce_org_quotas',
] as const;

/** One of ROUTE_POLICY_FIELDS. */
export type RoutePolicyField = (typeof ROUTE_POLICY_FIELDS)[number];

/** A policy's spec as the rules read it (values unchecked). */
export type RoutePolicySpecInput = Partial<Record<RoutePolicyField | 'targetRefs', unknown>>;

/**
 * Whether the APIs of a policy's targets are keyless: as the policy says, else keyless unless it
 * turns a keyed method on (a policy of IP lists or a rate limit only keeps routes open; one with
 * `use_keyless: false` alone requires auth tokens, the classic API's default method).
 */
export function routePolicyKeyless(spec: RoutePolicySpecInput): boolean {
  if (typeof spec.use_keyless === 'boolean') return spec.use_keyless;
  return !KEYED_FLAGS.some((f) => isTrue((spec as Record<string, unknown>)[f]));
}

/**
 * The ApiDefinition settings a policy gives each API serving its targets: the fields it sets,
 * `use_keyless` always (generated APIs are keyless without a policy).
 */
export function routePolicySettings(spec: RoutePolicySpecInput): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of ROUTE_POLICY_FIELDS) if (spec[f] !== undefined) out[f] = spec[f];
  out.use_keyless = routePolicyKeyless(spec);
  return out;
}

/** A generated API standing for every API a policy's settings go into. */
function sampleApi(spec: RoutePolicySpecInput): Record<string, unknown> {
  return {
    name: 'route policy',
    api_id: 'route-policy',
    active: true,
    proxy: { listen_path: '/', target_url: 'http://127.0.0.1:9', strip_listen_path: false },
    version_data: { not_versioned: true, versions: { Default: { name: 'Default' } } },
    ...routePolicySettings(spec),
  };
}

/** A targetRef's identity: kind, name and section. */
const targetKey = (t: unknown): string => {
  const r = model<{ kind: string; name: string; sectionName: string }>(t);
  const part = (v: unknown): string => (typeof v === 'string' ? v : '');
  return `${part(r?.kind)}/${part(r?.name)}#${part(r?.sectionName)}`;
};

/**
 * Every reason the gateway would refuse an API carrying the policy's settings (the classic API's
 * rules, on an API with them), and targets listed twice; paths relative to the spec.
 */
export function routePolicyProblems(spec: RoutePolicySpecInput): FieldProblem[] {
  const { api, refPath } = withSecretRefs(sampleApi(spec));
  const problems = checkClassicApi(api).map((p) => ({ ...p, path: refPath(p.path) }));
  const seen = new Set<string>();
  list(spec.targetRefs).forEach((t, i) => {
    const key = targetKey(t);
    if (seen.has(key)) {
      problems.push({
        path: `targetRefs[${String(i)}]`,
        type: 'Invalid',
        message: `${quote(key.replace(/#$/, ''))} is listed twice: keep one entry`,
      });
    }
    seen.add(key);
  });
  return problems;
}

/** The classic API's warnings about the policy's settings, paths relative to the spec. */
export function routePolicyWarnings(spec: RoutePolicySpecInput): FieldWarning[] {
  const { api, refPath } = withSecretRefs(sampleApi(spec));
  return classicApiWarnings(api).map((w) => ({ ...w, path: refPath(w.path) }));
}
