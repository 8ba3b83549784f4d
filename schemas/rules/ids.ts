/**
 * The one rule for IDs a client chooses, written once for the gateway's management API, the
 * dashboard, the webhooks and the CRDs: every such ID is the last segment of its own URL
 * (`/svc/policies/{id}`, `/api/portal/policies/{id}`, `/svc/keys/{keyID}`), so an ID that a URL
 * cannot carry is refused when it is written, never stored and then unreachable.
 *
 * What no URL can carry, for every kind: the empty ID (the path is then the collection's), `.`
 * and `..` (URL parsers resolve them, and their `%2E` forms, away: `/api/portal/policies/..` is
 * `/api/portal/`), `/` (it splits the path, and proxies decode or refuse `%2F`), control
 * characters (and with them newlines in logs) and IDs too long for a request line.
 *
 * Object IDs (APIs, OAS and streams APIs, policies, organisations) keep to the characters a URL
 * path carries without escaping, as the gateway has always required: letters, digits and
 * `. _ ~ -`, at most 255 characters, not only dots.
 *
 * Key IDs (custom keys imported under a chosen value, basic-auth user names) are credentials that
 * users bring from elsewhere (base64 with `+` and `=`, `user@example.com`, `org:name`), so any
 * other character stays allowed, `%`, `?`, `#`, `\` and inner spaces included, escaped in the
 * URL as encodeURIComponent does; leading and trailing white space is refused, since HTTP drops
 * it from the header that would carry the key.
 */
import type { JsonSchema } from '../json-schema.ts';
import { quote, type FieldProblem } from './field-problem.ts';

/** Longest object ID (API, policy, organisation). */
export const MAX_ID_LENGTH = 255;
/** Longest key ID (a custom key's value, a basic-auth user name). */
export const MAX_KEY_ID_LENGTH = 1024;

/**
 * Object IDs as a JSON Schema pattern (for ECMAScript and the RE2 of the Kubernetes API server
 * alike: no look-ahead): letters, digits and `. _ ~ -`, with at least one that is not a dot. The
 * leading `\.*` and the one non-dot make the match linear, whatever the input.
 */
export const ID_PATTERN = '^\\.*[A-Za-z0-9_~-][A-Za-z0-9._~-]*$';
const ID = new RegExp(ID_PATTERN);

/** What an object ID may be, for messages. */
export const ID_RULE = `letters, digits and . _ ~ - only, not only dots (a URL resolves . and .. away), at most ${String(MAX_ID_LENGTH)} characters`;

/** The schema of an object ID (this rule's pattern and length), with what the ID is. */
export const objectIdSchema = (description: string): JsonSchema => ({
  type: 'string',
  pattern: ID_PATTERN,
  maxLength: MAX_ID_LENGTH,
  description,
});

// C0 controls, DEL and C1 controls.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const ONLY_DOTS = /^\.{1,2}$/;

/** Whether `id` is a valid object ID. */
export function isValidId(id: unknown): id is string {
  return typeof id === 'string' && id.length <= MAX_ID_LENGTH && ID.test(id);
}

/** What is wrong with an ID any kind shares, or undefined; never quoting it (a key is a secret). */
function commonProblem(path: string, id: string, max: number): FieldProblem | undefined {
  if (id === '') return { path, type: 'Required', message: 'the ID must not be empty' };
  if (id.length > max) {
    return {
      path,
      type: 'TooLong',
      message: `${String(id.length)} characters, more than ${String(max)}: choose a shorter ID`,
    };
  }
  if (ONLY_DOTS.test(id)) {
    return {
      path,
      type: 'Invalid',
      message: 'a URL resolves . and .. away, so no URL could name this ID: choose another',
    };
  }
  if (id.includes('/')) {
    return {
      path,
      type: 'Invalid',
      message: '/ would split the URL that names this ID: choose an ID without /',
    };
  }
  if (CONTROL.test(id)) {
    return {
      path,
      type: 'Invalid',
      message: 'control characters are not allowed in an ID',
    };
  }
  return undefined;
}

/**
 * Why `id` can't be the ID of an API, policy or organisation (at the field `path`), or undefined.
 */
export function idProblem(path: string, id: unknown): FieldProblem | undefined {
  if (typeof id !== 'string') return { path, type: 'Invalid', message: 'wrong type: must be string' };
  const common = commonProblem(path, id, MAX_ID_LENGTH);
  if (common !== undefined) return common;
  if (/^\.+$/.test(id)) {
    return { path, type: 'Invalid', message: `${quote(id)}: an ID of dots only is not allowed: ${ID_RULE}` };
  }
  if (!ID.test(id)) {
    const bad = /[^A-Za-z0-9._~-]/u.exec(id)?.[0] ?? '';
    return { path, type: 'Invalid', message: `${quote(id)}: ${quote(bad)} is not allowed: ${ID_RULE}` };
  }
  return undefined;
}

/**
 * Why `key` can't be imported as a custom key or be a basic-auth user name, or undefined. The
 * message never holds the key.
 */
export function keyIdProblem(path: string, key: string): FieldProblem | undefined {
  const common = commonProblem(path, key, MAX_KEY_ID_LENGTH);
  if (common !== undefined) return common;
  if (key.trim() !== key) {
    return {
      path,
      type: 'Invalid',
      message: 'HTTP drops leading and trailing spaces from the header that carries a key: remove them',
    };
  }
  return undefined;
}
