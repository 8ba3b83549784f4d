/** Checks of single values (URLs, addresses, patterns), shared by the kinds' rules. */
import net from 'node:net';
import { quote } from './field-error.ts';

/** Why `value` is not an absolute URL with one of `schemes`, or undefined when it is. */
export function urlProblem(value: string, schemes: readonly string[], example: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `${quote(value)} is not an absolute URL: write the scheme and host, such as ${example}`;
  }
  if (!schemes.includes(url.protocol)) {
    return `${quote(value)} has the scheme ${quote(url.protocol.slice(0, -1))}: use ${schemes.map((s) => s.slice(0, -1)).join(', ')}`;
  }
  if (url.hostname === '') {
    return `${quote(value)} has no host: write the scheme and host, such as ${example}`;
  }
  return undefined;
}

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

/** Why `pattern` is not a regular expression the gateway can compile, or undefined. */
export function regexProblem(pattern: string): string | undefined {
  try {
    new RegExp(pattern);
    return undefined;
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    return `${quote(pattern)} is not a valid regular expression (${detail}): escape special characters such as ( [ ? with a backslash`;
  }
}
