import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { environment } from '../../lib/config.ts';
import { apiDefinitionModel } from '../../schemas/models/api-definition.ts';
import { checkClassicApi } from '../../schemas/rules/api-definition.ts';
import { compile } from '../../schemas/validate.ts';
import { derivedId } from '../ids.ts';
import { translateApiDefinition, type ApiDefinitionInput } from './api-definition.ts';

const dir = join(import.meta.dirname, 'testdata');
const update = environment().UPDATE_GOLDEN === '1';
const validGatewayDefinition = compile(apiDefinitionModel);

const cases = (await readdir(dir)).filter((f) => f.startsWith('api-definition.') && f.endsWith('.in.yaml'));

for (const file of cases) {
  test(`golden: ${file}`, async () => {
    const cr = parse(await readFile(join(dir, file), 'utf8')) as ApiDefinitionInput;
    const got = translateApiDefinition(cr, {
      apiId: cr.spec.api_id ?? derivedId(cr.metadata.namespace, cr.metadata.name),
      orgId: 'org-1',
      policyId: (ref) => derivedId(ref.namespace, ref.name),
    });
    assert.deepEqual(validGatewayDefinition(got), [], 'the gateway accepts the translation');
    // Translation adds no problem: what the shared rules find in the output, they find in the input.
    const before = new Set(checkClassicApi(cr.spec).map((p) => p.path));
    const added = checkClassicApi(got).filter((p) => !before.has(p.path));
    assert.deepEqual(added, [], 'the translation breaks no rule the resource kept');
    const goldenPath = join(dir, file.replace('.in.yaml', '.out.json'));
    const text = `${JSON.stringify(got, null, 2)}\n`;
    if (update) await writeFile(goldenPath, text);
    assert.equal(text, await readFile(goldenPath, 'utf8'));
  });
}

test('translation is pure: same input, same output, input untouched', () => {
  const cr: ApiDefinitionInput = {
    metadata: { name: 'a', namespace: 'ns' },
    spec: { name: 'a', proxy: { listen_path: '/a/', target_url: 'http://u' } },
  };
  const frozen = structuredClone(cr);
  const ctx = { apiId: 'id', orgId: 'o', policyId: () => 'p' };
  assert.deepEqual(translateApiDefinition(cr, ctx), translateApiDefinition(cr, ctx));
  assert.deepEqual(cr, frozen);
});
