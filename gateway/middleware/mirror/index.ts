/**
 * Request mirroring (`proxy.mirror_targets`, the Gateway API's `RequestMirror`): each target gets
 * a copy of the request as it goes upstream (method, path and query after the chain's rewrites,
 * headers after its header changes, the target's own Host), sent without waiting for it; its
 * answer is read and dropped. A mirror never delays or fails the request: a mirror that fails,
 * or answers later than MIRROR_TIMEOUT_MS, is only logged. A body is copied when the request
 * has a Content-Length of at most MAX_READ_BODY (read once, then sent upstream from memory, so
 * such an API is served by node:http); a larger body, or one without a length, is not mirrored
 * (logged), and the request goes on untouched. With `mirror_percent` below 100, each request is
 * picked at random with that chance (before its body is read), and a picked one goes to every
 * mirror.
 */
import http from 'node:http';
import https from 'node:https';
import { isTargetProblem, parseTarget, type Target } from '../../../schemas/rules/target.ts';
import { MAX_READ_BODY, contentLength, type RequestContext } from '../../pipeline/context.ts';
import { waits } from '../../pipeline/steps.ts';
import { upstreamRequestHeaders } from '../../upstream/headers.ts';
import { upstreamPathOf } from '../../upstream/proxy.ts';
import type { GatewayMiddleware } from '../deps.ts';

/** How long a mirror has to answer before its request is dropped. */
export const MIRROR_TIMEOUT_MS = 10_000;

/** The mirror targets of an API, parsed (the write-time check refused any that does not parse). */
function targetsOf(urls: readonly string[] | undefined): Target[] {
  return (urls ?? []).map(parseTarget).filter((t): t is Target => !isTargetProblem(t));
}

/** Whether the request carries a body (a length above 0, or one sent without a length). */
function hasBody(ctx: RequestContext): boolean {
  return contentLength(ctx.headers['content-length']) > 0 || ctx.headers['transfer-encoding'] !== undefined;
}

/** Sends one copy, not waited for; its answer is drained, its failure logged. */
function send(
  ctx: RequestContext,
  target: Target,
  agents: { http: http.Agent; https: https.Agent },
  body: Buffer | undefined,
): void {
  const secure = target.origin.startsWith('https://');
  const url = new URL(target.origin);
  const headers = upstreamRequestHeaders(ctx, target.host, false);
  delete headers['content-length'];
  if (body !== undefined) headers['content-length'] = String(body.length);
  const path = upstreamPathOf(target, ctx.route, ctx.path, ctx.query, ctx.upstream.path, ctx.listenPathAdded);
  const req = (secure ? https : http).request({
    protocol: url.protocol,
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port === '' ? (secure ? 443 : 80) : Number(url.port),
    method: ctx.upstream.method ?? ctx.method,
    path,
    headers,
    agent: secure ? agents.https : agents.http,
    timeout: MIRROR_TIMEOUT_MS,
  });
  req.on('response', (res) => {
    res.resume();
  });
  req.on('timeout', () => {
    req.destroy(new Error('mirror timed out'));
  });
  req.on('error', (err) => {
    ctx.log.warn('mirror request failed', { mirror: target.origin, error: err.message });
  });
  req.end(body);
}

/** See the module comment. */
export const mirror: GatewayMiddleware = {
  name: 'mirror',
  enabled: (api) => targetsOf(api.proxy.mirror_targets).length > 0,
  // A body is copied: it is read, which the fast path (heads only) does not do.
  readsBody: (api) => targetsOf(api.proxy.mirror_targets).length > 0,
  create: (api) => {
    const targets = targetsOf(api.proxy.mirror_targets);
    if (targets.length === 0) throw new Error('mirror: compiled for an API without mirror targets');
    const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
    const close = (): void => {
      agents.http.destroy();
      agents.https.destroy();
    };
    const percent = api.proxy.mirror_percent ?? 100;
    const fire = (ctx: RequestContext, body: Buffer | undefined): void => {
      for (const t of targets) send(ctx, t, agents, body);
    };
    return waits(
      (ctx) => {
        if (percent < 100 && Math.random() * 100 >= percent) return undefined;
        if (!hasBody(ctx)) {
          fire(ctx, undefined);
          return undefined;
        }
        const length = ctx.headers['content-length'];
        if (length === undefined || contentLength(length) > MAX_READ_BODY) {
          ctx.log.info('request not mirrored: its body has no length or is over the limit', {
            limit: MAX_READ_BODY,
          });
          return undefined;
        }
        return ctx.readBody(MAX_READ_BODY).then((body) => {
          if (body !== undefined) fire(ctx, body);
          return undefined;
        });
      },
      { close },
    );
  },
};
