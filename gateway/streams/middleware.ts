/**
 * The streams stage of the chain (routes/chain.ts, after authentication and limits, as the
 * seed's stream request flow says): a request whose path under the listen path is an endpoint of
 * one of the API's `http_server` inputs or outputs goes to that stream on Bento; any other path
 * continues along the chain to the upstream. The endpoint is looked up per request in the
 * engine's current set, so a stream changed by a reload is served at once.
 */
import { reject, respond } from '../pipeline/compose.ts';
import { around } from '../pipeline/steps.ts';
import type { GatewayMiddleware } from '../middleware/deps.ts';
import { BATCH_HEADER, BATCH_TYPE_HEADER } from '../../lib/bento/batching.ts';
import { removeRequestHeader } from '../pipeline/context.ts';
import type { Target } from '../pipeline/router.ts';
import { GatewayError } from '../pipeline/errors.ts';
import { batchPublish } from './batch.ts';

/** Bento's loopback address as an upstream, one object per port (the fast path keys its pool by it). */
let bento: Target | undefined;
function bentoTarget(port: number): Target {
  const host = `127.0.0.1:${String(port)}`;
  if (bento?.host !== host) bento = { origin: `http://${host}`, host, basePath: '', baseQuery: '' };
  return bento;
}

/** What a client gets when Bento cannot be reached (as `proxyToBento` answers). */
const UNAVAILABLE = new GatewayError(
  'GW_ERR_STREAMS_UNAVAILABLE',
  503,
  'The stream is not available right now',
  {
    'retry-after': '1',
  },
);

/** The streams middleware. */
export const streams: GatewayMiddleware = {
  name: 'streams',
  enabled: (api, deps) => api.is_oas === true && deps.streams?.hasStreams(api.api_id ?? '') === true,
  // No `readsBody`: a stream endpoint is the request's upstream, a service of the gateway's own
  // (`ctx.upstream.service`), called at once through the entrance's `upstreamCall`: on the fast
  // path (server/fast-path/) the body and the answer (event streams too) are relayed byte for
  // byte; node:http (WebSocket upgrades, chunked bodies) calls it with `callBento` (proxy.ts).
  create(api, deps) {
    const engine = deps.streams;
    const apiId = api.api_id ?? '';
    return around(async (ctx, next) => {
      if (engine === undefined) {
        await next();
        return undefined;
      }
      const listenPath = ctx.route.listenPath;
      const rest = ctx.path.length > listenPath.length ? ctx.path.slice(listenPath.length) : '/';
      const ws = (ctx.headers.upgrade ?? '').toLowerCase() === 'websocket';
      const found = engine.target(apiId, rest, ws);
      if (found === undefined) {
        await next();
        return undefined;
      }
      const { stream, endpoint } = found;
      // The batch headers are the gateway's to set (lib/bento/batching.ts), never a client's.
      removeRequestHeader(ctx.headers, BATCH_HEADER);
      removeRequestHeader(ctx.headers, BATCH_TYPE_HEADER);
      if (endpoint.kind === 'http' && !endpoint.verbs.includes(ctx.method)) {
        return reject(
          ctx,
          new GatewayError('GW_ERR_STREAM_METHOD', 405, 'Method Not Allowed', {
            allow: endpoint.verbs.join(', '),
          }),
        );
      }
      const port = engine.port;
      if (port === 0) {
        engine.connection(stream, endpoint, 503);
        return reject(ctx, UNAVAILABLE);
      }
      const target = `/${encodeURIComponent(stream.id)}${endpoint.path}`;
      // Stream analytics: each connection attempt to an endpoint, and whether Bento took it.
      const opened = (status: number): void => {
        engine.connection(stream, endpoint, status);
      };
      // A publish whose whole body came with its head (the fast path's `bodyPeek`) may go to Bento
      // with others (batch.ts).
      if (endpoint.batches === true && ctx.upstream.timeoutMs === undefined) {
        const body = ctx.bodyPeek?.peekBody();
        const type = ctx.headers['content-type'];
        if (body !== undefined && !(type?.startsWith('multipart/') ?? false)) {
          if ((await batchPublish(ctx, port, target, body, { sink: engine, stream })) === 'sent') {
            opened(200);
            // Bento's answer to a publish it took (no `sync_response`): 200, no body.
            return respond(ctx, 200, '');
          }
        }
      }
      const call = ctx.upstreamCall;
      if (call === undefined) {
        await next();
        return undefined;
      }
      ctx.upstream.target = bentoTarget(port);
      ctx.upstream.path = target;
      ctx.upstream.service = { unavailable: UNAVAILABLE, opened, consumer: endpoint.role === 'output' };
      await call();
      return undefined;
    });
  },
};
