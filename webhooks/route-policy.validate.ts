/**
 * Admission rules of SvcRoutePolicy, after its full schema: the settings it carries are checked
 * by the classic API's own rules (schemas/rules/route-policy.ts), so a policy admitted here never
 * makes an API generated from its routes refused by the ApiDefinition webhook or the gateway.
 * Whether its targets exist is status, not admission (a policy may come before its route).
 */
import type { SvcRoutePolicy } from '../schemas/generated/kinds.ts';
import {
  routePolicyProblems,
  routePolicyWarnings,
  type RoutePolicySpecInput,
} from '../schemas/rules/route-policy.ts';
import { specOf } from './access.ts';
import { mergeErrors, type Verdict } from './field-error.ts';
import { schemaErrors } from './schema.ts';

/** Validates an SvcRoutePolicy on create or update. */
export function validateRoutePolicy(obj: unknown): Promise<Verdict> {
  const spec = specOf<SvcRoutePolicy>(obj) as RoutePolicySpecInput;
  const errors = routePolicyProblems(spec).map((p) => ({ ...p, path: `spec.${p.path}` }));
  const warnings = routePolicyWarnings(spec).map((w) => `spec.${w.path}: ${w.message}`);
  return Promise.resolve({ errors: mergeErrors(schemaErrors('SvcRoutePolicy', obj), errors), warnings });
}
