/**
 * Mock responses: the gateway answers an endpoint itself instead of the upstream, from
 * `extended_paths.mock_response` (`code`, default 200; `body`; `headers`) and from the `reply`
 * actions of the `ignored` and `white_list` entries' `method_actions` (`code`, `data`, `headers`;
 * per method). The first entry matching the method and path answers, in the order ignored, white
 * list, mock_response. It runs after authentication and limits (an `ignored` endpoint needs
 * none) and after the version's header changes, whose response headers it carries. Header names
 * or values that cannot be sent are left out.
 */
import type { EndPointMeta, VersionInfo } from '../../../schemas/generated/models.ts';
import { respond } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import {
  compileEndpoint,
  compileEntryEndpoint,
  endpointMatches,
  endpointPath,
  perVersion,
  type CompiledEndpoint,
} from '../../pipeline/endpoints.ts';

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const BAD_VALUE = /[\0-\x08\x0a-\x1f\x7f]/;

/** One mock, compiled. */
export interface Mock {
  endpoint: CompiledEndpoint;
  status: number;
  body: string;
  headers: Record<string, string>;
}

function headersOf(given: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [n, v] of Object.entries(given ?? {})) {
    const name = n.trim().toLowerCase();
    if (TOKEN.test(name) && !BAD_VALUE.test(v)) out[name] = v;
  }
  return out;
}

const statusOf = (code: number | undefined): number =>
  code !== undefined && code >= 200 && code <= 599 ? code : 200;

/** The mocks of a version, compiled; undefined when it has none. */
export function compileMocks(v: VersionInfo): Mock[] | undefined {
  const ignoreCase = v.ignore_endpoint_case === true;
  const out: Mock[] = [];
  const fromList = (list: readonly EndPointMeta[] | undefined): void => {
    for (const e of list ?? []) {
      if (e.disabled === true || e.path === undefined || e.path === '') continue;
      for (const [method, a] of Object.entries(e.method_actions ?? {})) {
        if (a.action !== 'reply') continue;
        out.push({
          endpoint: compileEndpoint(e.path, [method], ignoreCase || e.ignore_case === true),
          status: statusOf(a.code),
          body: a.data ?? '',
          headers: headersOf(a.headers),
        });
      }
    }
  };
  fromList(v.extended_paths?.ignored);
  fromList(v.extended_paths?.white_list);
  for (const m of v.extended_paths?.mock_response ?? []) {
    if (m.disabled === true || m.path === undefined || m.path === '') continue;
    out.push({
      endpoint: compileEntryEndpoint(m, ignoreCase),
      status: statusOf(m.code),
      body: m.body ?? '',
      headers: headersOf(m.headers),
    });
  }
  return out.length === 0 ? undefined : out;
}

/** See the module comment. */
export const mockResponses: GatewayMiddleware = {
  name: 'mock-responses',
  enabled: (api) => perVersion(api, compileMocks) !== undefined,
  create: (api) => {
    const of = perVersion(api, compileMocks);
    if (of === undefined) throw new Error('mock-responses: compiled for an API without mocks');
    return around(async (ctx, next) => {
      const mocks = of(ctx);
      if (mocks !== undefined) {
        const method = ctx.method.toUpperCase();
        const path = endpointPath(ctx);
        const hit = mocks.find((m) => endpointMatches(m.endpoint, method, path));
        if (hit !== undefined) return respond(ctx, hit.status, hit.body, hit.headers);
      }
      await next();
      return undefined;
    });
  },
};
