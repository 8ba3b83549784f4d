/**
 * OAuth 2.0 at the gateway (`use_oauth2`, `oauth_meta`): svc is the authorization server of the
 * client-credentials grant only. Clients are registered through the management API
 * (`/svc/oauth/clients/...`), `POST {listen_path}oauth/token` issues their access tokens and the
 * API checks them as bearer tokens (gateway/oauth2/). The other grants (`authorization_code`,
 * `refresh_token`, `password`) and the authorize endpoint's response types (`code`, `token`) are
 * refused by name. One rule for the webhooks, the gateway's management API and the operator.
 */
import { createHash } from 'node:crypto';
import type { OAuth2Meta } from '../generated/models.ts';
import { quote, type FieldProblem } from './field-problem.ts';
import { isTrue, list, model, problem, type ClassicApiInput } from './read.ts';

/** The one grant svc serves. */
export const CLIENT_CREDENTIALS = 'client_credentials';

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

/** Every OAuth 2.0 problem of `api` (see the module comment). */
export function oauth2Problems(api: ClassicApiInput): FieldProblem[] {
  const meta = model<OAuth2Meta>(api.oauth_meta);
  const problems: FieldProblem[] = [];
  list(meta?.allowed_access_types).forEach((grant, i) => {
    if (grant === CLIENT_CREDENTIALS) return;
    problems.push(
      problem(
        `oauth_meta.allowed_access_types[${String(i)}]`,
        'NotSupported',
        `grant ${quote(grant)} is not served: svc issues tokens for the client_credentials grant only; remove it`,
      ),
    );
  });
  list(meta?.allowed_authorize_types).forEach((type, i) => {
    problems.push(
      problem(
        `oauth_meta.allowed_authorize_types[${String(i)}]`,
        'NotSupported',
        `response type ${quote(type)} is not served: svc has no authorize endpoint (the client_credentials grant needs none); remove it`,
      ),
    );
  });
  if (usesOauth2(api) && !allowedGrants(api).includes(CLIENT_CREDENTIALS)) {
    problems.push(
      problem(
        'oauth_meta.allowed_access_types',
        'Required',
        'use_oauth2 needs the grant its clients use: set oauth_meta.allowed_access_types to [client_credentials]',
      ),
    );
  }
  return problems;
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
