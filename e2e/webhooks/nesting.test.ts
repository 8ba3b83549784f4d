/**
 * Documents nested too deep (schemas/rules/nesting.ts), end to end: a real kube-apiserver calls
 * the real webhook server over TLS (as in admission.test.ts). An OAS document nested 5,000
 * levels deep in a ConfigMap is refused with a field-pathed denial naming the limit, not an
 * internal error; a document nested exactly to the limit is admitted; so is the rule for a
 * resource's spec.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import type { ControlPlane } from '../harness/control-plane.ts';
import { MAX_NESTING_DEPTH, tooDeep } from '../../schemas/rules/nesting.ts';
import { apiDefinition, configMap, oasApi, oasDocument } from '../../webhooks/testing.ts';
import { admitted, apply, refusedWith, startWebhooksSuite, type WebhooksSuite } from './helpers.ts';

let cp: ControlPlane;
let suite: WebhooksSuite;

/**
 * The petstore document (JSON) nested `depth` levels deep (an even number): the request body
 * schema of an operation whose requests are validated, so every check walks it. Built as text:
 * JSON.stringify itself recurses, and gives out long before 5,000 levels.
 */
function deepDocument(depth: number, listenPath: string): string {
  const doc = parse(oasDocument(listenPath, listenPath.replaceAll('/', ''))) as Record<string, unknown>;
  doc.paths = {
    '/items': {
      post: {
        operationId: 'addItem',
        // The schema sits at level 8: document, paths, /items, post, requestBody, content,
        // application/json, schema.
        requestBody: { content: { 'application/json': { schema: 'SCHEMA' } } },
        responses: { '200': { description: 'ok' } },
      },
    },
  };
  const ext = doc['x-svc-api-gateway'] as Record<string, unknown>;
  ext.middleware = { operations: { addItem: { validateRequest: { enabled: true } } } };
  const wrappers = (depth - 8) / 2;
  const chain = `${'{"type":"object","properties":{"a":'.repeat(wrappers)}{"type":"string"}${'}}'.repeat(wrappers)}`;
  const text = JSON.stringify(doc).replace('"SCHEMA"', chain);
  const parsed: unknown = JSON.parse(text);
  assert.equal(tooDeep(parsed, depth), undefined);
  assert.notEqual(tooDeep(parsed, depth - 1), undefined, `nested exactly ${String(depth)} levels`);
  return text;
}

const LIMIT = `more than ${String(MAX_NESTING_DEPTH)} levels deep`;

before(async () => {
  suite = await startWebhooksSuite('webhooks-nesting');
  cp = suite.cp;
});

after(() => suite.stop());

describe('OAS documents nested too deep', () => {
  test('a document nested exactly to the limit is admitted', async () => {
    admitted(
      await apply(cp, [
        configMap('deep-oas', { 'oas.json': deepDocument(MAX_NESTING_DEPTH, '/deep/') }),
        oasApi('deep', 'deep-oas', 'oas.json'),
      ]),
    );
  });

  test('a ConfigMap update to a document 5,000 levels deep is refused, naming the limit', async () => {
    refusedWith(
      await apply(cp, configMap('deep-oas', { 'oas.json': deepDocument(5000, '/deep/') })),
      `The ConfigMap "deep-oas" is invalid: data["oas.json"]: Invalid value: SvcOasApiDefinition default/deep reads its document from this key, and would be refused: the document is nested ${LIMIT} (under paths): at most 128 objects and lists may be nested in one another`,
    );
  });

  test('one level past the limit is refused too', async () => {
    refusedWith(
      await apply(cp, configMap('deep-oas', { 'oas.json': deepDocument(MAX_NESTING_DEPTH + 2, '/deep/') })),
      `data["oas.json"]: Invalid value: SvcOasApiDefinition default/deep reads its document from this key, and would be refused: the document is nested ${LIMIT} (under paths)`,
    );
  });

  test('a YAML document 5,000 levels deep is refused, naming the limit', async () => {
    const yaml = `${oasDocument('/deep/', 'deep')}x-deep: ${'['.repeat(5000)}${']'.repeat(5000)}\n`;
    refusedWith(
      await apply(cp, configMap('deep-oas', { 'oas.json': yaml })),
      `data["oas.json"]: Invalid value: SvcOasApiDefinition default/deep reads its document from this key, and would be refused: the document is nested ${LIMIT}`,
    );
  });

  test('an API over a ConfigMap holding a document 5,000 levels deep is refused', async () => {
    admitted(await apply(cp, configMap('deep-new', { 'oas.json': deepDocument(5000, '/deep2/') })));
    refusedWith(
      await apply(cp, oasApi('deep2', 'deep-new', 'oas.json')),
      `The SvcOasApiDefinition "deep2" is invalid: spec.svcOAS.configmapRef.keyName: Invalid value: the document is nested ${LIMIT} (under paths)`,
    );
  });
});

describe('a resource spec nested too deep', () => {
  test('an ApiDefinition whose config_data nests 5,000 levels is refused, naming the limit', async () => {
    const deep = `${'{"a":'.repeat(4999)}{}${'}'.repeat(4999)}`;
    const manifest = JSON.stringify(
      apiDefinition('deep-spec', {
        name: 'deep-spec',
        proxy: { listen_path: '/deep-spec/', target_url: 'http://upstream.default.svc' },
        config_data: 'DEEP',
      }),
    ).replace('"DEEP"', deep);
    const r = await cp.kubectl(['create', '-f', '-'], { input: manifest, allowFailure: true });
    refusedWith(r, `spec: Invalid value: spec is nested ${LIMIT} (under config_data)`);
  });
});
