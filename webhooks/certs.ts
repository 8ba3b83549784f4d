/**
 * The serving certificate of the webhook server, from one of two sources:
 *
 * - files: `tls.crt` and `tls.key` in a directory (the Secret cert-manager issues, mounted by the
 *   chart), re-read when they change;
 * - self-managed: a CA kept in a Secret (created by whichever replica comes first), a serving
 *   certificate each replica issues for itself from it, and the `caBundle` of our webhook
 *   configurations kept equal to the CA. A `helm upgrade` that resets the caBundle is repaired
 *   at the next resync. The CA is replaced a year before it expires; the old one stays in the
 *   bundle until then, so replicas still serving from it keep working.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import net from 'node:net';
import type {
  V1MutatingWebhookConfiguration,
  V1OwnerReference,
  V1Secret,
  V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import type { KubeClients } from '../lib/k8s/client.ts';
import { statusOf } from '../lib/k8s/client.ts';
import type { Logger } from '../lib/log.ts';
import { errorMessage } from '../lib/errors.ts';
import { createCa, issueServingCert } from '../lib/x509.ts';
import type { KeyPair } from '../lib/x509.ts';

/** What the HTTPS server needs. */
export interface ServingCert {
  key: string;
  cert: string;
}

/** A source of serving certificates. */
export interface CertSource {
  /** Resolves with the first certificate (retrying until it is available). */
  start(): Promise<ServingCert>;
  /** Called with every later certificate (rotation). */
  onRotate(listener: (cert: ServingCert) => void): void;
  /** True once the certificate is served and, self-managed, the CA bundle is published. */
  ready(): boolean;
  stop(): void;
}

/** Keys of the CA Secret. */
export const CA_CERT_KEY = 'ca.crt';
export const CA_KEY_KEY = 'ca.key';
export const PREVIOUS_CA_KEY = 'ca-previous.crt';

const CA_DAYS = 3650;
const CA_RENEW_DAYS = 365;
const SERVING_DAYS = 365;
const SERVING_RENEW_DAYS = 120;
const DAY_MS = 86_400_000;

/** Poll-with-backoff until `fn` succeeds or `stopped()`; logs each failure. */
async function retry<T>(what: string, log: Logger, stopped: () => boolean, fn: () => Promise<T>): Promise<T> {
  let waitMs = 200;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (stopped()) throw err;
      log.warn(`${what} failed; retrying`, { error: errorMessage(err), retryInMs: waitMs });
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      waitMs = Math.min(waitMs * 2, 10_000);
    }
  }
}

/** Certificates from `tls.crt` and `tls.key` in `dir`, re-read every `intervalMs`. */
export function fileCerts(opts: { dir: string; intervalMs: number; log: Logger }): CertSource {
  const listeners: ((c: ServingCert) => void)[] = [];
  let current: ServingCert | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const read = async (): Promise<ServingCert> => {
    const [cert, key] = await Promise.all([
      readFile(path.join(opts.dir, 'tls.crt'), 'utf8'),
      readFile(path.join(opts.dir, 'tls.key'), 'utf8'),
    ]);
    // A rotation caught half-way (one file written, not the other) throws here; read again later.
    if (!new X509Certificate(cert).checkPrivateKey(createPrivateKey(key))) {
      throw new Error('tls.key does not belong to tls.crt');
    }
    return { cert, key };
  };
  return {
    async start() {
      current = await retry(`reading ${opts.dir}/tls.crt and tls.key`, opts.log, () => stopped, read);
      timer = setInterval(() => {
        read().then(
          (next) => {
            if (next.cert === current?.cert && next.key === current.key) return;
            current = next;
            opts.log.info('serving certificate reloaded', { dir: opts.dir });
            for (const l of listeners) l(next);
          },
          (err: unknown) => {
            opts.log.warn('serving certificate not readable; keeping the current one', {
              error: errorMessage(err),
            });
          },
        );
      }, opts.intervalMs);
      timer.unref();
      return current;
    },
    onRotate(listener) {
      listeners.push(listener);
    },
    ready: () => current !== undefined,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}

/** The CA Secret as the self-managed source reads and writes it. */
export interface CaSecret {
  data: Record<string, string>;
  resourceVersion?: string;
  /**
   * False when the Secret lacks the owner it should have (one written before the owner was set):
   * it is written again as it is, with its owner.
   */
  owned?: boolean;
}

/** Storage of the CA (a Secret in the server's namespace). */
export interface CaStore {
  read: () => Promise<CaSecret | undefined>;
  /** Creates the Secret; false when another replica created it first. */
  create: (data: Record<string, string>) => Promise<boolean>;
  /** Replaces the Secret if it is still at `resourceVersion`; false on a conflict. */
  replace: (data: Record<string, string>, resourceVersion: string) => Promise<boolean>;
}

/** The webhook configurations whose caBundle the server keeps. */
export interface WebhookConfigurations {
  /** Sets every webhook's caBundle to `bundle` (PEM); true when all are up to date. */
  sync(bundle: string): Promise<boolean>;
}

/** Options of {@link selfManagedCerts}. */
export interface SelfManagedOptions {
  store: CaStore;
  configurations: WebhookConfigurations;
  /** DNS names and IP addresses of the serving certificate. */
  hosts: readonly string[];
  resyncMs: number;
  log: Logger;
  now?: () => Date;
}

const daysLeft = (pem: string, now: Date): number =>
  (new Date(new X509Certificate(pem).validTo).getTime() - now.getTime()) / DAY_MS;

/** The DNS names a Service is called by, from inside the cluster. */
export function serviceHosts(service: string, namespace: string): string[] {
  return [
    service,
    `${service}.${namespace}`,
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.cluster.local`,
  ];
}

/** A CA of our own: see the module comment. */
export function selfManagedCerts(opts: SelfManagedOptions): CertSource {
  const now = opts.now ?? (() => new Date());
  const listeners: ((c: ServingCert) => void)[] = [];
  let ca: KeyPair | undefined;
  let bundle = '';
  let serving: KeyPair | undefined;
  let published = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let busy = false;

  /** Reads the CA, creating or renewing it when needed; returns it with the bundle to publish. */
  const loadCa = async (): Promise<{ ca: KeyPair; bundle: string }> => {
    for (;;) {
      const secret = await opts.store.read();
      const data = secret?.data ?? {};
      const certPem = data[CA_CERT_KEY];
      const keyPem = data[CA_KEY_KEY];
      let usable = false;
      if (certPem !== undefined && keyPem !== undefined) {
        try {
          usable = daysLeft(certPem, now()) > CA_RENEW_DAYS;
        } catch (err) {
          opts.log.warn('the CA in the Secret does not parse; replacing it', { error: errorMessage(err) });
        }
      }
      if (usable && certPem !== undefined && keyPem !== undefined) {
        if (secret?.owned === false && secret.resourceVersion !== undefined) {
          // Adopted as it is: the same CA, now removed with its owner.
          if (await opts.store.replace(data, secret.resourceVersion))
            opts.log.info('the webhook CA Secret is now owned by the release');
          continue;
        }
        const previous = data[PREVIOUS_CA_KEY];
        const keep = previous !== undefined && previous !== '' && daysLeft(previous, now()) > 0;
        return { ca: { certPem, keyPem }, bundle: keep ? `${certPem}${previous}` : certPem };
      }
      const fresh = await createCa({
        commonName: 'svc-operator-webhook-ca',
        validityDays: CA_DAYS,
        now: now(),
      });
      const next: Record<string, string> = { [CA_CERT_KEY]: fresh.certPem, [CA_KEY_KEY]: fresh.keyPem };
      if (certPem !== undefined && usableCert(certPem)) next[PREVIOUS_CA_KEY] = certPem;
      const written =
        secret?.resourceVersion === undefined
          ? await opts.store.create(next)
          : await opts.store.replace(next, secret.resourceVersion);
      opts.log.info(
        written ? 'created the webhook CA' : 'another replica wrote the webhook CA first; reading it',
      );
      // Either way, read back: the stored CA is the one every replica must use.
    }
  };

  const usableCert = (pem: string): boolean => {
    try {
      return daysLeft(pem, now()) > 0;
    } catch {
      return false;
    }
  };

  /** One pass: CA, serving certificate, caBundle. Returns the new serving cert if it changed. */
  const reconcile = async (): Promise<KeyPair | undefined> => {
    const loaded = await loadCa();
    let rotated: KeyPair | undefined;
    if (
      serving === undefined ||
      ca?.certPem !== loaded.ca.certPem ||
      daysLeft(serving.certPem, now()) < SERVING_RENEW_DAYS
    ) {
      const [first = 'svc-operator-webhook'] = opts.hosts;
      rotated = await issueServingCert(loaded.ca, {
        commonName: first,
        dnsNames: opts.hosts.filter((h) => net.isIP(h) === 0),
        ipAddresses: opts.hosts.filter((h) => net.isIP(h) !== 0),
        validityDays: SERVING_DAYS,
        now: now(),
      });
      serving = rotated;
    }
    ca = loaded.ca;
    if (loaded.bundle !== bundle || !published) {
      published = await opts.configurations.sync(loaded.bundle);
      if (published) {
        bundle = loaded.bundle;
        opts.log.info('webhook configurations carry the CA bundle');
      }
    } else {
      // Cheap when nothing changed (two GETs); repairs a caBundle reset by `helm upgrade`.
      await opts.configurations.sync(bundle);
    }
    return rotated;
  };

  const tick = (): void => {
    if (busy || stopped) return;
    busy = true;
    reconcile().then(
      (rotated) => {
        busy = false;
        if (rotated === undefined) return;
        opts.log.info('serving certificate renewed');
        for (const l of listeners) l({ key: rotated.keyPem, cert: rotated.certPem });
      },
      (err: unknown) => {
        busy = false;
        opts.log.warn('certificate resync failed; retrying at the next resync', { error: errorMessage(err) });
      },
    );
  };

  return {
    async start() {
      const first = await retry(
        'setting up the webhook certificates',
        opts.log,
        () => stopped,
        async () => {
          await reconcile();
          if (serving === undefined) throw new Error('no serving certificate');
          return serving;
        },
      );
      timer = setInterval(tick, opts.resyncMs);
      timer.unref();
      return { key: first.keyPem, cert: first.certPem };
    },
    onRotate(listener) {
      listeners.push(listener);
    },
    ready: () => serving !== undefined && published,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

/**
 * The CA Secret `namespace/name` through the API server (get, create and update on secrets).
 * With `owner`, a ServiceAccount of the namespace (the release's: get on it), the Secret is owned
 * by it (an ownerReference): uninstalling the release deletes the ServiceAccount, and the cluster's
 * garbage collector the Secret with it, which no chart template lists (the server creates it).
 */
export function kubeCaStore(
  clients: KubeClients,
  namespace: string,
  name: string,
  owner?: string,
  log?: Logger,
): CaStore {
  /**
   * The owner's reference, read again at each `read` (a ServiceAccount deleted and made again has
   * a new UID, and a reference to the old one would have the Secret collected); the writes, which
   * follow a read, use the one it found. Undefined: no owner.
   */
  let ref: V1OwnerReference | undefined;
  const ownerOf = async (): Promise<V1OwnerReference | undefined> => {
    if (owner === undefined || owner === '') return undefined;
    try {
      const uid = (await clients.core.readNamespacedServiceAccount({ namespace, name: owner })).metadata?.uid;
      return uid === undefined ? undefined : { apiVersion: 'v1', kind: 'ServiceAccount', name: owner, uid };
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
      log?.warn('the owner of the webhook CA Secret is not there: the Secret is written without it', {
        serviceAccount: owner,
      });
      return undefined;
    }
  };
  const body = (data: Record<string, string>, resourceVersion?: string): V1Secret => {
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name,
        namespace,
        labels: { 'app.kubernetes.io/part-of': 'svc', 'app.kubernetes.io/component': 'webhook' },
        ...(ref === undefined ? {} : { ownerReferences: [ref] }),
        ...(resourceVersion === undefined ? {} : { resourceVersion }),
      },
      data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
    };
  };
  return {
    async read() {
      const found = await ownerOf();
      ref = found;
      try {
        const secret = await clients.core.readNamespacedSecret({ namespace, name });
        const data = Object.fromEntries(
          Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
        );
        return {
          data,
          ...(secret.metadata?.resourceVersion === undefined
            ? {}
            : { resourceVersion: secret.metadata.resourceVersion }),
          ...(found === undefined
            ? {}
            : { owned: (secret.metadata?.ownerReferences ?? []).some((r) => r.uid === found.uid) }),
        };
      } catch (err) {
        if (statusOf(err) === 404) return undefined;
        throw err;
      }
    },
    async create(data) {
      try {
        await clients.core.createNamespacedSecret({ namespace, body: body(data) });
        return true;
      } catch (err) {
        if (statusOf(err) === 409) return false;
        throw err;
      }
    },
    async replace(data, resourceVersion) {
      try {
        await clients.core.replaceNamespacedSecret({
          namespace,
          name,
          body: body(data, resourceVersion),
        });
        return true;
      } catch (err) {
        if (statusOf(err) === 409) return false;
        throw err;
      }
    },
  };
}

/**
 * Our two webhook configurations through the API server (get and patch on them, by name). Each
 * patch is guarded by a test of the resourceVersion, so a concurrent `helm upgrade` can't be
 * half-overwritten: the next resync tries again.
 */
export function kubeWebhookConfigurations(
  clients: KubeClients,
  names: { mutating: string; validating: string },
  log: Logger,
): WebhookConfigurations {
  const api = clients.admissionRegistration;
  const kinds = [
    {
      name: names.mutating,
      read: () => api.readMutatingWebhookConfiguration({ name: names.mutating }),
      patch: (body: object[]) => api.patchMutatingWebhookConfiguration({ name: names.mutating, body }),
    },
    {
      name: names.validating,
      read: () => api.readValidatingWebhookConfiguration({ name: names.validating }),
      patch: (body: object[]) => api.patchValidatingWebhookConfiguration({ name: names.validating, body }),
    },
  ];
  return {
    async sync(bundle) {
      const want = b64(bundle);
      let all = true;
      for (const k of kinds) {
        let cfg: V1MutatingWebhookConfiguration | V1ValidatingWebhookConfiguration;
        try {
          cfg = await k.read();
        } catch (err) {
          if (statusOf(err) !== 404) throw err;
          log.warn('webhook configuration not found; the chart creates it', { name: k.name });
          all = false;
          continue;
        }
        const ops: object[] = [];
        (cfg.webhooks ?? []).forEach((w, i) => {
          if (w.clientConfig.caBundle !== want) {
            ops.push({ op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: want });
          }
        });
        if (ops.length === 0) continue;
        ops.unshift({ op: 'test', path: '/metadata/resourceVersion', value: cfg.metadata?.resourceVersion });
        try {
          await k.patch(ops);
          log.info('patched caBundle', { name: k.name, webhooks: ops.length - 1 });
        } catch (err) {
          const code = statusOf(err);
          if (code !== 409 && code !== 422) throw err;
          log.info('webhook configuration changed while patching; retrying at the next resync', {
            name: k.name,
          });
          all = false;
        }
      }
      return all;
    },
  };
}
