import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FieldError } from './field-error.ts';
import { memoryLookups } from './memory-lookups.ts';
import {
  validateSvcStreamsApiDefinition,
  validateSvcStreamsApiDefinitionDelete,
} from './streams-api-definition.validate.ts';
import { configMap, oasDocument, securityPolicy, streamsApi, streamsDocument } from './testing.ts';

const KEY = 'spec.svcStreams.configmapRef.keyName';
const err = (message: string, type: FieldError['type'] = 'Invalid'): FieldError => ({
  path: KEY,
  type,
  message,
});

const cases: { name: string; text: string; errors?: FieldError[]; warnings?: string[] }[] = [
  { name: 'the example streams document', text: streamsDocument() },
  {
    name: 'an OAS document without x-svc-streaming',
    text: oasDocument('/events/'),
    errors: [
      err(
        'the document has no x-svc-streaming extension: add streams, each with an input and an output (or use SvcOasApiDefinition for a plain HTTP API)',
        'Required',
      ),
    ],
  },
  {
    name: 'a stream without an output',
    text: streamsDocument().replace(/ {6}output:\n(.*\n)*$/, ''),
    errors: [err('in the document at x-svc-streaming.streams.relay.output: add this field', 'Required')],
  },
  {
    name: 'no streams at all',
    text: streamsDocument().replace(/x-svc-streaming:\n(.*\n)*$/, 'x-svc-streaming:\n  streams: {}\n'),
    errors: [err('in the document at x-svc-streaming.streams: must NOT have fewer than 1 properties')],
  },
  {
    name: 'a connector with two types, another with none',
    text: streamsDocument()
      .replace(
        '      input:\n        http_server:',
        '      input:\n        kafka:\n          topic: t\n        http_server:',
      )
      .replace(/ {6}output:\n(.*\n)*$/, '      output:\n        label: out\n'),
    errors: [
      err(
        'in the document at x-svc-streaming.streams.relay.input: a connector has exactly one type key (http_server, kafka, http_client, broker, ...) besides label; found kafka, http_server',
      ),
      err(
        'in the document at x-svc-streaming.streams.relay.output: a connector has exactly one type key (http_server, kafka, http_client, broker, ...) besides label; found none',
      ),
    ],
  },
];

describe('validateSvcStreamsApiDefinition', () => {
  for (const c of cases) {
    test(c.name, async () => {
      const got = await validateSvcStreamsApiDefinition(
        streamsApi('events', 'events-doc'),
        undefined,
        memoryLookups([configMap('events-doc', { 'streams.yaml': c.text })]),
      );
      assert.deepEqual(got, { errors: c.errors ?? [], warnings: c.warnings ?? [] });
    });
  }
  test('the ConfigMap must exist', async () => {
    const got = await validateSvcStreamsApiDefinition(
      streamsApi('events', 'events-doc'),
      undefined,
      memoryLookups([]),
    );
    assert.deepEqual(got.errors, [
      {
        path: 'spec.svcStreams.configmapRef.name',
        type: 'Invalid',
        message:
          'ConfigMap default/events-doc not found: create it first, or point configmapRef at the ConfigMap that holds the document',
      },
    ]);
  });
});

describe('validateSvcStreamsApiDefinitionDelete', () => {
  test('refused while a policy covers it', async () => {
    const got = await validateSvcStreamsApiDefinitionDelete(
      streamsApi('events', 'events-doc'),
      memoryLookups([
        securityPolicy('p', { access_rights_array: [{ name: 'events', kind: 'SvcStreamsApiDefinition' }] }),
      ]),
    );
    assert.equal(
      got.errors[0]?.message.startsWith(
        'SvcStreamsApiDefinition default/events is still used by SecurityPolicy default/p:',
      ),
      true,
    );
  });
});
