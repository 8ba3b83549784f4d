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
  compileEntryEndpoint,
  endpointMatches,
  endpointPath,
  perVersion,
  type CompiledEndpoint,
} from '../../pipeline/endpoints.ts';

/** The method transforms of a version, compiled; undefined when it has none. */
export function compileMethodTransforms(
  v: VersionInfo,
): { endpoint: CompiledEndpoint; to: string }[] | undefined {
  const ignoreCase = v.ignore_endpoint_case === true;
  const out = (v.extended_paths?.method_transforms ?? [])
    .filter((e) => e.disabled !== true && e.path !== undefined && e.path !== '' && e.to_method !== undefined)
    .map((e) => ({
      endpoint: compileEntryEndpoint(e, ignoreCase),
      to: (e.to_method ?? '').toUpperCase(),
    }))
    .filter((e) => e.to !== '');
  return out.length === 0 ? undefined : out;
}

/** See the module comment. */
export const methodTransforms: GatewayMiddleware = {
  name: 'method-transforms',
  enabled: (api) => perVersion(api, compileMethodTransforms) !== undefined,
  create: (api) => {
    const of = perVersion(api, compileMethodTransforms);
    if (of === undefined) throw new Error('method-transforms: compiled for an API without them');
    return before((ctx) => {
      const list = of(ctx);
      if (list !== undefined) {
        const method = ctx.method.toUpperCase();
        const path = endpointPath(ctx);
        const found = list.find((e) => endpointMatches(e.endpoint, method, path));
        if (found !== undefined) ctx.upstream.method = found.to;
      }
      return undefined;
    });
  },
};
