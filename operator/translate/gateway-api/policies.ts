/**
 * SvcRoutePolicy (schemas/kinds/route-policy.ts) on Gateway API objects: which policy applies to
 * a rule of a route served at a listener (the most specific target wins: a route's rule, the
 * route, the Gateway's listener, the Gateway; among policies of one target the oldest), the
 * settings it gives the APIs serving it, and each policy's `status.ancestors` (GEP-2648): per
 * Gateway it reaches, Accepted, or Conflicted, Invalid; per target not found, TargetNotFound.
 * Pure: translate.ts and the policy reconciler read the same answers.
 */
import { routePolicyProblems, routePolicySettings } from '../../../schemas/rules/route-policy.ts';
import { formatProblem } from '../../../schemas/rules/field-problem.ts';
import {
  GATEWAY_GROUP,
  type Condition,
  type GatewayInput,
  type HttpRouteInput,
  type Meta,
  type ParentRef,
  type PolicyTargetRef,
  type RoutePolicyInput,
} from './types.ts';

/** The kind of a policy, its group and the controller writing its ancestors. */
export const ROUTE_POLICY_KIND = 'SvcRoutePolicy';

/** The policy a rule is served with: its settings, or why it cannot be applied (fail closed). */
export interface AppliedPolicy {
  policy: RoutePolicyInput;
  /** The ApiDefinition settings of the generated APIs; undefined when the policy is invalid. */
  settings?: Record<string, unknown>;
  /** Why the policy cannot be applied here: the rule's APIs answer 500 instead of serving. */
  invalid?: string;
}

/** Older first, then by namespace and name (the Gateway API's tie-break). */
function byAge(a: { metadata: Meta }, b: { metadata: Meta }): number {
  const at = (m: Meta): number =>
    m.creationTimestamp === undefined ? 0 : new Date(m.creationTimestamp).getTime();
  const ka = `${a.metadata.namespace}/${a.metadata.name}`;
  const kb = `${b.metadata.namespace}/${b.metadata.name}`;
  return at(a.metadata) - at(b.metadata) || (ka < kb ? -1 : ka > kb ? 1 : 0);
}

/** `namespace/kind/name#section`: what a targetRef names, in the policy's namespace. */
const targetKey = (namespace: string, kind: string, name: string, section = ''): string =>
  `${namespace}/${kind}/${name}#${section}`;

/** Whether a targetRef names a Gateway API kind svc serves policies on. */
const isTarget = (t: PolicyTargetRef): boolean =>
  t.group === GATEWAY_GROUP && (t.kind === 'HTTPRoute' || t.kind === 'Gateway');

/** The policies of each target (`targetKey`), oldest first. */
export function policiesByTarget(policies: readonly RoutePolicyInput[]): Map<string, RoutePolicyInput[]> {
  const out = new Map<string, RoutePolicyInput[]>();
  for (const p of [...policies].sort(byAge)) {
    const seen = new Set<string>();
    for (const t of p.spec.targetRefs) {
      if (!isTarget(t)) continue;
      const key = targetKey(p.metadata.namespace, t.kind, t.name, t.sectionName);
      if (seen.has(key)) continue;
      seen.add(key);
      out.set(key, [...(out.get(key) ?? []), p]);
    }
  }
  return out;
}

/** Why a policy cannot be applied at all (the shared rules, for clusters without the webhook). */
export function policyProblem(policy: RoutePolicyInput): string | undefined {
  const problems = routePolicyProblems(policy.spec);
  if (problems.length === 0) return undefined;
  return problems.map((p) => formatProblem({ ...p, path: `spec.${p.path}` })).join('; ');
}

/**
 * Why a policy cannot be applied on the APIs of `gateway` (their namespace): the Secrets of
 * `client_certificate_refs` are read in the namespace of the API, the Gateway's.
 */
function gatewayProblem(policy: RoutePolicyInput, gateway: GatewayInput): string | undefined {
  const refs = Array.isArray(policy.spec.client_certificate_refs) ? policy.spec.client_certificate_refs : [];
  if (refs.length > 0 && policy.metadata.namespace !== gateway.metadata.namespace) {
    return `spec.client_certificate_refs: Invalid value: the APIs of Gateway ${gateway.metadata.namespace}/${gateway.metadata.name} read Secrets in ${gateway.metadata.namespace}, not in ${policy.metadata.namespace}: put the policy and the Secrets beside the Gateway, or use a Gateway of this namespace`;
  }
  return undefined;
}

/** A resource reference of `jwt_default_policies`, qualified with the policy's namespace. */
function qualified(ref: unknown, namespace: string): unknown {
  if (typeof ref === 'string') return ref.includes('/') ? ref : `${namespace}/${ref}`;
  if (ref !== null && typeof ref === 'object' && !('namespace' in ref)) return { ...ref, namespace };
  return ref;
}

/**
 * The policy a rule of `route` is served with at a listener of `gateway`: the most specific
 * target first (the rule by name, the route, the listener by name, the Gateway), the oldest
 * policy of that target. Undefined: no policy (the generated APIs stay keyless).
 */
export function policyFor(
  byTarget: ReadonlyMap<string, readonly RoutePolicyInput[]>,
  gateway: GatewayInput,
  route: HttpRouteInput,
  ruleName: string | undefined,
  listenerName: string,
): AppliedPolicy | undefined {
  const r = route.metadata;
  const g = gateway.metadata;
  const keys = [
    ...(ruleName === undefined ? [] : [targetKey(r.namespace, 'HTTPRoute', r.name, ruleName)]),
    targetKey(r.namespace, 'HTTPRoute', r.name),
    targetKey(g.namespace, 'Gateway', g.name, listenerName),
    targetKey(g.namespace, 'Gateway', g.name),
  ];
  for (const key of keys) {
    const policy = byTarget.get(key)?.[0];
    if (policy === undefined) continue;
    const invalid = policyProblem(policy) ?? gatewayProblem(policy, gateway);
    if (invalid !== undefined) return { policy, invalid };
    const settings = routePolicySettings(policy.spec);
    if (Array.isArray(settings.jwt_default_policies)) {
      settings.jwt_default_policies = settings.jwt_default_policies.map((p) =>
        qualified(p, policy.metadata.namespace),
      );
    }
    return { policy, settings };
  }
  return undefined;
}

/** An ancestor of a policy's status (GEP-2648 ParentReference). */
export interface AncestorRef {
  group: string;
  kind: string;
  namespace: string;
  name: string;
  sectionName?: string;
}

/** A policy's status for one ancestor. */
export interface PolicyAncestor {
  ancestorRef: AncestorRef;
  conditions: Condition[];
}

/** What the status of a policy is computed against (the reconciler's caches). */
export interface PolicyStatusContext {
  /** A Gateway of a GatewayClass svc serves; undefined when absent or another controller's. */
  gateway: (namespace: string, name: string) => GatewayInput | undefined;
  route: (namespace: string, name: string) => HttpRouteInput | undefined;
  /** Every policy of the cluster (for conflicts). */
  policies: readonly RoutePolicyInput[];
}

const accepted = (c: Condition): boolean => c.status === 'True';

/** The Gateways (of ours) a route's parentRefs name, in order. */
function parentGateways(route: HttpRouteInput, ctx: PolicyStatusContext): GatewayInput[] {
  const out: GatewayInput[] = [];
  const seen = new Set<string>();
  for (const p of route.spec.parentRefs ?? ([] as ParentRef[])) {
    if ((p.group ?? GATEWAY_GROUP) !== GATEWAY_GROUP || (p.kind ?? 'Gateway') !== 'Gateway') continue;
    const ns = p.namespace ?? route.metadata.namespace;
    const gw = ctx.gateway(ns, p.name);
    if (gw === undefined || seen.has(`${ns}/${p.name}`)) continue;
    seen.add(`${ns}/${p.name}`);
    out.push(gw);
  }
  return out;
}

/**
 * A policy's ancestors: per target, the Gateways it reaches (a Gateway; a route's parent
 * Gateways of ours), each Accepted, or Conflicted (an older policy has that target), or Invalid;
 * a target that is not there (or not served by svc) is its own ancestor, TargetNotFound.
 * At most 16 (the Gateway API's bound), in target order.
 */
export function policyAncestors(policy: RoutePolicyInput, ctx: PolicyStatusContext): PolicyAncestor[] {
  const byTarget = policiesByTarget(ctx.policies);
  const ns = policy.metadata.namespace;
  const problem = policyProblem(policy);
  const out = new Map<string, PolicyAncestor>();
  const add = (ref: AncestorRef, c: Condition): void => {
    const key = `${ref.kind}/${ref.namespace}/${ref.name}#${ref.sectionName ?? ''}`;
    const have = out.get(key);
    // A Gateway reached by several targets: Accepted only if every one is.
    if (have === undefined) out.set(key, { ancestorRef: ref, conditions: [c] });
    else if (have.conditions[0] !== undefined && accepted(have.conditions[0]) && !accepted(c)) {
      have.conditions = [c];
    }
  };
  const cond = (status: boolean, reason: string, message: string): Condition => ({
    type: 'Accepted',
    status: status ? 'True' : 'False',
    reason,
    message,
  });
  const verdict = (t: PolicyTargetRef, gw: GatewayInput): Condition => {
    const winner = byTarget.get(targetKey(ns, t.kind, t.name, t.sectionName))?.[0];
    if (winner !== undefined && winner.metadata.name !== policy.metadata.name) {
      return cond(
        false,
        'Conflicted',
        `${t.kind} ${t.name}${t.sectionName === undefined ? '' : ` section ${t.sectionName}`} has an older SvcRoutePolicy, ${winner.metadata.name}, which applies instead`,
      );
    }
    const invalid = problem ?? gatewayProblem(policy, gw);
    if (invalid !== undefined) {
      return cond(false, 'Invalid', `${invalid}; the routes it targets answer 500 until it is fixed`);
    }
    return cond(true, 'Accepted', `applied to the APIs serving ${t.kind} ${t.name}`);
  };
  const gatewayRef = (gw: GatewayInput, sectionName?: string): AncestorRef => ({
    group: GATEWAY_GROUP,
    kind: 'Gateway',
    namespace: gw.metadata.namespace,
    name: gw.metadata.name,
    ...(sectionName === undefined ? {} : { sectionName }),
  });
  for (const t of policy.spec.targetRefs) {
    const self: AncestorRef = {
      group: t.group,
      kind: t.kind,
      namespace: ns,
      name: t.name,
      ...(t.sectionName === undefined ? {} : { sectionName: t.sectionName }),
    };
    const notFound = (why: string): void => {
      add(self, cond(false, 'TargetNotFound', why));
    };
    if (!isTarget(t)) {
      notFound(`${t.group}/${t.kind} is not a kind svc applies policies to: HTTPRoute or Gateway`);
    } else if (t.kind === 'Gateway') {
      const gw = ctx.gateway(ns, t.name);
      if (gw === undefined) notFound(`no Gateway ${ns}/${t.name} of a GatewayClass served by svc`);
      else if (t.sectionName !== undefined && !gw.spec.listeners.some((l) => l.name === t.sectionName)) {
        notFound(`Gateway ${ns}/${t.name} has no listener ${t.sectionName}`);
      } else add(gatewayRef(gw, t.sectionName), verdict(t, gw));
    } else {
      const route = ctx.route(ns, t.name);
      const gateways = route === undefined ? [] : parentGateways(route, ctx);
      if (route === undefined) notFound(`no HTTPRoute ${ns}/${t.name}`);
      else if (
        t.sectionName !== undefined &&
        !(route.spec.rules ?? []).some((r) => r.name === t.sectionName)
      ) {
        notFound(`HTTPRoute ${ns}/${t.name} has no rule named ${t.sectionName}`);
      } else if (gateways.length === 0) {
        notFound(`HTTPRoute ${ns}/${t.name} names no Gateway of a GatewayClass served by svc`);
      } else for (const gw of gateways) add(gatewayRef(gw), verdict(t, gw));
    }
  }
  return [...out.values()].slice(0, 16);
}
