/**
 * A webhook server whose Bento is missing (webhooks/streams-lint.ts): documents with streams are
 * refused, saying why, not admitted unchecked for the gateway to refuse later. Its own file: the
 * linter is one per process.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { recordingLogger } from '../lib/testing/log.ts';
import { memoryLookups } from './memory-lookups.ts';
import { validateSvcStreamsApiDefinition } from './streams-api-definition.validate.ts';
import { startStreamsLinter, stopStreamsLinter } from './streams-lint.ts';
import { configMap, streamsApi, streamsDocument } from './testing.ts';

const KEY = 'spec.svcStreams.configmapRef.keyName';
const log = recordingLogger();

before(() => {
  assert.equal(startStreamsLinter(log, '/nonexistent/bento'), undefined);
});
after(async () => {
  await stopStreamsLinter();
});

async function errorsOf(text: string): Promise<string[]> {
  const got = await validateSvcStreamsApiDefinition(
    streamsApi('events', 'events-doc'),
    undefined,
    memoryLookups([configMap('events-doc', { 'streams.yaml': text })]),
  );
  return got.errors.map((e) => `${e.path === KEY ? '' : e.path}${e.message}`);
}

test('without Bento, a document with streams is refused, naming the missing binary', async () => {
  assert.deepEqual(await errorsOf(streamsDocument()), [
    'in the document at x-svc-streaming.streams: the stream processor (Bento) the webhook checks streams with is not installed at /nonexistent/bento: set SVC_WEBHOOK_BENTO_PATH (the operator image has it at /usr/local/bin/bento)',
  ]);
  assert.ok(
    log.lines.some((l) => l.level === 'error' && l.message.includes('documents with streams are refused')),
    JSON.stringify(log.lines),
  );
});

test('without Bento, the rules that need none still name their field', async () => {
  const text = streamsDocument().replace(
    '          path: /in\n',
    '          path: /in\n          address: 0.0.0.0:4195\n',
  );
  assert.deepEqual(await errorsOf(text), [
    'in the document at x-svc-streaming.streams.relay.input.http_server.address: the gateway serves http_server endpoints on its own port under the listen path: remove address',
  ]);
});
