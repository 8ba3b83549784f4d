/**
 * The gateway's verdict on what the operator would write for an admitted ApiDefinition: the
 * operator's translation, then the gateway's check of a management write. The IDs the reconciler
 * resolves (policies, certificates uploaded from Secrets, public-key pins read from Secrets)
 * stand in as it would compute them. Used by the contract test (admitted-is-served) and the
 * reference samples' measure.
 */
import { createHash } from 'node:crypto';
import { checkApi, type CompileEnv } from '../../gateway/routes/check.ts';
import { derivedId } from '../../operator/ids.ts';
import { translateApiDefinition, type ApiDefinitionInput } from '../../operator/translate/api-definition.ts';
import type { ResolvedGraph } from '../../schemas/rules/graphs.ts';

/**
 * The gateway's problems with the translation of `cr` (none: the gateway serves it); `graph`: what
 * its graphql.graph_ref resolves to, as the reconciler would resolve it.
 */
export function translatedVerdict(cr: ApiDefinitionInput, env: CompileEnv, graph?: ResolvedGraph): string[] {
  const translated = translateApiDefinition(cr, {
    apiId: cr.spec.api_id ?? derivedId(cr.metadata.namespace, cr.metadata.name),
    orgId: 'org-1',
    policyId: (ref) => derivedId(ref.namespace, ref.name),
    certificateId: (name) => `org-1${createHash('sha256').update(name).digest('hex')}`,
    publicKeyPin: (name) => `sha256/${createHash('sha256').update(name).digest('base64')}`,
    ...(graph === undefined ? {} : { graph }),
  });
  return checkApi(translated, env);
}
