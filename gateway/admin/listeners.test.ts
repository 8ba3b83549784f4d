/**
 * The protocol-clash check of API writes, kept by the index of claimed ports (listeners.ts): a
 * port has one protocol, whichever write or delete came before.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { keyless, startTlsGateway, type InProcessGateway } from '../testing/harness.ts';
import { freePort } from '../../lib/testing/wait.ts';
import { listenerIndex } from './listeners.ts';

let gw: InProcessGateway;
let port = 0;
let other = 0;
const up = 'http://127.0.0.1:9';

before(async () => {
  gw = await startTlsGateway();
  port = await freePort();
  other = await freePort();
  // Written to the store directly, before the index exists: the index reads it at first use.
  await gw.store.put(
    'apis',
    'early',
    keyless('early', '/early/', up, { listen_port: other, protocol: 'https' }),
  );
});
after(async () => {
  await gw.stop();
});

const problem = (port: number, protocol: string, by: string): string =>
  `Validation of API Definition failed. Reason: listen_port: port ${String(port)} already serves ${protocol} for API ${by}; a port has one protocol`;

test('a port claimed over http refuses https from another API, not from the same one', async () => {
  assert.equal(
    (await gw.admin('POST', '/svc/apis', keyless('a', '/a/', up, { listen_port: port }))).status,
    200,
  );
  const clash = await gw.admin(
    'POST',
    '/svc/apis',
    keyless('b', '/b/', up, { listen_port: port, protocol: 'https' }),
  );
  assert.equal(clash.status, 400);
  assert.deepEqual(clash.json, { status: 'error', message: problem(port, 'http', 'a') });
  // The same protocol is fine; the claimer alone may change its own protocol.
  assert.equal(
    (await gw.admin('POST', '/svc/apis', keyless('c', '/c/', up, { listen_port: port }))).status,
    200,
  );
  assert.equal((await gw.admin('DELETE', '/svc/apis/c')).status, 200);
  const own = await gw.admin(
    'PUT',
    '/svc/apis/a',
    keyless('a', '/a/', up, { listen_port: port, protocol: 'https' }),
  );
  assert.equal(own.status, 200, own.text);
});

test('a port freed by a delete, a move or an inactive API takes the other protocol', async () => {
  // `a` serves https on `port` now: an http API clashes until `a` leaves it.
  assert.equal(
    (await gw.admin('POST', '/svc/apis', keyless('d', '/d/', up, { listen_port: port }))).status,
    400,
  );
  assert.equal(
    (
      await gw.admin(
        'PUT',
        '/svc/apis/a',
        keyless('a', '/a/', up, { active: false, listen_port: port, protocol: 'https' }),
      )
    ).status,
    200,
  );
  assert.equal(
    (await gw.admin('POST', '/svc/apis', keyless('d', '/d/', up, { listen_port: port }))).status,
    200,
  );
  assert.equal((await gw.admin('DELETE', '/svc/apis/d')).status, 200);
  assert.equal((await gw.admin('DELETE', '/svc/apis/a')).status, 200);
  assert.equal(
    (await gw.admin('POST', '/svc/apis', keyless('e', '/e/', up, { listen_port: port, protocol: 'https' })))
      .status,
    200,
  );
});

test('an API stored before the index was made is compared with', async () => {
  const clash = await gw.admin('POST', '/svc/apis', keyless('f', '/f/', up, { listen_port: other }));
  assert.equal(clash.status, 400);
  assert.deepEqual(clash.json, { status: 'error', message: problem(other, 'https', 'early') });
  // `early` and `e` claim a port of their own; the APIs on the gateway port are not indexed.
  // (The index of this store exists already: the environment given here is not used.)
  assert.equal(listenerIndex(gw.store, { listenPort: gw.port, controlPort: undefined, tls: true }).size, 2);
});
