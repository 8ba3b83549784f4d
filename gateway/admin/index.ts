/**
 * The management API (GATEWAY-BEHAVIOUR §1). One ordered route list: a new resource (policies,
 * keys, OAS APIs) is one more entry. Every `/svc/...` call needs the secret; `/hello`,
 * `/ready` and `/metrics` don't, so probes and scrapers can call them. A trailing slash is
 * ignored; an unknown path is 404, a known path with another method 405; bodies are compact JSON
 * (Prometheus text for `/metrics`).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SvcError, errorMessage } from '../../lib/errors.ts';
import { createApi, deleteApi, getApi, listApis, updateApi } from './apis.ts';
import { addCert, deleteCert, getCerts, listCerts } from './certs.ts';
import { createKey, deleteKey, getKey, importKey, listKeys, resetKeyQuota, updateKey } from './keys.ts';
import { createOasApi, deleteOasApi, getOasApi, listOasApis, updateOasApi } from './oas.ts';
import { createOrg, deleteOrg, getOrg, updateOrg } from './orgs.ts';
import { createPolicy, deletePolicy, getPolicy, listPolicies, updatePolicy } from './policies.ts';
import { METRICS_CONTENT_TYPE } from '../metrics/metrics.ts';
import { hello, ready } from './health.ts';
import { secretChecker, statusBody, type AdminResponse } from './http.ts';
import { reloadGroup, reloadNode } from './reload.ts';
import { explainRequest } from './explain.ts';
import { appliedHere, listNodes, nodesOf } from './nodes.ts';
import {
  createClient,
  deleteClient,
  getClient,
  listClients,
  revokeAllTokens,
  revokeToken,
} from '../oauth2/admin.ts';
import { authorizeClient } from '../oauth2/authorize.ts';
import { decodeParams, findRoute, trimTrailingSlashes, type Route } from '../../lib/http/router.ts';
import { TextBody, wireBody } from '../../lib/http/reply-body.ts';
import type { AdminDeps, AdminHandler, AdminRequest } from './types.ts';

export type { AdminDeps, AdminHandler, AdminRequest, ReloadReport } from './types.ts';

type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE';

interface AdminRoute extends Route<AdminHandler> {
  /** Whether the secret is required. */
  secret: boolean;
  methods: Partial<Record<Method, AdminHandler>>;
}

/** GET /metrics: Prometheus scrapes (no secret, like the probes); 404 when metrics are off. */
async function metrics(r: AdminRequest): Promise<AdminResponse> {
  if (r.deps.metrics === undefined) return statusBody(404, 'error', 'Not found');
  return { status: 200, body: new TextBody(METRICS_CONTENT_TYPE, await r.deps.metrics()) };
}

/** The routes, first match wins. */
const routes: readonly AdminRoute[] = [
  { path: /^\/hello$/, secret: false, methods: { GET: hello, HEAD: hello } },
  { path: /^\/metrics$/, secret: false, methods: { GET: metrics, HEAD: metrics } },
  { path: /^\/ready$/, secret: false, methods: { GET: ready, HEAD: ready } },
  // Before /svc/apis/{id}, which would take `oas` for an ID (refused as one).
  { path: /^\/svc\/apis\/oas$/, secret: true, methods: { GET: listOasApis, POST: createOasApi } },
  {
    path: /^\/svc\/apis\/oas\/([^/]+)$/,
    secret: true,
    methods: { GET: getOasApi, PUT: updateOasApi, DELETE: deleteOasApi },
  },
  { path: /^\/svc\/apis$/, secret: true, methods: { GET: listApis, POST: createApi } },
  {
    path: /^\/svc\/apis\/([^/]+)$/,
    secret: true,
    methods: { GET: getApi, PUT: updateApi, DELETE: deleteApi },
  },
  { path: /^\/svc\/policies$/, secret: true, methods: { GET: listPolicies, POST: createPolicy } },
  {
    path: /^\/svc\/policies\/([^/]+)$/,
    secret: true,
    methods: { GET: getPolicy, PUT: updatePolicy, DELETE: deletePolicy },
  },
  { path: /^\/svc\/keys$/, secret: true, methods: { GET: listKeys, POST: createKey } },
  // Before /svc/keys/{keyID}: `create` is the reference's path for a generated key.
  { path: /^\/svc\/keys\/create$/, secret: true, methods: { POST: createKey } },
  {
    path: /^\/svc\/keys\/([^/]+)$/,
    secret: true,
    methods: { GET: getKey, POST: importKey, PUT: updateKey, DELETE: deleteKey },
  },
  { path: /^\/svc\/keys\/([^/]+)\/reset$/, secret: true, methods: { POST: resetKeyQuota } },
  {
    path: /^\/svc\/org\/keys\/([^/]+)$/,
    secret: true,
    methods: { GET: getOrg, POST: createOrg, PUT: updateOrg, DELETE: deleteOrg },
  },
  { path: /^\/svc\/certs$/, secret: true, methods: { GET: listCerts, POST: addCert } },
  { path: /^\/svc\/certs\/([^/]+)$/, secret: true, methods: { GET: getCerts, DELETE: deleteCert } },
  // OAuth 2.0 clients (gateway/oauth2/); `create` before `{apiID}`.
  { path: /^\/svc\/oauth\/clients\/create$/, secret: true, methods: { POST: createClient } },
  { path: /^\/svc\/oauth\/clients\/([^/]+)$/, secret: true, methods: { GET: listClients } },
  {
    path: /^\/svc\/oauth\/clients\/([^/]+)\/([^/]+)$/,
    secret: true,
    methods: { GET: getClient, DELETE: deleteClient },
  },
  { path: /^\/svc\/oauth\/revoke$/, secret: true, methods: { POST: revokeToken } },
  { path: /^\/svc\/oauth\/revoke_all$/, secret: true, methods: { POST: revokeAllTokens } },
  { path: /^\/svc\/oauth\/authorize-client$/, secret: true, methods: { POST: authorizeClient } },
  { path: /^\/svc\/reload$/, secret: true, methods: { GET: reloadNode } },
  { path: /^\/svc\/reload\/group$/, secret: true, methods: { GET: reloadGroup } },
  { path: /^\/svc\/explain$/, secret: true, methods: { POST: explainRequest } },
  { path: /^\/svc\/applied$/, secret: true, methods: { GET: appliedHere } },
  { path: /^\/svc\/nodes$/, secret: true, methods: { GET: listNodes } },
  { path: /^\/svc\/nodes\/(apis|policies)\/([^/]+)$/, secret: true, methods: { GET: nodesOf } },
];

/** The management API of one process. */
export class Admin {
  readonly #deps: AdminDeps;
  readonly #secretOk: (given: string | string[] | undefined) => boolean;

  constructor(deps: AdminDeps) {
    this.#deps = deps;
    this.#secretOk = secretChecker(deps.secret);
  }

  /** Whether a path belongs to the management API (on a port it shares with APIs). */
  owns(path: string): boolean {
    // Most requests are for APIs: decide on the second character before trimming anything.
    const c = path.charCodeAt(1);
    if (c === 109 /* m */)
      return this.#deps.metrics !== undefined && trimTrailingSlashes(path) === '/metrics';
    if (c !== 115 /* s */ && c !== 104 /* h */ && c !== 114 /* r */) return false;
    const p = trimTrailingSlashes(path);
    return p === '/hello' || p === '/ready' || p === '/svc' || p.startsWith('/svc/');
  }

  /** Answers one management call. */
  async handle(req: IncomingMessage, res: ServerResponse, rawPath: string): Promise<void> {
    let out: AdminResponse;
    try {
      out = await this.#dispatch(req, trimTrailingSlashes(rawPath));
    } catch (err) {
      out = this.#failure(err);
    }
    // A body left unread (refused early, or too large) must not be parsed as the next request,
    // nor hold it up: the connection closes after this answer.
    const unread = !req.complete;
    if (unread) res.shouldKeepAlive = false;
    const body = wireBody(out.body, req.method);
    res.writeHead(out.status, {
      ...out.headers,
      'content-type': body.contentType,
      'content-length': Buffer.byteLength(body.text),
      ...(unread ? { connection: 'close' } : {}),
    });
    res.end(body.text);
  }

  async #dispatch(req: IncomingMessage, path: string): Promise<AdminResponse> {
    const isSvc = path === '/svc' || path.startsWith('/svc/');
    if (isSvc && !this.#secretOk(req.headers['x-svc-authorization'])) {
      return statusBody(403, 'error', 'Attempted administrative access with invalid or missing key!');
    }
    const found = findRoute(routes, req.method ?? 'GET', path);
    if (found.kind === 'method-not-allowed') {
      return {
        ...statusBody(405, 'error', 'Method not allowed'),
        headers: { allow: found.allow.join(', ') },
      };
    }
    const params = found.kind === 'found' ? decodeParams(found.groups) : undefined;
    if (found.kind !== 'found' || params === undefined) return statusBody(404, 'error', 'Not found');
    return await found.handler({ req, params, deps: this.#deps });
  }

  #failure(err: unknown): AdminResponse {
    if (err instanceof SvcError && err.status < 500) return statusBody(err.status, 'error', err.message);
    const errorId = randomUUID();
    this.#deps.log.error('management call failed', { error_id: errorId, error: errorMessage(err) });
    if (err instanceof SvcError && err.status === 503) {
      return statusBody(503, 'error', `Store unavailable (error ID ${errorId})`);
    }
    return statusBody(500, 'error', `Internal error (error ID ${errorId})`);
  }
}
