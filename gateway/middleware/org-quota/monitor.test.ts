/**
 * Trigger monitors on organisation quotas (`monitor.monitor_org_keys`) through a real listener:
 * requests of an organisation's keys cross the monitor thresholds of its quota, and the
 * `TriggerExceeded` events arrive at a real webhook receiver, once per threshold, with the
 * organisation's quota in their message; the organisation's own `monitor.trigger_limits`
 * replace the global limit, as a key's do; without `monitor_org_keys` none fire.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { waitFor } from '../../../lib/testing/wait.ts';
import { startEcho, type Echo } from '../../testing/echo.ts';
import { keyed, startGateway, type InProcessGateway } from '../../testing/harness.ts';
import { closeServer, listenLocal } from '../../testing/servers.ts';

interface Delivered {
  event: string;
  message: string;
  path: string;
  key: string;
  api_id: string;
}

let echo: Echo;
let hook: Server;
let hookUrl: string;
/** What the receiver got, by the path it was delivered on (one path per test). */
const received = new Map<string, Delivered[]>();

before(async () => {
  echo = await startEcho('echo');
  hook = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const list = received.get(req.url ?? '') ?? [];
      list.push(JSON.parse(body) as Delivered);
      received.set(req.url ?? '', list);
      res.end('ok');
    });
  });
  hookUrl = await listenLocal(hook);
});
after(async () => {
  await echo.close();
  await closeServer(hook);
});

const MONITORS = ['--monitor-enable-trigger-monitors', '--monitor-global-trigger-limit', '50'];

/**
 * A gateway with `argv`, an API `/om/` enforcing the quota of organisation `acme` whose events
 * go to the receiver on `/<name>`, the organisation's session `org`, and a key of it.
 */
async function world(name: string, argv: string[], org: Record<string, unknown>): Promise<InProcessGateway> {
  const gw = await startGateway({ argv });
  const webhook = [
    {
      handler_name: 'eh_web_hook_handler',
      handler_meta: { target_path: `${hookUrl}/${name}`, method: 'POST' },
    },
  ];
  await gw.addApi(
    keyed('om', '/om/', echo.url, {
      org_id: 'acme',
      enforce_org_quotas: true,
      event_handlers: { events: { TriggerExceeded: webhook, QuotaExceeded: webhook } },
    }),
  );
  await gw.reload();
  const o = await gw.admin('POST', '/svc/org/keys/acme', org);
  assert.equal(o.status, 200, o.text);
  const k = await gw.admin('POST', '/svc/keys/acme-key', {
    org_id: 'acme',
    access_rights: { om: { api_id: 'om', api_name: 'om', versions: ['Default'] } },
  });
  assert.equal(k.status, 200, k.text);
  return gw;
}

async function statuses(gw: InProcessGateway, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++)
    out.push((await gw.request({ path: '/om/x', headers: { authorization: 'acme-key' } })).status);
  return out;
}

/** The deliveries on `/<name>` once the `QuotaExceeded` (fired last) has arrived. */
async function deliveries(name: string): Promise<Delivered[]> {
  return waitFor(`QuotaExceeded at /${name}`, () => {
    const got = received.get(`/${name}`) ?? [];
    return got.some((e) => e.event === 'QuotaExceeded') ? got : undefined;
  });
}

const triggers = (got: Delivered[]): string[] =>
  got.filter((e) => e.event === 'TriggerExceeded').map((e) => e.message);

describe('monitor.monitor_org_keys', () => {
  test('on: crossing the global trigger limit of the organisation quota fires TriggerExceeded once', async () => {
    const gw = await world('global', [...MONITORS, '--monitor-org-keys'], {
      quota_max: 4,
      quota_renewal_rate: 3600,
    });
    try {
      assert.deepEqual(await statuses(gw, 6), [200, 200, 200, 200, 403, 403]);
      const got = await deliveries('global');
      assert.deepEqual(triggers(got), ['Organisation quota trigger reached: 50% of 4 used']);
      const t = got.find((e) => e.event === 'TriggerExceeded');
      assert.equal(t?.api_id, 'om');
      assert.equal(t.path, '/om/x');
      assert.match(t.key, /^[0-9a-f]{64}$/, 'the hashed key of the request that crossed it');
    } finally {
      await gw.stop();
    }
  });

  test('on: the organisation’s own monitor.trigger_limits replace the global limit', async () => {
    const gw = await world('own', [...MONITORS, '--monitor-org-keys'], {
      quota_max: 4,
      quota_renewal_rate: 3600,
      monitor: { trigger_limits: [75, 25] },
    });
    try {
      assert.deepEqual(await statuses(gw, 5), [200, 200, 200, 200, 403]);
      assert.deepEqual(triggers(await deliveries('own')).sort(), [
        'Organisation quota trigger reached: 25% of 4 used',
        'Organisation quota trigger reached: 75% of 4 used',
      ]);
    } finally {
      await gw.stop();
    }
  });

  test('off (user keys monitored only): the organisation quota fires no TriggerExceeded', async () => {
    const gw = await world('off', [...MONITORS, '--monitor-user-keys'], {
      quota_max: 4,
      quota_renewal_rate: 3600,
    });
    try {
      assert.deepEqual(await statuses(gw, 5), [200, 200, 200, 200, 403]);
      // Deliveries keep their order; the trigger would have been fired two requests before.
      assert.deepEqual(triggers(await deliveries('off')), []);
    } finally {
      await gw.stop();
    }
  });
});
