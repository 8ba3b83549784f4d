/**
 * A standby replica (leader election on, another replica leads) answers /readyz 200: in the
 * chart's pod the webhook container serves admission on every replica, and a pod is in the
 * webhook Service only while all its containers are ready, so a standby's operator container
 * must not hold its pod out (docs/install.md, "Probes"). Real control plane, gateway and two
 * operator processes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { httpRequest, waitFor } from '../harness/processes.ts';
import { gateway, namespaces, operator, useFaultsCluster } from './faults-helpers.ts';

useFaultsCluster();

test('a standby replica is ready (/readyz 200) while another leads, and leads when the leader stops', async () => {
  const where = await namespaces('standby');
  const gw = await gateway('standby');
  const a = await operator('standby-a', gw, where);
  await waitFor('replica a leads', () => a.log().includes('became leader'));
  const b = await operator('standby-b', gw, where);

  assert.ok(!b.log().includes('became leader'), 'replica b is a standby while a leads');
  assert.equal((await httpRequest(`${b.opsUrl}/readyz`)).status, 200, 'standby /readyz');
  assert.equal((await httpRequest(`${b.opsUrl}/healthz`)).status, 200, 'standby /healthz');
  assert.equal((await httpRequest(`${a.opsUrl}/readyz`)).status, 200, 'leader /readyz');

  await a.stop();
  await waitFor('replica b leads once a released the lease', () => b.log().includes('became leader'), 30_000);
  await waitFor('the new leader ready', async () => (await httpRequest(`${b.opsUrl}/readyz`)).status === 200);
});
