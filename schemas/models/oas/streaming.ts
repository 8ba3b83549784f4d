/** The `x-svc-streaming` vendor extension of a streams OAS document. */
import type { JsonSchema } from '../../json-schema.ts';
import { objectOf } from '../builders.ts';

const connector: JsonSchema = {
  type: 'object',
  description:
    'One connector: an object with a single key naming its type (`http_server`, `kafka`, `http_client`, `broker`, `portal_webhook`, ...) and its settings, plus an optional `label`.',
  minProperties: 1,
  'x-kubernetes-preserve-unknown-fields': true,
};

/** The `x-svc-streaming` vendor extension of a streams OAS document. */
export const oasStreamingExtension: JsonSchema = objectOf(
  {
    title: 'OasStreamingExtension',
    description: 'Asynchronous streams of the API (`x-svc-streaming`).',
    required: ['streams'],
    'x-kubernetes-preserve-unknown-fields': true,
  },
  {
    streams: {
      type: 'object',
      minProperties: 1,
      description: 'Streams by name; each runs as its own pipeline: input, processors, output.',
      additionalProperties: objectOf(
        {
          title: 'Stream',
          description: 'One stream.',
          required: ['input', 'output'],
          'x-kubernetes-preserve-unknown-fields': true,
        },
        {
          input: connector,
          output: connector,
          pipeline: objectOf(
            {
              title: 'StreamPipeline',
              description: 'Processing between input and output.',
              'x-kubernetes-preserve-unknown-fields': true,
            },
            {
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
          ),
        },
      ),
    },
  },
);
