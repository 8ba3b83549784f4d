import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { recordingLogger } from '../lib/testing/log.ts';
import { memoryLookups } from './memory-lookups.ts';
import { validateSvcStreamsApiDefinition } from './streams-api-definition.validate.ts';
import { startStreamsLinter, stopStreamsLinter } from './streams-lint.ts';
import { configMap, streamsApi, streamsDocument } from './testing.ts';

const KEY = 'spec.svcStreams.configmapRef.keyName';

before(() => {
  assert.ok(startStreamsLinter(recordingLogger()) !== undefined, 'Bento is built by `make deps`');
});
after(async () => {
  await stopStreamsLinter();
});

const cases: { name: string; text: string; errors: string[] }[] = [
  { name: 'the example streams document passes Bento', text: streamsDocument(), errors: [] },
  {
    name: 'an unknown field is refused with its path',
    text: streamsDocument().replace(
      '      input:\n        http_server:\n',
      '      input:\n        http_server:\n          bogus: 1\n',
    ),
    errors: [
      'in the document at x-svc-streaming.streams.relay.input.http_server.bogus: field bogus not recognised',
    ],
  },
];

for (const c of cases) {
  test(`webhook streams lint: ${c.name}`, async () => {
    const got = await validateSvcStreamsApiDefinition(
      streamsApi('events', 'events-doc'),
      undefined,
      memoryLookups([configMap('events-doc', { 'streams.yaml': c.text })]),
    );
    assert.deepEqual(
      got.errors.map((e) => `${e.path === KEY ? '' : e.path}${e.message}`),
      c.errors,
    );
  });
}
