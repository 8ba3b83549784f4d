/**
 * `kubectl svc translate`, run as a user runs it: the plugin's executable in a child process,
 * manifest files on disk, stdout and stderr read back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

const PLUGIN = new URL('./kubectl-svc.ts', import.meta.url).pathname;
const EXAMPLES = new URL('../../examples/', import.meta.url).pathname;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `kubectl-svc` (the executable itself: its shebang picks the node on the PATH). */
function run(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(PLUGIN, args, { env: { PATH: process.env.PATH ?? '', ...env } }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

interface Item {
  source: string;
  call: string;
  id: string;
  body: Record<string, unknown>;
}

const dir = await mkdtemp(join(tmpdir(), 'kubectl-svc-'));
process.on('exit', () => void rm(dir, { recursive: true, force: true }));
async function file(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

const b64 = (s: string): string => Buffer.from(s).toString('base64url');

test('an ApiDefinition and a SecurityPolicy: the IDs the operator derives, the org given, access by API ID', async () => {
  const r = await run([
    'translate',
    '-f',
    `${EXAMPLES}api-definition.yaml`,
    '-f',
    `${EXAMPLES}security-policy.yaml`,
    '-o',
    'json',
    '--org',
    'acme',
  ]);
  assert.equal(r.stderr, '');
  assert.equal(r.code, 0);
  const { items } = JSON.parse(r.stdout) as { items: Item[] };
  const httpbin = items.find((i) => i.id === b64('default/httpbin'));
  assert.ok(httpbin, 'the API without api_id gets base64url(namespace/name)');
  assert.equal(httpbin.call, `PUT /svc/apis/${b64('default/httpbin')}`);
  assert.equal(httpbin.body.org_id, 'acme');
  assert.equal(httpbin.body.api_id, b64('default/httpbin'));
  assert.match(httpbin.source, /api-definition\.yaml: document 1 \(ApiDefinition default\/httpbin\)$/);
  const policy = items.find((i) => i.call.startsWith('PUT /svc/policies/'));
  assert.ok(policy);
  assert.equal(policy.id, b64('default/orders-standard'));
  assert.deepEqual(Object.keys(policy.body.access_rights as object), [b64('default/orders')]);
  assert.equal(policy.body.state, 'active');
});

test('explicit IDs are kept, and a policy refers to an API by its explicit api_id', async () => {
  const path = await file(
    'explicit.yaml',
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: shop, namespace: team-a}
spec:
  name: shop
  api_id: shop-api
  use_keyless: true
  proxy: {listen_path: /shop/, target_url: http://shop.svc}
---
apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: gold, namespace: team-a}
spec:
  id: gold-policy
  name: gold
  access_rights_array:
    - name: shop
`,
  );
  const r = await run(['translate', '-f', path, '-o', 'json'], { SVC_ORG: 'from-env' });
  assert.equal(r.code, 0, r.stderr);
  const { items } = JSON.parse(r.stdout) as { items: Item[] };
  assert.deepEqual(
    items.map((i) => i.call),
    ['PUT /svc/apis/shop-api', 'PUT /svc/policies/gold-policy'],
  );
  assert.equal(items[0]?.body.org_id, 'from-env', 'SVC_ORG, as the operator reads it');
  assert.deepEqual(Object.keys(items[1]?.body.access_rights as object), ['shop-api']);
});

test('an SvcOasApiDefinition with its ConfigMap: the document with x-svc-api-gateway.info.id; YAML by default', async () => {
  const r = await run(['translate', '-f', `${EXAMPLES}oas-api-definition.yaml`, '--org', 'acme']);
  assert.equal(r.code, 0, r.stderr);
  const docs = parseAllDocuments(r.stdout).map((d) => d.toJS() as Item);
  assert.equal(docs.length, 1);
  const ext = docs[0]?.body['x-svc-api-gateway'] as { info: { id: string; orgId: string } };
  assert.equal(docs[0]?.call, `PUT /svc/apis/oas/${b64('default/petstore')}`);
  assert.equal(ext.info.id, b64('default/petstore'));
  assert.equal(ext.info.orgId, 'acme');
});

test('errors name the file, the document and the field; nothing is printed on stdout', async () => {
  const path = await file(
    'bad.yaml',
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: good, namespace: default}
spec:
  name: good
  proxy: {listen_path: /good/, target_url: http://good}
---
apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: broken, namespace: default}
spec:
  name: broken
  proxy: {listen_path: 7}
`,
  );
  const r = await run(['translate', '-f', path]);
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.match(
    r.stderr,
    /bad\.yaml: document 2 \(ApiDefinition default\/broken\): spec\.proxy\.listen_path: /,
  );
  assert.doesNotMatch(r.stderr, /document 1/);
});

test('an SvcOasApiDefinition whose ConfigMap is not given: refused, naming the reference', async () => {
  const path = await file(
    'oas-only.yaml',
    `apiVersion: svc.svc.io/v1alpha1
kind: SvcOasApiDefinition
metadata: {name: pets, namespace: default}
spec:
  svcOAS:
    configmapRef: {name: pets-doc, keyName: oas.json}
`,
  );
  const r = await run(['translate', '-f', path]);
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /oas-only\.yaml: document 1 \(SvcOasApiDefinition default\/pets\): spec\.svcOAS\.configmapRef: ConfigMapNotFound: ConfigMap default\/pets-doc not found.*give the ConfigMap with -f too/,
  );
});

test('a file that is not YAML, and an unknown output format', async () => {
  const path = await file('notyaml.yaml', 'kind: [unclosed\n');
  const r = await run(['translate', '-f', path]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /notyaml\.yaml: document 1: not YAML/);
  const o = await run(['translate', '-f', path, '-o', 'xml']);
  assert.equal(o.code, 1);
  assert.match(o.stderr, /-o xml: unknown output format \(one of yaml, json\)/);
});
