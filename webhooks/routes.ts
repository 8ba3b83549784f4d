/**
 * Which domain and listen path each API claims on its gateway, so that two APIs cannot claim
 * the same pair. APIs bound to different OperatorContexts go to different gateways and never
 * conflict; a domain of "" means "every host". Two claims are compared the way the gateway's
 * router matches them (`routeKey`, `domainKey` of schemas/rules).
 */
import { domainKey, routeKey } from '../schemas/rules/api-definition.ts';
import type { ApiDefinition, ApiDefinitionSpec } from '../schemas/generated/kinds.ts';
import { model } from '../schemas/rules/read.ts';
import { isTcpApi } from '../schemas/rules/tcp.ts';
import { asString, configmapRefOf, contextRefOf, metaOf, refOf, specOf } from './access.ts';
import { API_KINDS } from './lookups.ts';
import type { ApiKind, ConfigMapContent, Lookups, RouteClaim } from './lookups.ts';
import { checkConfigMapKey, documentRoute } from './oas-document.ts';
import { isTemplate } from '../schemas/templates.ts';

export type { RouteClaim } from './lookups.ts';

/** The OperatorContext a resource uses, as `namespace/name`, or "". */
export function contextOf(obj: unknown): string {
  const { namespace } = metaOf(obj);
  const ref = refOf(contextRefOf(obj), namespace);
  return ref === undefined ? '' : `${ref.namespace}/${ref.name}`;
}

/** Where the document reference of an OAS-based kind lives in its spec. */
export const documentRefField = {
  SvcOasApiDefinition: 'svcOAS',
  SvcStreamsApiDefinition: 'svcStreams',
} as const;

/** The claim of an ApiDefinition, from its spec. */
export function apiDefinitionClaim(obj: unknown): RouteClaim | undefined {
  const spec = specOf<ApiDefinition>(obj);
  const proxy = model<ApiDefinitionSpec['proxy']>(spec.proxy);
  // A TCP or TLS API has no listen path: it claims the whole of its port.
  const listenPath = asString(proxy?.listen_path) ?? (isTcpApi(spec) ? '' : undefined);
  // A template is never served: it claims nothing. Nor is an internal API served to clients
  // (reached by `svc://` only: the gateway's check leaves it out of the route table's claims).
  if (listenPath === undefined || isTemplate(obj) || spec.internal === true) return undefined;
  const port = spec.listen_port;
  return {
    kind: 'ApiDefinition',
    ...metaOf(obj),
    context: contextOf(obj),
    domain: asString(spec.domain) ?? '',
    listenPath,
    ...(proxy?.listen_path_exact === true ? { exact: true } : {}),
    ...(spec.domain_wildcard_one_label === true ? { oneLabel: true } : {}),
    ...(typeof port === 'number' && port > 0 ? { port } : {}),
  };
}

/** The claim of an OAS or streams API, from its document. */
export function documentClaim(
  kind: 'SvcOasApiDefinition' | 'SvcStreamsApiDefinition',
  obj: unknown,
  doc: Record<string, unknown>,
): RouteClaim | undefined {
  const route = documentRoute(doc);
  // A template is never served: it claims nothing.
  if (route === undefined || isTemplate(obj)) return undefined;
  return { kind, ...metaOf(obj), context: contextOf(obj), ...route };
}

/** Where an OAS-based API reads its document: the ConfigMap and key of its configmapRef. */
export function documentRefOf(
  kind: 'SvcOasApiDefinition' | 'SvcStreamsApiDefinition',
  obj: unknown,
): { namespace: string; name: string; keyName: string } | undefined {
  const ref = configmapRefOf(kind, obj);
  const name = asString(ref?.name);
  const keyName = asString(ref?.keyName);
  if (name === undefined || keyName === undefined) return undefined;
  return { namespace: asString(ref?.namespace) ?? metaOf(obj).namespace, name, keyName };
}

/** The claim of an OAS-based API whose ConfigMap holds `cm`; none when its document doesn't read. */
export function claimFromConfigMap(
  kind: 'SvcOasApiDefinition' | 'SvcStreamsApiDefinition',
  obj: unknown,
  cm: ConfigMapContent,
): RouteClaim | undefined {
  const ref = documentRefOf(kind, obj);
  if (ref === undefined) return undefined;
  const { doc } = checkConfigMapKey(cm, {
    refPath: '',
    ...ref,
    streams: kind === 'SvcStreamsApiDefinition',
  });
  return doc === undefined ? undefined : documentClaim(kind, obj, doc);
}

/**
 * The claim of one API of any kind; an OAS-based API's ConfigMap is read through `lookups`. One
 * whose document can't be read claims nothing (its own admission reported why).
 */
export async function claimOf(
  kind: ApiKind,
  obj: unknown,
  lookups: Lookups,
): Promise<RouteClaim | undefined> {
  if (kind === 'ApiDefinition') return apiDefinitionClaim(obj);
  const ref = documentRefOf(kind, obj);
  if (ref === undefined) return undefined;
  const cm = await lookups.configMap(ref.namespace, ref.name);
  return cm === undefined ? undefined : claimFromConfigMap(kind, obj, cm);
}

/** Claims of every API in the cluster: a LIST of each kind and a GET of each OAS-based API's ConfigMap. */
export async function allClaims(lookups: Lookups): Promise<RouteClaim[]> {
  const lists = await Promise.all(
    API_KINDS.map(async (kind) => (await lookups.list(kind)).map((obj) => [kind, obj] as const)),
  );
  const claims = await Promise.all(lists.flat().map(([kind, obj]) => claimOf(kind, obj, lookups)));
  return claims.filter((c): c is RouteClaim => c !== undefined);
}

/**
 * The key two claims share exactly when they conflict (see `conflictingClaim`): the gateway
 * (context), the port, the host as the router matches it, and the route.
 */
export function claimKey(claim: RouteClaim): string {
  return [
    claim.context,
    String(claim.port ?? 0),
    domainKey(claim.domain),
    claim.oneLabel === true ? '1' : '0',
    routeKey(claim.listenPath, claim.exact),
  ].join('\n');
}

/** Whether two claims are made by the same API. */
export function sameApi(a: RouteClaim, b: RouteClaim): boolean {
  return a.kind === b.kind && a.namespace === b.namespace && a.name === b.name;
}

/**
 * The other API that claims the same route as `claim`, if any. With a synced watch cache
 * (`lookups.routeClaims`, webhooks/route-claims.ts) this costs a map lookup, plus a fresh GET of
 * a conflicting API before refusing; otherwise (tests, a cache still syncing, or a check against
 * a ConfigMap as an update would leave it) every API is listed, as the cache can't answer then.
 */
export async function findConflict(claim: RouteClaim, lookups: Lookups): Promise<RouteClaim | undefined> {
  const cache = lookups.routeClaims;
  if (cache?.synced() === true) return cache.conflict(claim);
  return conflictingClaim(claim, await allClaims(lookups));
}

/** The first other API that claims the same gateway, domain and listen path as `claim`. */
export function conflictingClaim(claim: RouteClaim, others: readonly RouteClaim[]): RouteClaim | undefined {
  const key = claimKey(claim);
  return others.find((o) => !sameApi(o, claim) && claimKey(o) === key);
}

/** The message of a conflict, naming the other API. */
export function conflictMessage(claim: RouteClaim, other: RouteClaim): string {
  const where =
    (claim.domain === '' ? '(no domain)' : `on domain ${JSON.stringify(claim.domain)}`) +
    (claim.port ? ` on listen_port ${claim.port}` : '');
  return `listen path ${JSON.stringify(claim.listenPath)} ${where} is already claimed by ${other.kind} ${other.namespace}/${other.name} on the same gateway: choose another listen path or domain`;
}
