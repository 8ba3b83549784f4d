/**
 * Rules of the developer portal's model (docs/portal.md), written once for the dashboard's portal
 * (its admin and developer APIs), the portal kinds' schemas and checks (portal-kinds.ts, run by
 * the webhooks and the operator) and the operator's translation: event types, approvals, session
 * lifetimes, the product's auth types and documentation, developers' e-mails and passwords, and
 * the http(s) URLs of documentation and webhooks. A leaf: it imports no kind.
 */
import type * as Yaml from 'yaml';
import { lazyModule } from '../../lib/lazy.ts';
import { isPlainObject } from '../../lib/plain-object.ts';

/** The YAML parser, loaded by the first OpenAPI text read here (not by every process at start). */
const yaml = lazyModule<typeof Yaml>(import.meta.url, 'yaml');

/** An event type developers subscribe to, as a JSON Schema pattern (ECMAScript and RE2 alike). */
export const EVENT_TYPE_PATTERN = '^[A-Za-z0-9._:-]{1,128}$';
const EVENT_TYPE = new RegExp(EVENT_TYPE_PATTERN);
/** What an event type may be, for messages. */
export const EVENT_TYPE_RULE = 'an event type (letters, digits and . _ : -)';

/** Whether `s` is an event type a product may list. */
export function isEventType(s: unknown): s is string {
  return typeof s === 'string' && EVENT_TYPE.test(s);
}

/** How a product's key requests are decided: at once, or by an admin (the default). */
export const KEY_APPROVALS = ['auto', 'manual'] as const;
/** How a developer who signs up is made active: at once, or by an admin (the default). */
export const DEVELOPER_APPROVALS = ['auto', 'manual'] as const;
/** A developer's account status; only `active` signs in. */
export const DEVELOPER_STATUSES = ['active', 'pending', 'disabled'] as const;
/** The auth types a portal product has: keys from its policy or API, or none. */
export const PRODUCT_AUTH_TYPES = ['authToken', 'keyless'] as const;

/** Bounds and default of a developer's session lifetime, in seconds. */
export const SESSION_LIFETIME_S = { min: 60, max: 2_592_000, default: 8 * 3600 } as const;

/** Whether `s` is an absolute http(s) URL with a host. */
export function isHttpUrl(s: unknown): s is string {
  if (typeof s !== 'string') return false;
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

/** Whether `doc` is an OpenAPI (or Swagger 2) document object, as the dashboard holds one. */
export function isOasDocument(doc: unknown): doc is Record<string, unknown> {
  return isPlainObject(doc) && (doc.openapi !== undefined || doc.swagger !== undefined);
}

/**
 * An OpenAPI document from its JSON or YAML text, or from that text in base64 (the reference's
 * form); what the text parses to otherwise (undefined when it does not parse).
 */
export function oasOfText(text: string): unknown {
  const parse = (t: string): unknown => {
    try {
      return yaml().parse(t) as unknown; // YAML is a superset of JSON
    } catch {
      return undefined;
    }
  };
  const direct = parse(text);
  if (isOasDocument(direct)) return direct;
  const compact = text.replace(/\s+/g, '');
  if (compact === '' || !/^[A-Za-z0-9+/]+=*$/.test(compact)) return direct;
  return parse(Buffer.from(compact, 'base64').toString('utf8'));
}

/** Why `doc` is not an OpenAPI (or Swagger 2) document with its info, or undefined when it is one. */
export function openApiProblem(doc: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = yaml().parse(doc);
  } catch (err) {
    return `it does not parse as JSON or YAML: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`;
  }
  if (!isPlainObject(parsed)) return 'it is not a JSON or YAML object';
  if (typeof parsed.openapi !== 'string' && typeof parsed.swagger !== 'string') {
    return 'it has no openapi (or swagger) version field: write an OpenAPI document, or use doc_type swagger_custom_url with its URL';
  }
  if (!isPlainObject(parsed.info)) return 'it has no info object';
  return undefined;
}

/** Longest e-mail address (RFC 5321's path limit). */
export const MAX_EMAIL_LENGTH = 254;
// One @, no white space or control characters on either side.
const EMAIL = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+$/u;

/** Why `s` is not a developer's e-mail address as sign-up takes it, or undefined when it is one. */
export function emailProblem(s: unknown): string | undefined {
  if (s === undefined || s === '') return 'Required value: an e-mail address';
  if (typeof s !== 'string' || !EMAIL.test(s)) {
    return 'Invalid value: an e-mail address (name@domain, no spaces or control characters)';
  }
  if (s.length > MAX_EMAIL_LENGTH) return `Invalid value: at most ${String(MAX_EMAIL_LENGTH)} characters`;
  return undefined;
}

/** Shortest password of a developer. */
export const MIN_PASSWORD_LENGTH = 8;
/** Longest password of a developer (a passphrase fits; a megabyte is not hashed). */
export const MAX_PASSWORD_LENGTH = 1024;

/** Why `s` is not a password sign-up takes, or undefined when it is one. */
export function passwordProblem(s: unknown): string | undefined {
  if (typeof s !== 'string' || s.length < MIN_PASSWORD_LENGTH) {
    return `Required value: ${String(MIN_PASSWORD_LENGTH)} characters or more`;
  }
  if (s.length > MAX_PASSWORD_LENGTH)
    return `Invalid value: at most ${String(MAX_PASSWORD_LENGTH)} characters`;
  return undefined;
}

/** Longest name of a developer. */
export const MAX_DEVELOPER_NAME_LENGTH = 256;

/** Why `s` is not a developer's name (optional: undefined is none), or undefined when it is one. */
export function developerNameProblem(s: unknown): string | undefined {
  if (s === undefined) return undefined;
  if (typeof s !== 'string') return 'Invalid value: a string';
  if (s.length > MAX_DEVELOPER_NAME_LENGTH)
    return `Invalid value: at most ${String(MAX_DEVELOPER_NAME_LENGTH)} characters`;
  return undefined;
}

/** Longest webhook URL of a subscription. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;

/**
 * Why `s` is not a portal domain (an organisation's `cname`), or undefined when it is one (or
 * empty: no portal domain). A DNS name (letters, digits and hyphens in dot-separated labels, at
 * most 253 characters, a trailing dot allowed), optionally with a port: with one, only requests
 * to that port are the portal's; without, requests to any port are.
 */
export function portalDomainProblem(s: unknown): string | undefined {
  const rule = 'Invalid value: a domain name such as portal.example.com, optionally with :port';
  if (typeof s !== 'string') return rule;
  if (s === '') return undefined;
  const m = /^([^:]+?)\.?(?::(\d{1,5}))?$/.exec(s);
  const host = m?.[1];
  if (host === undefined || host.length > 253 || !host.split('.').every((l) => LABEL.test(l))) return rule;
  const port = m?.[2];
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return rule;
  return undefined;
}

/**
 * What a portal domain or a request's `Host` is looked up by: lower case, without a trailing dot
 * (`Portal.Example.com.:8443` is `portal.example.com:8443`); `port: false` drops the port too.
 */
export function portalDomainKey(host: string, port = true): string {
  const m = /^(.*?)\.?(:\d+)?$/.exec(host.trim().toLowerCase());
  const name = m?.[1] ?? host.toLowerCase();
  return port && m?.[2] !== undefined ? `${name}${m[2]}` : name;
}
