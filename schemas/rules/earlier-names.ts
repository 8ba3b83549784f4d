/**
 * Earlier names of reference fields, the same `{name, namespace}` under another key, that the
 * reference operator's samples still use: `context` for `contextRef` on ApiDefinition and
 * SecurityPolicy (`07-operator-context/pro.yaml`), and `fromSecret` for `secretRef` on
 * OperatorContext (the same sample's context). Read once here: the mutating webhook moves the
 * earlier field to the current one with a warning (`movedEarlierName`), the validating webhook
 * refuses it beside a current one naming something else (`earlierNameProblems`), and the operator
 * reads whichever is set (`effectiveContextRef`, `effectiveSecretRef`), so that a resource stored
 * without the webhooks is reconciled through what it names.
 */
import { isPlainObject } from '../../lib/plain-object.ts';
import { problem } from './read.ts';
import { resolveRef, type ResolvedRef } from './references.ts';
import type { FieldProblem } from './field-problem.ts';

/** One earlier name: the field, the current field, and the kind both name. */
export interface EarlierName {
  from: string;
  to: string;
  names: string;
}

/** `context`, the earlier `contextRef` (ApiDefinition, SecurityPolicy). */
export const EARLIER_CONTEXT: EarlierName = { from: 'context', to: 'contextRef', names: 'OperatorContext' };
/** `fromSecret`, the earlier `secretRef` (OperatorContext). */
export const EARLIER_SECRET: EarlierName = { from: 'fromSecret', to: 'secretRef', names: 'Secret' };

/** The OperatorContext a spec names: `contextRef`, else the earlier `context`. */
export function effectiveContextRef<R>(spec: { contextRef?: R; context?: R } | undefined): R | undefined {
  return spec?.contextRef ?? spec?.context;
}

/** The Secret an OperatorContext's spec names: `secretRef`, else the earlier `fromSecret`. */
export function effectiveSecretRef<R>(spec: { secretRef?: R; fromSecret?: R } | undefined): R | undefined {
  return spec?.secretRef ?? spec?.fromSecret;
}

const same = (a: ResolvedRef | undefined, b: ResolvedRef | undefined): boolean =>
  a !== undefined && a.name === b?.name && a.namespace === b.namespace;

/**
 * The spec with the earlier field moved to the current one (its namespace defaulted to
 * `namespace`), and the warning to give; undefined when there is nothing to move, or when both
 * are set and differ (left for the validation to refuse, naming the field).
 */
export function movedEarlierName(
  alias: EarlierName,
  spec: Record<string, unknown>,
  namespace: string,
): { spec: Record<string, unknown>; warning: string } | undefined {
  const { [alias.from]: earlier, ...rest } = spec;
  if (earlier === undefined || !isPlainObject(earlier)) return undefined;
  const old = resolveRef(earlier, namespace);
  if (old === undefined) return undefined;
  const current = spec[alias.to];
  if (current !== undefined && !same(old, resolveRef(current, namespace))) return undefined;
  return {
    spec: { ...rest, [alias.to]: current ?? { name: old.name, namespace: old.namespace } },
    warning: `spec.${alias.from} is the reference operator's earlier name of spec.${alias.to}: moved to spec.${alias.to} (${alias.names} ${old.namespace}/${old.name}); write ${alias.to} in the manifest`,
  };
}

/** Problems of an earlier field still in a spec (paths relative to `spec`). */
export function earlierNameProblems(
  alias: EarlierName,
  spec: Record<string, unknown> | undefined,
  namespace: string,
): FieldProblem[] {
  const earlier = spec?.[alias.from];
  if (earlier === undefined) return [];
  const old = resolveRef(earlier, namespace);
  if (old === undefined || !isPlainObject(earlier))
    return [problem(alias.from, 'Invalid', `name a ${alias.names} as {name, namespace}, or set ${alias.to}`)];
  const current = spec?.[alias.to];
  if (current === undefined || same(old, resolveRef(current, namespace))) return [];
  const ref = resolveRef(current, namespace);
  return [
    problem(
      alias.from,
      'Forbidden',
      `the reference's earlier name of ${alias.to} names ${alias.names} ${old.namespace}/${old.name}, but ${alias.to} names ${ref === undefined ? 'another' : `${ref.namespace}/${ref.name}`}: keep ${alias.to} alone`,
    ),
  ];
}
