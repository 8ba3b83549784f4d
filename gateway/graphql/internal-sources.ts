/**
 * Data sources that are other APIs of the gateway (`svc://<api>/<path>`, the reference's
 * `tyk://`): as the reference gateway does, the call is handed to that API's compiled chain in
 * this process, found by ID or name (schemas/rules/internal-target.ts), never through a listener:
 * its domain, its port and its protocol do not matter, and an `internal: true` API (served to no
 * client) is reachable, as are its internal endpoints. The request is a real HTTP exchange over an
 * in-memory connection, so the chain reads and answers it as a client's: its authentication,
 * limits and middleware, then its upstream. The target API sees the client's address.
 *
 * A graph calling itself (directly or through other APIs) is cut after MAX_HOPS data graphs: the
 * count goes along the calls in the async context, never in a header, so nothing of it reaches
 * an upstream.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { duplexPair, type Duplex } from 'node:stream';
import { ambiguousTargetMessage, parseInternalTarget, SELF } from '../../schemas/rules/internal-target.ts';
import { isTargetProblem } from '../../schemas/rules/target.ts';
import { internalFailure, respondError } from '../pipeline/compose.ts';
import { HttpContext, type RequestContext } from '../pipeline/context.ts';
import type { Route } from '../pipeline/router.ts';
import { splitTarget } from '../pipeline/url.ts';
import { handedPath, markHandedOver, type RouteLookup } from '../upstream/internal.ts';
import { serveUpgrade } from '../streams/upgrade.ts';

/** The most data graphs one request may go through. */
export const MAX_HOPS = 8;

/** How many data graphs the request being handled went through before this one. */
const graphHops = new AsyncLocalStorage<number>();

/** One call to an API of the gateway, as the engine makes it. */
export interface InternalRequest {
  method: string;
  headers: Record<string, string>;
  body?: string;
}

/** A data source's answer: status and parsed JSON (undefined when the body was not JSON). */
export interface DataSourceAnswer {
  status: number;
  body: unknown;
}

/** A call to another API of the gateway, ready to be sent; or why it can't be made. */
export type InternalSource = ((req: InternalRequest) => Promise<DataSourceAnswer>) | string;

/** What the in-memory server needs to run one call on its API's chain. */
interface Pending {
  route: Route;
  from: RequestContext;
  hops: number;
  /** The route's listen path was put before the source's path (`handedPath`). */
  added: boolean;
}

/** The calls waiting for their request, by the server side of their connection. */
const pending = new WeakMap<Duplex, Pending>();

/** Runs one request of an in-memory connection on its API's chain. */
function serveCall(req: IncomingMessage, res: ServerResponse): void {
  const p = pending.get(req.socket);
  if (p === undefined) {
    res.statusCode = 500;
    res.end();
    return;
  }
  pending.delete(req.socket);
  const { path, query } = splitTarget(req.url ?? '/');
  const ctx = new HttpContext({
    req,
    res,
    route: p.route,
    listener: p.from.listener,
    path,
    query,
    log: p.from.log,
  });
  // As a request handed over by an internal target: the API's internal endpoints serve it.
  markHandedOver(ctx, p.added);
  void graphHops.run(p.hops, async () => {
    try {
      await p.route.handle(ctx);
    } catch (err) {
      respondError(ctx, internalFailure(ctx, err));
    }
  });
}

/**
 * Never listens: it parses the requests of in-memory connections and runs their API's chain; an
 * upgrade (a supergraph's subscription to a subgraph API) enters the chain as the listeners'
 * upgrades do, and the chain takes the connection over.
 */
const server = createServer(serveCall);
server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
  serveUpgrade(req, socket, head, serveCall);
});

/** A new in-memory connection whose requests `route`'s chain serves: the client's end. */
function connection(route: Route, from: RequestContext, hops: number, added: boolean): Duplex {
  const [client, side] = duplexPair();
  // The target API sees the client's address (IP lists, rate limits by IP, context variables).
  Object.defineProperty(side, 'remoteAddress', { value: from.socketAddress });
  pending.set(side, { route, from, hops, added });
  // Closing the client's end closes the server's, as a TCP connection's close does: the two ends
  // of a pair are separate streams. A bare node:http server's end of a pair whose client end is
  // destroyed once the response is read never closes (30,000 calls kept 210 MiB of requests,
  // responses and parsers); the gateway's chain showed no such growth (heap snapshots flat over
  // 4,000 supergraph calls), and this makes sure of it.
  client.once('close', () => side.destroy());
  server.emit('connection', side);
  return client;
}

/** The Host a call to `route` names: its domain, else its ID. */
const hostOf = (route: Route): string =>
  route.domain !== undefined && !route.domain.includes('*') ? route.domain : route.id;

/** Sends one request over a new in-memory connection to `route`'s chain. */
function send(
  found: { route: Route; path: string; added: boolean },
  from: RequestContext,
  hops: number,
  req: InternalRequest,
) {
  const { route, path } = found;
  return new Promise<DataSourceAnswer>((resolve, reject) => {
    const client = connection(route, from, hops, found.added);
    const host = hostOf(route);
    const out = request(
      {
        createConnection: () => client,
        method: req.method,
        path,
        headers: { host, ...req.headers },
        signal: from.signal,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          client.destroy();
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = text === '' ? undefined : JSON.parse(text);
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
      },
    );
    out.on('error', (err) => {
      client.destroy();
      reject(err);
    });
    out.end(req.body);
  });
}

/**
 * The calls of one request's data graph to other APIs of the gateway: `url` is a filled
 * `svc://<api>/<path>?<query>`; the call goes to `<api>` with `<path>` (`handedPath`: matched
 * after its listen path unless under it, and sent upstream as it is).
 */
export function internalSources(
  ctx: RequestContext,
  routes: RouteLookup | undefined,
): (url: string) => InternalSource {
  const hops = graphHops.getStore() ?? 0;
  return (url) => {
    const found = lookup(ctx, routes, hops, url);
    if (typeof found === 'string') return found;
    return (req) => send(found, ctx, hops + 1, req);
  };
}

/**
 * A WebSocket upgrade to another API of the gateway (`svc://<api>/<path>`): the path and Host of
 * its request, and a new in-memory connection to that API's chain to send it on.
 */
export interface InternalUpgrade {
  path: string;
  host: string;
  connect: () => Duplex;
}

/** The upgrades of one request's data graph to other APIs of the gateway (internalSources' WebSocket form). */
export function internalUpgrades(
  ctx: RequestContext,
  routes: RouteLookup | undefined,
): (url: string) => InternalUpgrade | string {
  const hops = graphHops.getStore() ?? 0;
  return (url) => {
    const found = lookup(ctx, routes, hops, url);
    if (typeof found === 'string') return found;
    return {
      path: found.path,
      host: hostOf(found.route),
      connect: () => connection(found.route, ctx, hops + 1, found.added),
    };
  };
}

/** The API `url` names and the path of a call to it, or why there is none. */
function lookup(
  ctx: RequestContext,
  routes: RouteLookup | undefined,
  hops: number,
  url: string,
): { route: Route; path: string; added: boolean } | string {
  const t = parseInternalTarget(url);
  if (isTargetProblem(t)) return t.message;
  const next = routes?.(t.host.toLowerCase() === SELF ? ctx.route.id : t.host);
  if (next === undefined) return `data source API ${t.host} is not loaded on this gateway`;
  if ('ambiguous' in next) return ambiguousTargetMessage(t.host, next.ambiguous);
  if (hops >= MAX_HOPS)
    return `data source API ${t.host}: the request went through ${MAX_HOPS} data graphs (a loop?)`;
  // `svc://<api>` without a path hands nothing on after the API's listen path: its upstream gets
  // its target's path as written (the reference's subgraph at `http://host:4001/query`).
  const { path, added } = handedPath(next, t.basePath);
  return {
    route: next,
    added,
    path: `${path === '' ? '/' : path}${t.baseQuery === '' ? '' : `?${t.baseQuery}`}`,
  };
}
