/**
 * The ApiKey row of `make bench-operator`: N ApiKeys, each with its Secret (a known value), in
 * one apply, until each value authenticates through the gateway; against the same N keys written
 * straight to the gateway's `/svc/keys/{value}` (the reference, same run, same gateway, same
 * policy). Both sides grant one API through one SecurityPolicy, applied first.
 */
import { randomBytes } from 'node:crypto';
import { Pool } from 'undici';
import type { ControlPlane } from '../harness/control-plane.ts';
import { httpRequest, waitFor, type GatewayProc } from '../harness/processes.ts';
import { APPLIERS, applyAll, summarize, timeoutMs, type Run } from './serving.ts';

/** The operator's run and the reference's, over the same number of keys. */
export interface KeysResult {
  operator: Run;
  direct: Run;
}

/** Values probed per applier's share in one polling round (as serving.ts probes paths). */
const WINDOW = 64;
const LISTEN_PATH = '/keyed/';

/**
 * Polls the gateway with each value until it authenticates (the upstream answers); returns each
 * one's time since `t0`. Each round probes only the first WINDOW values still pending of each
 * applier's share, so times err late, never early.
 */
export async function timeToAuthenticate(
  gw: Pick<GatewayProc, 'url'>,
  values: string[],
  t0: number,
): Promise<number[]> {
  const pool = new Pool(gw.url, { connections: 8, pipelining: 1 });
  const done = new Map<string, number>();
  const deadline = t0 + timeoutMs(values.length);
  const share = Math.ceil(values.length / APPLIERS);
  const shares = Array.from({ length: APPLIERS }, (_, i) => values.slice(i * share, (i + 1) * share));
  try {
    while (done.size < values.length) {
      if (Date.now() > deadline) {
        throw new Error(
          `${values.length - done.size} keys not authenticating after ${timeoutMs(values.length)} ms`,
        );
      }
      const pending = shares.flatMap((part) => part.filter((v) => !done.has(v)).slice(0, WINDOW));
      for (let i = 0; i < pending.length; i += 64) {
        await Promise.all(
          pending.slice(i, i + 64).map(async (v) => {
            const r = await pool.request({
              method: 'GET',
              path: `${LISTEN_PATH}probe`,
              headers: { authorization: v },
            });
            await r.body.dump();
            if (r.statusCode === 200 && r.headers['x-upstream'] !== undefined) done.set(v, Date.now() - t0);
          }),
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    await pool.close();
  }
  return values.map((v) => done.get(v) ?? NaN);
}

/** A key value a header can carry, unique to this run. */
const valueOf = (side: string, i: number): string => `bench-${side}-${i}-${randomBytes(12).toString('hex')}`;

/**
 * Applies the API and policy the keys use (in `namespace`, through the operator) and waits until
 * the API refuses a request without a key and the policy has its gateway ID; then the N keys
 * through the operator, then the N keys written straight to the gateway.
 */
export async function apiKeysPhase(opts: {
  cp: ControlPlane;
  gw: GatewayProc;
  secret: string;
  upstreamUrl: string;
  namespace: string;
  org: string;
  count: number;
}): Promise<KeysResult> {
  const { cp, gw, secret, namespace, count } = opts;
  await cp.kubectl(['apply', '--server-side', '-f', '-'], {
    input: `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: keyed, namespace: ${namespace}}
spec:
  name: keyed
  use_keyless: false
  use_standard_auth: true
  proxy: {listen_path: ${LISTEN_PATH}, target_url: "${opts.upstreamUrl}", strip_listen_path: true}
---
apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: keyed-plan, namespace: ${namespace}}
spec:
  name: keyed-plan
  state: active
  active: true
  rate: 1000
  per: 1
  quota_max: -1
  access_rights_array: [{name: keyed}]
`,
  });
  let policyId = '';
  await waitFor(
    'the keyed API refusing keyless requests and its policy held by the gateway',
    async () => {
      const r = await cp.kubectl(
        ['get', 'securitypolicy', 'keyed-plan', '-n', namespace, '-o', 'jsonpath={.status.pol_id}'],
        { allowFailure: true },
      );
      policyId = r.stdout.trim();
      if (policyId === '') return false;
      return (await httpRequest(`${gw.url}${LISTEN_PATH}probe`)).status === 401;
    },
    120_000,
  );

  // Through the operator: each key with its Secret, one manifest each, one apply of all.
  const opValues = Array.from({ length: count }, (_, i) => valueOf('op', i));
  const manifests = opValues.map(
    (v, i) => `apiVersion: v1
kind: Secret
metadata: {name: key-${i}, namespace: ${namespace}}
stringData: {key: "${v}"}
---
apiVersion: svc.svc.io/v1alpha1
kind: ApiKey
metadata: {name: key-${i}, namespace: ${namespace}}
spec:
  secretRef: {name: key-${i}}
  policies: [keyed-plan]
`,
  );
  const t0 = Date.now();
  const authenticated = timeToAuthenticate(gw, opValues, t0);
  const applied = await applyAll(cp, manifests);
  const operator = { ...summarize(count, await authenticated), applied: applied - t0 };

  // Reference: the same keys written straight to the gateway, 16 at a time.
  const directValues = Array.from({ length: count }, (_, i) => valueOf('direct', i));
  const t1 = Date.now();
  for (let i = 0; i < count; i += 16) {
    await Promise.all(
      directValues.slice(i, i + 16).map(async (v) => {
        const r = await httpRequest(`${gw.url}/svc/keys/${v}`, {
          method: 'POST',
          headers: { 'x-svc-authorization': secret, 'content-type': 'application/json' },
          body: JSON.stringify({ org_id: opts.org, apply_policies: [policyId] }),
        });
        if (r.status !== 200) throw new Error(`POST /svc/keys: ${r.status} ${r.body}`);
      }),
    );
  }
  const direct = summarize(count, await timeToAuthenticate(gw, directValues, t1));
  return { operator, direct };
}
