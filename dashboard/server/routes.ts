/**
 * The dashboard's route table: each route's path, who may call it (no one in particular, the admin
 * secret, or a user's access key) and, per method, its handler and what the user needs. The
 * checks run in that order by dispatch.ts; the routes of the gateways in mode pro are in system.ts.
 */
import type { Route as HttpRoute } from '../../lib/http/router.ts';
import * as analytics from '../analytics/api.ts';
import * as details from '../analytics/details.ts';
import { quotas } from '../analytics/quotas.ts';
import * as apis from '../api/apis.ts';
import { listAudit } from '../api/audit.ts';
import * as certs from '../api/certs.ts';
import { json, type Ctx, type Handler, type Reply } from '../api/http.ts';
import * as keys from '../api/keys.ts';
import * as oauth from '../api/oauth.ts';
import * as oauthTokens from '../api/oauth-tokens.ts';
import * as orgs from '../api/organisations.ts';
import * as policies from '../api/policies.ts';
import * as users from '../api/users.ts';
import { me } from '../api/ui.ts';
import { PORTAL_ADMIN_ROUTES } from '../portal/admin.ts';
import type { Requirement, Resource } from '../rbac/rbac.ts';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** One method of a route: its handler, what the caller needs, and whether it writes an API definition. */
export interface Action {
  handler: Handler;
  need?: Requirement;
  apiWrite?: boolean;
}

/** One route (lib/http/router.ts). `name` labels its metrics. */
export interface Route extends HttpRoute<Action> {
  name: string;
  auth: 'open' | 'admin' | 'user';
  methods: Partial<Record<Method, Action>>;
}

export const read = (resource: Resource): Requirement => ({ resource, level: 'read' });
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
export const routes: readonly Route[] = [
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
    methods: crud('apis', { GET: apis.oasApis.list, POST: apis.oasApis.create }, true),
  },
  {
    name: 'oas_api',
    path: /^\/api\/apis\/oas\/([^/]+)$/,
    auth: 'user',
    methods: crud(
      'apis',
      { GET: apis.oasApis.get, PUT: apis.oasApis.update, DELETE: apis.oasApis.remove },
      true,
    ),
  },
  {
    name: 'streams_apis',
    path: /^\/api\/apis\/streams$/,
    auth: 'user',
    methods: crud('streams', { GET: apis.streamsApis.list, POST: apis.streamsApis.create }, true),
  },
  {
    name: 'streams_api',
    path: /^\/api\/apis\/streams\/([^/]+)$/,
    auth: 'user',
    methods: crud(
      'streams',
      { GET: apis.streamsApis.get, PUT: apis.streamsApis.update, DELETE: apis.streamsApis.remove },
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
