/**
 * Fixtures for tests of the parts that read the models: OAS documents built from a few settings,
 * documents and bodies nested deeper than the rules allow, and the IDs the rules refuse.
 */
import assert from 'node:assert/strict';
import { merge } from '../lib/testing/merge.ts';
import { tooDeep } from './rules/nesting.ts';

type Json = Record<string, unknown>;

/** The name of the gateway extension, for fixtures. */
const X = 'x-svc-api-gateway';

/** What distinguishes one OAS API from another in a test. */
export interface OasBasics {
  /** `info.id`; none by default. */
  id?: string;
  /** `info.name`; the ID, else `pets`. */
  name?: string;
  listenPath?: string;
  target?: string;
  /** `server.listenPath.strip`; not set by default. */
  strip?: boolean;
}

/**
 * A keyless OAS API (`/pets/` to `http://pets.default.svc:8080` by default) with `ext` merged into
 * its extension and `rest` into the document (`merge`: objects key by key, undefined removes).
 */
export function oasDocument(basics: OasBasics = {}, ext: Json = {}, rest: Json = {}): Json {
  const { id, strip } = basics;
  return merge(
    {
      openapi: '3.0.3',
      info: { title: 'Pets', version: '1.0.0' },
      paths: {},
      [X]: {
        info: {
          ...(id === undefined ? {} : { id }),
          name: basics.name ?? id ?? 'pets',
          state: { active: true },
        },
        upstream: { url: basics.target ?? 'http://pets.default.svc:8080' },
        server: {
          listenPath: { value: basics.listenPath ?? '/pets/', ...(strip === undefined ? {} : { strip }) },
        },
      },
    },
    { ...rest, [X]: ext },
  );
}

/**
 * The extension and document parts that require the scheme `name`, declared as `decl` and
 * configured as `settings` (`auth` adds to `server.authentication`): `oasDocument(b, ...requiring(...))`.
 */
export function requiring(name: string, decl: Json, settings: Json = {}, auth: Json = {}): [Json, Json] {
  return [
    {
      server: {
        authentication: {
          enabled: true,
          ...auth,
          securitySchemes: { [name]: { enabled: true, ...settings } },
        },
      },
    },
    { components: { securitySchemes: { [name]: decl } }, security: [{ [name]: [] }] },
  ];
}

/**
 * `{type: object, properties: {a: ...}}` around a string, `wrappers` times (2 levels each, plus
 * 1), as JSON text: JSON.stringify itself recurses, and gives out long before 5,000 levels.
 */
function schemaChain(wrappers: number): string {
  const open = '{"type":"object","properties":{"a":';
  return `${open.repeat(wrappers)}{"type":"string"}${'}}'.repeat(wrappers)}`;
}

/**
 * An OAS document nested `depth` levels deep (an even number), as JSON text: the request body
 * schema of an operation whose requests are validated (so a gateway compiles it); `deep<depth>`
 * its ID and listen path unless `basics` says otherwise.
 */
export function deepOasDocument(depth: number, basics: OasBasics = {}): string {
  const doc = oasDocument(
    { id: `deep${String(depth)}`, listenPath: `/deep${String(depth)}/`, ...basics },
    { middleware: { operations: { addItem: { validateRequest: { enabled: true } } } } },
    {
      paths: {
        '/items': {
          post: {
            operationId: 'addItem',
            // The schema sits at level 8: document, paths, /items, post, requestBody, content,
            // application/json, schema.
            requestBody: { content: { 'application/json': { schema: 'SCHEMA' } } },
            responses: { '200': { description: 'ok' } },
          },
        },
      },
    },
  );
  const text = JSON.stringify(doc).replace('"SCHEMA"', schemaChain((depth - 8) / 2));
  const parsed: unknown = JSON.parse(text);
  assert.equal(tooDeep(parsed, depth), undefined);
  assert.notEqual(tooDeep(parsed, depth - 1), undefined, `nested exactly ${String(depth)} levels`);
  return text;
}

/** `fields` as a JSON object, with `deep` holding objects nested `depth` levels. */
export function withDeep(fields: Record<string, unknown>, deep: string, depth: number): string {
  const value = `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;
  return JSON.stringify({ ...fields, [deep]: 'DEEP' }).replace('"DEEP"', value);
}

/** IDs no API, policy or organisation may have (schemas/rules/ids.ts), and what the message says. */
export const badObjectIds: readonly [name: string, id: string, says: RegExp][] = [
  ['.', '.', /Invalid value: a URL resolves \. and \.\. away/],
  ['..', '..', /Invalid value: a URL resolves \. and \.\. away/],
  ['dots only', '...', /Invalid value: .*dots only/],
  ['a slash', 'a/b', /Invalid value: \/ would split the URL/],
  ['a newline', 'a\nb', /Invalid value: control characters/],
  ['too long', 'a'.repeat(256), /Too long: 256 characters, more than 255/],
  ['percent', 'a%b', /Invalid value: "a%b": "%" is not allowed/],
  ['question mark', 'a?b', /"\?" is not allowed/],
  ['hash', 'a#b', /"#" is not allowed/],
  ['backslash', 'a\\b', /"\\\\" is not allowed/],
  ['white space only', '   ', /" " is not allowed/],
];
