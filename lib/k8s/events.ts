import * as k8s from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { redactUrl, type Logger } from '../log.ts';
import { errorMessage } from '../errors.ts';

/** The object an event is about. */
export interface EventSubject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

/** Events written at once; the rest wait their turn. */
const SENDERS = 2;
/** Events waiting at most; beyond, the oldest are dropped (and counted in a warning). */
const QUEUE_MAX = 10_000;

/**
 * Records Kubernetes Events (what `kubectl describe` shows) for objects. Events are written in
 * the background, two at a time, after the reconcile that records them returns: in a burst of
 * thousands of objects the API server is the bottleneck, and the status writes users wait for
 * should not queue behind Events (docs/design/operator-scale.md). Events are best effort, as
 * Kubernetes' own recorder makes them: one that cannot be written is logged and dropped.
 */
export class EventRecorder {
  readonly #core: k8s.CoreV1Api;
  readonly #component: string;
  readonly #log: Logger;
  readonly #queue: (() => Promise<void>)[] = [];
  #sending = 0;
  #dropped = 0;
  #idle: (() => void)[] = [];

  constructor(kc: k8s.KubeConfig, component: string, log: Logger) {
    this.#core = kc.makeApiClient(k8s.CoreV1Api);
    this.#component = component;
    this.#log = log;
  }

  /**
   * Queues an event; the promise resolves at once (kept for callers that await it). `reason` is
   * PascalCase (`Created`, `Updated`, `Deleted`, `ReconcileFailed`).
   */
  record(obj: EventSubject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const now = new Date();
    if (this.#queue.length >= QUEUE_MAX) {
      this.#queue.shift();
      if (this.#dropped++ === 0) this.#log.warn('events dropped: too many waiting', { waiting: QUEUE_MAX });
    }
    // An Event is a log line anyone who reads the namespace sees: a URL in it (a gateway's, in an
    // error) is redacted as the logger redacts it.
    const text = redactUrl(message);
    this.#queue.push(() => this.#write(obj, type, reason, text, now));
    this.#pump();
    return Promise.resolve();
  }

  /** Resolves when every queued event has been written (or dropped). */
  flushed(): Promise<void> {
    if (this.#queue.length === 0 && this.#sending === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #pump(): void {
    while (this.#sending < SENDERS && this.#queue.length > 0) {
      const next = this.#queue.shift();
      if (next === undefined) break;
      this.#sending++;
      void next().finally(() => {
        this.#sending--;
        this.#pump();
        if (this.#sending === 0 && this.#queue.length === 0) {
          if (this.#dropped > 0) this.#log.warn('events dropped in a burst', { dropped: this.#dropped });
          this.#dropped = 0;
          for (const resolve of this.#idle.splice(0)) resolve();
        }
      });
    }
  }

  async #write(
    obj: EventSubject,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    now: Date,
  ): Promise<void> {
    const namespace = obj.metadata?.namespace ?? 'default';
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
