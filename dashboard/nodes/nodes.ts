/**
 * Gateways in mode pro talk to the dashboard here (`/system/...`, the node secret in the
 * `x-svc-node-secret` header): a gateway registers as a node, reads the APIs and policies of its
 * organisations in one call, fetches a key or a certificate (api/certs.ts `nodeCert`) on a miss, and keeps a notification stream open
 * (server-sent events) that names every change once it is committed. Changes are observed on the
 * store itself (`withNotifications`), so no handler can forget to announce a write.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../lib/log.ts';
import { callerOf, hashOf, json, type Handler } from '../api/http.ts';
import type { Kind, Store, StoreReader, StoreTx } from '../store/store.ts';

/** The header a gateway sends its node secret in. */
export const NODE_SECRET_HEADER = 'x-svc-node-secret';
/** The header a registered gateway sends its node ID in. */
export const NODE_ID_HEADER = 'x-svc-node-id';
/** Seconds between two heartbeats on a notification stream (proxies close silent streams). */
const HEARTBEAT_MS = 15_000;
/** Nodes not seen for this long are dropped from `/admin/nodes`. */
const NODE_TTL_MS = 10 * 60_000;

/** One committed change: the organisation, the kind and the object's ID. */
export interface Change {
  org: string;
  kind: Kind | 'organisations';
  id: string;
}

/** A registered gateway. */
export interface NodeInfo {
  node_id: string;
  hostname: string;
  version: string;
  /** Organisations the node loads (empty: all). */
  orgs: string[];
  registered_at: string;
  last_seen: string;
}

/** Fans committed changes out to the notification streams of this process. */
export class Notifier {
  readonly #listeners = new Set<(c: Change) => void>();

  /** Calls `fn` on every change; returns the unsubscribe function. */
  subscribe(fn: (c: Change) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** Announces committed changes. */
  emit(changes: readonly Change[]): void {
    for (const c of changes) for (const fn of this.#listeners) fn(c);
  }

  readonly #streams = new Set<() => void>();

  /** Keeps the end function of an open stream, for `endAll`; returns the untrack function. */
  track(end: () => void): () => void {
    this.#streams.add(end);
    return () => this.#streams.delete(end);
  }

  /** Ends every open stream (the dashboard is stopping: nodes reconnect to another one). */
  endAll(): void {
    for (const end of [...this.#streams]) end();
  }

  /** Streams open now. */
  get size(): number {
    return this.#streams.size;
  }
}

/** The reads of `r` (a store or a transaction), passed through as they are. */
function readsOf(r: StoreReader): StoreReader {
  return {
    getOrg: (id) => r.getOrg(id),
    listOrgs: (slice) => r.listOrgs(slice),
    get: (org, kind, id) => r.get(org, kind, id),
    list: (org, kind, slice) => r.list(org, kind, slice),
    findByLookup: (kind, lookup) => r.findByLookup(kind, lookup),
    listAudit: (org, slice) => r.listAudit(org, slice),
  };
}

/**
 * The store, announcing each transaction's writes to `notifier` after the commit (a gateway
 * told earlier could read the old state). A rolled-back transaction announces nothing.
 */
export function withNotifications(store: Store, notifier: Notifier): Store {
  return {
    kind: store.kind,
    analytics: store.analytics,
    ...readsOf(store),
    schemaVersion: () => store.schemaVersion(),
    health: () => store.health(),
    close: () => store.close(),
    write: async <T>(scope: string, fn: (tx: StoreTx) => Promise<T>): Promise<T> => {
      const changes: Change[] = [];
      const result = await store.write(scope, (tx) =>
        fn({
          ...readsOf(tx),
          audit: (entry) => tx.audit(entry),
          put: (org, kind, id, body, lookup) => {
            changes.push({ org, kind, id });
            return tx.put(org, kind, id, body, lookup);
          },
          delete: (org, kind, id) => {
            changes.push({ org, kind, id });
            return tx.delete(org, kind, id);
          },
          putOrg: (id, body) => {
            changes.push({ org: id, kind: 'organisations', id });
            return tx.putOrg(id, body);
          },
          deleteOrg: (id) => {
            changes.push({ org: id, kind: 'organisations', id });
            return tx.deleteOrg(id);
          },
        }),
      );
      notifier.emit(changes);
      return result;
    },
  };
}

/** Whether `given` is the node secret (compared in constant time, on hashes of equal length). */
export function nodeSecretOk(secret: string | undefined, given: string | string[] | undefined): boolean {
  if (secret === undefined || typeof given !== 'string' || given === '') return false;
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(secret).digest();
  return timingSafeEqual(a, b);
}

/** The organisations a node asks for (`?orgs=a,b`); empty means all. */
export function orgsOf(url: URL): string[] {
  return (url.searchParams.get('orgs') ?? '').split(',').filter((o) => o !== '');
}

/** The organisations to read: those asked for that exist, or every one. */
export async function orgIds(store: Store, asked: readonly string[]): Promise<string[]> {
  if (asked.length > 0) {
    const found = await Promise.all(asked.map(async (o) => ((await store.getOrg(o)) ? o : undefined)));
    return found.filter((o) => o !== undefined);
  }
  return (await store.listOrgs()).items.map((o) => o.id);
}

/** A gateway as the organisation's users see it (`GET /api/nodes`). */
export interface ServingNode {
  hostname: string;
  version: string;
  registered_at: string;
  last_seen: string;
}

/** The revision of one API or policy a node serves, and since when (as the gateway reports it). */
export interface AppliedRevision {
  revision: string;
  applied_at: string;
}

/** What a node serves, as it last reported it (`POST /system/applied`). */
interface AppliedRecord {
  /** How the gateway names itself (`host:port`). */
  name: string;
  apis: Map<string, AppliedRevision>;
  policies: Map<string, AppliedRevision>;
  /** The APIs its last reload left out, and why. */
  leftOut: Record<string, string>;
}

/** A connected node and the revision of one API or policy it serves (`GET /api/nodes/{kind}/{id}`). */
export interface AppliedNode extends ServingNode {
  id: string;
  name: string;
  api?: AppliedRevision;
  policy?: AppliedRevision;
  /** Why the node does not serve the API: its last reload left it out. */
  left_out?: string;
}

/** The registered nodes of this process. */
export class Nodes {
  readonly #nodes = new Map<string, NodeInfo>();
  /** What each node serves, by node ID: dropped with the node. */
  readonly #applied = new Map<string, AppliedRecord>();
  /** Open notification streams per node ID: a node with one is connected (and alive). */
  readonly #streams = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** Registers a node; answers its new ID. */
  register(body: Record<string, unknown>): NodeInfo {
    const at = new Date(this.#now()).toISOString();
    const info: NodeInfo = {
      node_id: randomUUID(),
      hostname: typeof body.hostname === 'string' ? body.hostname : '',
      version: typeof body.version === 'string' ? body.version : '',
      orgs: Array.isArray(body.orgs) ? body.orgs.filter((o): o is string => typeof o === 'string') : [],
      registered_at: at,
      last_seen: at,
    };
    this.#nodes.set(info.node_id, info);
    return info;
  }

  /** Notes that a node called. */
  seen(id: string | string[] | undefined): void {
    if (typeof id !== 'string') return;
    const n = this.#nodes.get(id);
    if (n !== undefined) n.last_seen = new Date(this.#now()).toISOString();
  }

  /**
   * Notes that a node opened its notification stream; answers the function to call when it
   * closes. While a stream is open the node is connected: it serves, and follows every change.
   */
  streamOpened(id: string | string[] | undefined): () => void {
    if (typeof id !== 'string' || !this.#nodes.has(id)) return () => undefined;
    this.#streams.set(id, (this.#streams.get(id) ?? 0) + 1);
    let closed = false;
    return () => {
      if (closed) return;
      closed = true;
      const left = (this.#streams.get(id) ?? 1) - 1;
      if (left > 0) this.#streams.set(id, left);
      else this.#streams.delete(id);
      this.seen(id);
    };
  }

  /** Nodes connected now or seen lately (a connected node is never dropped, however long ago it called). */
  list(): NodeInfo[] {
    const cutoff = this.#now() - NODE_TTL_MS;
    for (const [id, n] of this.#nodes) {
      if (!this.#streams.has(id) && Date.parse(n.last_seen) < cutoff) {
        this.#nodes.delete(id);
        this.#applied.delete(id);
      }
    }
    return [...this.#nodes.values()];
  }

  /**
   * The nodes connected now (notification stream open) that load `org`'s APIs: those registered
   * for it, or for every organisation.
   */
  serving(org: string): ServingNode[] {
    return this.#connected(org).map(servingOf);
  }

  #connected(org: string): NodeInfo[] {
    return this.list().filter(
      (n) => this.#streams.has(n.node_id) && (n.orgs.length === 0 || n.orgs.includes(org)),
    );
  }

  /**
   * Records what node `id` serves: `full` replaces what was known, otherwise the entries given
   * change it (null: no longer served). `unknown`: no node has this ID (registered with another
   * dashboard process, or before a restart); `incomplete`: a change came before the full report
   * it changes (the node sends its full report then).
   */
  report(
    id: string | string[] | undefined,
    r: {
      name: string;
      full: boolean;
      apis: Record<string, AppliedRevision | null>;
      policies: Record<string, AppliedRevision | null>;
      /** Whole when given; absent: unchanged. */
      leftOut?: Record<string, string>;
    },
  ): 'ok' | 'unknown' | 'incomplete' {
    if (typeof id !== 'string' || !this.#nodes.has(id)) return 'unknown';
    let record = this.#applied.get(id);
    if (!r.full && record === undefined) return 'incomplete';
    if (r.full || record === undefined) {
      record = { name: r.name, apis: new Map(), policies: new Map(), leftOut: {} };
      this.#applied.set(id, record);
    }
    if (r.name !== '') record.name = r.name;
    if (r.leftOut !== undefined) record.leftOut = r.leftOut;
    for (const kind of ['apis', 'policies'] as const) {
      for (const [doc, rev] of Object.entries(r[kind])) {
        if (rev === null) record[kind].delete(doc);
        else record[kind].set(doc, rev);
      }
    }
    return 'ok';
  }

  /**
   * The nodes connected now that load `org`, each with the revision of the API or policy `doc`
   * it serves (none: it does not serve it, or has not reported yet).
   */
  appliedBy(org: string, kind: 'apis' | 'policies', doc: string): AppliedNode[] {
    return this.#connected(org).map((n) => {
      const record = this.#applied.get(n.node_id);
      const revision = record?.[kind].get(doc);
      const name = record?.name !== undefined && record.name !== '' ? record.name : n.hostname || n.node_id;
      const leftOut = kind === 'apis' && revision === undefined ? record?.leftOut[doc] : undefined;
      return {
        id: n.node_id,
        name,
        ...servingOf(n),
        ...(revision === undefined ? {} : { [kind === 'apis' ? 'api' : 'policy']: revision }),
        ...(leftOut === undefined ? {} : { left_out: leftOut }),
      };
    });
  }
}

/** A node as the organisation's users see it. */
const servingOf = (n: NodeInfo): ServingNode => ({
  hostname: n.hostname,
  version: n.version,
  registered_at: n.registered_at,
  last_seen: n.last_seen,
});

/**
 * `GET /api/nodes`: the gateways connected to this dashboard process that serve the caller's
 * organisation, `{"org": ..., "nodes": [...]}` (the operator names them in its status).
 */
export function servingNodes(nodes: Nodes): Handler {
  return (c) => {
    const org = callerOf(c).org;
    return Promise.resolve(json({ org, nodes: nodes.serving(org) }));
  };
}

/** One API as a node loads it: the stored definition (classic, or the OAS / streams document). */
export interface NodeApi {
  id: string;
  org: string;
  kind: string;
  definition: unknown;
}

/** What `/system/config` answers. */
export interface NodeConfig {
  apis: NodeApi[];
  policies: { id: string; org: string; policy: unknown }[];
  /** Hash of the rest: unchanged means nothing to reload. */
  revision: string | null;
}

/** The APIs and policies of the organisations, in one answer. */
export async function nodeConfig(store: Store, asked: readonly string[]): Promise<NodeConfig> {
  const apis: NodeApi[] = [];
  const policies: NodeConfig['policies'] = [];
  for (const org of await orgIds(store, asked)) {
    for (const d of (await store.list(org, 'apis')).items) {
      apis.push({ id: d.id, org, kind: String(d.body.kind), definition: d.body.definition });
    }
    for (const d of (await store.list(org, 'policies')).items)
      policies.push({ id: d.id, org, policy: d.body });
  }
  return { apis, policies, revision: hashOf({ apis, policies }) };
}

/** The key stored under `id` (its hash) in one of the organisations, or undefined. */
export async function nodeKey(store: Store, asked: readonly string[], id: string): Promise<unknown> {
  for (const org of await orgIds(store, asked)) {
    const d = await store.get(org, 'keys', id);
    if (d !== undefined) return d.body;
  }
  return undefined;
}

/**
 * Serves one notification stream: `event: hello` at once (a node that reconnects reloads, as it
 * may have missed changes), then `event: change` with a Change per committed write in the
 * organisations asked for, and a comment every 15 s.
 */
export function serveNotifications(
  req: IncomingMessage,
  res: ServerResponse,
  notifier: Notifier,
  log: Logger,
): void {
  const orgs = orgsOf(new URL(req.url ?? '/', 'http://dashboard.invalid'));
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-store',
    connection: 'keep-alive',
  });
  res.write(`event: hello\ndata: ${JSON.stringify({ orgs })}\n\n`);
  const unsubscribe = notifier.subscribe((c) => {
    if (orgs.length > 0 && !orgs.includes(c.org)) return;
    res.write(`event: change\ndata: ${JSON.stringify(c)}\n\n`);
  });
  const heartbeat = setInterval(() => {
    res.write(': ping\n\n');
  }, HEARTBEAT_MS);
  heartbeat.unref();
  log.info('node notifications open', { orgs });
  const untrack = notifier.track(() => {
    res.end();
  });
  const done = (): void => {
    clearInterval(heartbeat);
    unsubscribe();
    untrack();
  };
  res.once('close', done);
  req.socket.setKeepAlive(true);
}
