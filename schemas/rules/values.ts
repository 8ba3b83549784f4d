/** Checks of single values (addresses, patterns) that rules of several models use. */
import net from 'node:net';
import { quote } from './field-problem.ts';

/** An HTTP header name (an RFC 9110 token). */
export const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Headers that frame a message or its connection, which a header an API's settings add can't
 * set: hop-by-hop headers and the body's length are the gateway's to write on each side.
 */
export const FRAMING_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'content-length',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** True for an IPv4 or IPv6 address, with an optional CIDR prefix length. */
export function isIpOrCidr(value: string): boolean {
  const parts = value.split('/');
  if (parts.length > 2) return false;
  const version = net.isIP(parts[0] ?? '');
  if (version === 0) return false;
  const prefix = parts[1];
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128);
}

/**
 * The number of capturing groups of `pattern` (named ones included), or why it is not a regular
 * expression the gateway can compile.
 */
export function regexGroups(pattern: string): number | string {
  try {
    new RegExp(pattern);
    // An alternative that matches the empty string makes exec report every group, unmatched.
    const groups = new RegExp(`(?:${pattern})|`).exec('');
    return groups === null ? 0 : groups.length - 1;
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    return `${quote(pattern)} is not a valid regular expression (${detail}): escape special characters such as ( [ ? with a backslash`;
  }
}

/** Why `pattern` is not a regular expression the gateway can compile, or undefined. */
export function regexProblem(pattern: string): string | undefined {
  const groups = regexGroups(pattern);
  return typeof groups === 'string' ? groups : undefined;
}
