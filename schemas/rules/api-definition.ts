/**
 * The rules of a classic API definition beyond its JSON Schema, written once for every part that
 * checks one: the admission webhooks (an ApiDefinition's spec), the gateway's management API and
 * its reload. Pure functions of the definition: what depends on a gateway's configuration (TLS,
 * its ports) stays in the gateway.
 *
 * Our rule: no silent fail-open. A setting the gateway stores, it enforces; one it cannot enforce
 * yet (flagged `not-supported` in the schema, schemas/support.ts) is refused when written with a
 * value that changes behaviour, naming the field, never stored and ignored.
 *
 * The rules run on objects the schema may have refused (the webhooks report every problem at
 * once), so every read is guarded: a field of the wrong type reads as absent.
 */
import type {
  BasicAuthConfig,
  GatewayApiDefinition,
  GlobalRateLimit,
  GraphqlConfig,
  GraphqlEngineConfig,
  ProxyConfig,
} from '../generated/models.ts';
import { apiDefinitionModel } from '../models/api-definition/index.ts';
import { NOT_SUPPORTED_YET, notSupportedPaths } from '../support.ts';
import { CERTIFICATE_ID } from './access.ts';
import { authProblems, authWarnings } from './auth.ts';
import { eventHandlerProblems } from './event-handlers.ts';
import {
  endpointProblems,
  graphqlUpstreamTlsProblems,
  otherUpstreamTlsProblems,
  versionChoiceProblems,
} from './endpoints.ts';
import type * as GraphqlRules from './graphql.ts';
import { lazyModule } from '../../lib/lazy.ts';
import { pluginProblems } from './plugins.ts';
import { idExtractorProblems } from './id-extractor.ts';
import { responseProcessorProblems } from './response-processors.ts';
import { quote, type FieldProblem, type FieldWarning } from './field-problem.ts';
import {
  isTrue,
  list,
  model,
  problem,
  text,
  type ClassicApiInput,
  type ClassicApiPath,
  type Unchecked,
} from './read.ts';
import { isIpOrCidr, regexGroups } from './values.ts';
import { isInternalUrl, parseInternalTarget, type InternalTargetInput } from './internal-target.ts';
import { isTargetProblem, normalizeListenPath, parseTarget, type Target } from './target.ts';
import { isTcpApi, tcpProblems } from './tcp.ts';

/**
 * The GraphQL rules (and graphql-js under them), loaded by the first definition with a `graphql`
 * section: a gateway worker whose APIs have none never holds them.
 */
const graphqlRules = lazyModule<typeof GraphqlRules>(import.meta.url, './graphql.ts');

// --- listen paths and routes --------------------------------------------------------------------

/**
 * The route a listen path claims: two listen paths claim the same route when their keys are
 * equal. Claims compare case-insensitively with trailing slashes ignored (`/P/` and `/p` are one
 * route), as the gateway's router matches them. Meant for listen paths `listenPathProblem`
 * accepts.
 */
export function routeKey(listenPath: string, exact = false): string {
  // An exact listen path (`proxy.listen_path_exact`) serves that path alone, as written: it is
  // a route of its own beside the prefix route of the same text.
  if (exact) return `=${listenPath.toLowerCase()}`;
  return normalizeListenPath(listenPath).toLowerCase() || '/';
}

/** The host a `domain` binds an API to, as routes compare it: lower case, no port, no final dot; '' for any host. */
export function domainKey(domain: string | undefined): string {
  const d = domain?.trim().toLowerCase() ?? '';
  const colon = d.lastIndexOf(':');
  const host = colon === -1 ? d : d.slice(0, colon);
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

/**
 * Whether `host` (normalized) is covered by the wildcard domain key `*.suffix`: any name below
 * it, or with `oneLabel` (`domain_wildcard_one_label`) a name exactly one label below it.
 */
export function wildcardCovers(wildcard: string, oneLabel: boolean, host: string): boolean {
  const suffix = wildcard.slice(1);
  if (host.length <= suffix.length || !host.endsWith(suffix)) return false;
  return !oneLabel || host.indexOf('.') === host.length - suffix.length;
}

/** Characters a request path carries as they are (RFC 3986 pchar without `%`, and `/`). */
const PATH_CHAR = /[A-Za-z0-9\-._~!$&'()*+,;=:@/]/g;
const PATH_CHARS_TEXT = "letters, digits and - . _ ~ ! $ & ' ( ) * + , ; = : @";

/** The path a listen path stands for: dot segments resolved, empty segments dropped. */
function canonicalPath(path: string): string {
  const out: string[] = [];
  const segments = path.split('/');
  for (const seg of segments) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  const last = segments[segments.length - 1];
  const trailing = last === '' || last === '.' || last === '..';
  return out.length === 0 ? '/' : `/${out.join('/')}${trailing ? '/' : ''}`;
}

/**
 * Why `path` is not a listen path, or undefined. A listen path starts with `/` and is canonical,
 * so that it is matched exactly as written: no `.` or `..` segments, no empty segments (`//`),
 * no percent-encoded characters, nothing a client would have to percent-encode.
 */
export function listenPathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return `${quote(path)} must start with "/", such as ${quote(`/${path}`)}`;
  if (path.includes('%')) {
    let decoded: string | undefined;
    try {
      decoded = decodeURIComponent(path);
    } catch {
      decoded = undefined;
    }
    const instead =
      decoded !== undefined && listenPathProblem(decoded) === undefined
        ? `write the characters themselves, such as ${quote(decoded)}`
        : `use ${PATH_CHARS_TEXT}`;
    return `${quote(path)} has a percent-encoded character: listen paths are compared with request paths as clients send them, so ${instead}`;
  }
  const others = [...new Set(path.replace(PATH_CHAR, ''))];
  if (others.length > 0) {
    return `${quote(path)} has characters clients send percent-encoded (${others.map((c) => quote(c)).join(' ')}): use ${PATH_CHARS_TEXT}`;
  }
  if (path.includes('//')) {
    return `${quote(path)} has an empty segment ("//"): write ${quote(canonicalPath(path))}`;
  }
  if (path.split('/').some((s) => s === '.' || s === '..')) {
    return `${quote(path)} has a "." or ".." segment: write the path it stands for, ${quote(canonicalPath(path))}`;
  }
  return undefined;
}

/** Paths the gateway's management API answers on the gateway port (and everything under them). */
export const RESERVED_PATHS = ['/svc', '/hello', '/ready'] as const;

/**
 * Why an API on the gateway port can't listen on `listenPath`, or undefined: the management API
 * owns the reserved paths there. Whether the gateway has a separate control port does not matter:
 * the webhooks can't know it, and a definition valid on one gateway stays valid on another.
 */
export function reservedPathProblem(listenPath: string): string | undefined {
  const key = routeKey(listenPath);
  const reserved = RESERVED_PATHS.find((r) => key === r || key.startsWith(`${r}/`));
  if (reserved === undefined) return undefined;
  return `${quote(listenPath)}: the gateway's management API answers ${reserved} and the paths under it on the gateway port: choose another listen path, or serve the API on a listen_port of its own`;
}

/** Whether an API is served on the gateway port (no `listen_port`, or 0). */
export function onGatewayPort(api: ClassicApiInput): boolean {
  return !(typeof api.listen_port === 'number' && api.listen_port > 0);
}

// --- load balancing and uptime tests ------------------------------------------------------------

/** Whether requests go round `proxy.target_list` (`enable_load_balancing` with a list). */
function loadBalanced(proxy: Unchecked<ProxyConfig> | undefined): boolean {
  return isTrue(proxy?.enable_load_balancing) && list(proxy?.target_list).length > 0;
}

/**
 * The upstreams of a load-balanced API (`enable_load_balancing` with a `target_list`), parsed, in
 * list order; empty when it is not load balanced. Call it on a checked definition.
 */
export function balancedTargets(api: Pick<GatewayApiDefinition, 'proxy'>): Target[] {
  if (!loadBalanced(api.proxy)) return [];
  return (api.proxy.target_list ?? []).map(parseTarget).filter((t): t is Target => !isTargetProblem(t));
}

/** The uptime checks svc runs: an http or https URL each (TCP checks and `commands` are not supported yet). */
function loadBalancingProblems(
  api: ClassicApiInput,
  proxy: Unchecked<ProxyConfig> | undefined,
): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (isTrue(proxy?.enable_load_balancing)) {
    list(proxy?.target_list).forEach((t, i) => {
      const parsed = typeof t === 'string' ? parseTarget(t) : undefined;
      if (parsed !== undefined && isTargetProblem(parsed))
        problems.push(problem(`proxy.target_list[${String(i)}]`, parsed.type, parsed.message));
    });
  }
  list(proxy?.mirror_targets).forEach((t, i) => {
    const parsed = typeof t === 'string' ? parseTarget(t) : undefined;
    if (parsed !== undefined && isTargetProblem(parsed))
      problems.push(problem(`proxy.mirror_targets[${String(i)}]`, parsed.type, parsed.message));
  });
  const tests = model<{ check_list: unknown }>(api.uptime_tests);
  list(tests?.check_list).forEach((c, i) => {
    const check = model<{
      url: unknown;
      protocol: unknown;
      commands: unknown;
      enable_proxy_protocol: unknown;
    }>(c);
    const at = `uptime_tests.check_list[${String(i)}]`;
    const protocol = text(check?.protocol) ?? '';
    if (protocol !== '' && protocol !== 'http' && protocol !== 'https') {
      problems.push(
        problem(
          `${at}.protocol`,
          'NotSupported',
          `${quote(protocol)} checks are not supported yet by this gateway: use an http or https URL`,
        ),
      );
    }
    if (list(check?.commands).length > 0)
      problems.push(
        problem(`${at}.commands`, 'NotSupported', `TCP check commands are not supported yet by this gateway`),
      );
    if (isTrue(check?.enable_proxy_protocol))
      problems.push(
        problem(
          `${at}.enable_proxy_protocol`,
          'NotSupported',
          `the PROXY protocol in checks is not supported yet by this gateway`,
        ),
      );
    const url = text(check?.url);
    if (url === undefined || url === '') {
      problems.push(
        problem(`${at}.url`, 'Required', 'set the URL the check requests, such as http://orders:8080/health'),
      );
    } else {
      const parsed = parseTarget(url);
      if (isTargetProblem(parsed)) problems.push(problem(`${at}.url`, parsed.type, parsed.message));
    }
  });
  return problems;
}

// --- what the gateway does not enforce yet --------------------------------------------------------

const NOT_YET = 'not supported yet by this gateway';

/** A listener protocol svc serves: http, https, tcp and tls (h2c listeners are not supported yet; tcp.ts). */
function protocolProblems(api: ClassicApiInput): FieldProblem[] {
  return api.protocol === 'h2c'
    ? [
        problem(
          'protocol',
          'NotSupported',
          `this listener protocol is ${NOT_YET}: set protocol to http, https, tcp or tls, or leave it empty to serve on the gateway port`,
        ),
      ]
    : [];
}

/**
 * Fields of `api` that svc does not enforce yet (flagged `not-supported` in the schema) set to a
 * value that changes behaviour: each refused at its path as `not supported by svc yet`, all at
 * once. The gateway model's schema covers the ApiDefinition spec's classic fields too.
 */
export function unsupportedFeatures(api: ClassicApiInput): FieldProblem[] {
  return [
    ...protocolProblems(api),
    ...notSupportedPaths(apiDefinitionModel, api).map((path) =>
      problem(path, 'NotSupportedYet', NOT_SUPPORTED_YET),
    ),
  ];
}

// --- the whole definition -------------------------------------------------------------------------

/**
 * Every reason the gateway can't serve `api` as written, whatever its configuration: each with
 * its field path relative to the definition, a Kubernetes field-error type, and how to fix it.
 * Run it after the schema check (whose problems come first) or beside it.
 */
export function checkClassicApi(api: ClassicApiInput): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const proxy = model<ProxyConfig>(api.proxy);
  // A TCP or TLS API has no listen path and a tcp:// target (tcp.ts checks both).
  const tcp = isTcpApi(api);

  const listenPath = tcp ? undefined : text(proxy?.listen_path);
  // An internal API is served to no client: it is reached through `svc://` targets only (by its
  // ID or name), with the path the target gives, so it needs no listen path (the reference's
  // dynamic_auth sample). Given one, it is checked as any other.
  const pathless = isTrue(api.internal) && (listenPath === undefined || listenPath === '');
  if (listenPath === undefined && proxy !== undefined && !tcp && !pathless) {
    problems.push(
      problem(
        'proxy.listen_path',
        'Required',
        'set the base path on the gateway, such as /orders/ (an API with internal: true, reached through svc:// targets only, needs none)',
      ),
    );
  } else if (listenPath !== undefined && !pathless) {
    const p =
      listenPathProblem(listenPath) ?? (onGatewayPort(api) ? reservedPathProblem(listenPath) : undefined);
    if (p !== undefined) problems.push(problem('proxy.listen_path', 'Invalid', p));
  }

  const target = proxy?.target_url;
  const graphql = model<GraphqlConfig>(api.graphql);
  // The execution engine answers from its data sources, a supergraph from its subgraphs: only
  // they need no upstream.
  const engineOn =
    isTrue(graphql?.enabled) &&
    ['executionEngine', 'supergraph'].includes(text(graphql?.execution_mode) ?? '');
  const balanced = loadBalanced(proxy);
  // An internal target (another API of the gateway) stands for target_url.
  const internal = model<InternalTargetInput>(proxy?.target_internal)?.target !== undefined;
  problems.push(...loadBalancingProblems(api, proxy));
  if (tcp) {
    problems.push(...tcpProblems(api));
  } else if ((target === undefined || target === '') && !engineOn && !balanced && !internal) {
    problems.push(
      problem(
        'proxy.target_url',
        'Required',
        isTrue(graphql?.enabled)
          ? 'a proxyOnly GraphQL API sends its queries to the upstream: set its address, or use execution_mode executionEngine'
          : 'set the upstream address, such as http://<service>.<namespace>.svc:<port>',
      ),
    );
  } else if (typeof target === 'string' && target !== '') {
    const t = isInternalUrl(target) ? parseInternalTarget(target) : parseTarget(target);
    if (isTargetProblem(t)) problems.push(problem('proxy.target_url', t.type, t.message));
  }

  const domain = text(api.domain);
  const host = domainKey(domain);
  if (host !== '' && !DOMAIN.test(host)) {
    problems.push(
      problem(
        'domain',
        'Invalid',
        `${quote(domain)} is not a host name: write one such as api.example.com, or *.example.com for its subdomains`,
      ),
    );
  }
  if (api.domain_wildcard_one_label === true && !host.startsWith('*.')) {
    problems.push(
      problem(
        'domain_wildcard_one_label',
        'Invalid',
        'applies to a wildcard domain (*.example.com) only: set such a domain, or remove the flag',
      ),
    );
  }

  problems.push(...authProblems(api), ...pluginProblems(api), ...idExtractorProblems(api));
  problems.push(...ipListProblems(api, 'allowed_ips'), ...ipListProblems(api, 'blacklisted_ips'));
  problems.push(...basicAuthProblems(api));
  problems.push(...globalRateLimitProblems(model<GlobalRateLimit>(api.global_rate_limit)));
  if (graphql !== undefined) problems.push(...graphqlRules().graphqlProblems(graphql));
  problems.push(...eventHandlerProblems(api));
  problems.push(
    ...certificateIdProblems(api, 'certificates'),
    ...certificateIdProblems(api, 'client_certificates'),
  );
  problems.push(
    ...upstreamTlsProblems(api),
    ...otherUpstreamTlsProblems(api),
    ...graphqlUpstreamTlsProblems(api),
  );
  problems.push(...endpointProblems(api.version_data), ...versionChoiceProblems(api));
  problems.push(...responseProcessorProblems(api));
  problems.push(...unsupportedFeatures(api));
  return problems;
}

/** Lists of certificate IDs (`certificates`, `client_certificates`) hold IDs `/svc/certs` gives. */
function certificateIdProblems(
  api: ClassicApiInput,
  field: 'certificates' | 'client_certificates',
): FieldProblem[] {
  return list(api[field]).flatMap((id, i) =>
    typeof id === 'string' && CERTIFICATE_ID.test(id)
      ? []
      : [
          problem(
            `${field}[${i}]`,
            'Invalid',
            `${quote(String(id))} is not a certificate ID: give the ID POST /svc/certs answered (organisation ID followed by the certificate's SHA-256 hex)`,
          ),
        ],
  );
}

/** A public-key pin: `sha256/` and the base64 SHA-256 of the DER SubjectPublicKeyInfo. */
export const PUBLIC_KEY_PIN = /^sha256\/([A-Za-z0-9+/]{43}=)$/;

/** One entry of a `pinned_public_keys` list: a stored certificate, or a public-key hash. */
export type Pin = { certId: string } | { sha256: string };

/** The entries of a `pinned_public_keys` value (comma-separated), or why one is not valid. */
export function parsePins(value: string): { pins: Pin[]; problems: string[] } {
  const pins: Pin[] = [];
  const problems: string[] = [];
  for (const raw of value.split(',')) {
    const item = raw.trim();
    const hash = PUBLIC_KEY_PIN.exec(item)?.[1];
    if (item === '') problems.push('an empty entry: write the pins separated by single commas');
    else if (hash !== undefined) pins.push({ sha256: hash });
    else if (CERTIFICATE_ID.test(item)) pins.push({ certId: item });
    else
      problems.push(
        `${quote(item)} is neither a certificate ID (organisation ID followed by the certificate's SHA-256 hex) nor a public-key pin (sha256/<base64 SHA-256 of the SubjectPublicKeyInfo>, 44 base64 characters)`,
      );
  }
  return { pins, problems };
}

/** A host `upstream_certificates` and `pinned_public_keys` may map: a name, `*.` a name, or `*`. */
export function isUpstreamHost(key: string): boolean {
  const k = key.trim().toLowerCase();
  return k === '*' || DOMAIN.test(k);
}

/** Hosts of `upstream_certificates` and `pinned_public_keys`, certificate IDs and pins. */
function upstreamTlsProblems(api: ClassicApiInput): FieldProblem[] {
  const out: FieldProblem[] = [];
  const hostProblem = (field: string, key: string): FieldProblem[] => {
    return isUpstreamHost(key)
      ? []
      : [
          problem(
            `${field}[${quote(key)}]`,
            'Invalid',
            `${quote(key)} is not an upstream host: write one such as api.example.com, *.example.com for its subdomains, or * for any host (no scheme, no port)`,
          ),
        ];
  };
  for (const [key, id] of Object.entries(model<Record<string, unknown>>(api.upstream_certificates) ?? {})) {
    out.push(...hostProblem('upstream_certificates', key));
    if (typeof id !== 'string' || !CERTIFICATE_ID.test(id.trim())) {
      out.push(
        problem(
          `upstream_certificates[${quote(key)}]`,
          'Invalid',
          `${quote(String(id))} is not a certificate ID: give the ID POST /svc/certs answered for a certificate uploaded with its private key`,
        ),
      );
    }
  }
  for (const [key, value] of Object.entries(model<Record<string, unknown>>(api.pinned_public_keys) ?? {})) {
    out.push(...hostProblem('pinned_public_keys', key));
    const found = typeof value === 'string' ? parsePins(value).problems : ['must be a string'];
    for (const message of found) out.push(problem(`pinned_public_keys[${quote(key)}]`, 'Invalid', message));
  }
  return out;
}

/** An API-wide rate limit needs both its values: a rate without a window limits nothing. */
function globalRateLimitProblems(limit: Unchecked<GlobalRateLimit> | undefined): FieldProblem[] {
  if (limit === undefined || limit.disabled === true) return [];
  const rate = typeof limit.rate === 'number' ? limit.rate : 0;
  const per = typeof limit.per === 'number' ? limit.per : 0;
  if (rate > 0 && per <= 0) {
    return [
      problem(
        'global_rate_limit.per',
        'Required',
        'a rate needs its window: set per to the seconds the rate counts over',
      ),
    ];
  }
  if (per > 0 && rate <= 0) {
    return [
      problem(
        'global_rate_limit.rate',
        'Required',
        'a window needs its rate: set rate to the requests allowed per window',
      ),
    ];
  }
  return [];
}

/** Remarks on settings that are allowed but probably not what the author meant. */
export function classicApiWarnings(api: ClassicApiInput): FieldWarning[] {
  const warnings: FieldWarning[] = authWarnings(api);
  for (const [field, flag] of IP_LISTS) {
    const entries = list(api[field]);
    const enabled = isTrue(api[flag]);
    if (enabled && entries.length === 0) {
      warnings.push({
        path: field,
        message:
          field === 'allowed_ips'
            ? `${flag} is true but allowed_ips is empty: every client is refused`
            : `${flag} is true but blacklisted_ips is empty: no client is blocked`,
      });
    } else if (!enabled && entries.length > 0) {
      warnings.push({ path: flag, message: `${field} is set but ${flag} is not true: the list is ignored` });
    }
  }
  const graphql = model<GraphqlConfig>(api.graphql);
  const mode = text(graphql?.execution_mode) ?? 'proxyOnly';
  if (list(graphql?.type_field_configurations).length > 0 && mode !== 'executionEngine') {
    warnings.push({
      path: 'graphql.type_field_configurations',
      message: 'data sources are used only when execution_mode is executionEngine',
    });
  }
  if (
    list(model<GraphqlEngineConfig>(graphql?.engine)?.data_sources).length > 0 &&
    mode !== 'executionEngine'
  ) {
    warnings.push({
      path: 'graphql.engine.data_sources',
      message: 'data sources are used only when execution_mode is executionEngine',
    });
  }
  return warnings;
}

const DOMAIN = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

const IP_LISTS = [
  ['allowed_ips', 'enable_ip_whitelisting'],
  ['blacklisted_ips', 'enable_ip_blacklisting'],
] as const satisfies readonly (readonly [ClassicApiPath, ClassicApiPath])[];

function ipListProblems(api: ClassicApiInput, field: (typeof IP_LISTS)[number][0]): FieldProblem[] {
  const problems: FieldProblem[] = [];
  list(api[field]).forEach((entry, i) => {
    if (typeof entry !== 'string') return; // the schema reports it
    const path = `${field}[${i}]`;
    if (entry.includes('*')) {
      problems.push(
        problem(
          path,
          'Invalid',
          `${quote(entry)}: wildcards are not supported: write the range in CIDR notation, such as 10.0.0.0/8`,
        ),
      );
    } else if (!isIpOrCidr(entry)) {
      problems.push(
        problem(
          path,
          'Invalid',
          `${quote(entry)} is not an IP address or CIDR range, such as 192.0.2.10 or 10.0.0.0/8`,
        ),
      );
    }
  });
  return problems;
}

const BODY_REGEXPS = [
  ['body_user_regexp', 'user name', '<user>(.*)</user>'],
  ['body_password_regexp', 'password', '<password>(.*)</password>'],
] as const;

/** Body extraction of basic credentials: each regular expression compiles and has one group. */
function basicAuthProblems(api: ClassicApiInput): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const basic = model<BasicAuthConfig>(api.basic_auth);
  const extracting = isTrue(api.use_basic_auth) && isTrue(basic?.extract_from_body);
  for (const [field, what, example] of BODY_REGEXPS) {
    const path = `basic_auth.${field}`;
    const pattern = text(basic?.[field]) ?? '';
    if (pattern === '') {
      if (extracting) {
        problems.push(
          problem(
            path,
            'Required',
            `extract_from_body needs a regular expression with one capturing group around the ${what}, such as ${example}`,
          ),
        );
      }
      continue;
    }
    const groups = regexGroups(pattern);
    if (typeof groups === 'string') {
      problems.push(problem(path, 'Invalid', groups));
    } else if (groups !== 1) {
      problems.push(
        problem(
          path,
          'Invalid',
          `${quote(pattern)} has ${groups} capturing groups: write exactly one, around the ${what}, such as ${example} (make other groups non-capturing: (?:...))`,
        ),
      );
    }
  }
  return problems;
}
