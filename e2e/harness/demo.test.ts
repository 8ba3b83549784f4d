/**
 * `make demo` (e2e/harness/demo-main.ts) stopped however it is stopped leaves no process behind:
 * the demo runs for real (control plane, webhooks, gateway with its Bento, operator), every
 * process under it is noted, the demo is stopped (SIGTERM as `kill` does, SIGINT to its process
 * group as Ctrl-C does, SIGKILL), and every one of those processes must be gone within 30 s.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { alive, children } from '../../gateway/streams/process-testing.ts';
import { waitFor } from '../../lib/testing/wait.ts';

const root = join(import.meta.dirname, '..', '..');

/** Every process under `pid`, with its command name. */
function tree(pid: number): { pid: number; command: string }[] {
  const out: { pid: number; command: string }[] = [];
  for (const c of children(pid)) out.push(c, ...tree(c.pid));
  return out;
}

for (const signal of ['SIGKILL', 'SIGTERM', 'SIGINT'] as const) {
  describe(`make demo stopped with ${signal}`, () => {
    test('leaves no process behind', { timeout: 600_000 }, async () => {
      // KUBECONFIG unset: the demo starts its own control plane.
      const env = { ...process.env };
      delete env.KUBECONFIG;
      // A process group of its own, as a shell gives a job: Ctrl-C signals the whole group.
      const demo = spawn(process.execPath, [join(root, 'e2e', 'harness', 'demo-main.ts')], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let output = '';
      demo.stdout.on('data', (c: Buffer) => (output += c.toString()));
      demo.stderr.on('data', (c: Buffer) => (output += c.toString()));
      const exited = new Promise<void>((resolve) => {
        demo.once('exit', () => {
          resolve();
        });
      });
      let procs: { pid: number; command: string }[] = [];
      try {
        await waitFor(
          'the demo to be up',
          () => {
            if (demo.exitCode !== null) throw new Error(`the demo exited:\n${output}`);
            return output.includes('Press Ctrl-C to stop everything.') ? true : undefined;
          },
          480_000,
          500,
        );
        procs = tree(demo.pid ?? 0);
        const names = procs.map((p) => p.command);
        for (const expected of ['etcd', 'kube-apiserver', 'bento'])
          assert.ok(
            names.some((n) => n.startsWith(expected)),
            `${expected} runs under the demo: ${names.join(', ')}`,
          );
        // Ctrl-C: SIGINT to the terminal's foreground group; `kill`, the OOM killer: the demo alone.
        if (signal === 'SIGINT') process.kill(-(demo.pid ?? 0), 'SIGINT');
        else demo.kill(signal);
        await exited;
        const left = await waitFor(
          'every process of the demo gone',
          () => {
            const alivePs = procs.filter((p) => alive(p.pid));
            return alivePs.length === 0 ? alivePs : undefined;
          },
          30_000,
        ).catch(() => procs.filter((p) => alive(p.pid)));
        assert.deepEqual(left, [], 'processes left behind');
      } finally {
        for (const p of procs.filter((x) => alive(x.pid))) {
          try {
            process.kill(p.pid, 'SIGKILL');
          } catch {
            // gone
          }
        }
        if (demo.exitCode === null && demo.signalCode === null) demo.kill('SIGKILL');
      }
    });
  });
}
