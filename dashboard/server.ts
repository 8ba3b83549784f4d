/**
 * The dashboard's HTTP server: the web UI and the portal, then one ordered route list
 * (server/routes.ts) whose checks run in the order server/dispatch.ts fixes; the gateways of mode
 * pro call server/system.ts. Each answer is logged and counted (server/metrics.ts).
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SvcError, errorMessage } from '../lib/errors.ts';
import { wireBody } from '../lib/http/reply-body.ts';
import * as analytics from './analytics/api.ts';
import * as details from './analytics/details.ts';
import { fail, type DashboardDeps, type Reply } from './api/http.ts';
import { serveUi } from './api/ui.ts';
import { NODE_ID_HEADER, Nodes, Notifier, serveNotifications, withNotifications } from './nodes/nodes.ts';
import { portal } from './portal/serve.ts';
import { adminCheck } from './server/auth.ts';
import { dispatcher } from './server/dispatch.ts';
import { createMetrics } from './server/metrics.ts';
import { routes } from './server/routes.ts';
import { nodeSecretOf, nodesRoutes, systemRoutes } from './server/system.ts';

/** A running dashboard server. */
export interface DashboardServer {
  port: number;
  close(): Promise<void>;
}

/** Starts the dashboard on `config.listen_address:listen_port`. */
export async function startDashboard(given: DashboardDeps): Promise<DashboardServer> {
  const metrics = createMetrics();
  // Gateways in mode pro (nodes/nodes.ts): every committed write is announced to them.
  const notifier = new Notifier();
  const nodes = new Nodes(() => given.now());
  const deps: DashboardDeps = { ...given, store: withNotifications(given.store, notifier) };
  const portalPart = portal(deps, (fn) => notifier.subscribe(fn));
  const stopPruning = analytics.pruneAnalytics(deps);
  const stopPruningDetails = details.pruneDetails(deps);
  const nodeOk = nodeSecretOf(deps);
  const adminOk = adminCheck(deps.config.admin_secret);
  const dispatch = dispatcher({
    deps,
    // The routes, and those that read this process's state: the gateways connected to it.
    routes: [...routes, ...nodesRoutes(nodes)],
    registry: metrics.registry,
    system: systemRoutes({ deps, plainStore: given.store, nodes, notifier, adminOk }),
    adminOk,
  });

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
