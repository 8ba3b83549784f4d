/** Admission rules of SvcStreamsApiDefinition, after its full schema (shared with the other OAS-based kind). */
import type { Verdict } from './field-error.ts';
import type { Lookups } from './lookups.ts';
import { validateDocumentApi, validateDocumentApiDelete } from './document-api.ts';

/** Validates an SvcStreamsApiDefinition on create or update. */
export function validateSvcStreamsApiDefinition(
  obj: unknown,
  _old: unknown,
  lookups: Lookups,
): Promise<Verdict> {
  return validateDocumentApi('SvcStreamsApiDefinition', obj, lookups);
}

/** Refuses the DELETE of an SvcStreamsApiDefinition that SecurityPolicies still cover. */
export function validateSvcStreamsApiDefinitionDelete(old: unknown, lookups: Lookups): Promise<Verdict> {
  return validateDocumentApiDelete('SvcStreamsApiDefinition', old, lookups);
}
