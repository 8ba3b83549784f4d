/**
 * The reference-samples measure, on manifests written here in the reference's own naming
 * (group tyk.tyk.io, Tyk kinds, x-tyk- keys): renamed to svc, applied one file at a time through
 * the webhook's validation, the admitted ones translated and checked by the gateway.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { API_VERSION } from '../../schemas/common.ts';
import { measure, renameToSvc } from './measure.ts';

const keyless = (name: string, listenPath: string, extra = ''): string => `apiVersion: tyk.tyk.io/v1alpha1
kind: ApiDefinition
metadata:
  name: ${name}
spec:
  name: ${name}
  protocol: http
  active: true
  use_keyless: true
  proxy:
    target_url: http://httpbin.org
    listen_path: ${listenPath}
    strip_listen_path: true
${extra}`;

describe('tools/reference-samples/measure.ts', () => {
  test('renames the group, the kinds, the x-tyk- keys and the tyk:// scheme, nothing else', () => {
    assert.deepEqual(
      renameToSvc({
        apiVersion: 'tyk.tyk.io/v1alpha1',
        kind: 'TykOasApiDefinition',
        spec: {
          'x-tyk-api-gateway': { kind: 'Tyk' },
          name: 'tyk.tyk.io',
          sources: [{ url: 'tyk://rest-countries/{{ .object.code }}' }, { url: 'https://tyk.io/tyk://' }],
        },
      }),
      {
        apiVersion: API_VERSION,
        kind: 'SvcOasApiDefinition',
        spec: {
          'x-svc-api-gateway': { kind: 'Tyk' },
          name: 'tyk.tyk.io',
          sources: [{ url: 'svc://rest-countries/{{ .object.code }}' }, { url: 'https://tyk.io/tyk://' }],
        },
      },
    );
  });

  test('one file at a time: the same listen path in two files is no clash; a refusal names the field', async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'reference-samples-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    await mkdir(path.join(dir, 'sub'));
    await writeFile(path.join(dir, 'a.yaml'), keyless('a', '/httpbin'));
    await writeFile(
      path.join(dir, 'sub', 'b.yml'),
      `${keyless('b', '/httpbin')}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata: {}\n---\n${keyless('c', '/other', '  enable_batch_request_support: true\n')}`,
    );
    await writeFile(path.join(dir, 'notes.md'), 'not a manifest');
    const got = await measure(dir);
    assert.deepEqual(
      got.map((o) => [o.key, o.name, o.admitted, o.gateway]),
      [
        ['a.yaml#0', 'a', true, []],
        ['sub/b.yml#0', 'b', true, []],
        ['sub/b.yml#1', 'c', false, []],
      ],
    );
    assert.deepEqual(
      got[2]?.problems.map((p) => p.split(':')[0]),
      ['spec.enable_batch_request_support'],
    );
  });

  test('within one file, in order: the second API on a listen path clashes with the first', async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'reference-samples-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    await writeFile(path.join(dir, 'a.yaml'), `${keyless('a', '/httpbin')}---\n${keyless('b', '/httpbin')}`);
    const got = await measure(dir);
    assert.deepEqual(
      got.map((o) => o.admitted),
      [true, false],
    );
    assert.match(got[1]?.problems.join() ?? '', /already claimed by ApiDefinition default\/a/);
  });

  test('served as the reconciler and a gateway with enable_jsvm serve them: pins from Secrets, virtual endpoints, Ingress templates', async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'reference-samples-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    await writeFile(
      path.join(dir, 'pinned.yaml'),
      keyless('pinned', '/pinned', '  pinned_public_keys_refs:\n    "*": upstream-key\n'),
    );
    const handler = Buffer.from(
      'function handler(request, session, config) { return TykJsResponse({ Body: "hi", Code: 200 }, session.meta_data) }',
    ).toString('base64');
    await writeFile(
      path.join(dir, 'virtual.yaml'),
      keyless(
        'virtual',
        '/virtual',
        `  version_data:
    not_versioned: true
    default_version: Default
    versions:
      Default:
        name: Default
        use_extended_paths: true
        extended_paths:
          virtual:
            - path: /hello
              method: GET
              function_source_type: blob
              function_source_uri: ${handler}
              response_function_name: handler
`,
      ),
    );
    await writeFile(
      path.join(dir, 'template.yaml'),
      `apiVersion: tyk.tyk.io/v1alpha1
kind: ApiDefinition
metadata:
  name: tpl
  labels:
    template: "true"
spec:
  name: tpl
  protocol: http
  use_keyless: true
  proxy:
    target_url: http://example.com
`,
    );
    const got = await measure(dir);
    assert.deepEqual(
      got.map((o) => [o.key, o.admitted, o.template, o.gateway]),
      [
        ['pinned.yaml#0', true, false, []],
        ['template.yaml#0', true, true, []],
        ['virtual.yaml#0', true, false, []],
      ],
    );
  });
});
