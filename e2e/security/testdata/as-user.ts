/**
 * `node as-user.ts <uid> <script> args...`: runs `node <script> args` as user and group `uid`
 * (the chart runs the gateway as 65532), its output passed through; ends with it, and ends it
 * when this process is told to end.
 */
import { spawn } from 'node:child_process';

const [uid = '65532', script = '', ...args] = process.argv.slice(2);
const child = spawn(process.execPath, [script, ...args], {
  uid: Number(uid),
  gid: Number(uid),
  stdio: 'inherit',
});
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => child.kill(sig));
process.on('exit', () => child.kill('SIGKILL'));
child.on('exit', (code, signal) => process.exit(code ?? (signal === null ? 0 : 1)));
