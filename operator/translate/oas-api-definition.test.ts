import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { checkOasDocument, OAS_EXTENSION } from '../../schemas/oas/index.ts';
import type { OasCertificateSpec } from '../../schemas/oas/secret-refs.ts';
import { derivedId } from '../ids.ts';
import { goldenTests } from './golden.ts';
import {
  translateOasApiDefinition,
  type ConfigMapContent,
  type OasTranslation,
  type OasRefusal,
  type OasTranslationInput,
} from './oas-api-definition.ts';

const ref = { namespace: 'default', name: 'petstore-oas', keyName: 'oas.yaml' };

/**
 * Golden cases: each input is what the reconciler passes (the resource's name, the connection's
 * organization, the reference and the ConfigMap as a user writes it); the output is the
 * translation (or the refusal the status shows) and, beside it, the classic definition the
 * gateway serves the pushed document as, so each golden reads as the record of what a document
 * becomes.
 */
/**
 * A golden input's certificates by Secret name only the spec: a Secret's certificate ID and pin
 * stand in as hashes of its name (the reconciler reads the real ones).
 */
type GoldenInput = Omit<OasTranslationInput, 'certificates'> & {
  certificates?: { spec: OasCertificateSpec };
};
const withSecretValues = ({ certificates, ...input }: GoldenInput): OasTranslationInput => ({
  ...input,
  ...(certificates === undefined
    ? {}
    : {
        certificates: {
          spec: certificates.spec,
          values: {
            certificateId: (name) => `${input.orgId}${createHash('sha256').update(name).digest('hex')}`,
            publicKeyPin: (name) => `sha256/${createHash('sha256').update(name).digest('base64')}`,
          },
        },
      }),
});

await goldenTests(
  'oas-api-definition',
  (input: GoldenInput) => {
    const got = translateOasApiDefinition(withSecretValues(input));
    return got.ok ? { translation: got, classic: checkOasDocument(got.doc).api } : { translation: got };
  },
  (got: { translation: OasTranslation | OasRefusal }, input) => {
    const t = got.translation;
    if (!t.ok) {
      const names =
        t.reason === 'SpecInvalid' ? 'spec.' : `ConfigMap ${input.ref.namespace}/${input.ref.name}`;
      assert.ok(t.message.startsWith(names), 'a refusal names the field, or the ConfigMap');
      return;
    }
    assert.deepEqual(checkOasDocument(t.doc).problems, [], 'the gateway accepts the pushed document');
    const info = (t.doc[OAS_EXTENSION] as { info: { id: string; orgId: string } }).info;
    assert.equal(info.id, t.apiId, 'the API ID is written into the document');
    assert.notEqual(info.orgId, '', 'the document names an organization');
  },
);

/** The ConfigMap of examples/oas-api-definition.yaml. */
async function exampleConfigMap(): Promise<ConfigMapContent> {
  const text = await readFile(
    join(import.meta.dirname, '..', '..', 'examples', 'oas-api-definition.yaml'),
    'utf8',
  );
  const cm = parseAllDocuments(text)
    .map((d) => d.toJS() as { kind: string; data?: Record<string, string> })
    .find((d) => d.kind === 'ConfigMap');
  assert.ok(cm);
  return cm;
}

test('the example: the ID derived and written, the organization filled in, the input untouched', async () => {
  const configMap = await exampleConfigMap();
  const frozen = structuredClone(configMap);
  const input = { namespace: 'default', name: 'petstore', orgId: 'org-1', ref, configMap };
  const got = translateOasApiDefinition(input);
  assert.ok(got.ok, got.ok ? '' : got.message);
  assert.equal(got.apiId, derivedId('default', 'petstore'));
  assert.deepEqual((got.doc['x-svc-api-gateway'] as { info: unknown }).info, {
    name: 'petstore',
    state: { active: true },
    id: derivedId('default', 'petstore'),
    orgId: 'org-1',
  });
  assert.equal(got.listenPath, '/petstore/');
  assert.equal(got.targetUrl, 'http://petstore.default.svc:8080');
  assert.equal(got.enabled, true);
  assert.deepEqual(translateOasApiDefinition(input), got, 'pure: the same input, the same output');
  assert.deepEqual(configMap, frozen);
});

test('the same document as JSON translates the same, but its ConfigMap hash differs', async () => {
  const yamlCm = await exampleConfigMap();
  const fromYaml = translateOasApiDefinition({
    namespace: 'd',
    name: 'p',
    orgId: 'o',
    ref,
    configMap: yamlCm,
  });
  assert.ok(fromYaml.ok);
  const json = JSON.stringify(parse(yamlCm.data?.['oas.yaml'] ?? ''));
  const fromJson = translateOasApiDefinition({
    namespace: 'd',
    name: 'p',
    orgId: 'o',
    ref,
    configMap: { data: { 'oas.yaml': json } },
  });
  assert.ok(fromJson.ok);
  assert.deepEqual(fromJson.doc, fromYaml.doc);
  assert.notEqual(fromJson.configMapHash, fromYaml.configMapHash);
});

test("a document's own ID and organization are kept", () => {
  const doc = {
    openapi: '3.0.3',
    info: { title: 't', version: '1' },
    paths: {},
    'x-svc-api-gateway': {
      info: { id: 'fixed', orgId: 'their-org', name: 'n', state: { active: false } },
      upstream: { url: 'http://u' },
      server: { listenPath: { value: '/n/' } },
    },
  };
  const got = translateOasApiDefinition({
    namespace: 'd',
    name: 'p',
    orgId: 'o',
    ref,
    configMap: { data: { 'oas.yaml': JSON.stringify(doc) } },
  });
  assert.ok(got.ok);
  assert.equal(got.apiId, 'fixed');
  assert.equal(got.enabled, false);
  assert.deepEqual(got.doc, doc);
});

test('a document nested too deep is refused by the limit, as the webhooks refuse it', () => {
  const deep = `${'{"a":'.repeat(4999)}{}${'}'.repeat(4999)}`;
  const text = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{},"x-deep":${deep}}`;
  const input = {
    namespace: 'default',
    name: 'deep',
    orgId: '',
    ref,
    configMap: { data: { 'oas.yaml': text } },
  };
  const got = translateOasApiDefinition(input);
  assert.deepEqual(got.ok ? undefined : { reason: got.reason, message: got.message }, {
    reason: 'DocumentInvalid',
    message:
      'ConfigMap default/petstore-oas key "oas.yaml": the document is nested more than 128 levels deep (under x-deep): at most 128 objects and lists may be nested in one another',
  });
});
