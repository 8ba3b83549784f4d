/**
 * Builders of the models' schemas (the classic model's sections, limits, policies, sessions, OAS):
 * a field's support flag (`x-svc-support`, read by schemas/support.ts) and the small shapes
 * written many times.
 */
import type { JsonSchema } from '../json-schema.ts';

/**
 * A field svc does not enforce yet: refused unless neutral (empty, false, 0). `reason` says why
 * and what to use instead (docs/compatibility.md).
 */
export const notYet = (s: JsonSchema, reason: string): JsonSchema => ({
  ...s,
  'x-svc-support': 'not-supported',
  'x-svc-reason': reason,
});

/** A field the gateway enforces. */
export const enforced = (s: JsonSchema): JsonSchema => ({ ...s, 'x-svc-support': 'supported' });

/** A list of strings. */
export const strings = (description: string): JsonSchema => ({
  type: 'array',
  items: { type: 'string' },
  description,
});

/** A map of strings to strings. */
export const stringMap = (description: string): JsonSchema => ({
  type: 'object',
  additionalProperties: { type: 'string' },
  description,
});

/** An object whose fields are kept as written (no schema of its own). */
export const openObject = (description: string): JsonSchema => ({
  type: 'object',
  description,
  'x-kubernetes-preserve-unknown-fields': true,
});

/**
 * What an object's schema says besides its fields: its title (a named type), its description, its
 * required fields and any extension keyword (`x-svc-switch`, `x-svc-support`...).
 */
export type ObjectHead = Omit<JsonSchema, 'type' | 'properties' | 'additionalProperties' | 'items'>;

/** An object with its head and its properties; fields it does not list are allowed. */
export const objectOf = (head: ObjectHead, properties: Record<string, JsonSchema>): JsonSchema => ({
  ...head,
  type: 'object',
  properties,
});

/** An object with its head and its properties, closed (`additionalProperties: false`: unknown fields refused). */
export const closedObject = (head: ObjectHead, properties: Record<string, JsonSchema>): JsonSchema => ({
  ...objectOf(head, properties),
  additionalProperties: false,
});

/** A string that may not be empty. */
export const nonEmptyString = (description: string): JsonSchema => ({
  type: 'string',
  minLength: 1,
  description,
});
