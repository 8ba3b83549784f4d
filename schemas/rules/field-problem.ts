/**
 * What a rule of a model reports: the field (a path relative to the checked object), a kind of
 * problem as Kubernetes names them, and a message that says how to fix it. The webhooks put the
 * problems under `spec.`; the gateway's management API joins them into its 400 answer.
 */

/** Kinds of field problems, as Kubernetes names them. */
export const FieldProblemType = {
  Required: 'Required',
  Invalid: 'Invalid',
  NotSupported: 'NotSupported',
  /** A field of the reference's model svc does not enforce yet: `path: not supported by svc yet`. */
  NotSupportedYet: 'NotSupportedYet',
  Forbidden: 'Forbidden',
  TooLong: 'TooLong',
} as const;
/** One of FieldProblemType. */
export type FieldProblemType = (typeof FieldProblemType)[keyof typeof FieldProblemType];

/** One problem of an object: where (`proxy.target_url`, `allowed_ips[2]`), what kind, how to fix it. */
export interface FieldProblem {
  path: string;
  type: FieldProblemType;
  message: string;
}

/** A remark on a field that does not refuse the object. */
export interface FieldWarning {
  path: string;
  message: string;
}

/** How Kubernetes labels each type in messages (`spec.x: Invalid value: ...`). */
export const problemLabel: Record<FieldProblemType, string> = {
  Required: 'Required value',
  Invalid: 'Invalid value',
  NotSupported: 'Unsupported value',
  NotSupportedYet: '',
  Forbidden: 'Forbidden',
  TooLong: 'Too long',
};

/** `Invalid value: message`: a problem without its path (`not supported by svc yet` has no label). */
export function problemBody(p: FieldProblem): string {
  const label = problemLabel[p.type];
  return label === '' ? p.message : `${label}: ${p.message}`;
}

/** `x: Invalid value: message`, the way the Kubernetes API server prints a field error. */
export function formatProblem(p: FieldProblem): string {
  return `${p.path === '' ? '<object>' : p.path}: ${problemBody(p)}`;
}

/** JSON of a value for messages, shortened so a huge value can't flood the response. */
export function quote(value: unknown, max = 80): string {
  // JSON.stringify returns undefined for undefined and functions, whatever its typings say.
  const json = JSON.stringify(value) as string | undefined;
  const s = json ?? String(value);
  return s.length > max ? `${s.slice(0, max - 3)}...` : s;
}

const schemaPrefixes: readonly [string, FieldProblemType][] = [
  ['Required value: ', 'Required'],
  ['Unsupported value: ', 'NotSupported'],
  ['Invalid type: ', 'Invalid'],
  ['Invalid value: ', 'Invalid'],
];

/**
 * A schema problem (a `SchemaProblem` of schemas/validate.ts, which imports this module's
 * neighbours: hence its shape, not its name) as a field problem under `prefix`. The schema's
 * messages carry their kind as a prefix; the prefix becomes the type.
 */
export function fromSchemaProblem(p: Pick<FieldProblem, 'path' | 'message'>, prefix = ''): FieldProblem {
  const path = prefix === '' ? p.path : p.path === '' ? prefix : `${prefix}.${p.path}`;
  if (p.message.startsWith('unknown field')) return { path, type: 'Forbidden', message: p.message };
  for (const [text, type] of schemaPrefixes) {
    if (p.message.startsWith(text)) {
      let message = p.message.slice(text.length);
      if (text === 'Invalid type: ') message = `wrong type: ${message}`;
      if (/^must NOT have more than \d+ (characters|items)$/.test(message)) {
        return { path, type: 'TooLong', message };
      }
      return { path, type, message };
    }
  }
  return { path, type: 'Invalid', message: p.message };
}
