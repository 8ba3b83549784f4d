/** The `x-svc-streaming` vendor extension of a streams OAS document. */
import type { JsonSchema } from '../../json-schema.ts';

const connector: JsonSchema = {
  type: 'object',
  description:
    'One connector: an object with a single key naming its type (`http_server`, `kafka`, `http_client`, `broker`, `portal_webhook`, ...) and its settings, plus an optional `label`.',
  minProperties: 1,
  'x-kubernetes-preserve-unknown-fields': true,
};

/** The `x-svc-streaming` vendor extension of a streams OAS document. */
export const oasStreamingExtension: JsonSchema = {
  title: 'OasStreamingExtension',
  description: 'Asynchronous streams of the API (`x-svc-streaming`).',
  type: 'object',
  required: ['streams'],
  properties: {
    streams: {
      type: 'object',
      minProperties: 1,
      description: 'Streams by name; each runs as its own pipeline: input, processors, output.',
      additionalProperties: {
        title: 'Stream',
        description: 'One stream.',
        type: 'object',
        required: ['input', 'output'],
        properties: {
          input: connector,
          output: connector,
          pipeline: {
            title: 'StreamPipeline',
            description: 'Processing between input and output.',
            type: 'object',
            properties: {
              processors: {
                type: 'array',
                items: {
                  type: 'object',
                  description: 'One processing step (`mapping`, `branch`, `switch`, `http`, ...).',
                  'x-kubernetes-preserve-unknown-fields': true,
                },
                description: 'Ordered processing steps.',
              },
            },
            'x-kubernetes-preserve-unknown-fields': true,
          },
        },
        'x-kubernetes-preserve-unknown-fields': true,
      },
    },
  },
  'x-kubernetes-preserve-unknown-fields': true,
};
