/**
 * The images of images/*.Containerfile, built by tools/images.sh (buildah, bases made here) and
 * imported into the node's containerd, run on the node as the charts run them: as their own
 * non-root user (runAsNonRoot, which the kubelet checks against the image's USER) on a read-only
 * root filesystem; inside, no test file, no test fixture and no devDependency.
 * Run by `make e2e-node`, not by `make e2e`.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PULL_POLICY, imageRef, images, repoRoot, runPod, useNamespace } from './helpers.ts';

const ns = useNamespace('svc-node-images');

// The build (minutes on a fresh machine) belongs to the hook, not to the first test's timeout.
before(async () => {
  await images();
});
/**
 * Packages installed only for development, as the lockfile marks them (`dev: true`): none may be in
 * an image. (A devDependency that a production package also needs, like @types/node, is not dev.)
 */
const devOnly = Object.entries(
  (
    JSON.parse(readFileSync(path.join(repoRoot, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    }
  ).packages,
)
  .filter(([key, pkg]) => pkg.dev === true && key.startsWith('node_modules/'))
  .map(([key]) => key.slice('node_modules/'.length))
  .filter((name) => !name.includes('/node_modules/'));

/** Run in the image with its own entrypoint (node): what a test of the image's contents needs. */
const INSPECT = `
  const fs = require('node:fs');
  const path = require('node:path');
  const found = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        if (e.name === 'testdata' || e.name === 'node_modules') { if (e.name === 'testdata') found.push(p); continue; }
        walk(p);
      } else if (e.name.endsWith('.test.ts')) found.push(p);
    }
  };
  walk('/app');
  let writable = true;
  try { fs.writeFileSync('/app/probe', 'x'); } catch { writable = false; }
  const dev = JSON.parse(process.env.DEV_DEPENDENCIES).filter((d) => fs.existsSync(path.join('/app/node_modules', d)));
  console.log(JSON.stringify({ uid: process.getuid(), tests: found, dev, writable, node: process.version }));
`;

for (const name of ['operator', 'gateway', 'dashboard']) {
  test(
    `the ${name} image runs as non-root on a read-only root, without tests or devDependencies`,
    { timeout: 180_000 },
    async () => {
      const image = await imageRef(name);
      const { phase, logs } = await runPod(
        ns,
        `inspect-${name}`,
        {
          // No runAsUser: the image's own USER must be non-root for the kubelet to start it.
          securityContext: { runAsNonRoot: true },
          containers: [
            {
              name,
              image,
              imagePullPolicy: PULL_POLICY,
              args: ['-e', INSPECT],
              env: [{ name: 'DEV_DEPENDENCIES', value: JSON.stringify(devOnly) }],
              securityContext: {
                readOnlyRootFilesystem: true,
                allowPrivilegeEscalation: false,
                capabilities: { drop: ['ALL'] },
              },
            },
          ],
        },
        150_000,
      );
      assert.equal(phase, 'Succeeded', logs);
      const out = JSON.parse(logs) as {
        uid: number;
        tests: string[];
        dev: string[];
        writable: boolean;
        node: string;
      };
      // The uid is the image's USER. The gid is not checked: containerd 1.6's CRI leaves the
      // image's group aside when runAsUser is unset (the charts set runAsUser and runAsGroup).
      assert.deepEqual(
        { uid: out.uid, tests: out.tests, dev: out.dev, writable: out.writable },
        { uid: 65532, tests: [], dev: [], writable: false },
      );
      assert.match(out.node, /^v24\./);
    },
  );
}
