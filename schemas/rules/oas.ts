/**
 * An OAS API (an OpenAPI 3.x document with the `x-svc-api-gateway` extension) as the classic
 * definition the gateway serves. `oasToClassic` converts; `checkOasDocument` converts and runs the
 * classic model's schema and rules on the result, reporting each problem at its path in the
 * document. The admission webhooks (the ConfigMap of an SvcOasApiDefinition) and the gateway
 * (`/svc/apis/oas`, reloads) call the same functions after the document's own schema, so a
 * document the webhooks admit is never refused by the gateway.
 *
 * What is read (docs/gateway.md, "OAS APIs"):
 * - `info.id`, `info.orgId`, `info.name`, `info.state.active`, `info.state.internal`;
 * - `upstream.url`; `server.listenPath.value` and `.strip`; `server.customDomain` (when enabled);
 *   `server.detailedTracing` (accepted and kept in the document; nothing is traced yet);
 * - `server.authentication`: `enabled` (otherwise the API is keyless), `stripAuthorizationData`,
 *   `baseIdentityProvider`, and per scheme of the document's top-level `security` (declared in
 *   `components.securitySchemes`): `apiKey` is the auth token, `http`/`basic` basic
 *   authentication, `http`/`bearer`/`JWT` the JWT fields of the classic model, each with the
 *   `header`, `query` and `cookie` locations of `securitySchemes.<name>`;
 * - `middleware.global.ipAllowList`, `.ipBlockList` and `.rateLimit` (`per` a duration such as
 *   `1m`, in whole seconds); `.skipRateLimit`, `.skipQuota` and `.skipQuotaReset`.
 *
 * No silent fail-open: anything else in the extension that says something (a value other than
 * false, 0, '' or empty, and not an object with `enabled: false`) is refused by name, as are
 * schemes the document requires but the extension does not enable, enabled schemes the document
 * does not require, alternative security requirements, scopes and per-operation security.
 */
import type { GatewayApiDefinition } from '../generated/models.ts';
import { apiDefinitionModel } from '../models/api-definition.ts';
import { compile, fieldPath } from '../validate.ts';
import { checkClassicApi } from './api-definition.ts';
import { fromSchemaProblem, quote, type FieldProblem, type FieldProblemType } from './field-problem.ts';
import { hasContent, list, model, text } from './read.ts';

/** The name of the gateway extension. */
export const OAS_EXTENSION = 'x-svc-api-gateway';
const EXT = OAS_EXTENSION;

type Json = Record<string, unknown>;
type Part = string | number;

const obj = (v: unknown): Json | undefined => model<Json>(v);
const nonEmpty = (v: unknown): string | undefined => (text(v) === '' ? undefined : text(v));

/** Whether a setting the gateway does not read would matter: it has content and is not switched off. */
const saysSomething = (v: unknown): boolean => hasContent(v) && obj(v)?.enabled !== false;

const pointer = (parts: readonly Part[]): string =>
  parts.map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

/** The field path of a place in the document (`x-svc-api-gateway.server.listenPath.value`). */
export const documentPath = (parts: readonly Part[]): string => fieldPath(pointer(parts));

const NOT_YET = 'not supported yet by this gateway';

/** A duration as Go writes it (`1m30s`), in milliseconds; undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  const units: Record<string, number> = {
    h: 3_600_000,
    m: 60_000,
    s: 1000,
    ms: 1,
    us: 1e-3,
    µs: 1e-3,
    ns: 1e-6,
  };
  const part = /([0-9]+(?:\.[0-9]+)?)(h|ms|m|s|us|µs|ns)/y;
  let total = 0;
  let at = 0;
  if (text === '') return undefined;
  while (at < text.length) {
    part.lastIndex = at;
    const m = part.exec(text);
    if (m === null) return undefined;
    total += Number(m[1]) * (units[m[2] ?? ''] ?? 0);
    at = part.lastIndex;
  }
  return total;
}

/** The outcome of converting a document. */
export interface OasConversion {
  /** The classic form; it is valid once `checkOasDocument` finds no problem. */
  api: GatewayApiDefinition;
  /** What the conversion itself refuses, at paths in the document. */
  problems: FieldProblem[];
  /** The document path a field of the classic form came from, or undefined. */
  documentPathOf(classicPath: string): string | undefined;
}

/** The authentication methods a security scheme can stand for. */
type Method = 'token' | 'basic' | 'jwt';

const METHOD_LABEL: Record<Method, string> = {
  token: 'apiKey (auth token)',
  basic: 'http basic',
  jwt: 'http bearer JWT',
};

/** Settings of `securitySchemes.<name>` that belong to one method only. */
const METHOD_FIELDS: Record<Method, readonly string[]> = {
  token: ['enableClientCertificate', 'signatureValidation'],
  basic: ['cacheTTL', 'disableCaching', 'extractCredentialsFromBody'],
  jwt: [
    'source',
    'signingMethod',
    'identityBaseField',
    'skipKid',
    'policyFieldName',
    'clientBaseField',
    'defaultPolicies',
    'issuedAtValidationSkew',
    'notBeforeValidationSkew',
    'expiresAtValidationSkew',
  ],
};

/** JWT settings and the classic fields they fill. */
const JWT_FIELDS = [
  ['source', 'jwt_source'],
  ['signingMethod', 'jwt_signing_method'],
  ['identityBaseField', 'jwt_identity_base_field'],
  ['skipKid', 'jwt_skip_kid'],
  ['policyFieldName', 'jwt_policy_field_name'],
  ['clientBaseField', 'jwt_client_base_field'],
  ['defaultPolicies', 'jwt_default_policies'],
  ['issuedAtValidationSkew', 'jwt_issued_at_validation_skew'],
  ['notBeforeValidationSkew', 'jwt_not_before_validation_skew'],
  ['expiresAtValidationSkew', 'jwt_expires_at_validation_skew'],
] as const satisfies readonly (readonly [string, keyof GatewayApiDefinition])[];

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

const AUTH: readonly Part[] = [EXT, 'server', 'authentication'];
const GLOBAL: readonly Part[] = [EXT, 'middleware', 'global'];

/** One conversion: the classic form being built, where its fields came from, what was read. */
class Conversion {
  readonly api: Json = { is_oas: true };
  readonly problems: FieldProblem[] = [];
  readonly #origins = new Map<string, string>();
  readonly #read = new Set<string>();
  readonly doc: Json;

  constructor(doc: Json) {
    this.doc = doc;
  }

  /** The value at `parts`, without marking it read. */
  peek(parts: readonly Part[]): unknown {
    let v: unknown = this.doc;
    for (const p of parts) {
      if (typeof p === 'number') v = Array.isArray(v) ? (v[p] as unknown) : undefined;
      else v = obj(v)?.[p];
      if (v === undefined) return undefined;
    }
    return v;
  }

  /** The value at `parts`, marked read (with everything under it). */
  take(parts: readonly Part[]): unknown {
    this.#read.add(pointer(parts));
    return this.peek(parts);
  }

  /** Sets a classic field, remembering the document field it came from. */
  set(classicPath: string, value: unknown, from: readonly Part[]): void {
    this.#origins.set(classicPath, documentPath(from));
    if (value === undefined) return;
    const keys = classicPath.split('.');
    const last = keys.pop() ?? '';
    let at = this.api;
    for (const k of keys) {
      const next = obj(at[k]) ?? {};
      at[k] = next;
      at = next;
    }
    at[last] = value;
  }

  /** Whether the setting at `parts` is enabled; a disabled one is read whole (it says nothing). */
  enabled(parts: readonly Part[]): boolean {
    if (this.take([...parts, 'enabled']) === true) return true;
    this.take(parts);
    return false;
  }

  /** Copies document fields under `from` to classic fields as they are: [document, classic] pairs. */
  copyAll(from: readonly Part[], fields: readonly (readonly [string, string])[]): void {
    for (const [field, classicPath] of fields) this.copy(classicPath, [...from, field]);
  }

  /** Copies a document field to a classic field as it is. */
  copy(classicPath: string, from: readonly Part[]): void {
    this.set(classicPath, this.take(from), from);
  }

  problem(parts: readonly Part[], type: FieldProblemType, message: string): void {
    this.problems.push({ path: documentPath(parts), type, message });
  }

  /** Refuses what was not read under `parts` and says something. */
  refuseUnread(parts: readonly Part[]): void {
    const here = pointer(parts);
    if (this.#read.has(here)) return;
    const value = this.peek(parts);
    const o = obj(value);
    const below = `${here}/`;
    if (o !== undefined && [...this.#read].some((r) => r.startsWith(below))) {
      for (const key of Object.keys(o)) this.refuseUnread([...parts, key]);
    } else if (saysSomething(value)) {
      this.problem(
        parts,
        'NotSupported',
        `${NOT_YET}: remove it (the gateway keeps no setting it does not enforce)`,
      );
    }
  }

  result(): OasConversion {
    const origins = this.#origins;
    return {
      api: this.api as unknown as GatewayApiDefinition,
      problems: this.problems,
      documentPathOf(classicPath) {
        let best: string | undefined;
        for (const k of origins.keys()) {
          const under =
            classicPath === k || classicPath.startsWith(`${k}.`) || classicPath.startsWith(`${k}[`);
          if (under && (best === undefined || k.length > best.length)) best = k;
        }
        return best === undefined ? undefined : `${origins.get(best) ?? ''}${classicPath.slice(best.length)}`;
      },
    };
  }
}

/**
 * Converts an OAS document into the classic definition of the same API. Problems name paths in the
 * document; the classic rules are not run (see `checkOasDocument`).
 */
export function oasToClassic(doc: unknown): OasConversion {
  const c = new Conversion(obj(doc) ?? {});
  if (obj(c.peek([EXT])) === undefined) {
    c.problem(
      [EXT],
      'Required',
      'the document has no x-svc-api-gateway extension: add it with info.name, info.state.active, upstream.url and server.listenPath.value',
    );
    return c.result();
  }
  readInfo(c);
  readServer(c);
  readAuthentication(c);
  readGlobalMiddleware(c);
  readGlobalCorsAndCache(c);
  readOperations(c);
  operationSecurity(c);
  c.refuseUnread([EXT]);
  return c.result();
}

function readInfo(c: Conversion): void {
  const id = c.take([EXT, 'info', 'id']);
  c.set('api_id', id === '' ? undefined : id, [EXT, 'info', 'id']);
  c.copy('org_id', [EXT, 'info', 'orgId']);
  c.copy('name', [EXT, 'info', 'name']);
  c.copy('active', [EXT, 'info', 'state', 'active']);
  c.copy('internal', [EXT, 'info', 'state', 'internal']);
  c.copy('proxy.target_url', [EXT, 'upstream', 'url']);
}

function readServer(c: Conversion): void {
  const server = [EXT, 'server'];
  c.copy('proxy.listen_path', [...server, 'listenPath', 'value']);
  c.copy('proxy.strip_listen_path', [...server, 'listenPath', 'strip']);
  const domain = [...server, 'customDomain'];
  if (c.enabled(domain)) {
    const name = c.take([...domain, 'name']);
    if (name === undefined || name === '') {
      c.problem(
        [...domain, 'name'],
        'Required',
        'the custom domain is enabled: set its name, such as api.example.com, or set enabled to false',
      );
    }
    c.set('domain', name, [...domain, 'name']);
  }
  // Accepted and kept in the document: tracing is not done yet, and does not change an answer.
  c.take([...server, 'detailedTracing']);
}

/** The scheme names of a security requirement object. */
const requirementNames = (requirement: unknown): string[] => Object.keys(obj(requirement) ?? {});

function readAuthentication(c: Conversion): void {
  const enabled = c.take([...AUTH, 'enabled']);
  const requirements = list(c.peek(['security']));
  if (enabled !== true) {
    c.set('use_keyless', true, [...AUTH, 'enabled']);
    c.take(AUTH);
    const named = requirements.flatMap(requirementNames);
    if (named.length > 0 && enabled !== false) {
      c.problem(
        [...AUTH, 'enabled'],
        'Required',
        `the document's security requires ${named.map((n) => quote(n)).join(', ')}, but authentication is not enabled: set enabled to true (and enable the scheme under securitySchemes), or set it to false to serve the API without authentication`,
      );
    }
    return;
  }
  c.set('use_keyless', false, [...AUTH, 'enabled']);
  c.copy('strip_auth_data', [...AUTH, 'stripAuthorizationData']);
  c.copy('base_identity_provided_by', [...AUTH, 'baseIdentityProvider']);

  if (requirements.length === 0) {
    c.problem(
      ['security'],
      'Required',
      'authentication is enabled (x-svc-api-gateway.server.authentication.enabled), but the document has no top-level security requirement: add one naming the scheme, such as security: [{token: []}]',
    );
  }
  requirements.slice(1).forEach((_, i) => {
    c.problem(
      ['security', i + 1],
      'NotSupported',
      `alternative security requirements are ${NOT_YET}: list every scheme the API requires in the first requirement, security[0]`,
    );
  });
  const first = requirements[0];
  const names = requirementNames(first);
  if (requirements.length > 0 && names.length === 0) {
    c.problem(
      ['security', 0],
      'Required',
      'the first security requirement names no scheme (an empty requirement would let clients in without credentials): name the scheme, such as {token: []}',
    );
  }
  const seen = new Map<Method, string>();
  for (const name of names) {
    if (list(obj(first)?.[name]).length > 0) {
      c.problem(
        ['security', 0, name],
        'NotSupported',
        `scopes are ${NOT_YET}: write ${name}: [] (use policies and their allowed URLs to limit what a key reaches)`,
      );
    }
    readScheme(c, name, seen);
  }
  const schemes = [...AUTH, 'securitySchemes'];
  for (const name of Object.keys(obj(c.peek(schemes)) ?? {})) {
    if (names.includes(name)) continue;
    if (obj(c.peek([...schemes, name]))?.enabled === true) {
      c.problem(
        [...schemes, name, 'enabled'],
        'Invalid',
        `${quote(name)} is enabled, but the document's security does not require it: add it to security[0], or set enabled to false`,
      );
    }
    c.take([...schemes, name]);
  }
}

/** The method a declaration in `components.securitySchemes` stands for, or why it has none. */
function methodOf(decl: Json): Method | { field: string; message: string } {
  const supported =
    'declare auth tokens as type: apiKey, basic authentication as type: http with scheme: basic, JWTs as type: http with scheme: bearer and bearerFormat: JWT';
  const type = decl.type;
  if (type === 'apiKey') return 'token';
  if (type !== 'http') {
    const what =
      type === undefined ? 'the scheme has no type' : `${quote(type)} security schemes are ${NOT_YET}`;
    return { field: 'type', message: `${what}: ${supported}` };
  }
  const scheme = typeof decl.scheme === 'string' ? decl.scheme.toLowerCase() : decl.scheme;
  if (scheme === 'basic') return 'basic';
  if (scheme === 'bearer' && decl.bearerFormat === 'JWT') return 'jwt';
  if (scheme === 'bearer') {
    return {
      field: 'bearerFormat',
      message: `bearer tokens are read as JWTs only (bearerFormat: JWT): declare other tokens as type: apiKey, in: header, name: Authorization`,
    };
  }
  return { field: 'scheme', message: `the http scheme ${quote(decl.scheme)} is ${NOT_YET}: ${supported}` };
}

function readScheme(c: Conversion, name: string, seen: Map<Method, string>): void {
  const declared: readonly Part[] = ['components', 'securitySchemes', name];
  const at: readonly Part[] = [...AUTH, 'securitySchemes', name];
  const decl = obj(c.peek(declared));
  if (decl === undefined) {
    c.problem(
      ['security', 0, name],
      'Invalid',
      `no security scheme ${quote(name)} in components.securitySchemes: declare it (type: apiKey for auth tokens, type: http with scheme: basic for basic authentication)`,
    );
    c.take(at);
    return;
  }
  const method = methodOf(decl);
  if (typeof method !== 'string') {
    c.problem([...declared, method.field], 'NotSupported', method.message);
    c.take(at);
    return;
  }
  if (c.take([...at, 'enabled']) !== true) {
    c.problem(
      [...at, 'enabled'],
      'Required',
      `the document's security requires ${quote(name)}: set enabled to true, so that the gateway enforces it`,
    );
    c.take(at);
    return;
  }
  const other = seen.get(method);
  if (other !== undefined) {
    c.problem(
      at,
      'NotSupported',
      `${quote(other)} and ${quote(name)} are both ${METHOD_LABEL[method]} schemes: one scheme per method is supported: require one of them`,
    );
    c.take(at);
    return;
  }
  seen.set(method, name);
  const ext = obj(c.peek(at)) ?? {};
  for (const [m, fields] of Object.entries(METHOD_FIELDS) as [Method, readonly string[]][]) {
    if (m === method) continue;
    for (const f of fields) {
      if (!saysSomething(ext[f])) continue;
      c.problem(
        [...at, f],
        'Invalid',
        `${f} applies to ${METHOD_LABEL[m]} schemes, and ${quote(name)} is declared as ${METHOD_LABEL[method]}: remove it`,
      );
      c.take([...at, f]);
    }
  }
  switch (method) {
    case 'token':
      c.set('use_standard_auth', true, [...at, 'enabled']);
      readLocations(c, 'auth_configs.authToken', at, decl, declared);
      readTokenExtras(c, at);
      break;
    case 'basic':
      c.set('use_basic_auth', true, [...at, 'enabled']);
      readLocations(c, 'auth_configs.basic', at, undefined, declared);
      readBasicExtras(c, at);
      break;
    case 'jwt':
      c.set('enable_jwt', true, [...at, 'enabled']);
      readLocations(c, 'auth_configs.jwt', at, undefined, declared);
      c.copyAll(at, JWT_FIELDS);
      break;
  }
}

const LOCATIONS = [
  ['header', 'auth_header_name', undefined],
  ['query', 'param_name', 'use_param'],
  ['cookie', 'cookie_name', 'use_cookie'],
] as const;

/**
 * Where a method reads its credentials: an apiKey declaration's `in` and `name`, then the
 * extension's `header`, `query` and `cookie`. The header is read unless an apiKey is declared
 * elsewhere (and the extension does not enable it) or the extension disables it; basic and JWT
 * credentials are in `Authorization` unless the extension names another header.
 */
function readLocations(
  c: Conversion,
  classic: string,
  at: readonly Part[],
  apiKey: Json | undefined,
  declared: readonly Part[],
): void {
  const where = apiKey?.in;
  if (apiKey !== undefined && where !== 'header' && where !== 'query' && where !== 'cookie') {
    c.problem([...declared, 'in'], 'Invalid', `${quote(where)}: set in to header, query or cookie`);
  }
  const declaredName = apiKey === undefined ? undefined : nonEmpty(apiKey.name);
  if (apiKey !== undefined && declaredName === undefined) {
    c.problem(
      [...declared, 'name'],
      'Required',
      `set the name of the ${typeof where === 'string' ? where : 'header'} that carries the token, such as Authorization`,
    );
  }
  for (const [location, nameField, flag] of LOCATIONS) {
    const place = [...at, location];
    const enabled = c.take([...place, 'enabled']);
    const name = c.take([...place, 'name']);
    const isDeclared = where === location;
    if (isDeclared && enabled === false) {
      c.problem(
        [...place, 'enabled'],
        'Invalid',
        `the scheme is declared in: ${location}: remove enabled: false, or declare another location`,
      );
    }
    const sameName =
      location === 'header'
        ? (a: string, b: string) => a.toLowerCase() === b.toLowerCase()
        : (a: string, b: string) => a === b;
    if (
      isDeclared &&
      nonEmpty(name) !== undefined &&
      declaredName !== undefined &&
      !sameName(String(name), declaredName)
    ) {
      c.problem(
        [...place, 'name'],
        'Invalid',
        `the scheme is declared in: ${location} with the name ${quote(declaredName)}: remove this name, or make it the same`,
      );
    }
    // The header is on by default for basic and JWT; query and cookie only when enabled.
    const on =
      isDeclared || enabled === true || (location === 'header' && apiKey === undefined && enabled !== false);
    if (!on) {
      c.take(place);
      if (location === 'header')
        c.set(
          `${classic}.disable_header`,
          true,
          apiKey === undefined ? [...place, 'enabled'] : [...declared, 'in'],
        );
      continue;
    }
    const value = isDeclared ? declaredName : nonEmpty(name);
    c.set(`${classic}.${nameField}`, value, isDeclared ? [...declared, 'name'] : [...place, 'name']);
    if (flag !== undefined)
      c.set(`${classic}.${flag}`, true, isDeclared ? [...declared, 'in'] : [...place, 'enabled']);
  }
}

function readTokenExtras(c: Conversion, at: readonly Part[]): void {
  c.copy('auth_configs.authToken.use_certificate', [...at, 'enableClientCertificate']);
  const sv = [...at, 'signatureValidation'];
  if (!c.enabled(sv)) return;
  c.set('auth_configs.authToken.validate_signature', true, [...sv, 'enabled']);
  const base = 'auth_configs.authToken.signature';
  const query = c.take([...sv, 'query']);
  if (nonEmpty(query) !== undefined) c.set(`${base}.use_param`, true, [...sv, 'query']);
  c.set(`${base}.param_name`, query, [...sv, 'query']);
  c.copyAll(sv, [
    ['algorithm', `${base}.algorithm`],
    ['header', `${base}.header`],
    ['secret', `${base}.secret`],
    ['allowedClockSkew', `${base}.allowed_clock_skew`],
    ['errorCode', `${base}.error_code`],
    ['errorMessage', `${base}.error_message`],
  ]);
}

function readBasicExtras(c: Conversion, at: readonly Part[]): void {
  c.copyAll(at, [
    ['cacheTTL', 'basic_auth.cache_ttl'],
    ['disableCaching', 'basic_auth.disable_caching'],
  ]);
  const body = [...at, 'extractCredentialsFromBody'];
  if (!c.enabled(body)) return;
  c.set('basic_auth.extract_from_body', true, [...body, 'enabled']);
  c.copyAll(body, [
    ['userRegexp', 'basic_auth.body_user_regexp'],
    ['passwordRegexp', 'basic_auth.body_password_regexp'],
  ]);
}

/** The API-wide switches of `middleware.global` and the classic fields the gateway enforces. */
const SKIPS = [
  ['skipRateLimit', 'disable_rate_limit'],
  ['skipQuota', 'disable_quota'],
  ['skipQuotaReset', 'dont_set_quota_on_create'],
] as const;

function readGlobalMiddleware(c: Conversion): void {
  const lists = [
    ['ipAllowList', 'allow', 'enable_ip_whitelisting', 'allowed_ips'],
    ['ipBlockList', 'block', 'enable_ip_blacklisting', 'blacklisted_ips'],
  ] as const;
  for (const [name, entries, flag, field] of lists) {
    const at = [...GLOBAL, name];
    if (!c.enabled(at)) continue;
    c.set(flag, true, [...at, 'enabled']);
    c.copy(field, [...at, entries]);
  }
  c.copyAll(GLOBAL, SKIPS);
  const at = [...GLOBAL, 'rateLimit'];
  if (!c.enabled(at)) return;
  const rate = c.take([...at, 'rate']);
  if (rate === undefined) {
    c.problem(
      [...at, 'rate'],
      'Required',
      'set rate to the requests allowed per window, or set enabled to false',
    );
  }
  c.set('global_rate_limit.rate', rate, [...at, 'rate']);
  const per = c.take([...at, 'per']);
  // The classic field comes from here even when it can't be filled (its problems map back).
  c.set('global_rate_limit.per', undefined, [...at, 'per']);
  if (per === undefined) {
    c.problem([...at, 'per'], 'Required', 'set per to the window, such as 1s or 1m, or set enabled to false');
    return;
  }
  if (typeof per !== 'string') {
    c.set('global_rate_limit.per', per, [...at, 'per']);
    return;
  }
  const ms = parseDuration(per);
  if (ms === undefined || ms <= 0 || ms % 1000 !== 0) {
    c.problem(
      [...at, 'per'],
      'Invalid',
      `${quote(per)} is not a duration of whole seconds: write one such as 1s, 30s, 1m or 1h30m`,
    );
    return;
  }
  c.set('global_rate_limit.per', ms / 1000, [...at, 'per']);
}

const CORS_FIELDS = [
  ['allowedOrigins', 'CORS.allowed_origins'],
  ['allowedMethods', 'CORS.allowed_methods'],
  ['allowedHeaders', 'CORS.allowed_headers'],
  ['exposedHeaders', 'CORS.exposed_headers'],
  ['allowCredentials', 'CORS.allow_credentials'],
  ['maxAge', 'CORS.max_age'],
  ['optionsPassthrough', 'CORS.options_passthrough'],
  ['debug', 'CORS.debug'],
] as const;

const CACHE_FIELDS = [
  ['timeout', 'cache_options.cache_timeout'],
  ['cacheAllSafeRequests', 'cache_options.cache_all_safe_requests'],
  ['cacheResponseCodes', 'cache_options.cache_response_codes'],
  ['cacheByHeaders', 'cache_options.cache_by_headers'],
  ['enableUpstreamCacheControl', 'cache_options.enable_upstream_cache_control'],
  ['controlTTLHeaderName', 'cache_options.cache_control_ttl_header'],
] as const;

/** `middleware.global.cors` and `.cache`: the classic `CORS` and `cache_options`. */
function readGlobalCorsAndCache(c: Conversion): void {
  const cors = [...GLOBAL, 'cors'];
  if (c.enabled(cors)) {
    c.set('CORS.enable', true, [...cors, 'enabled']);
    c.copyAll(cors, CORS_FIELDS);
  }
  const cache = [...GLOBAL, 'cache'];
  if (c.enabled(cache)) {
    c.set('cache_options.enable_cache', true, [...cache, 'enabled']);
    c.copyAll(cache, CACHE_FIELDS);
  }
}

/** The classic version an OAS API's operations become (`version_data.versions.Default`). */
const VERSION = 'version_data.versions.Default';
const EXTENDED = `${VERSION}.extended_paths`;
const OPERATIONS: readonly Part[] = [EXT, 'middleware', 'operations'];

/** An operation of the document: its path (as an endpoint path) and method. */
interface Operation {
  id: string;
  path: string;
  method: string;
}

/**
 * An OAS path as an endpoint path: literal text escaped, `{name}` parameters kept (the endpoint
 * path syntax reads them as one segment).
 */
export function oasEndpointPath(path: string): string {
  return path
    .split(/(\{[^{}/]*\})/)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&')))
    .join('');
}

/** The document's operations by `operationId`, the more specific paths first. */
function operationsById(c: Conversion): Map<string, Operation> {
  const out = new Map<string, Operation>();
  for (const [path, item] of Object.entries(obj(c.peek(['paths'])) ?? {})) {
    for (const [method, op] of Object.entries(obj(item) ?? {})) {
      const id = nonEmpty(obj(op)?.operationId);
      if (!HTTP_METHODS.has(method) || id === undefined || out.has(id)) continue;
      out.set(id, { id, path, method: method.toUpperCase() });
    }
  }
  return out;
}

/** Specificity order: more segments first, then fewer parameters (`/pets/mine` before `/pets/{id}`). */
function specificity(a: Operation, b: Operation): number {
  const segments = (p: string): number => p.split('/').filter((s) => s !== '').length;
  const params = (p: string): number => (p.match(/\{[^{}/]*\}/g) ?? []).length;
  return segments(b.path) - segments(a.path) || params(a.path) - params(b.path);
}

/** Entries of `extended_paths` lists being built, with where each came from. */
class ExtendedPaths {
  readonly lists: Record<string, Json[]> = {};
  readonly #c: Conversion;
  constructor(c: Conversion) {
    this.#c = c;
  }
  /** Adds an entry; `fields` maps classic fields of the entry to document fields (for problems). */
  add(list: string, entry: Json, from: readonly Part[], fields: Record<string, Part> = {}): void {
    const entries = (this.lists[list] ??= []);
    const at = `${EXTENDED}.${list}[${entries.length}]`;
    entries.push(entry);
    this.#c.set(at, undefined, from);
    for (const [classic, field] of Object.entries(fields))
      this.#c.set(`${at}.${classic}`, undefined, [...from, field]);
  }
}

const headerMap = (v: unknown): Json =>
  Object.fromEntries(
    list(v).flatMap((h) => {
      const name = nonEmpty(obj(h)?.name);
      return name === undefined ? [] : [[name, obj(h)?.value ?? '']];
    }),
  );

const REWRITE_IN: Record<string, string> = {
  header: 'header_matches',
  query: 'query_val_matches',
  path: 'path_part_matches',
  sessionMetadata: 'session_meta_matches',
  requestContext: 'request_context_matches',
};

/** A `$ref` to `#/components/...` replaced by what it names (cycles and other refs are refused). */
function resolveRefs(
  c: Conversion,
  schema: unknown,
  at: readonly Part[],
  seen: readonly string[] = [],
): unknown {
  if (Array.isArray(schema)) return schema.map((s, i) => resolveRefs(c, s, [...at, i], seen));
  const o = obj(schema);
  if (o === undefined) return schema;
  const ref = o.$ref;
  if (typeof ref === 'string') {
    const parts = ref.startsWith('#/')
      ? ref
          .slice(2)
          .split('/')
          .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
      : [];
    const target = parts.length > 0 ? c.peek(parts) : undefined;
    if (target === undefined || seen.includes(ref)) {
      c.problem(
        [...at, '$ref'],
        'NotSupported',
        `${quote(ref)}: validateRequest reads references into this document only, without cycles`,
      );
      return {};
    }
    return resolveRefs(c, target, at, [...seen, ref]);
  }
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, resolveRefs(c, v, [...at, k], seen)]));
}

/** `middleware.operations.<operationId>`: entries of the classic version's `extended_paths`. */
function readOperations(c: Conversion): void {
  const configured = obj(c.peek(OPERATIONS));
  if (configured === undefined) return;
  const ops = operationsById(c);
  const named: Operation[] = [];
  for (const id of Object.keys(configured)) {
    const op = ops.get(id);
    if (op !== undefined) {
      named.push(op);
      continue;
    }
    if (!saysSomething(configured[id])) continue;
    c.problem(
      [...OPERATIONS, id],
      'Invalid',
      `no operation in paths has the operationId ${quote(id)}: set it on the operation (paths.<path>.<method>.operationId), or remove this entry`,
    );
    c.take([...OPERATIONS, id]);
  }
  const x = new ExtendedPaths(c);
  let cacheAt: readonly Part[] | undefined;
  for (const op of named.sort(specificity)) {
    const at = [...OPERATIONS, op.id];
    const base = { path: oasEndpointPath(op.path), method: op.method };
    for (const [name, classic] of [
      ['allow', 'white_list'],
      ['block', 'black_list'],
      ['ignoreAuthentication', 'ignored'],
    ] as const) {
      const here = [...at, name];
      if (!c.enabled(here)) continue;
      const ignoreCase = c.take([...here, 'ignoreCase']) === true;
      x.add(classic, { ...base, ...(ignoreCase ? { ignore_case: true } : {}) }, here);
    }
    let here = [...at, 'internal'];
    if (c.enabled(here)) x.add('internal', { ...base }, here);
    here = [...at, 'requestSizeLimit'];
    if (c.enabled(here))
      x.add('size_limits', { ...base, size_limit: c.take([...here, 'value']) ?? 0 }, here, {
        size_limit: 'value',
      });
    for (const [name, classic] of [
      ['transformRequestHeaders', 'transform_headers'],
      ['transformResponseHeaders', 'transform_response_headers'],
    ] as const) {
      here = [...at, name];
      if (!c.enabled(here)) continue;
      x.add(
        classic,
        {
          ...base,
          add_headers: headerMap(c.take([...here, 'add'])),
          delete_headers: list(c.take([...here, 'remove'])),
        },
        here,
        { add_headers: 'add', delete_headers: 'remove' },
      );
    }
    here = [...at, 'transformRequestMethod'];
    if (c.enabled(here)) {
      const to = c.take([...here, 'toMethod']);
      x.add(
        'method_transforms',
        { ...base, to_method: typeof to === 'string' ? to.toUpperCase() : to },
        here,
        { to_method: 'toMethod' },
      );
    }
    readUrlRewrite(c, x, base, [...at, 'urlRewrite']);
    for (const [name, classic] of [
      ['transformRequestBody', 'transform'],
      ['transformResponseBody', 'transform_response'],
    ] as const) {
      here = [...at, name];
      if (!c.enabled(here)) continue;
      const body = nonEmpty(c.take([...here, 'body']));
      const file = nonEmpty(c.take([...here, 'path']));
      const format = c.take([...here, 'format']) ?? 'json';
      if ((body === undefined) === (file === undefined)) {
        c.problem(
          here,
          'Required',
          'set one of body (the template, base64) and path (its file), or set enabled to false',
        );
      }
      x.add(
        classic,
        {
          ...base,
          template_data: {
            input_type: format,
            template_mode: body === undefined ? 'file' : 'blob',
            template_source: body ?? file ?? '',
          },
        },
        here,
        {
          'template_data.input_type': 'format',
          'template_data.template_source': body === undefined ? 'path' : 'body',
        },
      );
    }
    here = [...at, 'validateRequest'];
    if (c.enabled(here)) {
      const code = c.take([...here, 'errorResponseCode']);
      const content = [
        'paths',
        op.path,
        op.method.toLowerCase(),
        'requestBody',
        'content',
        'application/json',
        'schema',
      ];
      const schema = c.peek(content);
      if (obj(schema) === undefined) {
        c.problem(
          here,
          'Required',
          `the operation ${quote(op.id)} has no requestBody.content.application/json.schema to validate against: add one, or set enabled to false`,
        );
      } else {
        x.add(
          'validate_json',
          {
            ...base,
            schema: resolveRefs(c, schema, content),
            ...(code === undefined ? {} : { error_response_code: code }),
          },
          here,
          { error_response_code: 'errorResponseCode' },
        );
      }
    }
    here = [...at, 'mockResponse'];
    if (c.enabled(here)) {
      const code = c.take([...here, 'code']);
      const body = c.take([...here, 'body']);
      x.add(
        'mock_response',
        {
          ...base,
          code: code ?? 200,
          body: body ?? '',
          headers: headerMap(c.take([...here, 'headers'])),
        },
        here,
        { code: 'code', body: 'body', headers: 'headers' },
      );
    }
    here = [...at, 'enforceTimeout'];
    if (c.enabled(here))
      x.add('hard_timeouts', { ...base, timeout: c.take([...here, 'value']) ?? 0 }, here, {
        timeout: 'value',
      });
    here = [...at, 'circuitBreaker'];
    if (c.enabled(here)) {
      const threshold = c.take([...here, 'threshold']);
      x.add(
        'circuit_breakers',
        {
          ...base,
          threshold_percent: typeof threshold === 'number' ? String(threshold) : threshold,
          samples: c.take([...here, 'sampleSize']),
          return_to_service_after: c.take([...here, 'coolDownPeriod']),
          disable_half_open_state: c.take([...here, 'halfOpenStateEnabled']) !== true,
        },
        here,
        { threshold_percent: 'threshold', samples: 'sampleSize', return_to_service_after: 'coolDownPeriod' },
      );
    }
    for (const [name, classic] of [
      ['trackEndpoint', 'track_endpoints'],
      ['doNotTrackEndpoint', 'do_not_track_endpoints'],
    ] as const) {
      here = [...at, name];
      if (c.enabled(here)) x.add(classic, base, here);
    }
    here = [...at, 'cache'];
    if (c.enabled(here)) {
      cacheAt ??= here;
      const timeout = c.take([...here, 'timeout']);
      const codes = c.take([...here, 'cacheResponseCodes']);
      x.add(
        'advance_cache_config',
        {
          ...base,
          ...(timeout === undefined ? {} : { timeout }),
          ...(codes === undefined ? {} : { cache_response_codes: codes }),
        },
        here,
        { timeout: 'timeout', cache_response_codes: 'cacheResponseCodes' },
      );
    }
  }
  if (cacheAt !== undefined && obj(c.peek([...GLOBAL, 'cache']))?.enabled !== true) {
    c.problem(
      [...cacheAt, 'enabled'],
      'Required',
      'caching per operation needs the API cache: enable middleware.global.cache as well',
    );
  }
  if (Object.keys(x.lists).length === 0) return;
  c.set('version_data.not_versioned', true, OPERATIONS);
  c.set(`${VERSION}.name`, 'Default', OPERATIONS);
  c.set(`${VERSION}.use_extended_paths`, true, OPERATIONS);
  for (const [name, entries] of Object.entries(x.lists)) {
    const listPath = `${EXTENDED}.${name}`;
    const keys = listPath.split('.');
    const last = keys.pop() ?? '';
    let at = c.api;
    for (const k of keys) at = at[k] = obj(at[k]) ?? {};
    at[last] = entries;
  }
}

function readUrlRewrite(c: Conversion, x: ExtendedPaths, base: Json, here: readonly Part[]): void {
  if (!c.enabled(here)) return;
  const triggers = list(c.take([...here, 'triggers'])).map((t, i) => {
    const trigger = obj(t) ?? {};
    const options: Json = {};
    list(trigger.rules).forEach((r, j) => {
      const rule = obj(r) ?? {};
      const match = { match_rx: rule.pattern, ...(rule.negate === true ? { reverse: true } : {}) };
      if (rule.in === 'requestBody') {
        if (options.payload_matches !== undefined) {
          c.problem(
            [...here, 'triggers', i, 'rules', j],
            'NotSupported',
            'one requestBody rule per trigger is supported',
          );
        }
        options.payload_matches = match;
        return;
      }
      const key = REWRITE_IN[String(rule.in)];
      const name = nonEmpty(rule.name);
      if (key === undefined) return;
      if (name === undefined) {
        c.problem(
          [...here, 'triggers', i, 'rules', j, 'name'],
          'Required',
          `set the name of the ${String(rule.in)} value to match`,
        );
        return;
      }
      const map = (options[key] = obj(options[key]) ?? {});
      if (map[name] !== undefined) {
        c.problem(
          [...here, 'triggers', i, 'rules', j],
          'NotSupported',
          `one rule per ${String(rule.in)} ${quote(name)} in a trigger is supported`,
        );
      }
      map[name] = match;
    });
    return { on: trigger.condition ?? 'any', options, rewrite_to: trigger.rewriteTo };
  });
  x.add(
    'url_rewrites',
    {
      ...base,
      match_pattern: c.take([...here, 'pattern']),
      rewrite_to: c.take([...here, 'rewriteTo']),
      ...(triggers.length > 0 ? { triggers } : {}),
    },
    here,
    { match_pattern: 'pattern', rewrite_to: 'rewriteTo', triggers: 'triggers' },
  );
}

/** Security per operation differs from the API's: the gateway can't enforce it. */
function operationSecurity(c: Conversion): void {
  const top = JSON.stringify(c.peek(['security']) ?? []);
  for (const [path, item] of Object.entries(obj(c.peek(['paths'])) ?? {})) {
    for (const [method, op] of Object.entries(obj(item) ?? {})) {
      const security = obj(op)?.security;
      if (!HTTP_METHODS.has(method) || security === undefined || JSON.stringify(security) === top) continue;
      c.problem(
        ['paths', path, method, 'security'],
        'NotSupported',
        `security per operation is ${NOT_YET}: the top-level security applies to every operation: remove this one, or make it the same as the top-level security`,
      );
    }
  }
}

const classicSchema = compile(apiDefinitionModel);

/**
 * Every reason the gateway can't serve the document as the classic definition it converts to,
 * besides the document's own schema (which callers check first, or beside it): the conversion's
 * problems, then the classic model's schema and rules (and `more`, what a gateway's configuration
 * adds), mapped back to document paths. A classic problem with no document field behind it is
 * reported at `x-svc-api-gateway`, naming the classic field.
 */
export function checkOasDocument(
  doc: unknown,
  more?: (api: GatewayApiDefinition) => FieldProblem[],
): { api: GatewayApiDefinition; problems: FieldProblem[] } {
  const conversion = oasToClassic(doc);
  const { api, problems } = conversion;
  if (obj(obj(doc)?.[EXT]) === undefined) return { api, problems };
  const classic = [
    ...classicSchema(api).map((p) => fromSchemaProblem(p)),
    ...checkClassicApi(api),
    ...(more?.(api) ?? []),
  ];
  const out = [...problems];
  const reported = new Set(problems.map((p) => p.path));
  const seen = new Set<string>();
  for (const p of classic) {
    const mapped = conversion.documentPathOf(p.path);
    const found: FieldProblem =
      mapped === undefined ? { ...p, path: EXT, message: `${p.path}: ${p.message}` } : { ...p, path: mapped };
    const key = `${found.path}\n${found.message}`;
    if (reported.has(found.path) || seen.has(key)) continue;
    seen.add(key);
    out.push(found);
  }
  return { api, problems: out };
}
