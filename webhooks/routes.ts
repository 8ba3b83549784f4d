/**
 * Which domain and listen path each API claims on its gateway, so that two APIs cannot claim
 * the same pair. APIs bound to different OperatorContexts go to different gateways and never
 * conflict; a domain of "" means "every host". Two claims are compared the way the gateway's
 * router matches them (`routeKey`, `domainKey` of schemas/rules).
 */
import { domainKey, routeKey } from '../schemas/rules/api-definition.ts';
import { asObject, asString, at, metaOf, refOf } from './access.ts';
import { API_KINDS } from './lookups.ts';
import type { ApiKind, Lookups } from './lookups.ts';
import { checkConfigMapKey, documentRoute } from './oas-document.ts';
import { isTemplateObject } from './template.ts';

/** One API's claim on a gateway. */
export interface RouteClaim {
  kind: ApiKind;
  namespace: string;
  name: string;
  /** `namespace/name` of the OperatorContext, or "" for the operator's default gateway. */
  context: string;
  domain: string;
  listenPath: string;
  /** `proxy.listen_path_exact`: the listen path alone, a route of its own (`routeKey`). */
  exact?: boolean;
  /** `domain_wildcard_one_label`: a wildcard domain of one label, a route of its own. */
  oneLabel?: boolean;
  /** The API's own `listen_port`; 0 or absent: the gateway port. Each port has its own routes. */
  port?: number;
}

/** The OperatorContext a resource uses, as `namespace/name`, or "". */
export function contextOf(obj: unknown): string {
  const { namespace } = metaOf(obj);
  const ref = refOf(at(obj, 'spec.contextRef'), namespace);
  return ref === undefined ? '' : `${ref.namespace}/${ref.name}`;
}

/** Where the document reference of an OAS-based kind lives in its spec. */
export const documentRefField = {
  SvcOasApiDefinition: 'svcOAS',
  SvcStreamsApiDefinition: 'svcStreams',
} as const;

/** The claim of an ApiDefinition, from its spec. */
export function apiDefinitionClaim(obj: unknown): RouteClaim | undefined {
  const listenPath = asString(at(obj, 'spec.proxy.listen_path'));
  // A template is never served: it claims nothing.
  if (listenPath === undefined || isTemplateObject(obj)) return undefined;
  const port = at(obj, 'spec.listen_port');
  return {
    kind: 'ApiDefinition',
    ...metaOf(obj),
    context: contextOf(obj),
    domain: asString(at(obj, 'spec.domain')) ?? '',
    listenPath,
    ...(at(obj, 'spec.proxy.listen_path_exact') === true ? { exact: true } : {}),
    ...(at(obj, 'spec.domain_wildcard_one_label') === true ? { oneLabel: true } : {}),
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
  if (route === undefined || isTemplateObject(obj)) return undefined;
  return { kind, ...metaOf(obj), context: contextOf(obj), ...route };
}

/**
 * Claims of every API in the cluster. OAS-based APIs are read from their ConfigMaps; one whose
 * document can't be read claims nothing (its own admission reported why).
 */
export async function allClaims(lookups: Lookups): Promise<RouteClaim[]> {
  const [classic, oas, streams] = await Promise.all(API_KINDS.map((k) => lookups.list(k)));
  const claims: (RouteClaim | undefined)[] = (classic ?? []).map(apiDefinitionClaim);
  const docs = await Promise.all(
    [
      ...(oas ?? []).map((o) => ['SvcOasApiDefinition', o] as const),
      ...(streams ?? []).map((o) => ['SvcStreamsApiDefinition', o] as const),
    ].map(async ([kind, obj]) => {
      const { namespace } = metaOf(obj);
      const ref = asObject(at(obj, `spec.${documentRefField[kind]}.configmapRef`));
      const name = asString(ref?.name);
      const keyName = asString(ref?.keyName);
      if (name === undefined || keyName === undefined) return undefined;
      const refNs = asString(ref?.namespace) ?? namespace;
      const cm = await lookups.configMap(refNs, name);
      if (cm === undefined) return undefined;
      const { doc } = checkConfigMapKey(cm, {
        refPath: '',
        namespace: refNs,
        name,
        keyName,
        streams: kind === 'SvcStreamsApiDefinition',
      });
      return doc === undefined ? undefined : documentClaim(kind, obj, doc);
    }),
  );
  claims.push(...docs);
  return claims.filter((c): c is RouteClaim => c !== undefined);
}

/** The first other API that claims the same gateway, domain and listen path as `claim`. */
export function conflictingClaim(claim: RouteClaim, others: readonly RouteClaim[]): RouteClaim | undefined {
  return others.find(
    (o) =>
      !(o.kind === claim.kind && o.namespace === claim.namespace && o.name === claim.name) &&
      o.context === claim.context &&
      (o.port ?? 0) === (claim.port ?? 0) &&
      domainKey(o.domain) === domainKey(claim.domain) &&
      (o.oneLabel ?? false) === (claim.oneLabel ?? false) &&
      routeKey(o.listenPath, o.exact) === routeKey(claim.listenPath, claim.exact),
  );
}

/** The message of a conflict, naming the other API. */
export function conflictMessage(claim: RouteClaim, other: RouteClaim): string {
  const where =
    (claim.domain === '' ? '(no domain)' : `on domain ${JSON.stringify(claim.domain)}`) +
    (claim.port ? ` on listen_port ${claim.port}` : '');
  return `listen path ${JSON.stringify(claim.listenPath)} ${where} is already claimed by ${other.kind} ${other.namespace}/${other.name} on the same gateway: choose another listen path or domain`;
}
