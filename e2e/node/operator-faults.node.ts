/**
 * The operator's faults on the real node (issue 28 item 4), svc installed by the charts from the
 * images built here, everything checked as a user sees it (kubectl, the Lease, the gateway's
 * answers through its Service, the gateway's log of its management writes):
 *
 * 1. `helm upgrade` with the documented CRD step (docs/install.md section 3) from the chart as of
 *    an older commit to the current one: the APIs stay Ready and served during and after.
 * 2. The operator pod deleted in the middle of a burst of 200 applies: its successor converges,
 *    every API served with its latest content and Ready, none pushed twice.
 * 3. The leader's pod deleted with two replicas: the other takes the Lease, a change applied
 *    after the deletion is served within the lease duration plus a margin, and the webhooks
 *    answer throughout (admitted or refused as they should, never a webhook call error).
 * 4. `helm uninstall` with ApiDefinitions and SecurityPolicies present, then their namespace
 *    deleted: nothing stays behind on a finalizer (the chart's pre-delete hook,
 *    operator/uninstall.ts).
 *
 * The svc-operator release is cluster-wide (fixed names): run this file under
 * `flock /tmp/svc-node-operator.lock`. It leaves no release behind. Run by `make e2e-node`. The
 * set-up and the readers the cases share are in operator-faults.ts.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { loadKubeConfig } from '../../lib/k8s/client.ts';
import { waitFor } from '../../lib/testing/wait.ts';
import {
  execFileAsync,
  repoRoot,
  OPERATOR_NS,
  RELEASE,
  ns,
  OLD_CHART_COMMIT,
  LEASE_DURATION_MS,
  BURST,
  MUTATING,
  VALIDATING,
  node,
  kubectl,
  apply,
  errText,
  helm,
  apiDefinition,
  servedVersion,
  waitServed,
  apiObjects,
  readyNow,
  waitReady,
  operatorPods,
  leaseHolder,
  gatewayApiWrites,
  releaseExists,
  installCurrent,
  installOperator,
  setUp,
  tearDown,
} from './operator-faults.ts';

before(setUp);
after(tearDown);

test(
  `helm upgrade from the chart as of ${OLD_CHART_COMMIT} with the documented CRD step: APIs stay Ready and served`,
  { timeout: 900_000 },
  async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-old-chart-'));
    try {
      const archive = path.join(dir, 'chart.tar');
      await execFileAsync('git', [
        '-C',
        repoRoot,
        'archive',
        '--output',
        archive,
        OLD_CHART_COMMIT,
        'charts/svc-operator',
      ]);
      await execFileAsync('tar', ['-xf', archive, '-C', dir]);
      const oldChart = path.join(dir, 'charts', 'svc-operator');
      // The older CRDs, as a cluster running that version has them. One change: their category
      // `svc` is left out, as on the current CRDs, because on this shared node it would take
      // `kubectl get svc` from every other suite for as long as the old CRDs are there (58acdaf).
      const crdDir = path.join(oldChart, 'crds');
      for (const f of await readdir(crdDir)) {
        const file = path.join(crdDir, f);
        await writeFile(file, (await readFile(file, 'utf8')).replace(/^( +)- svc\n(?=\1- svc-all\n)/m, ''));
      }
      // A cluster running that version has only its kinds: the CRDs of later kinds (left by a
      // suite that ran before, under the same lock) go, as they would not be there.
      const oldCrds = new Set<string>();
      for (const f of await readdir(crdDir)) {
        const doc = await readFile(path.join(crdDir, f), 'utf8');
        const name = /^metadata:\n(?: .*\n)*? {2}name: (\S+)$/m.exec(doc)?.[1];
        if (name !== undefined) oldCrds.add(name);
      }
      assert.equal(oldCrds.size, 5, `the old chart's CRDs: ${[...oldCrds].join(', ')}`);
      const present = (await kubectl(['get', 'crd', '-o', 'name'])).split('\n').map((l) => l.trim());
      for (const crd of present) {
        const name = crd.replace(/^customresourcedefinition\.apiextensions\.k8s\.io\//, '');
        if (name.endsWith('.svc.svc.io') && !oldCrds.has(name)) {
          await kubectl(['delete', 'crd', name, '--wait=true', '--timeout=120s']);
        }
      }
      await kubectl(['apply', '--server-side', '--force-conflicts', '-f', crdDir]);
      await installOperator(oldChart);

      const names = Array.from({ length: 5 }, (_, i) => `upgrade-${i}`);
      await apply(names.map((n) => apiDefinition(n, 'v1')));
      await waitReady(names, 180_000);
      await waitServed(names, () => 'v1', 120_000);

      // While the upgrade runs: every API asked through the gateway, every status read.
      const failures: string[] = [];
      let polls = 0;
      const control = { stop: false };
      const poller = (async () => {
        while (!control.stop) {
          for (const name of names) {
            const got = await servedVersion(name);
            if (got.version !== 'v1') failures.push(`${name} served: ${JSON.stringify(got)}`);
          }
          const items = await apiObjects().catch(() => []);
          for (const o of items) {
            if (names.includes(o.metadata.name) && !readyNow(o)) {
              failures.push(`${o.metadata.name} not Ready: ${JSON.stringify(o.status?.conditions)}`);
            }
          }
          polls++;
          await sleep(250);
        }
      })();

      // docs/install.md, section 3: the new CRDs first, then the release.
      await installCurrent();
      // The new operator has taken over once it serves a change made now.
      names.shift();
      await apply([apiDefinition('upgrade-0', 'v2')]);
      await waitServed(['upgrade-0'], () => 'v2', 120_000);
      await sleep(3000);
      control.stop = true;
      await poller;
      assert.ok(polls > 5, `the gateway was asked ${polls} times during the upgrade`);
      assert.deepEqual(failures.slice(0, 10), [], `${failures.length} failures during the upgrade`);

      // The CRDs are the current chart's (its ID pattern), the release is at revision 2.
      const crd = await kubectl(['get', 'crd', 'apidefinitions.svc.svc.io', '-o', 'json']);
      assert.ok(crd.includes('^\\\\.*[A-Za-z0-9_~-][A-Za-z0-9._~-]*$'), 'the current CRD schema is applied');
      const history = JSON.parse(await helm(['history', RELEASE, '-n', OPERATOR_NS, '-o', 'json'])) as {
        revision: number;
        status: string;
      }[];
      assert.equal(history.at(-1)?.status, 'deployed');
      assert.ok((history.at(-1)?.revision ?? 0) >= 2);
      await waitReady(['upgrade-0', ...names], 60_000);
      await waitServed(names, () => 'v1', 30_000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
);

test(
  `the operator pod deleted in the middle of a burst of ${BURST} applies: nothing lost, nothing pushed twice`,
  { timeout: 900_000 },
  async () => {
    const names = Array.from({ length: BURST }, (_, i) => `burst-${String(i).padStart(3, '0')}`);
    // Which content each API must end with: the first half is applied twice.
    const latest = (name: string): string => (names.indexOf(name) < BURST / 2 ? 'v2' : 'v1');
    // The current chart, whatever the case before left (its upgrade may have failed).
    await installCurrent();
    const [first] = (await operatorPods()).filter((p) => !p.deleting);
    assert.ok(first !== undefined, 'an operator pod runs');

    // One replica: while the pod is replaced no webhook answers, and the API server refuses
    // writes (failurePolicy Fail). A user's CI applies again; so does this, and counts it.
    let refusedWhileDown = 0;
    const applyChunk = async (docs: object[]): Promise<void> => {
      await waitFor(
        'a chunk of the burst admitted',
        async () => {
          try {
            await apply(docs);
            return true;
          } catch (err) {
            const text = errText(err);
            if (
              !/failed calling webhook|no endpoints available|connection refused|deadline exceeded/.test(text)
            )
              throw err;
            refusedWhileDown++;
            return false;
          }
        },
        180_000,
        500,
      );
    };
    const started = Date.now();
    let deletedAt = 0;
    for (let c = 0; c < BURST / 10; c++) {
      if (c === 6) {
        await kubectl(['-n', OPERATOR_NS, 'delete', 'pod', first.name, '--wait=false']);
        deletedAt = Date.now();
      }
      await applyChunk(names.slice(c * 10, c * 10 + 10).map((n) => apiDefinition(n, 'v1')));
    }
    for (let c = 0; c < BURST / 20; c++) {
      await applyChunk(names.slice(c * 10, c * 10 + 10).map((n) => apiDefinition(n, 'v2')));
    }
    const appliedAt = Date.now();

    const items = await waitReady(names, 600_000);
    await waitServed(names, latest, 300_000);
    const convergedAt = Date.now();
    const pods = await operatorPods();
    assert.ok(!pods.some((p) => p.name === first.name), `${first.name} is gone`);
    assert.equal(pods.filter((p) => p.ready).length, 1, JSON.stringify(pods));

    // Nothing pushed twice: the gateway logs each API it stores ('added' or 'modified'). Each API
    // is created once, and updated at most once per later version of it.
    const writes = await gatewayApiWrites();
    const problems: string[] = [];
    for (const o of items) {
      const id = o.status?.api_id;
      if (id === undefined) {
        problems.push(`${o.metadata.name}: no api_id`);
        continue;
      }
      const actions = writes.get(id) ?? [];
      const added = actions.filter((a) => a === 'added').length;
      const modified = actions.filter((a) => a === 'modified').length;
      const maxModified = latest(o.metadata.name) === 'v2' ? 1 : 0;
      if (added !== 1 || modified > maxModified) problems.push(`${o.metadata.name}: ${actions.join(',')}`);
    }
    assert.deepEqual(problems, [], `APIs written more often than their versions: ${problems.length}`);
    console.error(
      `burst: ${BURST} applies + ${BURST / 2} updates, operator pod deleted ${((deletedAt - started) / 1000).toFixed(1)}s in; ` +
        `applies refused while no webhook answered: ${refusedWhileDown}; applied in ${((appliedAt - started) / 1000).toFixed(1)}s; ` +
        `all Ready and served ${((convergedAt - appliedAt) / 1000).toFixed(1)}s after the last apply`,
    );
  },
);

test(
  'the leader pod deleted with two replicas: the other takes over, changes are served, webhooks keep answering',
  { timeout: 600_000 },
  async () => {
    await installCurrent(['--set', 'replicaCount=2']);
    const pods = await waitFor(
      'two Ready operator pods',
      async () => {
        const p = (await operatorPods()).filter((x) => !x.deleting);
        return p.length === 2 && p.every((x) => x.ready) ? p : undefined;
      },
      240_000,
      1000,
    );
    const leader = await waitFor(
      'a leader among the two pods',
      async () => {
        const h = await leaseHolder();
        return pods.some((p) => p.name === h) ? h : undefined;
      },
      60_000,
      500,
    );
    const standby = pods.find((p) => p.name !== leader)?.name ?? '';

    // Admission all along, as the API server answers its clients: an apply of a valid change is
    // admitted (kubectl, one at a time), and several clients at once create a valid object and an
    // invalid one with dry-run (the webhooks run as for a real write): the first admitted, the
    // second refused naming its field. A webhook call error (a replica that stopped listening
    // while the Service still sent it requests) is neither.
    const outcomes = { applied: 0, admitted: 0, refused: 0 };
    const wrong: string[] = [];
    const control = { stop: false };
    const custom = loadKubeConfig(node.kubeconfig).makeApiClient(k8s.CustomObjectsApi);
    const ref = { group: 'svc.svc.io', version: 'v1alpha1', plural: 'apidefinitions', namespace: ns };
    let n = 0;
    const applier = (async () => {
      while (!control.stop) {
        n++;
        try {
          const doc = apiDefinition('takeover-probe', 'v1') as { metadata: object };
          await apply([{ ...doc, metadata: { ...doc.metadata, labels: { probe: String(n) } } }]);
          outcomes.applied++;
        } catch (err) {
          wrong.push(`apply ${n}: ${errText(err).trim()}`);
        }
        await sleep(200);
      }
    })();
    const dryRunner = async (worker: number): Promise<void> => {
      for (let i = 0; !control.stop; i++) {
        const name = `dry-${worker}-${i}`;
        try {
          await custom.createNamespacedCustomObject({
            ...ref,
            body: apiDefinition(name, 'v1'),
            dryRun: 'All',
          });
          outcomes.admitted++;
        } catch (err) {
          wrong.push(`valid dry-run ${name}: ${String((err as { body?: unknown }).body ?? err)}`);
        }
        try {
          await custom.createNamespacedCustomObject({
            ...ref,
            body: apiDefinition(name, 'v1', { allowed_ips: ['10.0.0.*'] }),
            dryRun: 'All',
          });
          wrong.push(`invalid dry-run ${name} admitted`);
        } catch (err) {
          const body = String((err as { body?: unknown }).body ?? err);
          if ((err as { code?: number }).code === 422 && body.includes('spec.allowed_ips[0]'))
            outcomes.refused++;
          else wrong.push(`invalid dry-run ${name}: ${body}`);
        }
      }
    };
    const probes = [applier, ...[0, 1, 2, 3].map((w) => dryRunner(w))];
    await waitFor(
      'admission answering before the deletion',
      () => outcomes.applied >= 2 && outcomes.admitted >= 2 && outcomes.refused >= 2,
      60_000,
      200,
    );

    const deletedAt = Date.now();
    await kubectl(['-n', OPERATOR_NS, 'delete', 'pod', leader, '--wait=false']);
    await waitFor(
      'the standby to hold the Lease',
      async () => (await leaseHolder()) === standby,
      60_000,
      200,
    );
    const takeoverMs = Date.now() - deletedAt;
    const changedAt = Date.now();
    await apply([apiDefinition('burst-150', 'v3')]);
    await waitServed(['burst-150'], () => 'v3', LEASE_DURATION_MS + 30_000);
    const servedMs = Date.now() - changedAt;
    assert.ok(
      servedMs <= LEASE_DURATION_MS + 15_000,
      `a change after the deletion served in ${servedMs} ms (lease ${LEASE_DURATION_MS} ms)`,
    );
    // Until the replacement pod is Ready and the deleted one gone: admission keeps answering.
    await waitFor(
      'the deleted pod gone and two Ready pods again',
      async () => {
        const p = await operatorPods();
        return !p.some((x) => x.name === leader) && p.filter((x) => x.ready).length === 2;
      },
      240_000,
      1000,
    );
    await sleep(2000);
    control.stop = true;
    await Promise.all(probes);
    assert.deepEqual(wrong, [], `admission answers during the takeover (${JSON.stringify(outcomes)})`);
    assert.ok(
      outcomes.applied >= 5 && outcomes.admitted >= 20 && outcomes.refused >= 20,
      JSON.stringify(outcomes),
    );
    await waitReady(['burst-150', 'takeover-probe'], 60_000);
    console.error(
      `takeover: Lease moved ${takeoverMs} ms after the leader's pod was deleted; a change served ${servedMs} ms after its apply; ` +
        `admission: ${outcomes.applied} applies and ${outcomes.admitted} valid dry-runs admitted, ${outcomes.refused} invalid refused, none failed`,
    );
  },
);

test(
  'helm uninstall, then the namespace deleted: no object stays on a finalizer',
  { timeout: 600_000 },
  async () => {
    await apply([
      {
        apiVersion: 'svc.svc.io/v1alpha1',
        kind: 'SecurityPolicy',
        metadata: { name: 'gold', namespace: ns },
        spec: {
          name: 'gold',
          state: 'active',
          active: true,
          rate: 100,
          per: 60,
          access_rights_array: [
            { name: 'burst-000', namespace: ns, kind: 'ApiDefinition', versions: ['Default'] },
          ],
        },
      },
    ]);
    await waitFor(
      'the SecurityPolicy Ready',
      async () => {
        const [p] = await apiObjects('securitypolicies');
        return p !== undefined && readyNow(p);
      },
      120_000,
      1000,
    );
    const held = async (): Promise<string[]> => {
      const out: string[] = [];
      for (const kind of ['apidefinitions', 'securitypolicies']) {
        for (const o of await apiObjects(kind)) {
          if (o.metadata.finalizers?.some((f) => f.startsWith('finalizers.svc.svc.io/'))) {
            out.push(`${kind}/${o.metadata.name}`);
          }
        }
      }
      return out;
    };
    assert.ok((await held()).length > BURST, 'the operator holds its objects with finalizers');

    await helm(['uninstall', RELEASE, '-n', OPERATOR_NS, '--wait', '--timeout=5m']);
    assert.equal(await releaseExists(), false);
    assert.equal(
      (await kubectl(['get', 'mutatingwebhookconfigurations,validatingwebhookconfigurations', '-o', 'name']))
        .split('\n')
        .filter((l) => l.includes(MUTATING) || l.includes(VALIDATING))
        .join(','),
      '',
    );
    assert.deepEqual(await held(), [], 'no object keeps the operator finalizer after the uninstall');
    // The objects stay, and so does what the gateway was given (docs/install.md, section 5).
    assert.equal((await servedVersion('burst-000')).version, 'v2');

    const count = (await held().catch(() => [])).length;
    const objects = (await kubectl(['-n', ns, 'get', 'apidefinitions,securitypolicies', '-o', 'name']))
      .trim()
      .split('\n').length;
    const started = Date.now();
    await kubectl(['delete', 'namespace', ns, '--timeout=120s']);
    const gone = await kubectl(['get', 'namespace', ns, '--ignore-not-found', '-o', 'name']);
    assert.equal(gone.trim(), '', `namespace ${ns} deleted`);
    console.error(
      `uninstall: namespace with ${objects} svc objects (${count} held) deleted in ${Date.now() - started} ms`,
    );
  },
);
