import * as k8s from '@kubernetes/client-node';
import type { Logger } from '../log.ts';
import { errorMessage } from '../errors.ts';

/**
 * A MicroTime as the API server parses it (six fractional digits). client-node would write a
 * Date with three, which the server refuses; a string passes its serializer untouched.
 */
function micro(d: Date | string | undefined): Date | undefined {
  if (d === undefined) return undefined;
  // Read back from the server, a MicroTime is already a string in the right form.
  if (typeof d === 'string') return d as unknown as Date;
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z') as unknown as Date;
}

/** Options of {@link LeaderElector}. */
export interface LeaderOptions {
  namespace: string;
  name: string;
  /** This replica's identity (pod name and a random suffix). */
  identity: string;
  /** How long a lease lasts without renewal. */
  leaseDurationMs?: number;
  /** How often the leader renews and a follower retries. */
  retryPeriodMs?: number;
  /** Clock, for tests. */
  now?: () => Date;
}

/**
 * Leader election on a coordination.k8s.io Lease, so that of several replicas exactly one acts.
 * Updates carry the lease's resourceVersion: two replicas racing for an expired lease cannot
 * both win, the loser gets 409 and stays a follower.
 */
export class LeaderElector {
  readonly #api: k8s.CoordinationV1Api;
  readonly #opts: Required<LeaderOptions>;
  readonly #log: Logger;
  #leading = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #lastRenew = 0;
  #onLost: () => void = () => undefined;

  constructor(kc: k8s.KubeConfig, opts: LeaderOptions, log: Logger) {
    this.#api = kc.makeApiClient(k8s.CoordinationV1Api);
    this.#opts = { leaseDurationMs: 15_000, retryPeriodMs: 2_000, now: () => new Date(), ...opts };
    this.#log = log.child({ lease: `${opts.namespace}/${opts.name}`, identity: opts.identity });
  }

  /** Whether this replica holds the lease. */
  get leading(): boolean {
    return this.#leading;
  }

  /**
   * Resolves once this replica leads. `onLost` is called if leadership is later lost (the lease
   * could not be renewed in time); the caller should then stop acting, usually by exiting.
   */
  async acquire(onLost: () => void): Promise<void> {
    this.#onLost = onLost;
    while (!this.#stopped) {
      if (await this.#tryAcquireOrRenew()) {
        this.#leading = true;
        this.#log.info('became leader');
        this.#schedule();
        return;
      }
      await new Promise((r) => setTimeout(r, this.#opts.retryPeriodMs));
    }
  }

  /** Stops renewing and, when leading, releases the lease so another replica takes over at once. */
  async release(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (!this.#leading) return;
    this.#leading = false;
    try {
      const lease = await this.#api.readNamespacedLease({
        name: this.#opts.name,
        namespace: this.#opts.namespace,
      });
      if (lease.spec?.holderIdentity !== this.#opts.identity) return;
      lease.spec.holderIdentity = '';
      lease.spec.leaseDurationSeconds = 1;
      await this.#api.replaceNamespacedLease({
        name: this.#opts.name,
        namespace: this.#opts.namespace,
        body: lease,
      });
    } catch (err) {
      this.#log.warn('lease not released', { error: errorMessage(err) });
    }
  }

  #schedule(): void {
    this.#timer = setTimeout(() => {
      void this.#renew();
    }, this.#opts.retryPeriodMs);
    this.#timer.unref();
  }

  async #renew(): Promise<void> {
    if (this.#stopped) return;
    const ok = await this.#tryAcquireOrRenew();
    if (!ok && this.#opts.now().getTime() - this.#lastRenew > this.#opts.leaseDurationMs) {
      this.#leading = false;
      this.#log.error('leadership lost');
      this.#onLost();
      return;
    }
    this.#schedule();
  }

  async #tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity, leaseDurationMs } = this.#opts;
    const now = this.#opts.now();
    const spec = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      renewTime: micro(now),
    };
    try {
      let lease: k8s.V1Lease;
      try {
        lease = await this.#api.readNamespacedLease({ name, namespace });
      } catch (err) {
        if (!(err instanceof k8s.ApiException && err.code === 404)) throw err;
        await this.#api.createNamespacedLease({
          namespace,
          body: {
            metadata: { name, namespace },
            spec: { ...spec, acquireTime: micro(now), leaseTransitions: 0 },
          },
        });
        this.#lastRenew = now.getTime();
        return true;
      }
      const held = lease.spec?.holderIdentity ?? '';
      const renewed = lease.spec?.renewTime ? new Date(lease.spec.renewTime).getTime() : 0;
      const duration = (lease.spec?.leaseDurationSeconds ?? 0) * 1000;
      const expired = held === '' || renewed + duration < now.getTime();
      if (held !== identity && !expired) return false;
      const transitions = (lease.spec?.leaseTransitions ?? 0) + (held === identity ? 0 : 1);
      await this.#api.replaceNamespacedLease({
        name,
        namespace,
        body: {
          ...lease,
          spec: {
            ...lease.spec,
            ...spec,
            acquireTime: micro(held === identity ? lease.spec?.acquireTime : now),
            leaseTransitions: transitions,
          },
        },
      });
      this.#lastRenew = now.getTime();
      return true;
    } catch (err) {
      if (!(err instanceof k8s.ApiException && err.code === 409)) {
        this.#log.warn('lease update failed', { error: errorMessage(err) });
      }
      return false;
    }
  }
}
