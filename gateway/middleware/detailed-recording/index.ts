/**
 * Detailed recording (`enable_detailed_recording` on an API): the analytics record of each
 * request of the API carries its query, its request body and the upstream's response body
 * (schemas/rules/analytics-detail.ts: at most DETAIL_BODY_LIMIT bytes of each, cut and marked
 * beyond), which the dashboard keeps as the API's request log. Compiled only when analytics are
 * on (a dashboard to send records to): otherwise nothing would read what it records.
 *
 * The request body is read whole before the upstream call (and sent on as read) when its
 * Content-Length says it is at most MAX_READ_BODY (and within the API's size limit); a larger
 * body, or one sent without a length (chunked), streams upstream unread and is recorded as cut,
 * with its declared size. The query is recorded without the parameters the request's credentials
 * came from. The response body is heard as the client gets it (the response tap, as
 * the response cache hears it). A route with this middleware reads bodies, so the fast path hands
 * its requests to node:http (`readsBody`), whichever `fast_path` says.
 */
import type { GatewayConfig } from '../../config/schema.ts';
import { MAX_READ_BODY, teeTap, type RequestContext, type ResponseTap } from '../../pipeline/context.ts';
import { reject } from '../../pipeline/compose.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import { around } from '../../pipeline/steps.ts';
import {
  DETAIL_BODY_LIMIT,
  recordedBody,
  type AnalyticsDetail,
  type RecordedBody,
} from '../../../schemas/rules/analytics-detail.ts';
import type { GatewayMiddleware } from '../deps.ts';

/** Whether the gateway sends analytics records (gateway/analytics/ analyticsOf). */
function analyticsOn(
  c: Pick<GatewayConfig, 'dashboard_url' | 'analytics_dashboard_url' | 'node_secret' | 'analytics_enabled'>,
): boolean {
  return (
    c.analytics_enabled &&
    (c.dashboard_url ?? c.analytics_dashboard_url) !== undefined &&
    c.node_secret !== undefined
  );
}

/** Hears the upstream's response body, keeping its first DETAIL_BODY_LIMIT bytes. */
class BodyRecorder implements ResponseTap {
  #chunks: Buffer[] = [];
  #kept = 0;
  #size = 0;
  #ended = false;

  start(): void {
    this.#chunks = [];
    this.#kept = 0;
    this.#size = 0;
    this.#ended = false;
  }

  data(chunk: Buffer): void {
    this.#size += chunk.length;
    if (this.#kept >= DETAIL_BODY_LIMIT) return;
    const part = chunk.subarray(0, DETAIL_BODY_LIMIT - this.#kept);
    this.#chunks.push(part);
    this.#kept += part.length;
  }

  end(): void {
    this.#ended = true;
  }

  /** What was heard so far (cut when the response did not end cleanly). */
  read(): RecordedBody {
    const body = recordedBody(Buffer.concat(this.#chunks), this.#size, false);
    if (!this.#ended && this.#size > 0) body.truncated = true;
    return body;
  }
}

const NONE = Buffer.alloc(0);

/** The request's query without the parameters its credentials came from (never recorded). */
function recordedQuery(ctx: RequestContext): string {
  const names = (ctx.state.credentials ?? []).filter((c) => c.kind === 'query').map((c) => c.name);
  if (ctx.query === '' || names.length === 0) return ctx.query;
  const params = new URLSearchParams(ctx.query.slice(1));
  for (const n of names) params.delete(n);
  const left = params.toString();
  return left === '' ? '' : `?${left}`;
}

/** See the module comment. */
export const detailedRecording: GatewayMiddleware = {
  name: 'detailed-recording',
  enabled: (api, deps) => api.enable_detailed_recording === true && analyticsOn(deps.config),
  readsBody: (api) => api.enable_detailed_recording === true,
  create: () =>
    around(async (ctx, next) => {
      const length = ctx.headers['content-length'];
      const declared = length === undefined ? 0 : Number(length);
      const streamed = length === undefined && ctx.headers['transfer-encoding'] !== undefined;
      let request: RecordedBody;
      if (streamed || declared > Math.min(MAX_READ_BODY, ctx.upstream.bodyLimit ?? MAX_READ_BODY)) {
        // Left to stream upstream unread (the size limit, if any, still counts it).
        request = recordedBody(NONE, declared, true);
      } else if (declared > 0) {
        const body = await ctx.readBody(MAX_READ_BODY);
        if (body === undefined) return reject(ctx, GatewayError.bodyTooLarge());
        request = recordedBody(body, body.length, false);
      } else request = recordedBody(NONE, 0, false);
      const response = new BodyRecorder();
      const query = recordedQuery(ctx);
      ctx.state.detail = {
        read: (): AnalyticsDetail => ({ query, request, response: response.read() }),
      };
      const other = ctx.upstream.tap;
      ctx.upstream.tap = other === undefined ? response : teeTap(other, response);
      await next();
      return undefined;
    }),
};
