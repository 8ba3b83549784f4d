/**
 * The rules of an API's authentication, written once for the webhooks, the gateway's management
 * API and its middleware: which methods an API runs (`authMethodsOf`, what the gateway's chain
 * enables), chained authentication (`base_identity_provided_by` must name one of them), and the
 * settings each method needs (JWT, signature validation on tokens, HMAC request signing). The
 * gateway reads what these functions return (`jwtSourceOf`, `tokenAuthConfigOf`), so a definition
 * accepted at write time is one it serves as written.
 */
import { createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import type { AuthConfig, GatewayApiDefinition, SignatureConfig } from '../generated/models.ts';
import type { ClassicApiInput } from './read.ts';
import { quote, type FieldProblem, type FieldWarning } from './field-problem.ts';
import { customAuthHook } from './plugins.ts';
import { oauth2Problems, oauth2Warnings, usesOauth2 } from './oauth2.ts';
import { isTrue, list, model, problem, text, type Unchecked } from './read.ts';

/** The methods the gateway serves, as `base_identity_provided_by` names them. */
export type AuthMethod = Exclude<NonNullable<GatewayApiDefinition['base_identity_provided_by']>, ''>;

/** The flag that turns each method on, as messages name it. */
const METHOD_FIELD: Readonly<Record<AuthMethod, string>> = {
  auth_token: 'use_standard_auth',
  basic_auth_user: 'use_basic_auth',
  jwt_claim: 'enable_jwt',
  hmac_key: 'enable_signature_checking',
  custom_auth: 'custom_middleware.auth_check',
  oauth_key: 'use_oauth2',
};

/**
 * The authentication methods the gateway runs for `api`, in chain order. Auth tokens are the
 * default: an API that is not keyless and turns no other method on uses them.
 */
export function authMethodsOf(api: ClassicApiInput): AuthMethod[] {
  if (isTrue(api.use_keyless)) return [];
  const others: [AuthMethod, boolean][] = [
    ['basic_auth_user', isTrue(api.use_basic_auth)],
    ['jwt_claim', isTrue(api.enable_jwt)],
    ['hmac_key', isTrue(api.enable_signature_checking)],
    ['custom_auth', customAuthHook(api) !== undefined],
    // OAuth 2.0 access tokens the gateway issued (schemas/rules/oauth2.ts).
    ['oauth_key', usesOauth2(api)],
  ];
  // Static mutual TLS checks the client's certificate and names no key: with no other method the
  // token is still needed (the reference's rule); a certificate-only API is keyless with it.
  const anyOther = others.some(([, on]) => on);
  const methods: AuthMethod[] = isTrue(api.use_standard_auth) || !anyOther ? ['auth_token'] : [];
  for (const [m, on] of others) if (on) methods.push(m);
  return methods;
}

/**
 * The flags use_keyless excludes (the webhook and the gateway here, the CRD's CEL rule in
 * schemas/kinds/api-definition.ts). Not use_mutual_tls_auth: static mutual TLS names no key, so
 * a certificate-only API is keyless with it, and the gateway still requires the certificate.
 */
export const KEYED_FLAGS = [
  'use_standard_auth',
  'use_basic_auth',
  'enable_jwt',
  'enable_signature_checking',
  'use_oauth2',
] as const satisfies readonly (keyof GatewayApiDefinition)[];

/** Every authentication problem of `api` (see the module comment). */
export function authProblems(api: ClassicApiInput): FieldProblem[] {
  return [
    ...keylessProblems(api),
    ...baseIdentityProblems(api),
    ...jwtProblems(api),
    ...tokenSignatureProblems(api),
    ...oauth2Problems(api),
  ];
}

function keylessProblems(api: ClassicApiInput): FieldProblem[] {
  if (!isTrue(api.use_keyless)) return [];
  const problems: FieldProblem[] = [];
  const on = KEYED_FLAGS.filter((m) => isTrue(api[m]));
  if (on.length > 0) {
    problems.push(
      problem(
        'use_keyless',
        'Forbidden',
        `use_keyless excludes authentication, but ${on.join(', ')} ${on.length > 1 ? 'are' : 'is'} true: set use_keyless to false, or turn ${on.join(' and ')} off`,
      ),
    );
  }
  if (customAuthHook(api) !== undefined) {
    problems.push(
      problem(
        'custom_middleware.auth_check',
        'Forbidden',
        'use_keyless excludes authentication: set use_keyless to false, or remove auth_check',
      ),
    );
  }
  return problems;
}

/** Chained authentication: the base identity must be one of the methods the API runs. */
function baseIdentityProblems(api: ClassicApiInput): FieldProblem[] {
  const base = text(api.base_identity_provided_by) ?? '';
  if (base === '' || isTrue(api.use_keyless)) return [];
  const methods = authMethodsOf(api);
  if ((methods as string[]).includes(base)) return [];
  const enable = Object.hasOwn(METHOD_FIELD, base) ? ` turn ${METHOD_FIELD[base as AuthMethod]} on, or` : '';
  return [
    problem(
      'base_identity_provided_by',
      'Invalid',
      `${quote(base)} names a method this API does not run (it runs ${methods.join(', ') || 'none'}):${enable} name one of those`,
    ),
  ];
}

/** Remarks on authentication settings that are allowed but probably not what the author meant. */
export function authWarnings(api: ClassicApiInput): FieldWarning[] {
  const warnings: FieldWarning[] = [...oauth2Warnings(api)];
  const methods = authMethodsOf(api);
  if (methods.length > 1 && (text(api.base_identity_provided_by) ?? '') === '') {
    warnings.push({
      path: 'base_identity_provided_by',
      message: `${methods.join(', ')} all run and must all pass; without base_identity_provided_by the session of the last one (${methods[methods.length - 1] ?? ''}) is used: name the method whose key decides access and limits`,
    });
  }
  if (methods.includes('jwt_claim')) {
    const hasPolicies =
      (text(api.jwt_policy_field_name) ?? '') !== '' ||
      list(api.jwt_default_policies).length > 0 ||
      Object.keys(model<Record<string, unknown>>(api.jwt_scope_to_policy_mapping) ?? {}).length > 0;
    if (!hasPolicies) {
      warnings.push({
        path: 'jwt_default_policies',
        message:
          'no policy source: every token is refused (403 key not authorized: no matching policy); set jwt_policy_field_name, jwt_default_policies or jwt_scope_to_policy_mapping',
      });
    }
  }
  if (
    methods.includes('hmac_key') &&
    !(typeof api.hmac_allowed_clock_skew === 'number' && api.hmac_allowed_clock_skew > 0)
  ) {
    warnings.push({
      path: 'hmac_allowed_clock_skew',
      message:
        'any Date is accepted, so a signed request can be replayed at any time: set the milliseconds a Date may differ from the gateway clock, such as 300000',
    });
  }
  for (const { path, config } of authConfigs(api)) {
    const sig = model<SignatureConfig>(config.signature);
    if (!isTrue(config.validate_signature) && (text(sig?.secret) ?? '') !== '') {
      warnings.push({
        path: `${path}.validate_signature`,
        message: 'signature is set but validate_signature is not true: signatures are not checked',
      });
    }
  }
  return warnings;
}

// --- JWT -------------------------------------------------------------------------------------------

/** The JWT signing families and the algorithms (JWS `alg`) each accepts. */
export const JWT_ALGORITHMS = {
  hmac: ['HS256', 'HS384', 'HS512'],
  rsa: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'],
  ecdsa: ['ES256', 'ES384', 'ES512'],
} as const;
/** A family of JWT_ALGORITHMS. */
export type JwtFamily = keyof typeof JWT_ALGORITHMS;

/** Where tokens' keys come from, as `jwt_source` says. */
export type JwtSource =
  | { kind: 'jwks'; url: string }
  | { kind: 'public-key'; key: KeyObject }
  | { kind: 'secret'; secret: Uint8Array };

const HTTP_URL = /^https?:\/\//i;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/**
 * What `jwt_source` names for tokens of `family`, or why it can't be used: a JWKS URL (also
 * base64-encoded, as the reference gateway allows), a PEM public key or certificate (base64 of
 * the PEM, or the PEM itself) for rsa and ecdsa, the base64 of the secret for hmac (a JWKS holds
 * no secrets, and a PEM key is no secret: HMAC with a public key as secret is refused here).
 */
export function jwtSourceOf(source: string, family: JwtFamily): JwtSource | string {
  const trimmed = source.trim();
  const decoded = BASE64.test(trimmed) ? Buffer.from(trimmed, 'base64') : undefined;
  const decodedText = decoded?.toString('utf8').trim();
  const url = HTTP_URL.test(trimmed) ? trimmed : HTTP_URL.test(decodedText ?? '') ? decodedText : undefined;
  if (url !== undefined) {
    const u = URL.parse(url);
    if (u === null || u.hostname === '') {
      return `${quote(url)} is not a URL: write the JWKS address, such as https://idp.example.com/.well-known/jwks.json`;
    }
    if (u.username !== '' || u.password !== '') {
      return `${quote(url)} carries credentials: a JWKS is public, remove the user and password`;
    }
    if (family === 'hmac') {
      return 'a JWKS publishes public keys, never HMAC secrets: write the base64 of the secret, or set jwt_signing_method to rsa or ecdsa';
    }
    return { kind: 'jwks', url };
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(trimmed)?.[1];
  if (scheme !== undefined) {
    return `${quote(trimmed)}: a JWKS is fetched over http or https, not ${scheme}: write its http(s) URL`;
  }
  const pem = trimmed.startsWith('-----BEGIN')
    ? trimmed
    : decodedText?.startsWith('-----BEGIN')
      ? decodedText
      : undefined;
  if (family === 'hmac') {
    if (pem !== undefined) {
      return 'this is a PEM key, not an HMAC secret: set jwt_signing_method to rsa or ecdsa for tokens signed with its private key (a public key is never an HMAC secret)';
    }
    if (decoded === undefined || decoded.length === 0) {
      return 'write the base64 of the HMAC secret (such as the output of `printf %s "$SECRET" | base64`)';
    }
    return { kind: 'secret', secret: new Uint8Array(decoded) };
  }
  if (pem === undefined) {
    return `jwt_signing_method ${family} needs a public key: write the base64 of its PEM (-----BEGIN PUBLIC KEY-----), or a JWKS URL`;
  }
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) {
    return 'this is a private key: store only the public key (openssl pkey -pubout), base64-encoded';
  }
  let key: KeyObject;
  try {
    key = pem.includes('-----BEGIN CERTIFICATE-----')
      ? new X509Certificate(pem).publicKey
      : createPublicKey(pem);
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    return `the PEM does not parse as a public key or certificate (${detail}): write the base64 of a PEM public key`;
  }
  const type = key.asymmetricKeyType ?? '';
  const fits = family === 'rsa' ? type === 'rsa' || type === 'rsa-pss' : type === 'ec';
  if (!fits) {
    return `this is a ${type} key, but jwt_signing_method is ${family}: use a key of that family, or set jwt_signing_method to ${type === 'ec' ? 'ecdsa' : type.startsWith('rsa') ? 'rsa' : 'the family of the key'}`;
  }
  return { kind: 'public-key', key };
}

function jwtProblems(api: ClassicApiInput): FieldProblem[] {
  if (!isTrue(api.enable_jwt) || isTrue(api.use_keyless)) return [];
  const problems: FieldProblem[] = [];
  const method = text(api.jwt_signing_method);
  const source = text(api.jwt_source) ?? '';
  if (method === undefined) {
    problems.push(
      problem(
        'jwt_signing_method',
        'Required',
        'enable_jwt needs the signing method: set hmac, rsa or ecdsa',
      ),
    );
  }
  if (source === '') {
    problems.push(
      problem(
        'jwt_source',
        'Required',
        'enable_jwt needs the key that verifies tokens: set a base64 secret, a PEM public key or a JWKS URL',
      ),
    );
  }
  if (method !== undefined && Object.hasOwn(JWT_ALGORITHMS, method) && source !== '') {
    const s = jwtSourceOf(source, method as JwtFamily);
    if (typeof s === 'string') problems.push(problem('jwt_source', 'Invalid', s));
  }
  return problems;
}

// --- signature validation on tokens ---------------------------------------------------------------

/** The auth config auth tokens are read with: `auth_configs.authToken` when set, else `auth`. */
export function tokenAuthConfigOf(
  api: Pick<GatewayApiDefinition, 'auth' | 'auth_configs'>,
): AuthConfig | undefined {
  return api.auth_configs?.authToken ?? api.auth;
}

/** The algorithms of signature validation and the hash each stands for. */
export const SIGNATURE_HASHES = { VendorSHA256: 'sha256', VendorMD5: 'md5' } as const;

/** The widest `allowed_clock_skew`, in seconds. */
export const MAX_SIGNATURE_SKEW_S = 300;

/** Every auth config of `api` with its field path. */
function authConfigs(api: ClassicApiInput): { path: string; config: Unchecked<AuthConfig> }[] {
  const out: { path: string; config: Unchecked<AuthConfig> }[] = [];
  const auth = model<AuthConfig>(api.auth);
  if (auth !== undefined) out.push({ path: 'auth', config: auth });
  for (const [name, c] of Object.entries(model<Record<string, unknown>>(api.auth_configs) ?? {})) {
    const config = model<AuthConfig>(c);
    if (config !== undefined) out.push({ path: `auth_configs.${name}`, config });
  }
  return out;
}

/**
 * Signature validation checks auth tokens, with the config tokens are read with: turned on
 * anywhere else it would be ignored, so it is refused there; where it runs it needs an
 * algorithm, a secret written as it is, and where the signature comes from.
 */
function tokenSignatureProblems(api: ClassicApiInput): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const tokenConfigPath =
    model(model<Record<string, unknown>>(api.auth_configs)?.authToken) !== undefined
      ? 'auth_configs.authToken'
      : 'auth';
  const tokens = authMethodsOf(api).includes('auth_token');
  for (const { path, config } of authConfigs(api)) {
    if (!isTrue(config.validate_signature)) continue;
    const at = `${path}.validate_signature`;
    if (path !== tokenConfigPath) {
      problems.push(
        problem(
          at,
          'Invalid',
          `signature validation checks auth tokens, which are read with ${tokenConfigPath}: move validate_signature and signature there`,
        ),
      );
      continue;
    }
    if (!tokens) {
      problems.push(
        problem(
          at,
          'Invalid',
          'signature validation checks auth tokens: turn use_standard_auth on, or set validate_signature to false',
        ),
      );
      continue;
    }
    const sig = model<SignatureConfig>(config.signature) ?? {};
    const algorithm = text(sig.algorithm) ?? '';
    if (!Object.hasOwn(SIGNATURE_HASHES, algorithm)) {
      problems.push(
        problem(
          `${path}.signature.algorithm`,
          algorithm === '' ? 'Required' : 'NotSupported',
          `${algorithm === '' ? 'set' : `${quote(algorithm)}: use`} VendorSHA256 or VendorMD5 (the hex digest of the token, the secret and the Unix time in seconds)`,
        ),
      );
    }
    const secret = text(sig.secret) ?? '';
    if (secret === '') {
      problems.push(
        problem(`${path}.signature.secret`, 'Required', 'set the secret shared with the clients'),
      );
    } else if (secret.startsWith('$secret_')) {
      problems.push(
        problem(
          `${path}.signature.secret`,
          'NotSupported',
          `${quote(secret, 40)}: secret references are not supported by this gateway: write the secret itself (the definition is stored where only the management API reads it)`,
        ),
      );
    }
    const skew = sig.allowed_clock_skew;
    if (typeof skew === 'number' && skew > MAX_SIGNATURE_SKEW_S) {
      problems.push(
        problem(
          `${path}.signature.allowed_clock_skew`,
          'Invalid',
          `${skew} seconds is too wide: every second of the window costs a digest on every request; keep clocks in sync (NTP) and set at most ${MAX_SIGNATURE_SKEW_S}`,
        ),
      );
    }
    const header = text(sig.header) ?? '';
    const param = isTrue(sig.use_param) || (text(sig.param_name) ?? '') !== '';
    if (header === '' && (!param || (text(sig.param_name) ?? '') === '')) {
      problems.push(
        problem(
          `${path}.signature.header`,
          'Required',
          'set the header that carries the signature (such as X-Signature), or param_name with use_param for a query parameter',
        ),
      );
    }
  }
  return problems;
}
