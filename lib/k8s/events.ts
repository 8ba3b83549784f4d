import * as k8s from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../log.ts';
import { errorMessage } from '../errors.ts';

/** The object an event is about. */
export interface EventSubject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

/** Records Kubernetes Events (what `kubectl describe` shows) for objects. */
export class EventRecorder {
  readonly #core: k8s.CoreV1Api;
  readonly #component: string;
  readonly #log: Logger;

  constructor(kc: k8s.KubeConfig, component: string, log: Logger) {
    this.#core = kc.makeApiClient(k8s.CoreV1Api);
    this.#component = component;
    this.#log = log;
  }

  /**
   * Records an event. Failing to record one never fails a reconcile: it is logged and dropped.
   * `reason` is PascalCase (`Created`, `Updated`, `Deleted`, `ReconcileFailed`).
   */
  async record(
    obj: EventSubject,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): Promise<void> {
    const namespace = obj.metadata?.namespace ?? 'default';
    const now = new Date();
    try {
      await this.#core.createNamespacedEvent({
        namespace,
        body: {
          metadata: {
            name: `${obj.metadata?.name ?? 'object'}.${randomBytes(8).toString('hex')}`,
            namespace,
          },
          involvedObject: {
            apiVersion: obj.apiVersion,
            kind: obj.kind,
            name: obj.metadata?.name,
            namespace,
            uid: obj.metadata?.uid,
            resourceVersion: obj.metadata?.resourceVersion,
          },
          reason,
          message,
          type,
          source: { component: this.#component },
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
          reportingComponent: this.#component,
        },
      });
    } catch (err) {
      this.#log.warn('event not recorded', { reason, error: errorMessage(err) });
    }
  }
}
