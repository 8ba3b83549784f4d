import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ambiguousTargetMessage,
  ambiguousTargets,
  internalTargetHostsOf,
  internalTargetName,
  parseInternalTarget,
  resolveInternalTarget,
} from './internal-target.ts';

const apis = [
  { id: 'orders-1', name: 'Orders API' },
  { id: 'dup-a', name: 'Dup Name' },
  { id: 'dup-b', name: 'dup-name' },
  { id: 'named-like-an-id', name: 'orders-1' },
  { id: 'dotted.id', name: 'Catalogue.V2 #shop' },
];

test('internalTargetName: each run of non-alphanumerics becomes -, lower case, categories left out', () => {
  assert.equal(internalTargetName('Orders API v2'), 'orders-api-v2');
  assert.equal(internalTargetName('a.b_c'), 'a-b-c');
  assert.equal(internalTargetName('Users - API'), 'users-api');
  assert.equal(internalTargetName('Catalogue.V2 #shop #public'), 'catalogue-v2');
});

const resolutions: { host: string; want: ReturnType<typeof resolveInternalTarget> }[] = [
  { host: 'self', want: { id: 'me' } },
  { host: 'SELF', want: { id: 'me' } },
  { host: 'orders-1', want: { id: 'orders-1' } }, // an ID wins over a name
  { host: 'orders-api', want: { id: 'orders-1' } },
  { host: 'ORDERS-API', want: { id: 'orders-1' } },
  { host: 'dup-name', want: { ambiguous: ['dup-a', 'dup-b'] } },
  { host: 'nowhere', want: { missing: true } },
  { host: 'dotted.id', want: { id: 'dotted.id' } }, // an ID with dots, as written
  { host: 'catalogue-v2', want: { id: 'dotted.id' } },
  { host: 'Catalogue.V2', want: { id: 'dotted.id' } }, // a host is read as names are
];
for (const r of resolutions) {
  test(`resolveInternalTarget: ${r.host}`, () => {
    assert.deepEqual(resolveInternalTarget(r.host, 'me', apis), r.want);
  });
}

test('parseInternalTarget: self and names parse as hosts', () => {
  const t = parseInternalTarget('svc://self/private/1?x=1');
  assert.ok(!('message' in t));
  assert.equal(t.host, 'self');
  assert.equal(t.basePath, '/private/1');
});

test('ambiguousTargetMessage: names the host, the APIs and the way out', () => {
  assert.equal(
    ambiguousTargetMessage('dup-name', ['dup-a', 'dup-b']),
    'svc://dup-name: 2 APIs have the name "dup-name" (dup-a, dup-b): write the API ID of the one meant (svc://<api_id>/...), or give the APIs different names',
  );
});

test('ambiguousTargets: every field naming a shared name, with its path', () => {
  const api = {
    proxy: { target_url: 'svc://dup-name/x' },
    version_data: {
      versions: {
        Default: {
          extended_paths: {
            url_rewrites: [
              {
                rewrite_to: 'svc://self/a',
                triggers: [{ rewrite_to: 'svc://Dup-Name/t' }],
                rewrite_to_internal: { target: 'orders-api' },
              },
            ],
          },
        },
      },
    },
  };
  assert.deepEqual(
    internalTargetHostsOf(api).map((h) => h.host),
    ['dup-name', 'orders-api', 'self', 'Dup-Name'],
  );
  const problems = ambiguousTargets(api, 'me', apis);
  assert.deepEqual(
    problems.map((p) => p.path),
    [
      'proxy.target_url',
      'version_data.versions.Default.extended_paths.url_rewrites[0].triggers[0].rewrite_to',
    ],
  );
  assert.match(
    problems[0]?.message ?? '',
    /svc:\/\/dup-name: 2 APIs have the name "dup-name" \(dup-a, dup-b\): write the API ID/,
  );
});
