/**
 * Reading credentials from a request the way every authentication method configures it: a
 * header (name matched case-insensitively), a query parameter and a cookie (names matched
 * case-sensitively), in that order, a later non-empty source winning; and removing them again
 * for `strip_auth_data`. Compiled once per API.
 */
import type { AuthConfig } from '../../schemas/generated/models.ts';
import { removeRequestHeader, type CredentialSource, type RequestContext } from './context.ts';

/** Where one method reads its credentials. */
export interface CredentialLocations {
  /** Lower case; undefined with `disable_header`. */
  header: string | undefined;
  param: string | undefined;
  cookie: string | undefined;
}

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
    if (hv !== undefined && hv.trim() !== '')
      found = { value: hv.trim(), source: { kind: 'header', name: where.header } };
  }
  if (where.param !== undefined && ctx.query !== '') {
    const v = new URLSearchParams(ctx.query).get(where.param);
    if (v !== null && v !== '') found = { value: v, source: { kind: 'query', name: where.param } };
  }
  if (where.cookie !== undefined) {
    const v = cookieValue(ctx.headers.cookie, where.cookie);
    if (v !== undefined && v !== '') found = { value: v, source: { kind: 'cookie', name: where.cookie } };
  }
  return found;
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
