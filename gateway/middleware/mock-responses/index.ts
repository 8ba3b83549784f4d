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
import { respond, sendableHeader } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import {
  compileEndpoint,
  compileEndpointEntries,
  matchingEntry,
  perVersionMiddleware,
  type CompiledEndpoint,
} from '../../pipeline/endpoints.ts';

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
    if (sendableHeader(name, v)) out[name] = v;
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
  const mocked = compileEndpointEntries(v, v.extended_paths?.mock_response, (m) => ({
    status: statusOf(m.code),
    body: m.body ?? '',
    headers: headersOf(m.headers),
  }));
  out.push(...(mocked ?? []));
  return out.length === 0 ? undefined : out;
}

/** See the module comment. */
export const mockResponses: GatewayMiddleware = perVersionMiddleware(
  'mock-responses',
  'mocks',
  compileMocks,
  (of) =>
    around(async (ctx, next) => {
      const hit = matchingEntry(of(ctx), ctx);
      if (hit !== undefined) return respond(ctx, hit.status, hit.body, hit.headers);
      await next();
      return undefined;
    }),
);
