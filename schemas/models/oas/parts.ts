/** Pieces the schemas of the OAS extensions are made of. */
import type { JsonSchema } from '../../json-schema.ts';
import { nonEmptyString, objectOf } from '../builders.ts';

export const enabled = (what: string): JsonSchema => ({ type: 'boolean', description: `Enables ${what}.` });

export const ipList = (what: string): JsonSchema => ({
  type: 'array',
  items: { type: 'string', minLength: 1 },
  description: `${what} IPv4 or IPv6 addresses and CIDR ranges (no wildcards).`,
});

/** A duration as Go writes one (`1m30s`): decimal numbers, each with a unit. */
export const DURATION = '^([0-9]+(\\.[0-9]+)?(h|m|s|ms|us|µs|ns))+$';

export const switched = (
  title: string,
  description: string,
  properties: Record<string, JsonSchema> = {},
): JsonSchema => ({
  title,
  description,
  type: 'object',
  properties: { enabled: enabled('it'), ...properties },
  'x-kubernetes-preserve-unknown-fields': true,
});

export const headerList = (description: string): JsonSchema => ({
  type: 'array',
  description,
  items: objectOf(
    { title: 'OasHeader', description: 'A header.', required: ['name'] },
    {
      name: nonEmptyString('Header name.'),
      value: { type: 'string', description: 'Header value.' },
    },
  ),
});

export const seconds = (description: string): JsonSchema => ({ type: 'integer', minimum: 0, description });
export const statuses: JsonSchema = {
  type: 'array',
  items: { type: 'integer' },
  description: 'Statuses cached.',
};
