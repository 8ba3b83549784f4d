/**
 * Pooled keep-alive connections to upstreams (undici Agents: one pool per origin). Agents are
 * shared by every route with the same transport settings and outlive reloads, so a reload does
 * not drop warm connections.
 */
import { Agent, type Dispatcher } from 'undici';
import type { ProxyTransport } from '../../schemas/generated/models.ts';

const TLS_VERSIONS = { 769: 'TLSv1', 770: 'TLSv1.1', 771: 'TLSv1.2', 772: 'TLSv1.3' } as const;

/** Timeouts of upstream calls, from the gateway configuration. */
export interface UpstreamTimeouts {
  connectTimeoutMs: number;
  /** Until the response headers, and between two body chunks. */
  timeoutMs: number;
}

/** The agents of one gateway process. */
export class Dispatchers {
  readonly #timeouts: UpstreamTimeouts;
  readonly #agents = new Map<string, Agent>();

  constructor(timeouts: UpstreamTimeouts) {
    this.#timeouts = timeouts;
  }

  /** The agent for an API's transport settings. */
  for(transport: ProxyTransport | undefined): Dispatcher {
    const insecure = transport?.ssl_insecure_skip_verify === true;
    const minVersion =
      transport?.ssl_min_version === undefined ? undefined : TLS_VERSIONS[transport.ssl_min_version];
    const key = `${insecure ? 'insecure' : 'verify'}/${minVersion ?? 'default'}`;
    let agent = this.#agents.get(key);
    if (agent === undefined) {
      agent = new Agent({
        connect: {
          timeout: this.#timeouts.connectTimeoutMs,
          ...(insecure ? { rejectUnauthorized: false } : {}),
          ...(minVersion === undefined ? {} : { minVersion }),
        },
        headersTimeout: this.#timeouts.timeoutMs,
        bodyTimeout: this.#timeouts.timeoutMs,
        keepAliveTimeout: 4_000,
        keepAliveMaxTimeout: 600_000,
      });
      this.#agents.set(key, agent);
    }
    return agent;
  }

  /** Closes every pool (in-flight requests finish first). */
  async close(): Promise<void> {
    const agents = [...this.#agents.values()];
    this.#agents.clear();
    await Promise.all(agents.map((a) => a.close()));
  }
}
