/**
 * tools/grpcplugin, the gRPC plugin server built with grpc-go that the gateway's tests of gRPC
 * plugins run (`make deps` builds it): started on a free port with the protocol's .proto files
 * and the flags given, resolved once it serves.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { builtToolsDir } from '../../lib/bento/binary.ts';
import { PROTO_DIR } from '../plugins/coprocess/dispatcher.ts';
import { keyed } from './harness.ts';

const START_TIMEOUT_MS = 30_000;

/** A running tools/grpcplugin. */
export interface GoPluginServer {
  child: ChildProcess;
  /** Its `tcp://` address, for `--coprocess-grpc-server`. */
  address: string;
  /** How many calls of each hook (`<hook type> <hook name>`, as it logs them) it has had. */
  calls(hook: string): number;
  stop(): Promise<void>;
}

/**
 * The flags of a gateway calling `plugin`, the fast path on or off. Its calls are given 5 s: the
 * first one opens the connection, and on a loaded machine that can take past the default.
 */
export function pluginGatewayArgv(plugin: GoPluginServer, fastPath: boolean): string[] {
  return [
    `--fast-path=${String(fastPath)}`,
    '--coprocess-grpc-server',
    plugin.address,
    '--plugin-timeout-ms',
    '5000',
  ];
}

/**
 * An API `id` at `/{id}/` as the reference's auth_check samples write it: keyed, with
 * `enable_coprocess_auth` and the gRPC driver's `MyAuthCheck`, and `middleware` (hooks, an
 * `id_extractor`) beside it in `custom_middleware`.
 */
export function authCheckSample(
  id: string,
  target: string,
  middleware: Record<string, unknown> = {},
): Record<string, unknown> {
  return keyed(id, `/${id}/`, target, {
    enable_coprocess_auth: true,
    custom_middleware: { driver: 'grpc', auth_check: { name: 'MyAuthCheck', path: '' }, ...middleware },
  });
}

/** Starts tools/grpcplugin with `flags` (besides `-proto-dir`); fails when it is not built. */
export async function startGoPluginServer(flags: string[]): Promise<GoPluginServer> {
  const bin = path.join(builtToolsDir(), 'grpcplugin');
  if (!existsSync(bin)) {
    throw new Error(`grpcplugin not found at ${bin}: run \`make deps\` (tools/build.sh builds it)`);
  }
  const child = spawn(bin, ['-proto-dir', PROTO_DIR, ...flags], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`grpcplugin did not start within ${String(START_TIMEOUT_MS)} ms: ${stderr}`));
    }, START_TIMEOUT_MS);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`grpcplugin exited (${String(code)}): ${stderr}`));
    });
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const m = /^listening on (tcp:\/\/\S+)$/.exec(line);
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
  return {
    child,
    address,
    calls: (hook) => stderr.split('\n').filter((l) => l === `grpcplugin: ${hook}`).length,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
