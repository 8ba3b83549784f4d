import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { silentLogger } from '../lib/log.ts';
import { createCa, issueServingCert } from '../lib/x509.ts';
import {
  CA_CERT_KEY,
  CA_KEY_KEY,
  PREVIOUS_CA_KEY,
  fileCerts,
  selfManagedCerts,
  serviceHosts,
} from './certs.ts';
import type { CaStore, CertSource, ServingCert, WebhookConfigurations } from './certs.ts';

const log = silentLogger();
const DAY = 86_400_000;

/** Polls `check` until it holds, failing after `ms`. */
async function eventually(what: string, check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await delay(10);
  }
}

/** A Secret store in memory, with resource versions like the API server's. */
function memoryStore(): CaStore & {
  data?: Record<string, string>;
  version: number;
  creates: number;
  /** Whether the Secret has its owner (undefined: no owner wanted); a write gives it one. */
  owned?: boolean;
} {
  const store = {
    data: undefined as Record<string, string> | undefined,
    version: 0,
    creates: 0,
    owned: undefined as boolean | undefined,
    read: () =>
      Promise.resolve(
        store.data === undefined
          ? undefined
          : {
              data: { ...store.data },
              resourceVersion: String(store.version),
              ...(store.owned === undefined ? {} : { owned: store.owned }),
            },
      ),
    create: (data: Record<string, string>) => {
      if (store.data !== undefined) return Promise.resolve(false);
      store.creates++;
      store.data = data;
      store.version++;
      return Promise.resolve(true);
    },
    replace: (data: Record<string, string>, rv: string) => {
      if (String(store.version) !== rv) return Promise.resolve(false);
      store.data = data;
      store.version++;
      if (store.owned !== undefined) store.owned = true;
      return Promise.resolve(true);
    },
  };
  return store;
}

function recordingConfigs(
  opts: { existsAfter?: number } = {},
): WebhookConfigurations & { bundles: string[]; calls: number } {
  const c = {
    bundles: [] as string[],
    calls: 0,
    sync: (bundle: string) => {
      c.calls++;
      if (c.calls <= (opts.existsAfter ?? 0)) return Promise.resolve(false);
      c.bundles.push(bundle);
      return Promise.resolve(true);
    },
  };
  return c;
}

const sources: CertSource[] = [];
const track = <T extends CertSource>(s: T): T => {
  sources.push(s);
  return s;
};
afterEach(() => {
  for (const s of sources.splice(0)) s.stop();
});

const hosts = [...serviceHosts('svc-operator-webhook-service', 'svc-operator-system'), '127.0.0.1'];

describe('selfManagedCerts', () => {
  test('creates a CA, serves a certificate it signed, and publishes the CA bundle', async () => {
    const store = memoryStore();
    const configs = recordingConfigs();
    const source = track(selfManagedCerts({ store, configurations: configs, hosts, resyncMs: 60_000, log }));
    assert.equal(source.ready(), false);
    const serving = await source.start();
    const ca = new X509Certificate(store.data?.[CA_CERT_KEY] ?? '');
    const leaf = new X509Certificate(serving.cert);
    assert.equal(ca.ca, true);
    assert.equal(leaf.ca, false);
    assert.equal(leaf.verify(ca.publicKey), true);
    assert.equal(
      leaf.checkHost('svc-operator-webhook-service.svc-operator-system.svc'),
      'svc-operator-webhook-service.svc-operator-system.svc',
    );
    assert.equal(leaf.checkIP('127.0.0.1'), '127.0.0.1');
    assert.deepEqual(configs.bundles, [store.data?.[CA_CERT_KEY]]);
    assert.equal(source.ready(), true);
  });

  test('a second replica uses the stored CA', async () => {
    const store = memoryStore();
    await track(
      selfManagedCerts({ store, configurations: recordingConfigs(), hosts, resyncMs: 60_000, log }),
    ).start();
    const configs = recordingConfigs();
    const second = await track(
      selfManagedCerts({ store, configurations: configs, hosts, resyncMs: 60_000, log }),
    ).start();
    assert.equal(store.creates, 1);
    assert.equal(
      new X509Certificate(second.cert).verify(new X509Certificate(store.data?.[CA_CERT_KEY] ?? '').publicKey),
      true,
    );
    assert.deepEqual(configs.bundles, [store.data?.[CA_CERT_KEY]]);
  });

  test('a stored CA without its owner is written again as it is, with the owner', async () => {
    const store = memoryStore();
    await track(
      selfManagedCerts({ store, configurations: recordingConfigs(), hosts, resyncMs: 60_000, log }),
    ).start();
    const before = { ...store.data };
    const version = store.version;
    // As a Secret written before the release owned it.
    store.owned = false;
    const configs = recordingConfigs();
    await track(selfManagedCerts({ store, configurations: configs, hosts, resyncMs: 60_000, log })).start();
    assert.equal(store.owned, true);
    assert.deepEqual(store.data, before, 'the same CA');
    assert.equal(store.version, version + 1);
    assert.equal(store.creates, 1);
    assert.deepEqual(configs.bundles, [before[CA_CERT_KEY]]);
  });

  test('losing the race to create the CA reads the winner', async () => {
    const store = memoryStore();
    const winner = await createCa({ commonName: 'winner', validityDays: 3650 });
    const realCreate = store.create;
    store.create = (data) => {
      store.create = realCreate;
      // Another replica creates the Secret between our read and our create.
      void realCreate({ [CA_CERT_KEY]: winner.certPem, [CA_KEY_KEY]: winner.keyPem });
      return realCreate(data);
    };
    const serving = await track(
      selfManagedCerts({ store, configurations: recordingConfigs(), hosts, resyncMs: 60_000, log }),
    ).start();
    assert.equal(
      new X509Certificate(serving.cert).verify(new X509Certificate(winner.certPem).publicKey),
      true,
    );
  });

  test('a CA a year from expiry is replaced; the old one stays in the bundle', async () => {
    const store = memoryStore();
    const t0 = new Date('2026-01-01T00:00:00Z');
    const old = await createCa({ commonName: 'old', validityDays: 3650, now: t0 });
    await store.create({ [CA_CERT_KEY]: old.certPem, [CA_KEY_KEY]: old.keyPem });
    const later = new Date(t0.getTime() + 3400 * DAY);
    const configs = recordingConfigs();
    const serving = await track(
      selfManagedCerts({ store, configurations: configs, hosts, resyncMs: 60_000, log, now: () => later }),
    ).start();
    const fresh = store.data?.[CA_CERT_KEY] ?? '';
    assert.notEqual(fresh, old.certPem);
    assert.equal(store.data?.[PREVIOUS_CA_KEY], old.certPem);
    assert.deepEqual(configs.bundles, [`${fresh}${old.certPem}`]);
    assert.equal(new X509Certificate(serving.cert).verify(new X509Certificate(fresh).publicKey), true);
  });

  test('an unreadable CA is replaced', async () => {
    const store = memoryStore();
    await store.create({ [CA_CERT_KEY]: 'garbage', [CA_KEY_KEY]: 'garbage' });
    await track(
      selfManagedCerts({ store, configurations: recordingConfigs(), hosts, resyncMs: 60_000, log }),
    ).start();
    assert.equal(new X509Certificate(store.data?.[CA_CERT_KEY] ?? '').ca, true);
    assert.equal(store.data?.[PREVIOUS_CA_KEY], undefined);
  });

  test('not ready until the webhook configurations exist and carry the bundle', async () => {
    const configs = recordingConfigs({ existsAfter: 2 });
    const source = track(
      selfManagedCerts({ store: memoryStore(), configurations: configs, hosts, resyncMs: 10, log }),
    );
    await source.start();
    assert.equal(source.ready(), false);
    await eventually('the bundle to be published', () => source.ready());
    assert.equal(configs.bundles.length >= 1, true);
  });

  test('a CA rotated by another replica reissues the serving certificate', async () => {
    const store = memoryStore();
    const source = track(
      selfManagedCerts({ store, configurations: recordingConfigs(), hosts, resyncMs: 10, log }),
    );
    await source.start();
    const rotated: ServingCert[] = [];
    source.onRotate((c) => rotated.push(c));
    const next = await createCa({ commonName: 'next', validityDays: 3650 });
    await store.replace({ [CA_CERT_KEY]: next.certPem, [CA_KEY_KEY]: next.keyPem }, String(store.version));
    await eventually('a rotation', () => rotated.length > 0);
    assert.equal(
      new X509Certificate(rotated[0]?.cert ?? '').verify(new X509Certificate(next.certPem).publicKey),
      true,
    );
  });

  test('store failures are retried', async () => {
    const store = memoryStore();
    let failures = 2;
    const realRead = store.read;
    store.read = () => (failures-- > 0 ? Promise.reject(new Error('connection refused')) : realRead());
    await track(
      selfManagedCerts({ store, configurations: recordingConfigs(), hosts, resyncMs: 60_000, log }),
    ).start();
    assert.equal(store.creates, 1);
  });
});

describe('fileCerts', () => {
  let dir = '';
  afterEach(async () => {
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  const write = async (pair: { certPem: string; keyPem: string }): Promise<void> => {
    await writeFile(path.join(dir, 'tls.key'), pair.keyPem);
    await writeFile(path.join(dir, 'tls.crt'), pair.certPem);
  };

  test('waits for the files, then reloads them when they change', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'svc-certs-'));
    const ca = await createCa({ commonName: 'test', validityDays: 10 });
    const first = await issueServingCert(ca, { commonName: 'a', dnsNames: ['a'], validityDays: 1 });
    const source = track(fileCerts({ dir, intervalMs: 10, log }));
    const started = source.start();
    assert.equal(source.ready(), false);
    await write(first);
    assert.equal((await started).cert, first.certPem);
    assert.equal(source.ready(), true);

    const rotated: ServingCert[] = [];
    source.onRotate((c) => rotated.push(c));
    await writeFile(path.join(dir, 'tls.crt'), 'half written');
    const second = await issueServingCert(ca, { commonName: 'b', dnsNames: ['b'], validityDays: 1 });
    await write(second);
    await eventually('the reload', () => rotated.length > 0);
    assert.deepEqual(rotated, [{ cert: second.certPem, key: second.keyPem }]);
  });
});
