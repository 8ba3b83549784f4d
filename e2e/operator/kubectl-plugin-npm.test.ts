/**
 * The plugin installed as docs/kubectl-plugin.md says: packed by operator/cli/pack.ts, installed
 * with `npm install -g` from the tarball into a prefix of its own (offline, with an empty npm
 * cache: everything it runs is in the tarball), and run from that prefix's `bin` on the PATH,
 * outside the repository and under `node_modules`, where Node strips no types. kubectl is the one
 * the e2e suites build; the PATH holds the repository's Node 24 and nothing else.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { derivedId } from '../../operator/ids.ts';
import { PLUGIN_NODE_MAJOR } from '../../operator/cli/pack.ts';
import { toolPath } from '../harness/control-plane.ts';

const REPO = new URL('../..', import.meta.url).pathname;
const PACK = path.join(REPO, 'operator/cli/pack.ts');
const PLUGIN_SOURCE = path.join(REPO, 'operator/cli/kubectl-svc.ts');
const MANIFESTS = ['examples/api-definition.yaml', 'examples/security-policy.yaml'].map((f) =>
  path.join(REPO, f),
);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: readonly string[], opts: { cwd: string; path?: string }): Promise<Run> {
  const env = opts.path === undefined ? process.env : { PATH: opts.path, HOME: process.env.HOME ?? '' };
  return new Promise((resolve) => {
    execFile(file, args, { cwd: opts.cwd, env, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr });
    });
  });
}

let dir: string;
/** The PATH a user has after the install: the prefix's bin, kubectl and Node 24. */
let userPath: string;

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'svc-plugin-npm-'));
  const packed = await run(process.execPath, [PACK, '--out', dir], { cwd: dir });
  assert.equal(packed.code, 0, packed.stderr);
  const tarball = packed.stdout.trim();
  assert.match(path.basename(tarball), /^kubectl-svc-\d+\.\d+\.\d+\.tgz$/);
  const prefix = path.join(dir, 'prefix');
  const installed = await run(
    'npm',
    [
      'install',
      '-g',
      '--prefix',
      prefix,
      '--offline',
      '--cache',
      path.join(dir, 'npm-cache'),
      '--no-audit',
      '--no-fund',
      tarball,
    ],
    { cwd: dir },
  );
  assert.equal(installed.code, 0, installed.stderr);
  userPath = [
    path.join(prefix, 'bin'),
    path.dirname(toolPath('kubectl')),
    path.dirname(process.execPath),
  ].join(':');
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('kubectl-svc translate from the installed package prints what the repository plugin prints', async () => {
  const installed = await run(
    'kubectl-svc',
    ['translate', ...MANIFESTS.flatMap((f) => ['-f', f]), '-o', 'json'],
    {
      cwd: dir,
      path: userPath,
    },
  );
  assert.equal(installed.code, 0, installed.stderr);
  const fromRepo = await run(
    process.execPath,
    [PLUGIN_SOURCE, 'translate', ...MANIFESTS.flatMap((f) => ['-f', f]), '-o', 'json'],
    { cwd: dir, path: userPath },
  );
  assert.equal(fromRepo.code, 0, fromRepo.stderr);
  assert.equal(installed.stdout, fromRepo.stdout);
  const { items } = JSON.parse(installed.stdout) as { items: { call: string }[] };
  assert.ok(
    items.some((i) => i.call === `PUT /svc/apis/${derivedId('default', 'httpbin')}`),
    installed.stdout,
  );
  assert.ok(
    items.some((i) => i.call.startsWith('PUT /svc/policies/')),
    installed.stdout,
  );
});

test('kubectl svc --help: kubectl finds the installed plugin on the PATH', async () => {
  const r = await run(toolPath('kubectl'), ['svc', '--help'], { cwd: dir, path: userPath });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^Usage: kubectl svc <command> \[options\]$/m);
  assert.match(r.stdout, /^ {2}translate -f FILE/m);
});

test(`an older Node than ${PLUGIN_NODE_MAJOR} is refused in words`, async (t) => {
  // The machine's own Node, as a user may have it first on the PATH.
  const older = '/usr/bin/node';
  const version = existsSync(older) ? (await run(older, ['--version'], { cwd: dir })).stdout.trim() : '';
  if (!/^v\d+\./.test(version) || Number(version.slice(1).split('.')[0]) >= PLUGIN_NODE_MAJOR) {
    t.skip(`no Node older than ${PLUGIN_NODE_MAJOR} at ${older}`);
    return;
  }
  const oldBin = path.join(dir, 'old-node');
  await mkdir(oldBin);
  await symlink(older, path.join(oldBin, 'node'));
  const r = await run('kubectl-svc', ['--help'], {
    cwd: dir,
    path: [path.join(dir, 'prefix', 'bin'), oldBin].join(':'),
  });
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.equal(
    r.stderr,
    `error: kubectl-svc needs Node ${PLUGIN_NODE_MAJOR} or later; this is Node ${version}\n`,
  );
});
