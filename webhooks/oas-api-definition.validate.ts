/** Admission rules of SvcOasApiDefinition, after its full schema (shared with the other OAS-based kind). */
import type { Verdict } from './field-error.ts';
import type { Lookups } from './lookups.ts';
import { validateDocumentApi, validateDocumentApiDelete } from './document-api.ts';

/** Validates an SvcOasApiDefinition on create or update. */
export function validateSvcOasApiDefinition(obj: unknown, _old: unknown, lookups: Lookups): Promise<Verdict> {
  return validateDocumentApi('SvcOasApiDefinition', obj, lookups);
}

/** Refuses the DELETE of an SvcOasApiDefinition that SecurityPolicies still cover. */
export function validateSvcOasApiDefinitionDelete(old: unknown, lookups: Lookups): Promise<Verdict> {
  return validateDocumentApiDelete('SvcOasApiDefinition', old, lookups);
}
