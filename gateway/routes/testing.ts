/**
 * What the tests of the checks and the compilation start from: a gateway's settings and a keyless
 * API definition to vary.
 */
import type { CompileEnv } from './check.ts';

/** A gateway on port 8080, its management API on the same port, without TLS. */
export const env: CompileEnv = { listenPort: 8080, controlPort: undefined, tls: false };

/** A keyless API on `/a/` proxying to `http://u:1`, with `extra` fields and `proxy` fields set. */
export const api = (
  extra: Record<string, unknown> = {},
  proxy: Record<string, unknown> = {},
): Record<string, unknown> => ({
  name: 'a',
  use_keyless: true,
  proxy: { listen_path: '/a/', target_url: 'http://u:1', ...proxy },
  ...extra,
});
