/**
 * One request to its answer, with the order of the checks fixed here: authentication (401),
 * permission (403), the system-users-only setting (403), and only then the handler, which reads
 * and writes in the caller's organisation alone (another organisation's ID is simply not found:
 * 404).
 */
import type http from 'node:http';
import type { Registry } from 'prom-client';
import { decodeParams, findRoute } from '../../lib/http/router.ts';
import { TextBody } from '../../lib/http/reply-body.ts';
import { fail, type Ctx, type DashboardDeps, type Reply } from '../api/http.ts';
import { permits, type Caller } from '../rbac/rbac.ts';
import { authenticate } from './auth.ts';
import type { Route } from './routes.ts';

/** The message of a 403 under `api_writes_system_users_only`. */
export const SYSTEM_ONLY_MESSAGE =
  'API definitions can be written only by system users: api_writes_system_users_only is on in the dashboard configuration';

/** A request's answer and the route it is counted under. */
export interface Dispatched {
  route: string;
  reply: Reply;
}

/** The dispatcher of `routes`, after `/metrics` and the gateways' routes (`system`). */
export function dispatcher(opts: {
  deps: DashboardDeps;
  routes: readonly Route[];
  registry: Registry;
  system: (req: http.IncomingMessage, url: URL, path: string) => Promise<Dispatched | undefined>;
  adminOk: (given: string | string[] | undefined) => boolean;
}): (req: http.IncomingMessage, url: URL, log: DashboardDeps['log']) => Promise<Dispatched> {
  const { deps, routes, registry, adminOk } = opts;
  return async (req, url, log) => {
    let path = url.pathname;
    while (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
    if (path === '/metrics' && deps.config.metrics_enabled) {
      return {
        route: 'metrics',
        reply: {
          status: 200,
          body: new TextBody(registry.contentType, await registry.metrics()),
        },
      };
    }
    const system = await opts.system(req, url, path);
    if (system !== undefined) return system;
    const found = findRoute(routes, req.method ?? 'GET', path, { headAsGet: true });
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
        caller = await authenticate(deps.store, req.headers.authorization);
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
}
