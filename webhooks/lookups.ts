/**
 * What the validators may ask about the rest of the cluster. The validators see only this
 * interface: unit tests and the fuzz test pass an in-memory implementation
 * (memory-lookups.ts); the server passes `watchLookups` (watch-lookups.ts), which answers the svc
 * kinds and Ingresses from watch caches and the rest through `kubeLookups`, which asks the API
 * server each time.
 */
import type { KubeClients } from '../lib/k8s/client.ts';
import { statusOf, svcResource } from '../lib/k8s/client.ts';
import { kinds } from '../schemas/index.ts';
import type {
  APIDescription,
  ApiDefinition,
  OperatorContext,
  PortalAPICatalogue,
  SecurityPolicy,
  SubGraph,
  SuperGraph,
  SvcOasApiDefinition,
  SvcStreamsApiDefinition,
} from '../schemas/generated/kinds.ts';
import type { ApiKind } from '../schemas/common.ts';

/** The svc kinds, by kind name. */
export interface SvcKinds {
  ApiDefinition: ApiDefinition;
  SvcOasApiDefinition: SvcOasApiDefinition;
  SvcStreamsApiDefinition: SvcStreamsApiDefinition;
  SecurityPolicy: SecurityPolicy;
  OperatorContext: OperatorContext;
  SubGraph: SubGraph;
  SuperGraph: SuperGraph;
  APIDescription: APIDescription;
  PortalAPICatalogue: PortalAPICatalogue;
}
/** Name of an svc kind. */
export type SvcKind = keyof SvcKinds;

export { API_KINDS, type ApiKind } from '../schemas/common.ts';

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

/** The parts of a ConfigMap the validators read. */
export interface ConfigMapContent {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}

/** Read-only questions about the cluster. Absent objects are `undefined`, never errors. */
export interface Lookups {
  configMap(namespace: string, name: string): Promise<ConfigMapContent | undefined>;
  /** The key names of a Secret (never its values), or undefined when it does not exist. */
  secretKeys(namespace: string, name: string): Promise<string[] | undefined>;
  get<K extends SvcKind>(kind: K, namespace: string, name: string): Promise<SvcKinds[K] | undefined>;
  /** Every object of a kind, in all namespaces. */
  list<K extends SvcKind>(kind: K): Promise<SvcKinds[K][]>;
  /** The Ingresses of a namespace (name and annotations): those naming a template. */
  ingresses(namespace: string): Promise<IngressView[]>;
  /**
   * The route claims of every API, from a watch cache (webhooks/route-claims.ts). Absent, or not
   * synced yet, the route check lists every API instead (`findConflict` of routes.ts).
   */
  routeClaims?: RouteClaimSource;
  /**
   * Reads that go to the API server, when `get`, `list` and `ingresses` answer from watch caches
   * (webhooks/watch-lookups.ts): a refusal that rests on what a cache holds is confirmed through
   * these first, since the cache may lag the cluster by a watch event.
   */
  live?: Lookups;
}

/**
 * A lookup asked of a watch cache that has not listed its kind yet (the server is starting, or
 * cannot watch the kind): the review is refused with this message, never answered blindly.
 */
export class CacheNotSyncedError extends Error {
  constructor(what: string) {
    super(
      `the svc admission webhook has not loaded its cache of ${what} yet (it lists and watches them when it starts): retry in a few seconds; if it persists, check that the webhook's service account may list and watch ${what}`,
    );
    this.name = 'CacheNotSyncedError';
  }
}

/** Answers the route check without listing every API. */
export interface RouteClaimSource {
  /** Whether the cache has seen every API (and read every document) at least once. */
  synced(): boolean;
  /** The other API that claims the same route as `claim`, confirmed by a fresh read; or none. */
  conflict(claim: RouteClaim): Promise<RouteClaim | undefined>;
}

/** What the validators read of an Ingress. */
export interface IngressView {
  name: string;
  annotations: Record<string, string>;
  deleting: boolean;
}

const plurals = new Map(kinds.map((k) => [k.kind, k.plural]));

function pluralOf(kind: SvcKind): string {
  const plural = plurals.get(kind);
  if (plural === undefined) throw new Error(`unknown kind ${kind}`);
  return plural;
}

async function orUndefined<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (err) {
    if (statusOf(err) === 404) return undefined;
    throw err;
  }
}

const PAGE = 500;

/**
 * Lookups through the API server, one request per question. The server answers most of them from
 * watch caches instead (watch-lookups.ts) and keeps these for ConfigMaps and Secrets (read when
 * an object names one) and to confirm what a cache says before refusing. The webhook's service
 * account needs get on configmaps and secrets, get, list and watch on the svc kinds, and list and
 * watch on Ingresses.
 */
export function kubeLookups(clients: KubeClients): Lookups {
  return {
    async configMap(namespace, name) {
      const cm = await orUndefined(clients.core.readNamespacedConfigMap({ namespace, name }));
      return cm === undefined ? undefined : { data: cm.data ?? {}, binaryData: cm.binaryData ?? {} };
    },
    async secretKeys(namespace, name) {
      const secret = await orUndefined(clients.core.readNamespacedSecret({ namespace, name }));
      return secret === undefined ? undefined : Object.keys(secret.data ?? {});
    },
    async get(kind, namespace, name) {
      const obj: unknown = await orUndefined(
        clients.custom.getNamespacedCustomObject({ ...svcResource(pluralOf(kind)), namespace, name }),
      );
      return obj as SvcKinds[typeof kind] | undefined;
    },
    async ingresses(namespace) {
      const list = await clients.networking.listNamespacedIngress({ namespace });
      return list.items.map((i) => ({
        name: i.metadata?.name ?? '',
        annotations: i.metadata?.annotations ?? {},
        deleting: i.metadata?.deletionTimestamp !== undefined,
      }));
    },
    async list(kind) {
      const items: SvcKinds[typeof kind][] = [];
      let cont: string | undefined;
      do {
        const page = (await clients.custom.listClusterCustomObject({
          ...svcResource(pluralOf(kind)),
          limit: PAGE,
          ...(cont === undefined ? {} : { _continue: cont }),
        })) as { items?: SvcKinds[typeof kind][]; metadata?: { continue?: string } };
        items.push(...(page.items ?? []));
        cont = page.metadata?.continue;
      } while (cont !== undefined && cont !== '');
      return items;
    },
  };
}
