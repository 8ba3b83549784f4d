/**
 * The dashboard's HTTP server: one ordered route list. Each route says who may call it (no one in
 * particular for `/hello`, `/ready` and `/metrics`; the admin secret for `/admin/...`; a user's
 * access key for `/api/...`) and, per method, what the user needs. The order of the checks is
 * fixed here: authentication (401), permission (403), the system-users-only setting (403), and
 * only then the handler, which reads and writes in the caller's organisation alone (another
 * organisation's ID is simply not found: 404).
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { SvcError, errorMessage } from '../lib/errors.ts';
import { decodeParams, findRoute, type Route as HttpRoute } from '../lib/http/router.ts';
import { TextBody, wireBody } from '../lib/http/reply-body.ts';
import * as analytics from './analytics/api.ts';
import * as details from './analytics/details.ts';
import { quotas } from './analytics/quotas.ts';
import * as apis from './api/apis.ts';
import { listAudit } from './api/audit.ts';
import * as certs from './api/certs.ts';
import {
  fail,
  json,
  readObject,
  type Ctx,
  type DashboardDeps,
  type Handler,
  type Reply,
} from './api/http.ts';
import * as keys from './api/keys.ts';
import * as oauth from './api/oauth.ts';
import * as oauthTokens from './api/oauth-tokens.ts';
import * as orgs from './api/organisations.ts';
import * as policies from './api/policies.ts';
import * as users from './api/users.ts';
import { me, serveUi } from './api/ui.ts';
import {
  NODE_ID_HEADER,
  NODE_SECRET_HEADER,
  Nodes,
  Notifier,
  nodeConfig,
  nodeKey,
  nodeSecretOk,
  orgsOf,
  serveNotifications,
  servingNodes,
  withNotifications,
} from './nodes/nodes.ts';
import { appliedBy, reportApplied } from './nodes/applied.ts';
import { PORTAL_ADMIN_ROUTES } from './portal/admin.ts';
import { portal } from './portal/serve.ts';
import {
  accessKeyHash,
  effectivePermissions,
  isAdminPermissions,
  permits,
  sameHash,
  type Caller,
  type Requirement,
  type Resource,
} from './rbac/rbac.ts';

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** One method of a route: its handler, what the caller needs, and whether it writes an API definition. */
interface Action {
  handler: Handler;
  need?: Requirement;
  apiWrite?: boolean;
}

/** One route (lib/http/router.ts). `name` labels its metrics. */
interface Route extends HttpRoute<Action> {
  name: string;
  auth: 'open' | 'admin' | 'user';
  methods: Partial<Record<Method, Action>>;
}

const read = (resource: Resource): Requirement => ({ resource, level: 'read' });
const write = (resource: Resource): Requirement => ({ resource, level: 'write' });

/** GET, POST, PUT, DELETE of a resource with the usual needs. */
function crud(
  resource: Resource,
  h: Partial<Record<Method, Handler>>,
  apiWrite = false,
): Partial<Record<Method, Action>> {
  const out: Partial<Record<Method, Action>> = {};
  for (const [m, handler] of Object.entries(h) as [Method, Handler][]) {
    out[m] = {
      handler,
      need: m === 'GET' ? read(resource) : write(resource),
      apiWrite: apiWrite && m !== 'GET',
    };
  }
  return out;
}

async function hello(c: Ctx): Promise<Reply> {
  const h = await c.deps.store.health();
  return json({
    status: h.ok ? 'pass' : 'warn',
    version: c.deps.version,
    description: 'svc dashboard',
    details: {
      store: {
        kind: c.deps.store.kind,
        status: h.ok ? 'pass' : 'fail',
        ...(h.message === undefined ? {} : { output: h.message }),
      },
    },
  });
}

async function ready(c: Ctx): Promise<Reply> {
  const h = await c.deps.store.health();
  return h.ok
    ? json({ status: 'ok', message: 'ready' })
    : { status: 503, body: { status: 'error', message: 'not ready: the store does not answer' } };
}

/** The routes, first match wins. */
const routes: readonly Route[] = [
  { name: 'hello', path: /^\/hello$/, auth: 'open', methods: { GET: { handler: hello } } },
  { name: 'ready', path: /^\/ready$/, auth: 'open', methods: { GET: { handler: ready } } },
  {
    name: 'organisations',
    path: /^\/admin\/organisations$/,
    auth: 'admin',
    methods: { GET: { handler: orgs.listOrgs }, POST: { handler: orgs.createOrg } },
  },
  {
    name: 'organisation',
    path: /^\/admin\/organisations\/([^/]+)$/,
    auth: 'admin',
    methods: {
      GET: { handler: orgs.getOrg },
      PUT: { handler: orgs.updateOrg },
      DELETE: { handler: orgs.deleteOrg },
    },
  },
  {
    name: 'admin_users',
    path: /^\/admin\/users$/,
    auth: 'admin',
    methods: { POST: { handler: orgs.adminCreateUser } },
  },
  // Before /api/apis/{id}, which would take `oas`, `streams` or `keys` for an ID.
  {
    name: 'oas_apis',
    path: /^\/api\/apis\/oas$/,
    auth: 'user',
    methods: crud('apis', { GET: apis.listOasApis, POST: apis.createOasApi }, true),
  },
  {
    name: 'oas_api',
    path: /^\/api\/apis\/oas\/([^/]+)$/,
    auth: 'user',
    methods: crud('apis', { GET: apis.getOasApi, PUT: apis.updateOasApi, DELETE: apis.deleteOasApi }, true),
  },
  {
    name: 'streams_apis',
    path: /^\/api\/apis\/streams$/,
    auth: 'user',
    methods: crud('streams', { GET: apis.listStreamsApis, POST: apis.createStreamsApi }, true),
  },
  {
    name: 'streams_api',
    path: /^\/api\/apis\/streams\/([^/]+)$/,
    auth: 'user',
    methods: crud(
      'streams',
      { GET: apis.getStreamsApi, PUT: apis.updateStreamsApi, DELETE: apis.deleteStreamsApi },
      true,
    ),
  },
  // OAuth clients are credentials: the keys permission governs them, as it does keys.
  {
    name: 'oauth_clients',
    path: /^\/api\/apis\/oauth\/([^/]+)$/,
    auth: 'user',
    methods: crud('keys', { GET: oauth.listClients, POST: oauth.createClient }),
  },
  // The reference's revocation by client ID, before a client named `revoke` of an API.
  {
    name: 'oauth_client_revoke',
    path: /^\/api\/apis\/oauth\/([^/]+)\/(revoke|revoke_all)$/,
    auth: 'user',
    methods: crud('keys', { POST: oauthTokens.revokeByClient }),
  },
  {
    name: 'oauth_client_tokens',
    path: /^\/api\/apis\/oauth\/([^/]+)\/([^/]+)\/tokens(?:\/([0-9a-f]{64}))?$/,
    auth: 'user',
    methods: crud('keys', { GET: oauthTokens.listTokens, DELETE: oauthTokens.deleteTokens }),
  },
  {
    name: 'oauth_client',
    path: /^\/api\/apis\/oauth\/([^/]+)\/([^/]+)$/,
    auth: 'user',
    methods: crud('keys', { GET: oauth.getClient, DELETE: oauth.deleteClient }),
  },
  {
    name: 'basic_user',
    path: /^\/api\/apis\/keys\/basic\/([^/]+)$/,
    auth: 'user',
    methods: crud('keys', { POST: keys.writeBasicUser, PUT: keys.writeBasicUser }),
  },
  {
    name: 'apis',
    path: /^\/api\/apis$/,
    auth: 'user',
    methods: crud('apis', { GET: apis.listApis, POST: apis.createApi }, true),
  },
  {
    name: 'api',
    path: /^\/api\/apis\/([^/]+)$/,
    auth: 'user',
    methods: crud('apis', { GET: apis.getApi, PUT: apis.updateApi, DELETE: apis.deleteApi }, true),
  },
  {
    name: 'policies',
    path: /^\/api\/portal\/policies$/,
    auth: 'user',
    methods: crud('policies', { GET: policies.listPolicies, POST: policies.createPolicy }),
  },
  {
    name: 'policy',
    path: /^\/api\/portal\/policies\/([^/]+)$/,
    auth: 'user',
    methods: crud('policies', {
      GET: policies.getPolicy,
      PUT: policies.updatePolicy,
      DELETE: policies.deletePolicy,
    }),
  },
  {
    name: 'keys',
    path: /^\/api\/keys$/,
    auth: 'user',
    methods: crud('keys', { GET: keys.listKeys, POST: keys.createKey }),
  },
  {
    name: 'key_reset',
    path: /^\/api\/keys\/([^/]+)\/reset$/,
    auth: 'user',
    methods: crud('keys', { POST: keys.resetKeyQuota }),
  },
  {
    name: 'key',
    path: /^\/api\/keys\/([^/]+)$/,
    auth: 'user',
    methods: crud('keys', {
      GET: keys.getKey,
      POST: keys.importKey,
      PUT: keys.updateKey,
      DELETE: keys.deleteKey,
    }),
  },
  {
    name: 'certs',
    path: /^\/api\/certs$/,
    auth: 'user',
    methods: crud('certs', { GET: certs.listCerts, POST: certs.addCert }),
  },
  {
    name: 'cert',
    path: /^\/api\/certs\/([^/]+)$/,
    auth: 'user',
    methods: crud('certs', { GET: certs.getCert, DELETE: certs.deleteCert }),
  },
  {
    name: 'users',
    path: /^\/api\/users$/,
    auth: 'user',
    methods: crud('users', { GET: users.listUsers, POST: users.postUser }),
  },
  {
    name: 'user_key_reset',
    path: /^\/api\/users\/([^/]+)\/actions\/key\/reset$/,
    auth: 'user',
    methods: crud('users', { POST: users.resetUserKey }),
  },
  {
    name: 'user',
    path: /^\/api\/users\/([^/]+)$/,
    auth: 'user',
    methods: crud('users', { GET: users.getUser, PUT: users.putUser, DELETE: users.deleteUser }),
  },
  {
    name: 'groups',
    path: /^\/api\/usergroups$/,
    auth: 'user',
    methods: crud('users', { GET: users.listGroups, POST: users.createGroup }),
  },
  {
    name: 'group',
    path: /^\/api\/usergroups\/([^/]+)$/,
    auth: 'user',
    methods: crud('users', { GET: users.getGroup, PUT: users.updateGroup, DELETE: users.deleteGroup }),
  },
  {
    name: 'analytics_traffic',
    path: /^\/api\/analytics\/traffic$/,
    auth: 'user',
    methods: { GET: { handler: analytics.traffic, need: read('analytics') } },
  },
  {
    name: 'analytics_requests',
    path: /^\/api\/analytics\/requests$/,
    auth: 'user',
    methods: { GET: { handler: details.requests, need: read('analytics') } },
  },
  {
    name: 'analytics_quotas',
    path: /^\/api\/analytics\/quotas$/,
    auth: 'user',
    methods: { GET: { handler: quotas, need: read('analytics') } },
  },
  ...PORTAL_ADMIN_ROUTES,
  { name: 'me', path: /^\/api\/me$/, auth: 'user', methods: { GET: { handler: me } } },
  {
    name: 'audit',
    path: /^\/api\/audit$/,
    auth: 'user',
    methods: { GET: { handler: listAudit, need: 'admin' } },
  },
];

/** The message of a 403 under `api_writes_system_users_only`. */
export const SYSTEM_ONLY_MESSAGE =
  'API definitions can be written only by system users: api_writes_system_users_only is on in the dashboard configuration';

/** A running dashboard server. */
export interface DashboardServer {
  port: number;
  close(): Promise<void>;
}

/** Metrics of one dashboard process. */
function createMetrics(): {
  registry: Registry;
  observe: (route: string, method: string, status: number, seconds: number) => void;
} {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'svc_dashboard_' });
  const requests = new Counter({
    name: 'svc_dashboard_requests_total',
    help: 'Requests answered, by route, method and status.',
    labelNames: ['route', 'method', 'status'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'svc_dashboard_request_duration_seconds',
    help: 'Time to answer a request, by route.',
    labelNames: ['route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  return {
    registry,
    observe: (route, method, status, seconds) => {
      requests.inc({ route, method, status: String(status) });
      duration.observe({ route }, seconds);
    },
  };
}

/** Starts the dashboard on `config.listen_address:listen_port`. */
export async function startDashboard(given: DashboardDeps): Promise<DashboardServer> {
  const metrics = createMetrics();
  // Gateways in mode pro (nodes/nodes.ts): every committed write is announced to them.
  const notifier = new Notifier();
  const nodes = new Nodes(() => given.now());
  // The routes, and those that read this process's state: the gateways connected to it.
  const allRoutes: readonly Route[] = [
    ...routes,
    {
      name: 'nodes_serving',
      path: /^\/api\/nodes$/,
      auth: 'user',
      methods: { GET: { handler: servingNodes(nodes), need: read('apis') } },
    },
    // Which revision of an API or policy each connected gateway serves (nodes/applied.ts).
    ...(['apis', 'policies'] as const).map((kind) => ({
      name: `nodes_applied_${kind}`,
      path: new RegExp(`^/api/nodes/${kind}/([^/]+)$`),
      auth: 'user' as const,
      methods: { GET: { handler: appliedBy(nodes, kind), need: read(kind) } },
    })),
  ];
  const deps: DashboardDeps = { ...given, store: withNotifications(given.store, notifier) };
  const portalPart = portal(deps);
  const stopPruning = analytics.pruneAnalytics(deps);
  const stopPruningDetails = details.pruneDetails(deps);
  const nodeOk = (req: http.IncomingMessage): boolean =>
    nodeSecretOk(deps.config.node_secret, req.headers[NODE_SECRET_HEADER]);
  /** `/system/...` (node secret) and `/admin/nodes` (admin secret); undefined for other paths. */
  const nodeRoute = async (
    req: http.IncomingMessage,
    url: URL,
    path: string,
  ): Promise<{ route: string; reply: Reply } | undefined> => {
    if (path === '/admin/nodes') {
      if (!adminOk(req.headers['admin-auth']))
        return {
          route: 'nodes',
          reply: fail(401, 'Not authorised: send the admin secret in the admin-auth header'),
        };
      return { route: 'nodes', reply: json({ nodes: nodes.list(), notification_streams: notifier.size }) };
    }
    if (!path.startsWith('/system/')) return undefined;
    const name = `system_${path.split('/')[2] ?? ''}`;
    if (deps.config.node_secret === undefined)
      return {
        route: name,
        reply: fail(404, 'Gateways in mode pro are off: set node_secret (SVC_DB_NODE_SECRET)'),
      };
    if (!nodeOk(req))
      return {
        route: name,
        reply: fail(401, `Not authorised: send the node secret in the ${NODE_SECRET_HEADER} header`),
      };
    nodes.seen(req.headers[NODE_ID_HEADER]);
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    if (path === '/system/nodes' && method === 'POST') {
      const info = nodes.register(await readObject(req));
      deps.log.info('node registered', { node_id: info.node_id, hostname: info.hostname, orgs: info.orgs });
      return {
        route: name,
        reply: { status: 200, body: { Status: 'OK', Message: 'Node registered', Meta: info } },
      };
    }
    if (path === '/system/applied' && method === 'POST') {
      const reply = reportApplied(nodes, req.headers[NODE_ID_HEADER], await readObject(req));
      return { route: name, reply };
    }
    if (path === '/system/analytics' && method === 'POST') {
      return { route: name, reply: await analytics.ingest(deps, orgsOf(url), await readObject(req)) };
    }
    if (path === '/system/config' && method === 'GET') {
      return { route: name, reply: json(await nodeConfig(deps.store, orgsOf(url))) };
    }
    const key = /^\/system\/keys\/([0-9a-f]{64})$/.exec(path);
    if (key !== null && method === 'GET') {
      const found = await nodeKey(deps.store, orgsOf(url), key[1] ?? '');
      return { route: 'system_keys', reply: found === undefined ? fail(404, 'Key not found') : json(found) };
    }
    const client = /^\/system\/oauth-clients\/([0-9a-f]{64})$/.exec(path);
    if (client !== null && method === 'GET') {
      const found = await oauth.nodeClient(deps.store, orgsOf(url), client[1] ?? '');
      return {
        route: 'system_oauth_clients',
        reply: found === undefined ? fail(404, 'OAuth Client ID not found') : json(found),
      };
    }
    if (path === '/system/oauth-tokens' && method === 'POST') {
      // The plain store: the gateways are not told of a token one of them reported.
      const body = await readObject(req);
      return { route: name, reply: await oauthTokens.nodeReport(given.store, orgsOf(url), body, deps.now()) };
    }
    const cert = /^\/system\/certs\/([^/]+)$/.exec(path);
    if (cert !== null && method === 'GET') {
      const found = await certs.nodeCert(deps.store, orgsOf(url), decodeURIComponent(cert[1] ?? ''), {
        admin: deps.config.admin_secret,
        node: deps.config.node_secret,
      });
      return {
        route: 'system_certs',
        reply: found === undefined ? fail(404, 'Certificate not found') : json(found),
      };
    }
    return { route: name, reply: fail(404, 'Not found') };
  };
  const adminHash = createHash('sha256').update(deps.config.admin_secret).digest();
  const adminOk = (given: string | string[] | undefined): boolean =>
    typeof given === 'string' &&
    given !== '' &&
    timingSafeEqual(createHash('sha256').update(given).digest(), adminHash);

  const authenticate = async (header: string | undefined): Promise<Caller | undefined> => {
    if (header === undefined || header === '') return undefined;
    const key = header.replace(/^Bearer\s+/i, '').trim();
    const hash = accessKeyHash(key);
    const found = await deps.store.findByLookup('users', hash);
    if (found === undefined || !sameHash(found.lookup, hash) || found.doc.body.active === false)
      return undefined;
    const user = found.doc.body;
    const groupId = typeof user.group_id === 'string' && user.group_id !== '' ? user.group_id : undefined;
    const group = groupId === undefined ? undefined : await deps.store.get(found.org, 'groups', groupId);
    return {
      org: found.org,
      userId: found.doc.id,
      admin: isAdminPermissions(user.user_permissions),
      system: user.system_user === true,
      permissions: effectivePermissions(user, group?.body),
    };
  };

  const dispatch = async (
    req: http.IncomingMessage,
    url: URL,
    log: DashboardDeps['log'],
  ): Promise<{ route: string; reply: Reply }> => {
    let path = url.pathname;
    while (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
    if (path === '/metrics' && deps.config.metrics_enabled) {
      return {
        route: 'metrics',
        reply: {
          status: 200,
          body: new TextBody(metrics.registry.contentType, await metrics.registry.metrics()),
        },
      };
    }
    const system = await nodeRoute(req, url, path);
    if (system !== undefined) return system;
    const found = findRoute(allRoutes, req.method ?? 'GET', path, { headAsGet: true });
    if (found.kind === 'method-not-allowed') {
      return {
        route: found.route.name,
        reply: { ...fail(405, 'Method not allowed'), headers: { allow: found.allow.join(', ') } },
      };
    }
    if (found.kind === 'found') {
      const { route, handler: action } = found;
      let caller: Caller | undefined;
      if (route.auth === 'admin' && !adminOk(req.headers['admin-auth'])) {
        return {
          route: route.name,
          reply: fail(401, 'Not authorised: send the admin secret in the admin-auth header'),
        };
      }
      if (route.auth === 'user') {
        caller = await authenticate(req.headers.authorization);
        if (caller === undefined)
          return {
            route: route.name,
            reply: fail(401, 'Not authorised: send a user access key in the Authorization header'),
          };
        if (action.need !== undefined && !permits(caller, action.need)) {
          const need =
            action.need === 'admin'
              ? 'organisation admin'
              : `${action.need.level} access to ${action.need.resource}`;
          return {
            route: route.name,
            reply: fail(403, `Access to this resource has been disallowed: it needs ${need}`),
          };
        }
        if (action.apiWrite === true && deps.config.api_writes_system_users_only && !caller.system) {
          return { route: route.name, reply: fail(403, SYSTEM_ONLY_MESSAGE) };
        }
      }
      const params = decodeParams(found.groups);
      if (params === undefined) return { route: route.name, reply: fail(404, 'Not found') };
      const c: Ctx = {
        req,
        url,
        params,
        deps,
        caller,
        log: caller === undefined ? log : log.child({ org_id: caller.org, user_id: caller.userId }),
      };
      return { route: route.name, reply: await action.handler(c) };
    }
    return { route: 'unknown', reply: fail(404, 'Not found') };
  };

  const server = http.createServer((req, res) => {
    const started = process.hrtime.bigint();
    const requestId = randomUUID();
    const log = deps.log.child({ request_id: requestId });
    const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
    if (url.pathname === '/system/notifications' && req.method === 'GET' && nodeOk(req)) {
      nodes.seen(req.headers[NODE_ID_HEADER]);
      res.once('close', nodes.streamOpened(req.headers[NODE_ID_HEADER]));
      serveNotifications(req, res, notifier, log);
      return;
    }
    const answer = (route: string, out: Reply): void => {
      const body = wireBody(out.body, req.method);
      if (!req.complete) res.shouldKeepAlive = false;
      res.writeHead(out.status, {
        ...out.headers,
        'content-type': body.contentType,
        'content-length': Buffer.byteLength(body.text),
        'x-request-id': requestId,
      });
      res.end(body.text);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.observe(route, req.method ?? 'GET', out.status, seconds);
      log.info('request', {
        method: req.method,
        path: url.pathname,
        route,
        status: out.status,
        duration_ms: Math.round(seconds * 1000),
      });
    };
    const served = async (): Promise<{ route: string; reply: Reply } | undefined> =>
      (await portalPart.serve(req, url)) ??
      ((await serveUi(req.method ?? 'GET', url.pathname, res)) ? undefined : dispatch(req, url, log));
    served().then(
      (out) => {
        if (out === undefined) {
          log.debug('ui', { method: req.method, path: url.pathname, status: res.statusCode });
          return;
        }
        answer(out.route, out.reply);
      },
      (err: unknown) => {
        if (err instanceof SvcError && err.status < 500) {
          answer('error', fail(err.status, err.message));
          return;
        }
        const errorId = randomUUID();
        log.error('request failed', { error_id: errorId, error: errorMessage(err) });
        answer('error', fail(500, `Internal error (error ID ${errorId})`));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(deps.config.listen_port, deps.config.listen_address, () => {
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  deps.log.info('dashboard listening', {
    address: deps.config.listen_address,
    port,
    storage: deps.store.kind,
  });
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        notifier.endAll();
        stopPruning();
        stopPruningDetails();
        server.closeIdleConnections();
        setTimeout(() => {
          server.closeAllConnections();
        }, deps.config.shutdown_timeout_ms).unref();
      }),
  };
}
