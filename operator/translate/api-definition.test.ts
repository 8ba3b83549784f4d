import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { apiDefinitionModel } from '../../schemas/models/api-definition/index.ts';
import { checkClassicApi } from '../../schemas/rules/api-definition.ts';
import { compile } from '../../schemas/validate.ts';
import { derivedId } from '../ids.ts';
import { translateApiDefinition, type ApiDefinitionInput } from './api-definition.ts';
import { goldenTests } from './golden.ts';
import type { ResolvedGraph } from '../../schemas/rules/graphs.ts';

const validGatewayDefinition = compile(apiDefinitionModel);

await goldenTests(
  'api-definition',
  // `graph`: what the reconciler resolved graphql.graph_ref to, given beside the resource.
  (cr: ApiDefinitionInput & { graph?: ResolvedGraph }) =>
    translateApiDefinition(cr, {
      ...(cr.graph === undefined ? {} : { graph: cr.graph }),
      apiId: cr.spec.api_id ?? derivedId(cr.metadata.namespace, cr.metadata.name),
      orgId: 'org-1',
      policyId: (ref) => derivedId(ref.namespace, ref.name),
      certificateId: (name) => `org-1${createHash('sha256').update(name).digest('hex')}`,
      publicKeyPin: (name) => `sha256/${createHash('sha256').update(name).digest('base64')}`,
    }),
  (got, cr) => {
    assert.deepEqual(validGatewayDefinition(got), [], 'the gateway accepts the translation');
    // Translation adds no problem: what the shared rules find in the output, they find in the input.
    const before = new Set(checkClassicApi(cr.spec).map((p) => p.path));
    const added = checkClassicApi(got).filter((p) => !before.has(p.path));
    assert.deepEqual(added, [], 'the translation breaks no rule the resource kept');
  },
);

test('translation is pure: same input, same output, input untouched', () => {
  const cr: ApiDefinitionInput = {
    metadata: { name: 'a', namespace: 'ns' },
    spec: { name: 'a', proxy: { listen_path: '/a/', target_url: 'http://u' } },
  };
  const frozen = structuredClone(cr);
  const ctx = { apiId: 'id', orgId: 'o', policyId: () => 'p', certificateId: () => 'c' };
  assert.deepEqual(translateApiDefinition(cr, ctx), translateApiDefinition(cr, ctx));
  assert.deepEqual(cr, frozen);
});

test('a graph_ref translated with its graph is served by the gateway as it is (no rule of the gateway refuses it)', async () => {
  const { goldenInputs } = await import('./golden.ts');
  const inputs = (await goldenInputs('api-definition')).filter((i) => i.file.includes('graph-ref'));
  assert.equal(inputs.length, 2);
  for (const { file, input } of inputs) {
    const cr = input as ApiDefinitionInput & { graph: ResolvedGraph };
    const got = translateApiDefinition(cr, {
      apiId: 'id',
      orgId: 'o',
      policyId: () => 'p',
      certificateId: () => 'c',
      graph: cr.graph,
    });
    assert.deepEqual(checkClassicApi(got), [], file);
    assert.equal(got.graphql?.graph_ref, undefined, file);
  }
});
