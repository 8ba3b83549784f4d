/** Admission rules of SvcStreamsApiDefinition, after its full schema (shared with the other OAS-based kind). */
import type { Validator, Verdict } from './field-error.ts';
import type { Lookups } from './lookups.ts';
import { asObject, asString } from './access.ts';
import { validateDocumentApi, validateDocumentApiDelete } from './document-api.ts';
import { fe } from './field-error.ts';
import { loadDocument } from './oas-document.ts';
import { lintStreamsDocument } from './streams-lint.ts';

const REF = 'spec.svcStreams.configmapRef';

/**
 * Validates an SvcStreamsApiDefinition on create or update: the document rules shared with
 * SvcOasApiDefinition, then, when they pass, Bento's own check of each stream (webhooks/streams-lint.ts).
 */
export const validateSvcStreamsApiDefinition: Validator = async (obj, _old, lookups) => {
  const verdict = await validateDocumentApi('SvcStreamsApiDefinition', obj, lookups);
  if (verdict.errors.length > 0) return verdict;
  const meta = asObject(asObject(obj)?.metadata);
  const ref = asObject(asObject(asObject(asObject(obj)?.spec)?.svcStreams)?.configmapRef);
  const name = asString(ref?.name);
  const keyName = asString(ref?.keyName);
  const namespace = asString(ref?.namespace) ?? asString(meta?.namespace) ?? '';
  if (name === undefined || keyName === undefined) return verdict;
  const loaded = await loadDocument(lookups, { refPath: REF, namespace, name, keyName, streams: true });
  if (loaded.doc === undefined) return verdict;
  const problems = await lintStreamsDocument(loaded.doc);
  return {
    errors: problems.map((p) => fe.invalid(`${REF}.keyName`, `in the document at ${p}`)),
    warnings: verdict.warnings,
  };
};

/** Refuses the DELETE of an SvcStreamsApiDefinition that SecurityPolicies still cover. */
export function validateSvcStreamsApiDefinitionDelete(old: unknown, lookups: Lookups): Promise<Verdict> {
  return validateDocumentApiDelete('SvcStreamsApiDefinition', old, lookups);
}
