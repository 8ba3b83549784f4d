import type { GatewayApiDefinition, GatewayPolicy, GatewaySession } from '../../schemas/generated/models.ts';

/**
 * What the operator needs from a gateway (mode ce) or a dashboard (mode pro). Failures are
 * typed (lib/errors.ts): TransientError for anything worth retrying (network, time-outs,
 * 429, 5xx), InputError when the peer refused the object itself, SvcError with status 401/403
 * for bad credentials.
 */
export interface ManagementClient {
  /** Where the client talks to, for messages. */
  readonly url: string;
  /** The API, or undefined when the peer has none with this ID. */
  getApi(id: string): Promise<GatewayApiDefinition | undefined>;
  createApi(def: GatewayApiDefinition): Promise<void>;
  updateApi(id: string, def: GatewayApiDefinition): Promise<void>;
  /**
   * Replaces the API when the peer has it; false (nothing written) when it has none. A peer
   * without it: the caller reads the API first (`getApi`).
   */
  updateApiIfExists?(id: string, def: GatewayApiDefinition): Promise<boolean>;
  /** False when there was nothing to delete. */
  deleteApi(id: string): Promise<boolean>;
  /** The OAS API's document as stored, or undefined when the peer has none with this ID. */
  getOasApi(id: string): Promise<OasDocument | undefined>;
  /** Creates an OAS API; its ID is the document's `x-svc-api-gateway.info.id`. */
  createOasApi(doc: OasDocument): Promise<void>;
  updateOasApi(id: string, doc: OasDocument): Promise<void>;
  /** As `updateApiIfExists`, for an OAS API. */
  updateOasApiIfExists?(id: string, doc: OasDocument): Promise<boolean>;
  /** False when there was nothing to delete. */
  deleteOasApi(id: string): Promise<boolean>;
  /** The policy, or undefined when the peer has none with this ID. */
  getPolicy(id: string): Promise<GatewayPolicy | undefined>;
  /** Policies take effect when written: no reload. */
  createPolicy(policy: GatewayPolicy): Promise<void>;
  updatePolicy(id: string, policy: GatewayPolicy): Promise<void>;
  /** As `updateApiIfExists`, for a policy. */
  updatePolicyIfExists?(id: string, policy: GatewayPolicy): Promise<boolean>;
  /** False when there was nothing to delete. */
  deletePolicy(id: string): Promise<boolean>;
  /**
   * Keys (mode ce; absent where the peer's keys are not managed yet). A key is named by its
   * stored ID (the SHA-256 hex of the token or basic-auth user name), except when created: the
   * peer hashes what it is given and keeps only the hash.
   */
  keys?: KeyOps;
  /**
   * Uploads a certificate (PEM: the certificate, its chain, its private key) for `orgId`; false
   * when the peer already holds it (its ID is the org ID and the SHA-256 hex of the leaf's DER).
   */
  addCert(pem: string, orgId: string): Promise<boolean>;
  /** False when there was nothing to delete. */
  deleteCert(id: string): Promise<boolean>;
  /**
   * Makes the peer serve what was written. Calls made close together share one reload
   * (`/svc/reload/group` once per burst); the promise settles when that reload is done.
   */
  reload(): Promise<void>;
  close(): Promise<void>;
  /**
   * Mode pro: the organisation the dashboard files this client's writes under, and the gateways
   * connected to the dashboard that serve it; undefined when the peer does not say (an older
   * dashboard, a user who may not read APIs). Gateways (mode ce) serve what they hold: no method.
   */
  servingGateways?(): Promise<ServingGateways | undefined>;
  /**
   * Every gateway that must serve the API or policy `of`, each with the revision of it that it
   * serves: mode ce, every gateway process sharing the store of the one called (its registry of
   * gateways, `GET /svc/nodes/{apis|policies}/{id}`); mode pro, the gateways connected to the
   * dashboard that load the organisation (`GET /api/nodes/{apis|policies}/{id}`). Undefined when
   * the peer does not say (an older gateway or dashboard).
   */
  appliedBy?(of: AppliedOf): Promise<AppliedBy[] | undefined>;
  /**
   * Mode pro: the organisation's developer portal in the dashboard (docs/portal.md, admin API).
   * Gateways (mode ce) have no portal: absent.
   */
  portal?: PortalOps;
}

/** One kind of portal document: the settings (one per organisation), products or catalogues. */
export type PortalCollection = 'config' | 'products' | 'catalogues';

/**
 * The dashboard's portal admin API: documents by collection and ID (the settings have none). A
 * PUT creates or replaces; a refused document is an InputError naming the field.
 */
export interface PortalOps {
  /** The document as stored, or undefined when there is none with this ID. */
  get(collection: PortalCollection, id: string): Promise<Record<string, unknown> | undefined>;
  put(collection: PortalCollection, id: string, doc: Record<string, unknown>): Promise<void>;
  /** False when there was nothing to delete; the settings go back to their defaults. */
  delete(collection: PortalCollection, id: string): Promise<boolean>;
}

/** A document the gateways are asked about: an API or a policy, by ID. */
export interface AppliedOf {
  kind: 'apis' | 'policies';
  id: string;
}

/** One gateway process and the revision of an API it serves (none: it does not serve it). */
export interface AppliedBy {
  id: string;
  name: string;
  /** The hash of the document it serves (the operator's `latestSvcSpecHash` of it). */
  revision?: string;
  /** When it started serving it (ISO 8601). */
  appliedAt?: string;
}

/** Where a dashboard's APIs are served: its organisation and the gateways connected for it. */
export interface ServingGateways {
  org: string;
  gateways: { hostname: string; version: string }[];
}

/** An OpenAPI 3.x document with the `x-svc-api-gateway` extension: the body of an OAS API. */
export type OasDocument = Record<string, unknown>;

/** How to reach a gateway or dashboard. */
export interface Connection {
  mode: 'ce' | 'pro';
  url: string;
  auth: string;
  org: string;
  insecureSkipVerify: boolean;
  /** Mode pro: the license key (JWT form) this connection runs under. */
  licenseKey?: string;
  /** Mode pro: dashboard user IDs set as owners of every object created. */
  userOwners?: string[];
  /** Mode pro: dashboard user group IDs set as owners of every object created. */
  userGroupOwners?: string[];
}

/** Keys of a gateway, by stored ID (`keyHash`). */
export interface KeyOps {
  /** The key as stored (never its value nor its password), or undefined when there is none. */
  get(keyHash: string): Promise<GatewaySession | undefined>;
  /**
   * Creates the key `raw` (a token, or the user name of a session with `basic_auth_data`).
   * `keepCounters`: the counters its `counter_id` names are not reset (a rotated key's new value
   * goes on counting where the old one was).
   */
  create(raw: string, session: GatewaySession, opts?: { keepCounters?: boolean }): Promise<void>;
  /** Writes the key again, keeping its quota and rate counters. */
  update(keyHash: string, session: GatewaySession): Promise<void>;
  /** False when there was nothing to delete. */
  delete(keyHash: string): Promise<boolean>;
}

/**
 * The gateways a registry lists (a JSON array of `{id, name, <field>: {revision, applied_at}}`,
 * as gateways and dashboards answer it), read as {@link AppliedBy}; undefined when it is not one.
 */
export function appliedList(body: unknown, field: 'api' | 'policy'): AppliedBy[] | undefined {
  if (!Array.isArray(body)) return undefined;
  const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  return (body as Record<string, unknown>[]).map((n) => {
    const doc = n[field] as { revision?: unknown; applied_at?: unknown } | undefined;
    const revision = text(doc?.revision);
    const appliedAt = text(doc?.applied_at);
    return {
      id: text(n.id) ?? '',
      name: text(n.name) ?? text(n.id) ?? '',
      ...(revision === undefined ? {} : { revision }),
      ...(appliedAt === undefined ? {} : { appliedAt }),
    };
  });
}
