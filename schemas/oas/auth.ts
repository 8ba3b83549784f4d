/**
 * Security: `server.authentication` of the extension with the document's `security` and
 * `components.securitySchemes`, as the classic authentication fields (auth token, basic, JWT),
 * and the refusal of security per operation.
 */
import type { GatewayApiDefinition } from '../generated/models.ts';
import { quote } from '../rules/field-problem.ts';
import { list } from '../rules/read.ts';
import {
  EXT,
  HTTP_METHODS,
  NOT_YET,
  nonEmpty,
  obj,
  saysSomething,
  type Conversion,
  type Json,
  type Part,
} from './document.ts';

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

const AUTH: readonly Part[] = [EXT, 'server', 'authentication'];

/** The scheme names of a security requirement object. */
const requirementNames = (requirement: unknown): string[] => Object.keys(obj(requirement) ?? {});

/**
 * `server.authentication` and the document's top-level `security`: keyless, or the schemes it
 * requires, each read by `readScheme`.
 */
export function readAuthentication(c: Conversion): void {
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

/** Security per operation differs from the API's: the gateway can't enforce it. */
export function operationSecurity(c: Conversion): void {
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
