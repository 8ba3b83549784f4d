/**
 * What the gateways in mode pro call (nodes/nodes.ts): `/system/...` under the node secret
 * (registration, what they applied, analytics, their configuration, keys, OAuth clients and
 * tokens, certificates) and `/admin/nodes` under the admin secret; and the user routes that read
 * which gateways are connected to this process.
 */
import type http from 'node:http';
import * as analytics from '../analytics/api.ts';
import * as certs from '../api/certs.ts';
import { fail, json, readObject, type DashboardDeps, type Reply } from '../api/http.ts';
import * as oauth from '../api/oauth.ts';
import * as oauthTokens from '../api/oauth-tokens.ts';
import { appliedBy, reportApplied } from '../nodes/applied.ts';
import {
  NODE_ID_HEADER,
  NODE_SECRET_HEADER,
  nodeConfig,
  nodeKey,
  nodeSecretOk,
  orgsOf,
  servingNodes,
  type Nodes,
  type Notifier,
} from '../nodes/nodes.ts';
import { read, type Route } from './routes.ts';

/** The user routes that read the gateways connected to this process. */
export function nodesRoutes(nodes: Nodes): Route[] {
  return [
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
}

/** Whether a request carries the node secret. */
export function nodeSecretOf(deps: DashboardDeps): (req: http.IncomingMessage) => boolean {
  return (req) => nodeSecretOk(deps.config.node_secret, req.headers[NODE_SECRET_HEADER]);
}

/**
 * `/system/...` (node secret) and `/admin/nodes` (admin secret); answers undefined for other paths.
 * `plainStore` is the store without the notifications to the gateways.
 */
export function systemRoutes(opts: {
  deps: DashboardDeps;
  plainStore: DashboardDeps['store'];
  nodes: Nodes;
  notifier: Notifier;
  adminOk: (given: string | string[] | undefined) => boolean;
}): (
  req: http.IncomingMessage,
  url: URL,
  path: string,
) => Promise<{ route: string; reply: Reply } | undefined> {
  const { deps, nodes, notifier, adminOk } = opts;
  const nodeOk = nodeSecretOf(deps);
  return async (req, url, path) => {
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
      const body = await readObject(req);
      const type = req.headers['content-type'] ?? 'application/json';
      return { route: name, reply: await analytics.ingest(deps, orgsOf(url), body, type) };
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
      return {
        route: name,
        reply: await oauthTokens.nodeReport(opts.plainStore, orgsOf(url), body, deps.now()),
      };
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
}
