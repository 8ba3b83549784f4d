/**
 * Reading credentials from a request the way every authentication method configures it: a
 * header (name matched case-insensitively), a query parameter and a cookie (names matched
 * case-sensitively), in that order, a later non-empty source winning; and removing them again
 * for `strip_auth_data`. Compiled once per API.
 *
 * With chained authentication several methods may read one place (all of them read
 * `Authorization` by default). A value there that has the form of another chained method's
 * credential (`Basic ...`, `Signature ...`, a JWT) and not this method's is that method's, not
 * this one's: this method finds its credential missing and answers as it alone answers a missing
 * one (a token 401 `Authorization field missing`, a JWT 400, basic 401 with its realm), instead
 * of taking the other's credential for a wrong one of its own (`methodLocations`).
 */
import type { AuthConfig, GatewayApiDefinition } from '../../schemas/generated/models.ts';
import { authMethodsOf, tokenAuthConfigOf, type AuthMethod } from '../../schemas/rules/auth.ts';
import { removeRequestHeader, type CredentialSource, type RequestContext } from './context.ts';

/** Where one method reads its credentials. */
export interface CredentialLocations {
  /** Lower case; undefined with `disable_header`. */
  header: string | undefined;
  param: string | undefined;
  cookie: string | undefined;
  /**
   * Chained authentication: per place, whether a value there is another chained method's
   * credential (see the module comment); such a value is passed over as if absent.
   */
  othersAt?: { header?: Shape; param?: Shape; cookie?: Shape } | undefined;
}

/** Whether a credential has a method's form. */
type Shape = (value: string) => boolean;

/**
 * The locations an auth config names; the header defaults to `Authorization`, and also names the
 * query parameter and cookie when they have no name of their own.
 */
export function locationsOf(auth: AuthConfig | undefined): CredentialLocations {
  const header =
    auth?.auth_header_name === undefined || auth.auth_header_name === ''
      ? 'Authorization'
      : auth.auth_header_name;
  return {
    header: auth?.disable_header === true ? undefined : header.toLowerCase(),
    param: auth?.use_param === true ? (nonEmpty(auth.param_name) ?? header) : undefined,
    cookie: auth?.use_cookie === true ? (nonEmpty(auth.cookie_name) ?? header) : undefined,
  };
}

function nonEmpty(s: string | undefined): string | undefined {
  return s === undefined || s === '' ? undefined : s;
}

/** A credential found, and where. */
export interface Found {
  value: string;
  source: CredentialSource;
}

/** The credential of a request: header, then query, then cookie; the last non-empty wins. */
export function readCredential(ctx: RequestContext, where: CredentialLocations): Found | undefined {
  let found: Found | undefined;
  if (where.header !== undefined) {
    const h = ctx.headers[where.header];
    const hv = Array.isArray(h) ? h[0] : h;
    if (hv !== undefined && hv.trim() !== '' && where.othersAt?.header?.(hv) !== true)
      found = { value: hv.trim(), source: { kind: 'header', name: where.header } };
  }
  if (where.param !== undefined && ctx.query !== '') {
    const v = new URLSearchParams(ctx.query).get(where.param);
    if (v !== null && v !== '' && where.othersAt?.param?.(v) !== true)
      found = { value: v, source: { kind: 'query', name: where.param } };
  }
  if (where.cookie !== undefined) {
    const v = cookieValue(ctx.headers.cookie, where.cookie);
    if (v !== undefined && v !== '' && where.othersAt?.cookie?.(v) !== true)
      found = { value: v, source: { kind: 'cookie', name: where.cookie } };
  }
  return found;
}

const BASIC_FORM = /^\s*basic\s/i;
const SIGNATURE_FORM = /^\s*signature\s/i;
/** Three base64url parts (the last empty for `alg: none`), after an optional `Bearer `. */
const JWT_FORM = /^\s*(?:bearer\s+)?[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\s*$/i;

/**
 * The form of each method's credential; undefined for the token, whose credential is anything
 * that has no other method's form. Custom authentication reads what its plugin reads: no place
 * is known, and nothing is passed over for it.
 */
const FORMS: Readonly<Record<Exclude<AuthMethod, 'custom_auth'>, RegExp | undefined>> = {
  auth_token: undefined,
  basic_auth_user: BASIC_FORM,
  jwt_claim: JWT_FORM,
  hmac_key: SIGNATURE_FORM,
  // An OAuth 2.0 access token is a bearer token, as the auth token may be.
  oauth_key: undefined,
};

/** Where a method reads its credential, before anything is passed over. */
function ownLocations(api: GatewayApiDefinition, method: AuthMethod): CredentialLocations | undefined {
  switch (method) {
    case 'auth_token':
      return locationsOf(tokenAuthConfigOf(api));
    case 'basic_auth_user':
      return api.basic_auth?.extract_from_body === true ? undefined : locationsOf(api.auth_configs?.basic);
    case 'jwt_claim':
      return locationsOf(api.auth_configs?.jwt);
    case 'hmac_key':
      return locationsOf(api.auth_configs?.hmac);
    case 'custom_auth':
      return undefined;
    case 'oauth_key':
      return locationsOf(api.auth_configs?.oauth);
  }
}

/**
 * Where `method` reads its credential on `api` (`locationsOf` its auth config) and, when other
 * chained methods read one of those places too, what it passes over there (see the module
 * comment). Worked out once per API.
 */
export function methodLocations(api: GatewayApiDefinition, method: AuthMethod): CredentialLocations {
  const own = ownLocations(api, method) ?? { header: undefined, param: undefined, cookie: undefined };
  if (method === 'custom_auth') return own;
  const mine = FORMS[method];
  const others = authMethodsOf(api).filter((m) => m !== method && m !== 'custom_auth');
  if (others.length === 0) return own;
  const at = (kind: 'header' | 'param' | 'cookie', name: string | undefined): Shape | undefined => {
    if (name === undefined) return undefined;
    const forms: RegExp[] = [];
    let token = false;
    for (const m of others) {
      const where = ownLocations(api, m);
      const same =
        where?.[kind] === name ||
        // HMAC also reads a `Signature` header of its own.
        (m === 'hmac_key' && kind === 'header' && name === 'signature');
      if (!same) continue;
      const form = FORMS[m as Exclude<AuthMethod, 'custom_auth'>];
      if (form === undefined) token = true;
      else forms.push(form);
    }
    if (mine === undefined) {
      // The token: any value with another method's form is that method's.
      return forms.length === 0 ? undefined : (v) => forms.some((f) => f.test(v));
    }
    if (!token && forms.length === 0) return undefined;
    // Another form: a value without this method's form is the other method's when it has that
    // form, or always when the token (which takes anything) reads the same place.
    return (v) => !mine.test(v) && (token || forms.some((f) => f.test(v)));
  };
  const othersAt = {
    header: at('header', own.header),
    param: at('param', own.param),
    cookie: at('cookie', own.cookie),
  };
  if (othersAt.header === undefined && othersAt.param === undefined && othersAt.cookie === undefined) {
    return own;
  }
  return { ...own, othersAt };
}

/** The value of the cookie `name` (case-sensitive) in a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) {
      const raw = part.slice(eq + 1).trim();
      try {
        return decodeURIComponent(raw);
      } catch {
        return raw;
      }
    }
  }
  return undefined;
}

/** Removes a credential from the request before it is proxied. */
export function removeCredential(ctx: RequestContext, source: CredentialSource): void {
  switch (source.kind) {
    case 'header':
      removeRequestHeader(ctx.headers, source.name);
      break;
    case 'query': {
      const params = new URLSearchParams(ctx.query);
      params.delete(source.name);
      const q = params.toString();
      ctx.query = q === '' ? '' : `?${q}`;
      break;
    }
    case 'cookie': {
      const cookie = ctx.headers.cookie;
      if (cookie === undefined) break;
      const kept = cookie
        .split(';')
        .filter((part) => {
          const eq = part.indexOf('=');
          return eq === -1 || part.slice(0, eq).trim() !== source.name;
        })
        .map((p) => p.trim())
        .join('; ');
      if (kept === '') removeRequestHeader(ctx.headers, 'cookie');
      else ctx.headers.cookie = kept;
      break;
    }
  }
}

/** Whether the API authenticates with auth tokens (schemas/rules/auth.ts says when). */
export function usesAuthToken(api: GatewayApiDefinition): boolean {
  return authMethodsOf(api).includes('auth_token');
}

const BEARER = /^bearer\s+/i;

/** The token of a request, a leading `Bearer ` removed, and where it was; undefined when absent. */
export function readToken(ctx: RequestContext, where: CredentialLocations): Found | undefined {
  const found = readCredential(ctx, where);
  if (found === undefined) return undefined;
  const token = found.value.replace(BEARER, '').trim();
  return token === '' ? undefined : { value: token, source: found.source };
}
