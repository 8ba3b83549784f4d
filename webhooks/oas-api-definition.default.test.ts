import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultSvcOasApiDefinition } from './oas-api-definition.default.ts';
import { defaultSvcStreamsApiDefinition } from './streams-api-definition.default.ts';
import { oasApi, streamsApi } from './testing.ts';

test('defaultSvcOasApiDefinition: configmapRef.namespace and contextRef.namespace', () => {
  const obj = oasApi('pets', 'pets-oas', 'oas.yaml', 'shop');
  (obj.spec as Record<string, unknown>).contextRef = { name: 'gw' };
  const out = defaultSvcOasApiDefinition(obj);
  assert.deepEqual(out, {
    ...obj,
    spec: {
      contextRef: { name: 'gw', namespace: 'shop' },
      svcOAS: { configmapRef: { name: 'pets-oas', keyName: 'oas.yaml', namespace: 'shop' } },
    },
  });
});

test('defaultSvcOasApiDefinition: a namespace that is set is kept', () => {
  const obj = oasApi('pets', 'pets-oas', 'oas.yaml', 'shop', { namespace: 'docs' });
  assert.deepEqual(defaultSvcOasApiDefinition(obj), obj);
});

test('defaultSvcStreamsApiDefinition: configmapRef.namespace', () => {
  const out = defaultSvcStreamsApiDefinition(streamsApi('events', 'events-doc', 'streams.yaml', 'shop'));
  assert.deepEqual((out as { spec: unknown }).spec, {
    svcStreams: { configmapRef: { name: 'events-doc', keyName: 'streams.yaml', namespace: 'shop' } },
  });
});
