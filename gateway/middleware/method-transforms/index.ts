/**
 * `extended_paths.method_transforms` of the request's version: the first entry matching the
 * request's method and path sends it upstream with `to_method` instead. Endpoint matching in
 * the rest of the chain still sees the client's method. HEAD is neither transformed nor a
 * target (its response has no body: schemas/rules/endpoints.ts refuses it).
 */
import type { VersionInfo } from '../../../schemas/generated/models.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { before } from '../../pipeline/steps.ts';
import {
  compileEndpointEntries,
  matchingEntry,
  perVersionMiddleware,
  type EndpointTable,
} from '../../pipeline/endpoints.ts';

/** The method transforms of a version, compiled; undefined when it has none. */
export function compileMethodTransforms(v: VersionInfo): EndpointTable<{ to: string }> | undefined {
  return compileEndpointEntries(v, v.extended_paths?.method_transforms, (e) => {
    const to = (e.to_method ?? '').toUpperCase();
    return to === '' ? undefined : { to };
  });
}

/** See the module comment. */
export const methodTransforms: GatewayMiddleware = perVersionMiddleware(
  'method-transforms',
  'them',
  compileMethodTransforms,
  (of) =>
    before((ctx) => {
      const found = matchingEntry(of(ctx), ctx);
      if (found !== undefined) ctx.upstream.method = found.to;
      return undefined;
    }),
);
