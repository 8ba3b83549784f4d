/**
 * OAuth 2.0 at the gateway (`use_oauth2`, `oauth_meta`): svc is the authorization server, as the
 * reference gateway is, of the client-credentials grant and of the authorization flow: clients are
 * registered through the management API (`/svc/oauth/clients/...`); `{listen_path}oauth/authorize`
 * checks a client's request (response type, client, redirect URI) and sends the user on to the
 * API's login page (`auth_login_redirect`), which, once the user is signed in, asks the gateway
 * (`POST /svc/oauth/authorize-client`) for a code (`code`) or a token (`token`, the implicit grant)
 * and sends the user back to the client; `POST {listen_path}oauth/token` issues access tokens for
 * `client_credentials` and `authorization_code` (a code, once, for the redirect URI it was issued
 * for), and the API checks them as bearer tokens (gateway/oauth2/). Refresh tokens and the password
 * grant are refused by name. One rule for the webhooks, the gateway's management API and the
 * operator.
 */
import { createHash } from 'node:crypto';
import type { OAuth2Meta } from '../generated/models.ts';
import { quote, type FieldProblem, type FieldWarning } from './field-problem.ts';
import { isTrue, list, model, problem, text, type ClassicApiInput } from './read.ts';

/** The client-credentials grant. */
export const CLIENT_CREDENTIALS = 'client_credentials';
/** The authorization-code grant: a code from the authorize flow exchanged for a token. */
export const AUTHORIZATION_CODE = 'authorization_code';
/** The grants svc serves. */
export const GRANTS = [CLIENT_CREDENTIALS, AUTHORIZATION_CODE] as const;
/** The response types of the authorize flow svc serves: a code, or a token (implicit grant). */
export const RESPONSE_TYPES = ['code', 'token'] as const;
/** One of RESPONSE_TYPES. */
export type ResponseType = (typeof RESPONSE_TYPES)[number];

/**
 * The stored ID of an OAuth client of an API: the hex SHA-256 of `<api ID>/<client ID>` (`/` is in
 * no API ID, so the pair is never ambiguous; a client ID is unique per API only). The gateway's
 * store and the dashboard's (which hands clients to gateways in mode pro by this ID) agree on it.
 */
export function oauthClientDocId(apiId: string, clientId: string): string {
  return createHash('sha256').update(`${apiId}/${clientId}`, 'utf8').digest('hex');
}

/** Whether the API is an OAuth 2.0 API whose tokens the gateway issues and checks. */
export function usesOauth2(api: { use_oauth2?: unknown }): boolean {
  return isTrue(api.use_oauth2);
}

/** The grants an API's clients may use (`oauth_meta.allowed_access_types`). */
export function allowedGrants(api: ClassicApiInput): string[] {
  return list(model<OAuth2Meta>(api.oauth_meta)?.allowed_access_types).filter(
    (g): g is string => typeof g === 'string',
  );
}

/** The response types the API's authorize flow serves (`oauth_meta.allowed_authorize_types`). */
export function allowedResponseTypes(api: ClassicApiInput): ResponseType[] {
  return list(model<OAuth2Meta>(api.oauth_meta)?.allowed_authorize_types).filter((t): t is ResponseType =>
    (RESPONSE_TYPES as readonly unknown[]).includes(t),
  );
}

/** The login page of the API's authorize flow (`oauth_meta.auth_login_redirect`), or ''. */
export function loginRedirect(api: ClassicApiInput): string {
  return text(model<OAuth2Meta>(api.oauth_meta)?.auth_login_redirect) ?? '';
}

/** Whether `raw` is an absolute http(s) URL without a fragment (a login page, a redirect URI). */
export function isHttpUrl(raw: string): boolean {
  try {
    const u = new URL(raw);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hash === '' && u.host !== '';
  } catch {
    return false;
  }
}

/** A NotSupported problem at `at[i]` for each entry of the list `values` that is not among `served`. */
function unserved(
  values: unknown,
  served: readonly unknown[],
  at: string,
  message: (value: unknown) => string,
): FieldProblem[] {
  const out: FieldProblem[] = [];
  list(values).forEach((value, i) => {
    if (!served.includes(value)) out.push(problem(`${at}[${String(i)}]`, 'NotSupported', message(value)));
  });
  return out;
}

/** Every OAuth 2.0 problem of `api` (see the module comment). */
export function oauth2Problems(api: ClassicApiInput): FieldProblem[] {
  const meta = model<OAuth2Meta>(api.oauth_meta);
  const problems: FieldProblem[] = [
    ...unserved(
      meta?.allowed_access_types,
      GRANTS,
      'oauth_meta.allowed_access_types',
      (grant) =>
        `grant ${quote(grant)} is not served: svc issues tokens for the ${GRANTS.join(' and ')} grants (no refresh tokens); remove it`,
    ),
    ...unserved(
      meta?.allowed_authorize_types,
      RESPONSE_TYPES,
      'oauth_meta.allowed_authorize_types',
      (type) => `response type ${quote(type)} is not served: write code or token`,
    ),
  ];
  const types = allowedResponseTypes(api);
  const login = loginRedirect(api);
  if (types.length > 0 && !isHttpUrl(login)) {
    problems.push(
      problem(
        'oauth_meta.auth_login_redirect',
        login === '' ? 'Required' : 'Invalid',
        `${login === '' ? '' : `${quote(login)}: `}the authorize endpoint sends the user to the API's login page: set it to an http(s) URL`,
      ),
    );
  }
  const grants = allowedGrants(api);
  if (grants.includes(AUTHORIZATION_CODE) && !types.includes('code')) {
    problems.push(
      problem(
        'oauth_meta.allowed_access_types',
        'Invalid',
        'the authorization_code grant exchanges codes the authorize flow issues: add code to oauth_meta.allowed_authorize_types, or remove the grant',
      ),
    );
  }
  if (
    usesOauth2(api) &&
    !grants.some((g) => (GRANTS as readonly string[]).includes(g)) &&
    !types.includes('token')
  ) {
    problems.push(
      problem(
        'oauth_meta.allowed_access_types',
        'Required',
        'use_oauth2 needs a way for clients to get tokens: set oauth_meta.allowed_access_types to [client_credentials] (or authorization_code with the response type code)',
      ),
    );
  }
  return problems;
}

/** Remarks on OAuth 2.0 settings that are allowed but probably not what the author meant. */
export function oauth2Warnings(api: ClassicApiInput): FieldWarning[] {
  if (!allowedResponseTypes(api).includes('code') || allowedGrants(api).includes(AUTHORIZATION_CODE))
    return [];
  return [
    {
      path: 'oauth_meta.allowed_authorize_types',
      message:
        'the response type code is allowed but not the authorization_code grant: the authorize flow issues codes the token endpoint will not exchange (as the reference): add authorization_code to oauth_meta.allowed_access_types',
    },
  ];
}

/**
 * The shortest client secret a user may choose (`secret` of a new OAuth client, at the gateway's
 * `/svc/oauth/clients/create` and the dashboard's `/api/apis/oauth/{apiId}`): 16 characters. A
 * secret is the client's only credential and the token endpoint is open to anyone, so a short one
 * could be guessed; generated secrets are far longer (32 hex characters at the gateway, 43 at the
 * dashboard). Counted in UTF-16 code units (JavaScript string length). Omit `secret` to have one
 * generated.
 */
export const MIN_CLIENT_SECRET_LENGTH = 16;

/** The problem of a client secret the user gave (`path` its field), or undefined when usable. */
export function clientSecretProblem(path: string, secret: string): FieldProblem | undefined {
  if (secret.length >= MIN_CLIENT_SECRET_LENGTH) return undefined;
  return problem(
    path,
    'Invalid',
    `a client secret needs at least ${String(MIN_CLIENT_SECRET_LENGTH)} characters (it is the client's only credential): give a longer one, or omit it to have one generated`,
  );
}

/**
 * Why the policy `policyId` can't be deleted while the OAuth clients `clients` (API ID and client
 * ID, named in that order) use it: their tokens are made from it, so a client left without its policy could no longer
 * be issued tokens. The dashboard and the gateway's management API refuse it with 409 and this
 * message; undefined when no client uses it.
 */
export function policyInUseByClients(
  policyId: string,
  clients: readonly { api_id: string; client_id: string }[],
): string | undefined {
  if (clients.length === 0) return undefined;
  const sorted = [...clients].sort(
    (a, b) => a.api_id.localeCompare(b.api_id) || a.client_id.localeCompare(b.client_id),
  );
  const named = sorted.map((c) => `${quote(c.client_id)} of API ${quote(c.api_id)}`).join(', ');
  return `policy ${quote(policyId)} is used by OAuth clients ${named}: delete them (or register them with another policy) first`;
}
