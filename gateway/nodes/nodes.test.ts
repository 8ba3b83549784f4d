/**
 * What each gateway says it serves: `GET /svc/applied` (this process: a revision per API, the
 * hash of the document `GET /svc/apis/{id}` returns), and the registry of the gateways sharing a
 * Redis store, `GET /svc/nodes[/apis/{id}]`: both processes with the revision each serves; a
 * killed one stays until its heartbeat is older than `node_timeout_ms`, then is dropped; a
 * stopped one leaves at once.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { hashOf } from '../../lib/canonical-hash.ts';
import { waitFor } from '../../lib/testing/wait.ts';
import { useEcho } from '../testing/echo.ts';
import { keyless, spawnGateway, startGateway, type GatewayClient } from '../testing/harness.ts';
import { onRedis, useRedis } from '../testing/redis-server.ts';
import type { NodeEntry } from './registry.ts';

const echo = useEcho();

/** The revision `GET /svc/apis/{id}` gives, as the operator computes it. */
async function storedRevision(gw: GatewayClient, id: string): Promise<string> {
  const res = await gw.admin('GET', `/svc/apis/${id}`);
  assert.equal(res.status, 200);
  return hashOf(res.json);
}

async function nodesOf(gw: GatewayClient, id: string, kind = 'apis'): Promise<NodeEntry[]> {
  const res = await gw.admin('GET', `/svc/nodes/${kind}/${id}`);
  assert.equal(res.status, 200, res.text);
  return res.json as NodeEntry[];
}

describe('applied revisions of one gateway (files store)', () => {
  test('GET /svc/applied names the revision of each API served, after the reload and not before', async () => {
    const gw = await startGateway();
    try {
      await gw.addApi(keyless('one', '/one/', echo().url));
      const before = (await gw.admin('GET', '/svc/applied')).json as { apis: Record<string, unknown> };
      assert.equal(before.apis.one, undefined, 'written, not reloaded: not served yet');
      await gw.reload();
      const first = await storedRevision(gw, 'one');
      const applied = (await gw.admin('GET', '/svc/applied')).json as {
        node: { name: string; pid: number };
        apis: Record<string, { revision: string; applied_at: string }>;
      };
      assert.equal(applied.apis.one?.revision, first);
      assert.equal(applied.node.pid, process.pid);
      // Changed: the new revision once reloaded.
      assert.equal((await gw.admin('PUT', '/svc/apis/one', keyless('one', '/uno/', echo().url))).status, 200);
      await gw.reload();
      const second = await storedRevision(gw, 'one');
      assert.notEqual(second, first);
      const nodes = await nodesOf(gw, 'one');
      assert.equal(nodes.length, 1);
      assert.equal(nodes[0]?.api?.revision, second);
      // Deleted: no longer served.
      assert.equal((await gw.admin('DELETE', '/svc/apis/one')).status, 200);
      await gw.reload();
      assert.equal((await nodesOf(gw, 'one'))[0]?.api, undefined);
      assert.equal((await gw.admin('GET', '/svc/applied', undefined)).status, 200);
    } finally {
      await gw.stop();
    }
  });

  test('the registry needs the management secret', async () => {
    const gw = await startGateway();
    try {
      for (const path of ['/svc/applied', '/svc/nodes', '/svc/nodes/apis/x', '/svc/nodes/policies/x']) {
        const res = await gw.request({ path });
        assert.equal(res.status, 403, path);
      }
    } finally {
      await gw.stop();
    }
  });
});

describe('the registry of gateways on one Redis', () => {
  const redis = useRedis();

  test('a policy written through one gateway: every gateway reports its revision at once, no reload; deleted, none', async () => {
    const args = onRedis(redis(), 'policies:');
    const a = await spawnGateway(args);
    const b = await spawnGateway(args);
    try {
      const policy = {
        id: 'gold',
        name: 'gold',
        org_id: 'o',
        rate: 10,
        per: 1,
        quota_max: -1,
        access_rights: {},
      };
      assert.equal((await a.admin('POST', '/svc/policies', policy)).status, 200);
      const revisionOf = async (): Promise<string> => {
        const res = await a.admin('GET', '/svc/policies/gold');
        assert.equal(res.status, 200);
        return hashOf(res.json);
      };
      const first = await revisionOf();
      const servingAll = (revision: string | undefined) => async () => {
        const nodes = await nodesOf(b, 'gold', 'policies');
        return nodes.length === 2 && nodes.every((n) => n.policy?.revision === revision) ? nodes : undefined;
      };
      await waitFor('both gateways applying the policy', servingAll(first));
      const applied = (await b.admin('GET', '/svc/applied')).json as {
        policies: Record<string, { revision: string; applied_at: string }>;
      };
      assert.equal(applied.policies.gold?.revision, first);

      // Changed through b: the new revision on both, with no reload asked for.
      assert.equal((await b.admin('PUT', '/svc/policies/gold', { ...policy, rate: 20 })).status, 200);
      const second = await revisionOf();
      assert.notEqual(second, first);
      await waitFor('both gateways applying the change', servingAll(second));

      assert.equal((await a.admin('DELETE', '/svc/policies/gold')).status, 200);
      await waitFor('no gateway applying the deleted policy', servingAll(undefined));
      // An API's revision is not a policy's: the API list says nothing of it.
      assert.ok((await nodesOf(a, 'gold')).every((n) => n.api === undefined && n.policy === undefined));
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  test('a gateway started after a policy was written reports it', async () => {
    const args = onRedis(redis(), 'policies-late:');
    const a = await spawnGateway(args);
    let b: Awaited<ReturnType<typeof spawnGateway>> | undefined;
    try {
      const policy = {
        id: 'early',
        name: 'early',
        org_id: 'o',
        rate: 5,
        per: 1,
        quota_max: -1,
        access_rights: {},
      };
      assert.equal((await a.admin('POST', '/svc/policies', policy)).status, 200);
      const revision = hashOf((await a.admin('GET', '/svc/policies/early')).json);
      b = await spawnGateway(args);
      await waitFor('the late gateway reporting the policy', async () => {
        const nodes = await nodesOf(a, 'early', 'policies');
        return nodes.length === 2 && nodes.every((n) => n.policy?.revision === revision) ? true : undefined;
      });
    } finally {
      await a.stop();
      await b?.stop();
    }
  });

  test('Redis restarted empty: the next reload writes every revision again, unchanged ones included', async () => {
    const gw = await startGateway({ argv: ['--store', redis().url, '--redis-key-prefix', 'flushed:'] });
    const client = new Redis(redis().url);
    try {
      await gw.addApi(keyless('kept', '/kept/', echo().url));
      await gw.reload();
      const revision = await storedRevision(gw, 'kept');
      assert.equal((await nodesOf(gw, 'kept'))[0]?.api?.revision, revision);
      await client.flushall();
      // Written again as it was (what a resync does): the same revision.
      await gw.addApi(keyless('kept', '/kept/', echo().url));
      await gw.reload();
      const nodes = await nodesOf(gw, 'kept');
      assert.equal(nodes.length, 1);
      assert.equal(nodes[0]?.api?.revision, revision);
    } finally {
      client.disconnect();
      await gw.stop();
    }
  });

  test('both gateways listed with the revision each serves; a killed one is dropped after the timeout, a stopped one at once', async () => {
    const args = [
      ...onRedis(redis(), 'nodes:'),
      '--node-heartbeat-interval-ms',
      '200',
      '--node-timeout-ms',
      '4000',
    ];
    const a = await spawnGateway(args);
    const b = await spawnGateway(args);
    const c = await spawnGateway(args);
    try {
      await a.addApi(keyless('shared', '/shared/', echo().url));
      assert.equal((await a.admin('GET', '/svc/reload/group')).status, 200);
      const revision = await storedRevision(a, 'shared');
      // Each node reloads on the group message: every one serves the revision soon.
      const all = await waitFor('three gateways serving the revision', async () => {
        const nodes = await nodesOf(b, 'shared');
        return nodes.length === 3 && nodes.every((n) => n.api?.revision === revision) ? nodes : undefined;
      });
      const names = all.map((n) => n.name);
      assert.equal(new Set(names).size, 3, `distinct names: ${names.join(', ')}`);
      const pidOf = (g: { child: { pid?: number | undefined } }): number => g.child.pid ?? -1;
      assert.deepEqual(all.map((n) => n.pid).sort(), [pidOf(a), pidOf(b), pidOf(c)].sort());

      // Killed: no heartbeat; listed until the timeout, then dropped.
      b.child.kill('SIGKILL');
      await b.exited;
      const listed = await nodesOf(a, 'shared');
      assert.ok(
        listed.some((n) => n.pid === pidOf(b)),
        'a killed gateway is still listed before its timeout',
      );
      await waitFor('the killed gateway dropped', async () => {
        const nodes = await nodesOf(a, 'shared');
        return nodes.length === 2 && !nodes.some((n) => n.pid === pidOf(b)) ? true : undefined;
      });
      // Stopped cleanly: it leaves the registry as it goes.
      await c.stop();
      const left = await nodesOf(a, 'shared');
      assert.deepEqual(
        left.map((n) => n.pid),
        [pidOf(a)],
      );
      assert.equal((await a.admin('GET', '/svc/nodes')).status, 200);
    } finally {
      await a.stop();
      await b.stop();
      await c.stop();
    }
  });
});
