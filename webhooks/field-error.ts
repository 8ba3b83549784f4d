/**
 * The result type of every validator: field errors (the request is refused) and warnings (it is
 * admitted, and kubectl prints them). Messages say how to fix the problem, not only what it is.
 */
import {
  FieldProblemType,
  formatProblem,
  problemLabel,
  type FieldProblem,
} from '../schemas/rules/field-problem.ts';
import type { SchemaProblem } from '../schemas/validate.ts';

export { quote } from '../schemas/rules/field-problem.ts';

/** Kinds of field errors, as Kubernetes names them (the shared rules' problem types). */
export const FieldErrorType = FieldProblemType;
/** One of FieldErrorType. */
export type FieldErrorType = FieldProblemType;

/** One problem of an object: where (`spec.access_rights_array[0].kind`), what kind, how to fix it. */
export type FieldError = FieldProblem;

/** What a validator returns; no errors means admitted. */
export interface Verdict {
  errors: FieldError[];
  warnings: string[];
}

/** Builds FieldErrors tersely. */
export const fe = {
  required: (path: string, message: string): FieldError => ({ path, type: 'Required', message }),
  invalid: (path: string, message: string): FieldError => ({ path, type: 'Invalid', message }),
  notSupported: (path: string, message: string): FieldError => ({ path, type: 'NotSupported', message }),
  forbidden: (path: string, message: string): FieldError => ({ path, type: 'Forbidden', message }),
  tooLong: (path: string, message: string): FieldError => ({ path, type: 'TooLong', message }),
};

/** The reason a Kubernetes StatusCause carries for each type. */
export const causeReason: Record<FieldErrorType, string> = {
  Required: 'FieldValueRequired',
  Invalid: 'FieldValueInvalid',
  NotSupported: 'FieldValueNotSupported',
  Forbidden: 'FieldValueForbidden',
  TooLong: 'FieldValueTooLong',
};

/** `Invalid value: message`: a field error without its path (a Kubernetes StatusCause message). */
export function fieldErrorBody(e: FieldError): string {
  return `${problemLabel[e.type]}: ${e.message}`;
}

/** `spec.x: Invalid value: message`, the way the API server prints a field error. */
export const formatFieldError: (e: FieldError) => string = formatProblem;

const prefixes: readonly [string, FieldErrorType][] = [
  ['Required value: ', 'Required'],
  ['Unsupported value: ', 'NotSupported'],
  ['Invalid type: ', 'Invalid'],
  ['Invalid value: ', 'Invalid'],
];

/**
 * A schema problem (from schemas/validate.ts) as a field error under `prefix`. The schema's
 * messages carry their kind as a prefix; the prefix becomes the type.
 */
export function fromSchemaProblem(p: SchemaProblem, prefix = ''): FieldError {
  const path = prefix === '' ? p.path : p.path === '' ? prefix : `${prefix}.${p.path}`;
  if (p.message.startsWith('unknown field')) return fe.forbidden(path, p.message);
  for (const [text, type] of prefixes) {
    if (p.message.startsWith(text)) {
      let message = p.message.slice(text.length);
      if (text === 'Invalid type: ') message = `wrong type: ${message}`;
      if (/^must NOT have more than \d+ (characters|items)$/.test(message)) return fe.tooLong(path, message);
      return { path, type, message };
    }
  }
  return fe.invalid(path, p.message);
}

/**
 * Merges schema errors and rule errors so that one mistake is reported once: where a rule
 * reports a path, the schema's error at that path is dropped (the rule says better how to fix it).
 * The result is ordered by path, so a refusal reads top to bottom like the manifest.
 */
export function mergeErrors(
  schemaErrors: readonly FieldError[],
  ruleErrors: readonly FieldError[],
): FieldError[] {
  const byRule = new Set(ruleErrors.map((e) => e.path));
  return [...schemaErrors.filter((e) => !byRule.has(e.path)), ...ruleErrors].sort((a, b) =>
    a.path.localeCompare(b.path, 'en', { numeric: true }),
  );
}
