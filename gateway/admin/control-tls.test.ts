/**
 * The management API over HTTPS (`--control-tls`): the control port speaks TLS with the
 * gateway's certificate, a client that cannot verify it is refused by its own TLS check, plain
 * HTTP gets no answer there, and the gateway port keeps serving APIs over HTTP.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { send } from '../testing/client.ts';
import { startEcho, type Echo } from '../testing/echo.ts';
import { keyless, SECRET, startTlsGateway, type InProcessGateway } from '../testing/harness.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

let gw: InProcessGateway;
let echo: Echo;

before(async () => {
  echo = await startEcho('echo');
  gw = await startTlsGateway(['--control-port', '0', '--control-tls']);
});
after(async () => {
  await stopAll(gw, echo);
});

/** An HTTPS call to the control port; `verify` checks the certificate as clients do by default. */
function https(
  method: string,
  path: string,
  opts: { verify: boolean; body?: string },
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: gw.adminPort,
        method,
        path,
        headers: { 'x-svc-authorization': SECRET },
        rejectUnauthorized: opts.verify,
        agent: false,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, text });
        });
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

test('the management API answers over HTTPS on the control port', async () => {
  assert.equal((await https('GET', '/hello', { verify: false })).status, 200);
  const added = await https('POST', '/svc/apis', {
    verify: false,
    body: JSON.stringify(keyless('plain', '/plain/', echo.url)),
  });
  assert.equal(added.status, 200, added.text);
  assert.equal((await https('GET', '/svc/reload', { verify: false })).status, 200);
  const served = await send({ port: gw.port, path: '/plain/x' });
  assert.equal(served.status, 200, 'APIs are still served over HTTP on the gateway port');
});

test('a client that verifies certificates refuses the self-signed one', async () => {
  await assert.rejects(https('GET', '/hello', { verify: true }), /self-signed certificate/);
});

test('plain HTTP on the control port gets no management answer', async () => {
  const r = await send({ port: gw.adminPort, path: '/hello', fresh: true }).then(
    (res) => res.status,
    () => 'refused',
  );
  assert.ok(r === 'refused' || r === 400, `plain HTTP was answered: ${String(r)}`);
});
