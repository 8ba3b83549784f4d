/**
 * nginx in the gateway benchmark: the upstream every proxy calls (a small JSON body, a checking
 * location for the endpoint-feature mix, a logged location for the cache) and the reverse proxy
 * the gateway is measured against; installed from Debian, with wrk, when missing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { environment } from '../../../lib/config.ts';
import { waitFor } from '../../../lib/testing/wait.ts';
import { send } from '../../../gateway/testing/client.ts';
import { have, start } from './processes.ts';

/** The access log of the upstream's `/cache/` location: one line per cache miss. */
export const cacheLog = (dir: string): string => join(dir, 'upstream-cache.log');

/** nginx and wrk from Debian: installed with apt-get when missing and we are root. */
export function ensureTools(): void {
  const missing = [have('nginx') ? undefined : 'nginx-light', have('wrk') ? undefined : 'wrk'].filter(
    (x): x is string => x !== undefined,
  );
  if (missing.length === 0) return;
  const command = `apt-get install -y ${missing.join(' ')}`;
  if (process.getuid?.() !== 0 || !have('apt-get')) {
    throw new Error(`the benchmark needs nginx and wrk; install them with: sudo ${command}`);
  }
  console.log(`bench: installing ${missing.join(', ')} with apt-get`);
  const env = { ...environment(), DEBIAN_FRONTEND: 'noninteractive' };
  if (spawnSync('apt-get', ['install', '-y', ...missing], { stdio: 'inherit', env }).status !== 0) {
    execFileSync('apt-get', ['update'], { stdio: 'inherit', env });
    execFileSync('apt-get', ['install', '-y', ...missing], { stdio: 'inherit', env });
  }
}

function nginxConfig(dir: string, opts: { workers: number; listen: number; upstream?: number }): string {
  const conf = join(dir, `nginx-${opts.listen}.conf`);
  const temp = join(dir, `tmp-${opts.listen}`);
  mkdirSync(temp, { recursive: true });
  const server =
    opts.upstream === undefined
      ? `server {
    listen 127.0.0.1:${opts.listen} backlog=4096;
    location / { default_type application/json; return 200 '{"hello":"from the upstream"}'; }
    location = /catalog/items/check {
      default_type application/json;
      add_header X-Seen "$request_uri|$http_x_bench|$http_x_drop";
      return 200 '{"hello":"from the upstream"}';
    }
    location /cache/ {
      access_log ${cacheLog(dir)};
      default_type application/json;
      return 200 '{"hello":"from the upstream"}';
    }
  }`
      : `upstream backend { server 127.0.0.1:${opts.upstream}; keepalive 256; }
  server {
    listen 127.0.0.1:${opts.listen} backlog=4096;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host 127.0.0.1:${opts.upstream};
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $host;
    }
  }`;
  writeFileSync(
    conf,
    `daemon off;
worker_processes ${opts.workers};
pid ${join(dir, `nginx-${opts.listen}.pid`)};
error_log ${join(dir, `nginx-${opts.listen}.err`)} warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path ${temp}/body;
  proxy_temp_path ${temp}/proxy;
  fastcgi_temp_path ${temp}/fastcgi;
  uwsgi_temp_path ${temp}/uwsgi;
  scgi_temp_path ${temp}/scgi;
  ${server}
}
`,
  );
  return conf;
}

/** Starts nginx, the upstream (without `upstream`) or a reverse proxy to it, and waits for it. */
export async function startNginx(
  dir: string,
  opts: { workers: number; listen: number; upstream?: number },
): Promise<void> {
  const conf = nginxConfig(dir, opts);
  start(
    'nginx',
    ['-e', join(dir, `nginx-${opts.listen}.err`), '-p', dir, '-c', conf],
    `nginx on ${opts.listen}`,
  );
  await waitFor(`nginx on ${opts.listen}`, async () =>
    (await send({ port: opts.listen, path: '/' })).status === 200 ? true : undefined,
  );
}
