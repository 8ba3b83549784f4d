/**
 * What the golden tests of translations that generate ApiDefinitions (Ingress, Gateway API, route
 * policies) assert of each one they generate.
 */
import assert from 'node:assert/strict';
import { apiDefinitionKind } from '../../schemas/kinds/api-definition.ts';
import type { ApiDefinitionSpec } from '../../schemas/generated/kinds.ts';
import { apiDefinitionModel } from '../../schemas/models/api-definition/index.ts';
import { checkClassicApi } from '../../schemas/rules/api-definition.ts';
import { compile } from '../../schemas/validate.ts';
import { translateApiDefinition } from './api-definition.ts';

const validSpec = compile(apiDefinitionKind.spec);
const validGatewayDefinition = compile(apiDefinitionModel);

/**
 * Asserts that a generated API is an ApiDefinition the API server admits (its kind's schema), and
 * that its translation is a definition the gateway serves (its model's schema and rules).
 */
export function assertAdmittedAndServed(api: { name: string; spec: ApiDefinitionSpec }): void {
  assert.deepEqual(validSpec(api.spec), [], `${api.name}: a valid ApiDefinition spec`);
  const def = translateApiDefinition(
    { metadata: { name: api.name, namespace: 'ns' }, spec: api.spec },
    {
      apiId: api.spec.api_id ?? '',
      orgId: 'org-1',
      policyId: () => 'p',
      certificateId: () => `org-1${'a'.repeat(64)}`,
    },
  );
  assert.deepEqual(validGatewayDefinition(def), [], `${api.name}: the gateway accepts it`);
  assert.deepEqual(checkClassicApi(def), [], `${api.name}: it breaks no rule of the model`);
}
