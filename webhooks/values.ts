/**
 * Checks of single values shared by the kinds' rules. Addresses and patterns are checked by
 * schemas/rules/values.ts, which the gateway uses too.
 */
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
