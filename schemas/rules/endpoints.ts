/**
 * Rules of a classic API's endpoint lists and per-endpoint settings
 * (`version_data.versions.<v>.extended_paths`, `paths`), written once for the webhooks and the
 * gateway: each endpoint path is a regular expression the gateway can compile (as
 * `endpointPathPattern` writes it), and what is not enforced yet inside a supported list (a
 * `reply` action, a mock) is refused by name.
 */
import type {
  CacheMeta,
  EndPointMeta,
  ExtendedPathsSet,
  GraphqlConfig,
  GraphqlDataSource,
  GraphqlDataSourceConfig,
  GraphqlEngineConfig,
  GraphqlEngineDataSource,
  GraphqlEngineDataSourceConfig,
  TypeFieldConfiguration,
  RoutingTrigger,
  RoutingTriggerOptions,
  StringRegexMap,
  TemplateData,
  URLRewriteMeta,
  VersionData,
  VersionInfo,
} from '../generated/models.ts';
import { NOT_SUPPORTED_YET } from '../support.ts';
import { quote, type FieldProblem } from './field-problem.ts';
import { list, model, problem, text, type Unchecked } from './read.ts';
import { FRAMING_HEADERS, HEADER_NAME, regexProblem } from './values.ts';
import { templateDataProblem } from './body-template.ts';
import { bodySchemaProblems } from './validate-json.ts';
import { virtualProblems } from './virtual-endpoints.ts';
import { fieldPath } from '../validate.ts';
import { isTargetProblem, parseTarget, upstreamEntry } from './target.ts';
import { INTERNAL_SCHEME, parseInternalTarget } from './internal-target.ts';

const pointerKey = (k: string): string => k.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * The regular expression source of an endpoint path: `{name}` parameters become `([^/]+)`; the
 * path is anchored at the start and must end at a segment boundary (`/users` matches `/users`
 * and `/users/42`, not `/usersX`), unless it ends with `/` itself.
 */
export function endpointPathPattern(path: string): string {
  const source = path.replace(/\{[^{}/]*\}/g, '([^/]+)');
  return `^(?:${source})${source.endsWith('/') ? '' : '(?=/|$)'}`;
}

/** Why `path` is not an endpoint path the gateway can compile, or undefined. */
export function endpointPathProblem(path: string): string | undefined {
  if (regexProblem(endpointPathPattern(path)) === undefined) return undefined;
  return `${quote(path)} is not a valid regular expression: escape special characters such as ( [ ? with a backslash`;
}

/**
 * The time a version's `expires` (`2006-01-02 15:04`, UTC, as the reference gateway writes it)
 * stands for, in milliseconds since the epoch; undefined when it is not such a time.
 */
export function versionExpiry(expires: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2})$/.exec(expires.trim());
  if (m === null) return undefined;
  const [y, mo, d, h, mi] = m.slice(1).map(Number) as [number, number, number, number, number];
  const t = Date.UTC(y, mo - 1, d, h, mi);
  const back = new Date(t);
  return back.getUTCMonth() === mo - 1 && back.getUTCDate() === d && h < 24 && mi < 60 ? t : undefined;
}

/** The endpoint lists of `extended_paths` whose entries are `EndPointMeta`. */
export const ENDPOINT_LISTS = ['ignored', 'white_list', 'black_list'] as const;

/** Lists of `extended_paths` whose entries have a `path` the gateway compiles. */
const PATH_LISTS = [
  ...ENDPOINT_LISTS,
  'size_limits',
  'transform_headers',
  'transform_response_headers',
  'method_transforms',
  'url_rewrites',
  'hard_timeouts',
  'circuit_breakers',
  'validate_json',
  'advance_cache_config',
  'mock_response',
  'transform',
  'transform_response',
  'track_endpoints',
  'do_not_track_endpoints',
  'internal',
  'virtual',
] as const satisfies readonly (keyof ExtendedPathsSet)[];

/** Control characters a header value must not carry. */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const BAD_HEADER_VALUE = /[\0-\x08\x0a-\x1f\x7f]/;
/** A request context variable (`$tyk_context.path`); group 1 is its name. */
export const CONTEXT_VARIABLE = /\$tyk_context\.([A-Za-z0-9_\-.]+)/;
/** A session metadata variable (`$tyk_meta.tier`); group 1 is its key. */
export const META_VARIABLE = /\$tyk_meta\.([A-Za-z0-9_\-.]+)/;
/** The reference's secret stores, which svc does not read. */
const SECRET_VARIABLE = /\$(tyk_secrets|secret_env|secret_conf|secret_vault|secret_consul)\./;
/** Context variable names svc fills (gateway/pipeline/variables.ts). */
const CONTEXT_NAMES = new Set(['path', 'path_parts', 'remote_addr', 'request_id', 'request_data']);
const CONTEXT_PREFIXES = ['headers_', 'cookies_', 'trigger-'];

/** Problems of the variables in a header value or a rewrite target (`at`: its field path). */
export function variableProblems(at: string, value: string): FieldProblem[] {
  const out: FieldProblem[] = [];
  const secret = SECRET_VARIABLE.exec(value);
  if (secret !== null) {
    out.push(
      problem(at, 'NotSupportedYet', `${NOT_SUPPORTED_YET}: secret store variables ($${secret[1] ?? ''}.)`),
    );
  }
  for (const m of value.matchAll(new RegExp(CONTEXT_VARIABLE.source, 'g'))) {
    const name = m[1] ?? '';
    if (CONTEXT_NAMES.has(name) || CONTEXT_PREFIXES.some((p) => name.startsWith(p) && name.length > p.length))
      continue;
    out.push(
      problem(
        at,
        'NotSupportedYet',
        `${NOT_SUPPORTED_YET}: the context variable ${quote(`$tyk_context.${name}`)} (svc fills path, path_parts, remote_addr, request_id, request_data, headers_<Name>, cookies_<name> and trigger-<n>-...)`,
      ),
    );
  }
  return out;
}

/** Problems of the headers a version adds and removes (`at`: the field path of the map or list). */
export function headerProblems(at: string, add: unknown, remove: unknown): FieldProblem[] {
  const out: FieldProblem[] = [];
  for (const [name, value] of Object.entries(model<Record<string, unknown>>(add) ?? {})) {
    const where = `${at}${fieldPath(`/${pointerKey(name)}`).replace(/^(?!\[)/, '.')}`;
    if (!HEADER_NAME.test(name)) {
      out.push(problem(where, 'Invalid', `${quote(name)} is not a header name`));
    } else if (FRAMING_HEADERS.has(name.toLowerCase())) {
      out.push(
        problem(
          where,
          'Forbidden',
          `${quote(name)} frames the message, which the gateway does itself: a value set here made a response whose length is not its body's (the rest of the body read as the next response) and a request the upstream refused; remove it`,
        ),
      );
    }
    const v = text(value);
    if (v !== undefined && BAD_HEADER_VALUE.test(v)) {
      out.push(problem(where, 'Invalid', 'a header value must not hold line breaks or control characters'));
    } else if (v !== undefined) {
      out.push(...variableProblems(where, v));
    }
  }
  return out.concat(
    list(remove).flatMap((n, i) => {
      const name = text(n);
      return name !== undefined && name !== '' && !HEADER_NAME.test(name)
        ? [problem(`${at}[${i}]`, 'Invalid', `${quote(name)} is not a header name`)]
        : [];
    }),
  );
}

/**
 * Every problem of the versions' settings in `versionData` (paths under `version_data.`): the
 * expiry time, the endpoint paths, the actions not served yet.
 */
export function endpointProblems(versionData: unknown): FieldProblem[] {
  const out: FieldProblem[] = [];
  const versions = model<Record<string, unknown>>(model<VersionData>(versionData)?.versions) ?? {};
  for (const [name, v] of Object.entries(versions)) {
    const version = model<VersionInfo>(v);
    if (version === undefined) continue;
    const at = fieldPath(`/version_data/versions/${pointerKey(name)}`);
    const expires = text(version.expires)?.trim();
    if (expires !== undefined && expires !== '' && versionExpiry(expires) === undefined) {
      out.push(
        problem(
          `${at}.expires`,
          'Invalid',
          `${quote(expires)} is not a time: write it as YYYY-MM-DD HH:MM (UTC), such as "2030-01-31 23:59", or leave it empty for never`,
        ),
      );
    }
    const older = model<Record<string, unknown>>(version.paths) ?? {};
    for (const listName of ENDPOINT_LISTS) {
      list(older[listName]).forEach((p, i) => {
        const path = text(p);
        const bad = path === undefined ? undefined : endpointPathProblem(path);
        if (bad !== undefined) out.push(problem(`${at}.paths.${listName}[${i}]`, 'Invalid', bad));
      });
    }
    const override = text(version.override_target)?.trim();
    if (override !== undefined && override !== '') {
      const t = parseTarget(override);
      if (isTargetProblem(t)) out.push(problem(`${at}.override_target`, t.type, t.message));
    }
    out.push(
      ...headerProblems(`${at}.global_headers`, version.global_headers, version.global_headers_remove),
      ...headerProblems(
        `${at}.global_response_headers`,
        version.global_response_headers,
        version.global_response_headers_remove,
      ),
    );
    const extended = model<ExtendedPathsSet>(version.extended_paths) ?? {};
    for (const listName of PATH_LISTS) {
      list(extended[listName]).forEach((e, i) => {
        const entry = model<EndPointMeta>(e);
        const path = text(entry?.path);
        const where = `${at}.extended_paths.${listName}[${i}]`;
        const bad = path === undefined ? undefined : endpointPathProblem(path);
        if (bad !== undefined) out.push(problem(`${where}.path`, 'Invalid', bad));
        if (listName === 'transform_headers' || listName === 'transform_response_headers') {
          const h = model<Record<string, unknown>>(e) ?? {};
          out.push(...headerProblems(`${where}.add_headers`, h.add_headers, h.delete_headers));
        }
        if (listName === 'url_rewrites') out.push(...rewriteProblems(where, e));
        if (listName === 'transform' || listName === 'transform_response') {
          const t = model<TemplateData>(model<Record<string, unknown>>(e)?.template_data) ?? {};
          const bad = templateDataProblem({
            input_type: text(t.input_type),
            template_mode: text(t.template_mode),
            template_source: text(t.template_source),
          });
          if (bad !== undefined) {
            out.push(
              problem(
                `${where}.template_data.${bad.field}`,
                bad.unsupported ? 'NotSupportedYet' : 'Invalid',
                bad.unsupported && bad.field !== 'template_source'
                  ? NOT_SUPPORTED_YET // input_type xml, template_mode file: the path says what
                  : bad.unsupported
                    ? `${NOT_SUPPORTED_YET}: ${bad.message} (docs/gateway.md, "Body transforms", lists the template syntax svc serves)`
                    : `not a template: ${bad.message}`,
              ),
            );
          }
        }
        if (listName === 'mock_response') {
          out.push(
            ...headerProblems(`${where}.headers`, model<Record<string, unknown>>(e)?.headers, undefined),
          );
        }
        if (listName === 'validate_json') out.push(...bodySchemaProblems(where, e));
        if (listName === 'virtual') out.push(...virtualProblems(where, e));
        if (listName === 'advance_cache_config') out.push(...cacheMethodProblems(where, e));
        if (listName === 'method_transforms') {
          const m = model<Record<string, unknown>>(e) ?? {};
          for (const field of ['method', 'to_method']) {
            if (text(m[field])?.toUpperCase() === 'HEAD') {
              out.push(
                problem(
                  `${where}.${field}`,
                  'NotSupported',
                  'HEAD is not transformed: its response has no body, unlike the other methods',
                ),
              );
            }
          }
        }
      });
    }
  }
  return out;
}

/**
 * The methods whose answers the response cache stores (gateway/middleware/cache): the safe
 * methods GET, HEAD and OPTIONS, as the reference caches them (each in its own entry; a HEAD's is
 * its status, headers and Content-Length). Not a method with side effects, whose every request
 * must reach the upstream.
 */
export const CACHED_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * An `advance_cache_config` entry for a method the cache does not store would be kept and never
 * applied: refused by name instead.
 */
function cacheMethodProblems(where: string, e: unknown): FieldProblem[] {
  const entry = model<CacheMeta>(e);
  if (entry === undefined || entry.disabled === true) return [];
  const method = text(entry.method)?.trim().toUpperCase() ?? '';
  if (method === '' || CACHED_METHODS.has(method)) return [];
  return [
    problem(
      `${where}.method`,
      'NotSupportedYet',
      `${NOT_SUPPORTED_YET}: caching ${quote(method)} answers (the cache stores answers to the safe methods GET, HEAD and OPTIONS only: every request of a method with side effects reaches the upstream); set method to GET, HEAD or OPTIONS, or remove the entry`,
    ),
  ];
}

/**
 * A rewrite target that names another host (`https://host/path`): its scheme and host, and the
 * rest; undefined for a path.
 */
export function absoluteRewrite(
  rewriteTo: string,
): { scheme: string; host: string; rest: string } | undefined {
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)(.*)$/is.exec(rewriteTo.trim());
  return m === null ? undefined : { scheme: (m[1] ?? '').toLowerCase(), host: m[2] ?? '', rest: m[3] ?? '' };
}

/** Problems of one rewrite target (`rewrite_to` of an entry or a trigger). */
function rewriteTargetProblems(at: string, rewriteTo: string): FieldProblem[] {
  const abs = absoluteRewrite(rewriteTo);
  if (abs !== undefined) {
    if (abs.scheme === 'tyk') {
      return [
        problem(
          at,
          'Invalid',
          `${quote(rewriteTo)}: another API of the gateway is written svc://<api_id>/<path> here (tyk:// is the reference gateway's spelling)`,
        ),
      ];
    }
    if (abs.scheme === INTERNAL_SCHEME) {
      // Variables may follow in the path; the API itself is named as it is.
      const t = parseInternalTarget(`svc://${abs.host}`);
      if (isTargetProblem(t)) return [problem(at, t.type, t.message)];
      return variableProblems(at, rewriteTo);
    }
    if (abs.scheme !== 'http' && abs.scheme !== 'https') {
      return [
        problem(
          at,
          'Invalid',
          `${quote(rewriteTo)}: a rewrite goes to a path, or to an http:// or https:// URL`,
        ),
      ];
    }
    if (abs.host.includes('$') || abs.host === '') {
      return [
        problem(
          at,
          'NotSupportedYet',
          `${NOT_SUPPORTED_YET}: a host chosen per request (write the host itself; $1 and variables may follow it in the path)`,
        ),
      ];
    }
    const t = parseTarget(`${abs.scheme}://${abs.host}`);
    if (isTargetProblem(t)) return [problem(at, t.type, t.message)];
  }
  return variableProblems(at, rewriteTo);
}

/** Problems of one `url_rewrites` entry (`where`: its field path). */
function rewriteProblems(where: string, e: unknown): FieldProblem[] {
  const out: FieldProblem[] = [];
  const r = model<URLRewriteMeta>(e) ?? {};
  const pattern = text(r.match_pattern);
  if (pattern !== undefined) {
    const bad = regexProblem(pattern);
    if (bad !== undefined)
      out.push(problem(`${where}.match_pattern`, 'Invalid', `${quote(pattern)}: ${bad}`));
  }
  const to = text(r.rewrite_to);
  if (to !== undefined) out.push(...rewriteTargetProblems(`${where}.rewrite_to`, to));
  list(r.triggers).forEach((t, j) => {
    const trigger = model<RoutingTrigger>(t) ?? {};
    const at = `${where}.triggers[${String(j)}]`;
    const options = model<RoutingTriggerOptions>(trigger.options) ?? {};
    for (const field of [
      'header_matches',
      'query_val_matches',
      'path_part_matches',
      'session_meta_matches',
      'request_context_matches',
    ] as const) {
      for (const [name, m] of Object.entries(model<Record<string, unknown>>(options[field]) ?? {})) {
        const rx = text(model<StringRegexMap>(m)?.match_rx);
        const bad = rx === undefined ? undefined : regexProblem(rx);
        if (bad !== undefined) {
          const key = `${at}.options.${field}${fieldPath(`/${pointerKey(name)}`).replace(/^(?!\[)/, '.')}`;
          out.push(problem(`${key}.match_rx`, 'Invalid', `${quote(rx ?? '')}: ${bad}`));
        }
      }
    }
    const payload = text(model<StringRegexMap>(options.payload_matches)?.match_rx);
    const badPayload = payload === undefined ? undefined : regexProblem(payload);
    if (badPayload !== undefined) {
      out.push(
        problem(
          `${at}.options.payload_matches.match_rx`,
          'Invalid',
          `${quote(payload ?? '')}: ${badPayload}`,
        ),
      );
    }
    const tto = text(trigger.rewrite_to);
    if (tto !== undefined) out.push(...rewriteTargetProblems(`${at}.rewrite_to`, tto));
  });
  return out;
}

/** The upstream TLS settings (`upstream_certificates`, `pinned_public_keys`) an https origin gets. */
function tlsOf(
  api: Unchecked<{ upstream_certificates: unknown; pinned_public_keys: unknown }>,
  origin: string,
): string {
  if (!origin.startsWith('https://')) return '';
  const host = new URL(origin).hostname.replace(/^\[|\]$/g, '');
  const map = (v: unknown): Record<string, string> =>
    Object.fromEntries(
      Object.entries(model<Record<string, unknown>>(v) ?? {}).filter(
        (e): e is [string, string] => typeof e[1] === 'string',
      ),
    );
  const cert = upstreamEntry(map(api.upstream_certificates), host)?.trim() ?? '';
  const pins = upstreamEntry(map(api.pinned_public_keys), host)?.trim() ?? '';
  return cert === '' && pins === '' ? '' : `${cert}|${pins}`;
}

/**
 * Upstreams a request may go to instead of the API's target (a version's `override_target`, a
 * URL rewrite to another host) use the API's upstream TLS settings, which are resolved for the
 * target's host: an https one whose host has settings of its own (an `upstream_certificates` or
 * `pinned_public_keys` entry other than the target's) is refused, never served without them.
 */
export function otherUpstreamTlsProblems(api: {
  proxy?: unknown;
  version_data?: unknown;
  upstream_certificates?: unknown;
  pinned_public_keys?: unknown;
}): FieldProblem[] {
  const out: FieldProblem[] = [];
  const rawTarget = text(model<Record<string, unknown>>(api.proxy)?.target_url)?.trim() ?? '';
  const main = rawTarget === '' ? undefined : parseTarget(rawTarget);
  const mainTls = main === undefined || isTargetProblem(main) ? '' : tlsOf(api, main.origin);
  const check = (at: string, origin: string): void => {
    if (!origin.startsWith('https://') || tlsOf(api, origin) === mainTls) return;
    out.push(
      problem(
        at,
        'NotSupportedYet',
        `${NOT_SUPPORTED_YET}: upstream TLS settings (upstream_certificates, pinned_public_keys) for ${new URL(origin).host} other than those of proxy.target_url's host; send this version or rewrite to a host with the same settings`,
      ),
    );
  };
  const versions = model<Record<string, unknown>>(model<VersionData>(api.version_data)?.versions) ?? {};
  for (const [name, v] of Object.entries(versions)) {
    const version = model<VersionInfo>(v) ?? {};
    const at = fieldPath(`/version_data/versions/${pointerKey(name)}`);
    const override = text(version.override_target)?.trim() ?? '';
    if (override !== '') {
      const t = parseTarget(override);
      if (!isTargetProblem(t)) check(`${at}.override_target`, t.origin);
    }
    list(model<ExtendedPathsSet>(version.extended_paths)?.url_rewrites).forEach((e, i) => {
      const r = model<URLRewriteMeta>(e) ?? {};
      const where = `${at}.extended_paths.url_rewrites[${String(i)}]`;
      const one = (field: string, raw: unknown): void => {
        const abs = text(raw) === undefined ? undefined : absoluteRewrite(text(raw) ?? '');
        if (abs === undefined || (abs.scheme !== 'https' && abs.scheme !== 'http') || abs.host.includes('$'))
          return;
        const t = parseTarget(`${abs.scheme}://${abs.host}`);
        if (!isTargetProblem(t)) check(`${where}.${field}`, t.origin);
      };
      one('rewrite_to', r.rewrite_to);
      list(r.triggers).forEach((t, j) => {
        one(`triggers[${String(j)}].rewrite_to`, model<RoutingTrigger>(t)?.rewrite_to);
      });
    });
  }
  return out;
}

/**
 * The GraphQL execution engine calls its data sources (`type_field_configurations`,
 * `engine.data_sources`) and a supergraph its http(s) subgraphs over its own HTTP client, without
 * the API's upstream TLS settings: an https URL whose host has such settings (an
 * `upstream_certificates` or `pinned_public_keys` entry, `*` included) is refused, never called
 * without them; likewise a URL whose host is a template while the API has any. An `svc://` URL
 * calls another API, with that API's settings.
 */
export function graphqlUpstreamTlsProblems(api: {
  graphql?: unknown;
  upstream_certificates?: unknown;
  pinned_public_keys?: unknown;
}): FieldProblem[] {
  const graphql = model<GraphqlConfig>(api.graphql);
  if (graphql?.enabled !== true) return [];
  const any =
    Object.keys(model<Record<string, unknown>>(api.upstream_certificates) ?? {}).length > 0 ||
    Object.keys(model<Record<string, unknown>>(api.pinned_public_keys) ?? {}).length > 0;
  if (!any) return [];
  const out: FieldProblem[] = [];
  const check = (at: string, raw: unknown): void => {
    const url = /^https:\/\/([^/?#]*)/i.exec(text(raw)?.trim() ?? '');
    const host = url?.[1];
    if (host === undefined) return;
    const templated = host.includes('{{');
    if (!templated && tlsOf(api, `https://${host}`) === '') return;
    out.push(
      problem(
        at,
        'NotSupportedYet',
        `${NOT_SUPPORTED_YET}: upstream TLS settings (upstream_certificates, pinned_public_keys) for ${
          templated ? 'a host given by a template' : host
        }: the GraphQL engine calls its data sources and subgraphs without them; call that host through an API of its own (svc://<api>) with the settings`,
      ),
    );
  };
  if (graphql.execution_mode === 'executionEngine') {
    list(graphql.type_field_configurations).forEach((f, i) => {
      const source = model<GraphqlDataSource>(model<TypeFieldConfiguration>(f)?.data_source);
      check(
        `graphql.type_field_configurations[${String(i)}].data_source.data_source_config.url`,
        model<GraphqlDataSourceConfig>(source?.data_source_config)?.url,
      );
    });
    list(model<GraphqlEngineConfig>(graphql.engine)?.data_sources).forEach((d, i) => {
      const config = model<GraphqlEngineDataSourceConfig>(model<GraphqlEngineDataSource>(d)?.config);
      check(`graphql.engine.data_sources[${String(i)}].config.url`, config?.url);
    });
  }
  if (graphql.execution_mode === 'supergraph') {
    list(model<Record<string, unknown>>(graphql.supergraph)?.subgraphs).forEach((g, i) => {
      check(`graphql.supergraph.subgraphs[${String(i)}].url`, model<Record<string, unknown>>(g)?.url);
    });
  }
  return out;
}

/** The methods an `EndPointMeta` covers: its `method` and the keys of its `method_actions`. */
export function endpointMethods(e: Unchecked<EndPointMeta>): string[] {
  const out = Object.keys(model<Record<string, unknown>>(e.method_actions) ?? {});
  const m = text(e.method);
  if (m !== undefined && m !== '') out.push(m);
  return out;
}

/**
 * Problems of how an API versioned per request (`version_data.not_versioned: false`) names its
 * version (`definition`): a header or query parameter needs its name; the URL pattern must be a
 * regular expression.
 */
export function versionChoiceProblems(api: { version_data?: unknown; definition?: unknown }): FieldProblem[] {
  const out: FieldProblem[] = [];
  if (model<VersionData>(api.version_data)?.not_versioned !== false) return out;
  const d = model<Record<string, unknown>>(api.definition) ?? {};
  const location = text(d.location);
  const key = text(d.key)?.trim() ?? '';
  if ((location === 'header' || location === 'url-param') && key === '') {
    out.push(
      problem(
        'definition.key',
        'Required',
        `name the ${location === 'header' ? 'header' : 'query parameter'} that carries the version, such as x-api-version`,
      ),
    );
  }
  if (location === 'header' && key !== '' && !HEADER_NAME.test(key)) {
    out.push(problem('definition.key', 'Invalid', `${quote(key)} is not a header name`));
  }
  const pattern = text(d.url_versioning_pattern)?.trim() ?? '';
  if (pattern !== '' && regexProblem(pattern) !== undefined) {
    out.push(
      problem(
        'definition.url_versioning_pattern',
        'Invalid',
        `${quote(pattern)} is not a valid regular expression`,
      ),
    );
  }
  return out;
}
