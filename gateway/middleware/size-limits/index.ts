/**
 * Request size limits of the request's version: `global_size_limit` (every endpoint; 0 or
 * `global_size_limit_disabled` turns it off) and `extended_paths.size_limits` (per endpoint and
 * method; `size_limit: 0` allows no body, as in the reference gateway). When both apply, the
 * smaller wins. A `Content-Length` past the limit is refused with 413 before anything is read; a
 * body without one (chunked, node:http only: the fast path hands such requests over) is counted
 * as it streams to the upstream and refused with 413 at the first byte past the limit.
 */
import type { GatewayApiDefinition, VersionInfo } from '../../../schemas/generated/models.ts';
import { reject } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import {
  compileEndpointEntries,
  endpointMatches,
  endpointPath,
  perVersionMiddleware,
  servedVersion,
  type CompiledEndpoint,
} from '../../pipeline/endpoints.ts';
import { GatewayError } from '../../pipeline/errors.ts';

interface SizeLimits {
  /** The version's limit, or undefined. */
  global: number | undefined;
  endpoints: { endpoint: CompiledEndpoint; limit: number }[];
}

/** The limits `api`'s served version sets, compiled; undefined when it sets none. */
export function compileSizeLimits(api: GatewayApiDefinition): SizeLimits | undefined {
  const v = servedVersion(api);
  return v === undefined ? undefined : compileVersionSizeLimits(v);
}

/** The limits a version sets, compiled; undefined when it sets none. */
export function compileVersionSizeLimits(v: VersionInfo): SizeLimits | undefined {
  const g = v.global_size_limit ?? 0;
  const global = g > 0 && v.global_size_limit_disabled !== true ? g : undefined;
  const endpoints =
    compileEndpointEntries(v, v.extended_paths?.size_limits, (e) => ({ limit: e.size_limit ?? 0 })) ?? [];
  return global === undefined && endpoints.length === 0 ? undefined : { global, endpoints };
}

/** The limit of one request: the smaller of the version's and the first matching endpoint's. */
export function limitFor(limits: SizeLimits, method: string, path: string): number | undefined {
  let limit = limits.global;
  for (const e of limits.endpoints) {
    if (!endpointMatches(e.endpoint, method, path)) continue;
    limit = limit === undefined ? e.limit : Math.min(limit, e.limit);
    break;
  }
  return limit;
}

/** See the module comment. */
export const sizeLimits: GatewayMiddleware = perVersionMiddleware(
  'size-limits',
  'limits',
  compileVersionSizeLimits,
  (limitsOf) =>
    around(async (ctx, next) => {
      const limits = limitsOf(ctx);
      const limit =
        limits === undefined ? undefined : limitFor(limits, ctx.method.toUpperCase(), endpointPath(ctx));
      if (limit !== undefined) {
        const length = ctx.headers['content-length'];
        if (length !== undefined) {
          if (Number(length) > limit) return reject(ctx, GatewayError.bodyTooLarge());
        } else if (ctx.headers['transfer-encoding'] !== undefined) {
          // Only node:http sees bodies without a length: counted as they stream.
          ctx.upstream.bodyLimit = Math.min(limit, ctx.upstream.bodyLimit ?? limit);
        }
      }
      await next();
      return undefined;
    }),
);
