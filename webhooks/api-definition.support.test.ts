/**
 * ApiDefinitions written for the reference's classic model: every field it has is accepted, a
 * field svc does not enforce yet is refused (`spec.<path>: not supported by svc yet`) unless its
 * value is neutral, and references take both the string and the object form. The last table
 * applies migration manifests written for this test (testdata/migration-manifests/): one file per
 * feature group, covering the fields the reference's published samples use, as a user migrating
 * would write them.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { withoutNulls } from '../lib/http/json-body.ts';
import { API_VERSION } from '../schemas/common.ts';
import type { JsonSchema } from '../schemas/json-schema.ts';
import { apiDefinitionKind } from '../schemas/kinds/api-definition.ts';
import { formatProblem } from '../schemas/rules/field-problem.ts';
import { fieldSupport, NOT_SUPPORTED_YET } from '../schemas/support.ts';
import { validateApiDefinition } from './api-definition.validate.ts';
import type { FieldError } from './field-error.ts';
import { memoryLookups } from './memory-lookups.ts';
import { apiDefinition, securityPolicy } from './testing.ts';

type Obj = Record<string, unknown>;

/** A value of `node` that changes behaviour (valid against the schema). */
function active(node: JsonSchema): unknown {
  const sw = node['x-svc-switch'];
  if (sw !== undefined) return { [sw]: true };
  if (node.anyOf) return 'default/x';
  if (node.enum) return node.enum.find((v) => v !== '' && v !== 0);
  switch (node.type) {
    case 'boolean':
      return true;
    case 'string':
      return 'x';
    case 'integer':
    case 'number':
      return 1;
    case 'array':
      return [node.items ? active(node.items) : 'x'];
    default: {
      const [first] = Object.entries(node.properties ?? {});
      if (first) return { [first[0]]: active(first[1]) };
      if (typeof node.additionalProperties === 'object') return { k: active(node.additionalProperties) };
      return { k: 1 };
    }
  }
}

/** The neutral value of `node`. */
function neutral(node: JsonSchema): unknown {
  const sw = node['x-svc-switch'];
  if (sw !== undefined) return { [sw]: false };
  switch (node.type) {
    case 'boolean':
      return false;
    case 'string':
      return '';
    case 'integer':
    case 'number':
      return 0;
    case 'array':
      return [];
    default:
      return {};
  }
}

/** The schema node at a dotted path of the spec (`*` through maps). */
function nodeAt(p: string): JsonSchema {
  let node: JsonSchema | undefined = apiDefinitionKind.spec;
  for (const part of p.split('.')) {
    node =
      part === '*'
        ? typeof node?.additionalProperties === 'object'
          ? node.additionalProperties
          : undefined
        : node?.properties?.[part];
  }
  return node ?? assert.fail(`no field ${p}`);
}

/** `base` with `value` set at a dotted path (`*` becomes the version `Default`). */
function withValue(base: Obj, p: string, value: unknown): Obj {
  const out = structuredClone(base);
  let o = out;
  const parts = p.split('.').map((s) => (s === '*' ? 'Default' : s));
  parts.slice(0, -1).forEach((k) => {
    const next = (o[k] ??= {}) as Obj;
    o = next;
  });
  o[parts[parts.length - 1] ?? ''] = value;
  return out;
}

/** Fields flagged not-supported themselves (their children share the flag). */
const flagged = fieldSupport(apiDefinitionKind.spec).filter((f) => {
  if (f.path.includes('[]')) return false;
  return nodeAt(f.path)['x-svc-support'] === 'not-supported';
});

const spec = (obj: Obj): Obj => obj.spec as Obj;

describe('fields not supported yet', () => {
  test('there are fields to check', () => {
    assert.ok(flagged.length > 40, `only ${flagged.length}`);
  });

  for (const f of flagged) {
    const concrete = f.path.replaceAll('*', 'Default');
    test(`${f.path}: refused when set, with its path`, async () => {
      const obj = apiDefinition('orders');
      obj.spec = withValue(spec(obj), f.path, active(nodeAt(f.path)));
      const got = await validateApiDefinition(obj, undefined, memoryLookups([]));
      assert.deepEqual(got.errors, [
        { path: `spec.${concrete}`, type: 'NotSupportedYet', message: NOT_SUPPORTED_YET },
      ]);
      assert.equal(
        formatProblem(got.errors[0] ?? assert.fail()),
        `spec.${concrete}: not supported by svc yet`,
      );
    });
    test(`${f.path}: accepted at its neutral value`, async () => {
      const obj = apiDefinition('orders');
      obj.spec = withValue(spec(obj), f.path, neutral(nodeAt(f.path)));
      const got = await validateApiDefinition(obj, undefined, memoryLookups([]));
      assert.deepEqual(got.errors, []);
    });
  }

  test('every field not supported is listed at once, in path order', async () => {
    const obj = apiDefinition('orders', {
      enable_batch_request_support: true,
      use_openid: true,
      session_lifetime: 60,
      version_data: {
        not_versioned: true,
        default_version: 'Default',
        versions: {
          Default: {
            name: 'Default',
            use_extended_paths: true,
            paths: { black_list: [], ignored: [], white_list: [] },
            extended_paths: {
              white_list: [{ path: '/a', method_actions: { GET: { action: 'no_action' } } }],
              transform_jq: [{ path: '/slow', filter: '.' }],
            },
          },
        },
      },
    });
    const got = await validateApiDefinition(obj, undefined, memoryLookups([]));
    assert.deepEqual(
      got.errors.map((e) => formatProblem(e)),
      [
        'spec.enable_batch_request_support: not supported by svc yet',
        'spec.session_lifetime: not supported by svc yet',
        'spec.use_openid: not supported by svc yet',
        'spec.version_data.versions.Default.extended_paths.transform_jq: not supported by svc yet',
      ],
    );
  });
});

describe('references take both forms', () => {
  const policies = [securityPolicy('gold', {}, 'plans'), securityPolicy('basic', {})];
  const jwt = {
    use_keyless: false,
    enable_jwt: true,
    jwt_signing_method: 'rsa',
    jwt_source: 'https://idp/jwks',
  };
  const cases: { name: string; refs: unknown[]; errors?: FieldError[]; warnings?: string[] }[] = [
    { name: '"namespace/name" strings', refs: ['plans/gold', 'default/basic'] },
    { name: '{name, namespace} objects', refs: [{ name: 'gold', namespace: 'plans' }, { name: 'basic' }] },
    { name: 'a bare name is in the namespace of the API', refs: ['basic'] },
    {
      name: 'a missing policy named by a string is a warning with its namespace',
      refs: ['plans/silver'],
      warnings: [
        'spec.jwt_default_policies[0]: SecurityPolicy plans/silver does not exist yet: tokens without a policy claim get no policy until it does',
      ],
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const obj = apiDefinition('orders', { ...jwt, jwt_default_policies: c.refs });
      const got = await validateApiDefinition(obj, undefined, memoryLookups(policies));
      assert.deepEqual(got, { errors: c.errors ?? [], warnings: c.warnings ?? [] });
    });
  }

  test('a string that is not a reference is refused at its index', async () => {
    const obj = apiDefinition('orders', { ...jwt, jwt_default_policies: ['a/b/c'] });
    const got = await validateApiDefinition(obj, undefined, memoryLookups(policies));
    assert.ok(got.errors.length > 0);
    assert.ok(
      got.errors.every((e) => e.path === 'spec.jwt_default_policies[0]'),
      JSON.stringify(got.errors),
    );
  });

  test('internal targets take both forms too, and need no target_url', async () => {
    for (const target of ['default/proxy-api', { name: 'proxy-api', namespace: 'default' }]) {
      const obj = apiDefinition('orders', {
        proxy: { listen_path: '/orders/', target_internal: { target, path: '/p' } },
      });
      const got = await validateApiDefinition(obj, undefined, memoryLookups([]));
      assert.deepEqual(
        got.errors.map((e) => formatProblem(e)),
        [],
      );
    }
  });
});

// --- migration manifests ---------------------------------------------------------------------

const manifestsDir = path.join(import.meta.dirname, 'testdata', 'migration-manifests');

/** The objects of a manifest file, as the API server hands them over (namespace set, nulls dropped). */
function objectsOf(file: string): Obj[] {
  const docs = parseAllDocuments(readFileSync(path.join(manifestsDir, file), 'utf8'));
  return docs
    .map((d) => d.toJS() as unknown)
    .filter((o): o is Obj => o !== null && typeof o === 'object')
    .map((o) => {
      const obj = withoutNulls(o);
      const meta = (obj.metadata ?? {}) as Obj;
      obj.metadata = { namespace: 'default', ...meta };
      return obj;
    });
}

/**
 * Refusals that are not `not supported by svc yet`: real problems of a manifest, each with the
 * reason it is kept (by `file#index`, the problems in the order the webhook lists them).
 */
const EXPECTED_PROBLEMS: Readonly<Record<string, { reason: string; problems: readonly string[] }>> = {};

describe('migration manifests, applied through the webhook', () => {
  const files = readdirSync(manifestsDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort();
  const all = files.flatMap((file) => objectsOf(file).map((obj) => ({ file, obj })));
  // Every object of the folder exists for the lookups: policies and Secrets the APIs name.
  const lookups = memoryLookups(all.map(({ obj }) => obj));
  const outcomes: string[] = [];
  const seen = new Set<string>();
  let total = 0;
  for (const file of files) {
    all
      .filter((o) => o.file === file && o.obj.kind === 'ApiDefinition')
      .forEach(({ obj }, i) => {
        total++;
        const key = `${file}#${i}`;
        const name = `${key} (${String((obj.metadata as Obj).name)})`;
        test(name, async () => {
          seen.add(key);
          assert.equal(obj.apiVersion, API_VERSION);
          const got = await validateApiDefinition(obj, undefined, lookups);
          const unknown = got.errors.filter((e) => e.message.startsWith('unknown field'));
          assert.deepEqual(unknown, [], 'no field of the reference model is unknown');
          const notYet = got.errors.filter((e) => e.type === 'NotSupportedYet');
          for (const e of notYet) {
            const text = formatProblem(e);
            const generic = `${e.path}: not supported by svc yet`;
            assert.ok(text === generic || text.startsWith(`${generic}: `), text);
          }
          assert.deepEqual(
            got.errors.filter((e) => e.type !== 'NotSupportedYet').map((e) => formatProblem(e)),
            EXPECTED_PROBLEMS[key]?.problems ?? [],
            'every other refusal is a problem listed in EXPECTED_PROBLEMS',
          );
          outcomes.push(
            got.errors.length === 0
              ? `admitted   ${name}${got.warnings.length > 0 ? ` (warnings: ${got.warnings.join('; ')})` : ''}`
              : `refused    ${name}: ${got.errors.map((e) => formatProblem(e)).join('; ')}`,
          );
        });
      });
  }
  test('outcome summary', (t) => {
    assert.ok(total >= 40, `${total} manifests`);
    for (const key of Object.keys(EXPECTED_PROBLEMS)) assert.ok(seen.has(key), `${key} is not a manifest`);
    const admitted = outcomes.filter((o) => o.startsWith('admitted')).length;
    t.diagnostic(
      `${total} ApiDefinitions from ${files.length} manifest files: ${admitted} admitted, ${total - admitted} refused`,
    );
    for (const o of outcomes.sort()) t.diagnostic(o);
  });
});
