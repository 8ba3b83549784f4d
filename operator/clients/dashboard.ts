import type { GatewayApiDefinition, GatewayPolicy, GatewaySession } from '../../schemas/generated/models.ts';
import {
  appliedList,
  type AppliedBy,
  type AppliedOf,
  type Connection,
  type KeyOps,
  type ManagementClient,
  type OasDocument,
  type PortalCollection,
  type PortalOps,
  type ServingGateways,
} from './management.ts';
import { ManagementTransport, type CallResult, type Method } from './transport.ts';

/** Options of {@link DashboardClient}. */
export interface DashboardClientOptions {
  /** Time-out of each call. */
  timeoutMs?: number;
}

/** The content type of streams API documents on `/api/apis/streams`. */
const STREAMS_TYPE = 'application/vnd.svc.streams.oas';

/** A basic-auth user as the dashboard takes it: a session with `basic_auth_data.password`. */
export type BasicAuthUser = Record<string, unknown> & { org_id?: string };

/**
 * The dashboard's management API (`/api/...`), mode pro: the same operations as the gateway
 * client, on the organisation of the connection's user. Every object created carries the
 * connection's `user_owners` and `user_group_owners`. Gateways in mode pro take their
 * configuration from the dashboard, so {@link reload} has nothing to ask.
 */
export class DashboardClient implements ManagementClient {
  readonly url: string;
  readonly #http: ManagementTransport;
  readonly #owners: { user_owners: string[]; user_group_owners: string[] };

  constructor(conn: Connection, opts: DashboardClientOptions = {}) {
    this.#owners = { user_owners: conn.userOwners ?? [], user_group_owners: conn.userGroupOwners ?? [] };
    this.#http = new ManagementTransport({
      peer: 'dashboard',
      url: conn.url,
      auth: { header: 'authorization', value: conn.auth },
      insecureSkipVerify: conn.insecureSkipVerify,
      timeoutMs: opts.timeoutMs ?? 10_000,
      textType: 'application/json',
    });
    this.url = this.#http.url;
  }

  async getApi(id: string): Promise<GatewayApiDefinition | undefined> {
    const res = await this.#call('GET', `/api/apis/${encodeURIComponent(id)}`, undefined, [404]);
    if (res.status === 404) return undefined;
    return (res.body as { api_definition: GatewayApiDefinition }).api_definition;
  }

  async createApi(def: GatewayApiDefinition): Promise<void> {
    await this.#call('POST', '/api/apis', { api_definition: def, ...this.#owners });
  }

  async updateApi(id: string, def: GatewayApiDefinition): Promise<void> {
    await this.#call('PUT', `/api/apis/${encodeURIComponent(id)}`, { api_definition: def, ...this.#owners });
  }

  deleteApi(id: string): Promise<boolean> {
    return this.#delete(`/api/apis/${encodeURIComponent(id)}`);
  }

  /** The OAS or streams document with this ID (one ID names one API of any kind). */
  async getOasApi(id: string): Promise<OasDocument | undefined> {
    const path = `/api/apis/oas/${encodeURIComponent(id)}`;
    const res = await this.#call('GET', path, undefined, [404, 400]);
    if (res.status === 404) return undefined;
    if (res.status === 200) return res.body as OasDocument;
    // 400: an API of another kind holds the ID; a streams API is read where streams live.
    const streams = await this.#call('GET', `/api/apis/streams/${encodeURIComponent(id)}`, undefined, [404]);
    return streams.status === 404 ? undefined : (streams.body as OasDocument);
  }

  async createOasApi(doc: OasDocument): Promise<void> {
    const streams = isStreams(doc);
    await this.#call('POST', `/api/apis/${streams ? 'streams' : 'oas'}${this.#ownersQuery()}`, doc, [], {
      contentType: streams ? STREAMS_TYPE : undefined,
    });
  }

  async updateOasApi(id: string, doc: OasDocument): Promise<void> {
    const streams = isStreams(doc);
    const path = `/api/apis/${streams ? 'streams' : 'oas'}/${encodeURIComponent(id)}${this.#ownersQuery()}`;
    await this.#call('PUT', path, doc, [], { contentType: streams ? STREAMS_TYPE : undefined });
  }

  async deleteOasApi(id: string): Promise<boolean> {
    const res = await this.#call('DELETE', `/api/apis/oas/${encodeURIComponent(id)}`, undefined, [404, 400]);
    if (res.status === 400) return this.#delete(`/api/apis/streams/${encodeURIComponent(id)}`);
    return res.status !== 404;
  }

  async getPolicy(id: string): Promise<GatewayPolicy | undefined> {
    const res = await this.#call('GET', `/api/portal/policies/${encodeURIComponent(id)}`, undefined, [404]);
    return res.status === 404 ? undefined : (res.body as GatewayPolicy);
  }

  /** Creates the policy under its own `id` (the dashboard needs `allow_explicit_policy_id`). */
  async createPolicy(policy: GatewayPolicy): Promise<void> {
    await this.#call('POST', '/api/portal/policies', policy);
  }

  async updatePolicy(id: string, policy: GatewayPolicy): Promise<void> {
    await this.#call('PUT', `/api/portal/policies/${encodeURIComponent(id)}`, policy);
  }

  deletePolicy(id: string): Promise<boolean> {
    return this.#delete(`/api/portal/policies/${encodeURIComponent(id)}`);
  }

  /**
   * Uploads the certificate, its chain and its private key: the dashboard keeps the key sealed,
   * never shows it to users, and hands it to its gateways only (HTTPS listeners, upstream mTLS).
   * The ID is the same as the gateway's (org ID and SHA-256 of the leaf), so the operator's
   * bookkeeping holds.
   */
  async addCert(pem: string, _orgId: string): Promise<boolean> {
    // The dashboard files the certificate under the caller's organisation.
    const res = await this.#call('POST', '/api/certs', pem.endsWith('\n') ? pem : `${pem}\n`, [409], {
      contentType: 'application/x-pem-file',
    });
    return res.status !== 409;
  }

  deleteCert(id: string): Promise<boolean> {
    return this.#delete(`/api/certs/${encodeURIComponent(id)}`);
  }

  /**
   * `/api/keys`: a token is imported by its value (`POST /api/keys/{key}`), a basic-auth user
   * registered at `/api/apis/keys/basic/{username}`; then both are named by hash
   * (`?hashed=true`). The dashboard keeps only hashes. Counters live in the gateways, under the
   * session's `counter_id`: the dashboard resets none, so every write keeps them.
   */
  readonly keys: KeyOps = {
    get: async (keyHash) => {
      const res = await this.#call(
        'GET',
        `/api/keys/${encodeURIComponent(keyHash)}?hashed=true`,
        undefined,
        [404],
      );
      return res.status === 404 ? undefined : (res.body as { data: GatewaySession }).data;
    },
    create: async (raw, session) => {
      const path =
        session.basic_auth_data === undefined
          ? `/api/keys/${encodeURIComponent(raw)}`
          : `/api/apis/keys/basic/${encodeURIComponent(raw)}`;
      await this.#call('POST', path, session);
    },
    update: async (keyHash, session) => {
      await this.#call('PUT', `/api/keys/${encodeURIComponent(keyHash)}?hashed=true`, session);
    },
    delete: (keyHash) => this.#delete(`/api/keys/${encodeURIComponent(keyHash)}?hashed=true`),
  };

  /** Registers a basic-auth user; false when the username is taken. */
  async createBasicAuthUser(username: string, user: BasicAuthUser): Promise<boolean> {
    const res = await this.#call('POST', `/api/apis/keys/basic/${encodeURIComponent(username)}`, user, [409]);
    return res.status !== 409;
  }

  /** Replaces a basic-auth user (its password kept unless one is sent); false when there is none. */
  async updateBasicAuthUser(username: string, user: BasicAuthUser): Promise<boolean> {
    const res = await this.#call('PUT', `/api/apis/keys/basic/${encodeURIComponent(username)}`, user, [404]);
    return res.status !== 404;
  }

  /**
   * The caller's organisation and the gateways connected to the dashboard that serve it
   * (`GET /api/nodes`); undefined when the dashboard does not answer it (older dashboards: 404;
   * a user without read access to APIs: 403).
   */
  async servingGateways(): Promise<ServingGateways | undefined> {
    const res = await this.#call('GET', '/api/nodes', undefined, [403, 404]);
    if (res.status !== 200) return undefined;
    const body = res.body as { org?: unknown; nodes?: unknown };
    if (typeof body.org !== 'string' || !Array.isArray(body.nodes)) return undefined;
    const gateways = (body.nodes as { hostname?: unknown; version?: unknown }[]).map((n) => ({
      hostname: typeof n.hostname === 'string' ? n.hostname : '',
      version: typeof n.version === 'string' ? n.version : '',
    }));
    return { org: body.org, gateways };
  }

  /**
   * The gateways connected to the dashboard that load the caller's organisation, each with the
   * revision of the API or policy `of` it serves (`GET /api/nodes/{apis|policies}/{id}`);
   * undefined when the dashboard does not answer it (older dashboards: 404; a user who may not
   * read them: 403).
   */
  async appliedBy(of: AppliedOf): Promise<AppliedBy[] | undefined> {
    const path = `/api/nodes/${of.kind}/${encodeURIComponent(of.id)}`;
    const res = await this.#call('GET', path, undefined, [403, 404]);
    if (res.status !== 200) return undefined;
    return appliedList(res.body, of.kind === 'apis' ? 'api' : 'policy');
  }

  /**
   * The portal admin API (`/api/portal/config`, `/api/portal/{products|catalogues}/{id}`). The
   * settings are one document per organisation: deleting them writes `{}` (the defaults back).
   */
  readonly portal: PortalOps = {
    get: async (collection, id) => {
      const res = await this.#call('GET', portalPath(collection, id), undefined, [404]);
      return res.status === 404 ? undefined : (res.body as Record<string, unknown>);
    },
    put: async (collection, id, doc) => {
      await this.#call('PUT', portalPath(collection, id), doc);
    },
    delete: async (collection, id) => {
      if (collection === 'config') {
        await this.#call('PUT', portalPath(collection, id), {});
        return true;
      }
      return this.#delete(portalPath(collection, id));
    },
  };

  /** Nothing to do here: gateways in mode pro load from the dashboard, not from the operator. */
  reload(): Promise<void> {
    return Promise.resolve();
  }

  async close(): Promise<void> {
    await this.#http.close();
  }

  #ownersQuery(): string {
    const q = new URLSearchParams();
    if (this.#owners.user_owners.length > 0) q.set('user_owners', this.#owners.user_owners.join(','));
    if (this.#owners.user_group_owners.length > 0)
      q.set('user_group_owners', this.#owners.user_group_owners.join(','));
    const s = q.toString();
    return s === '' ? '' : `?${s}`;
  }

  async #delete(path: string): Promise<boolean> {
    const res = await this.#call('DELETE', path, undefined, [404]);
    return res.status !== 404;
  }

  #call(
    method: Method,
    path: string,
    body?: unknown,
    allowed: number[] = [],
    opts: { contentType?: string | undefined } = {},
  ): Promise<CallResult> {
    return this.#http.call(method, path, body, allowed, opts.contentType);
  }
}

function portalPath(collection: PortalCollection, id: string): string {
  return collection === 'config'
    ? '/api/portal/config'
    : `/api/portal/${collection}/${encodeURIComponent(id)}`;
}

function isStreams(doc: OasDocument): boolean {
  return doc['x-svc-streaming'] !== undefined;
}
