/**
 * The result type of every validator: field errors (the request is refused) and warnings (it is
 * admitted, and kubectl prints them). Messages say how to fix the problem, not only what it is.
 */
import {
  FieldProblemType,
  formatProblem,
  problemBody,
  type FieldProblem,
} from '../schemas/rules/field-problem.ts';
import { NOT_SUPPORTED_YET } from '../schemas/support.ts';
import type { Lookups } from './lookups.ts';

// A schema problem as a field error: the rule the gateway's OAS check uses too.
export { fromSchemaProblem, quote } from '../schemas/rules/field-problem.ts';

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

/**
 * A kind's validator on create or update (`<kind>.validate.ts`): the object, the object it
 * replaces (undefined on create), and the cluster lookups.
 */
export type Validator = (obj: unknown, old: unknown, lookups: Lookups) => Promise<Verdict>;

/** Builds FieldErrors tersely. */
export const fe = {
  required: (path: string, message: string): FieldError => ({ path, type: 'Required', message }),
  invalid: (path: string, message: string): FieldError => ({ path, type: 'Invalid', message }),
  notSupported: (path: string, message: string): FieldError => ({ path, type: 'NotSupported', message }),
  /** `path: not supported by svc yet`: a field of the reference's model svc does not enforce yet. */
  notSupportedYet: (path: string): FieldError => ({
    path,
    type: 'NotSupportedYet',
    message: NOT_SUPPORTED_YET,
  }),
  forbidden: (path: string, message: string): FieldError => ({ path, type: 'Forbidden', message }),
  tooLong: (path: string, message: string): FieldError => ({ path, type: 'TooLong', message }),
};

/** The reason a Kubernetes StatusCause carries for each type. */
export const causeReason: Record<FieldErrorType, string> = {
  Required: 'FieldValueRequired',
  Invalid: 'FieldValueInvalid',
  NotSupported: 'FieldValueNotSupported',
  NotSupportedYet: 'FieldValueNotSupported',
  Forbidden: 'FieldValueForbidden',
  TooLong: 'FieldValueTooLong',
};

/** `Invalid value: message`: a field error without its path (a Kubernetes StatusCause message). */
export function fieldErrorBody(e: FieldError): string {
  return problemBody(e);
}

/** `spec.x: Invalid value: message`, the way the API server prints a field error. */
export const formatFieldError: (e: FieldError) => string = formatProblem;

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
