/**
 * Pooled keep-alive connections to upstreams (undici Agents: one pool per origin). Agents are
 * shared by every route with the same transport settings and outlive reloads, so a reload does
 * not drop warm connections.
 *
 * Routes with upstream TLS settings of their own (a client certificate, `upstream_certificates`;
 * public-key pins, `pinned_public_keys`) get an agent per distinct configuration, counted by the
 * routes that use it: a new table acquires it before the old one is retired, so an unchanged
 * configuration keeps its connections across reloads, and the last route that releases it
 * closes it.
 */
import { createHash } from 'node:crypto';
import { TLSSocket } from 'node:tls';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import type { ProxyTransport } from '../../schemas/generated/models.ts';
import { holdShared } from '../pipeline/keep.ts';

const TLS_VERSIONS = { 769: 'TLSv1', 770: 'TLSv1.1', 771: 'TLSv1.2', 772: 'TLSv1.3' } as const;

/** Timeouts of upstream calls, from the gateway configuration. */
export interface UpstreamTimeouts {
  connectTimeoutMs: number;
  /** Until the response headers, and between two body chunks. */
  timeoutMs: number;
}

/** A route's own TLS settings towards its upstream. */
export interface UpstreamTls {
  /** The client certificate presented to the upstream (PEM, leaf then chain) and its key. */
  client?: { id: string; cert: string; key: string } | undefined;
  /** Base64 SHA-256 of the leaf public keys (DER SubjectPublicKeyInfo) accepted; empty: no pinning. */
  pins?: readonly string[] | undefined;
}

/** An upstream whose certificate's public key matches none of the route's pins. */
export class UpstreamPinError extends Error {
  readonly code = 'GW_UPSTREAM_PIN_MISMATCH';
}

/** A dispatcher held by a route, released when the route closes. */
export interface HeldDispatcher {
  dispatcher: Dispatcher;
  /** Connects as the dispatcher does (its TLS settings and pins), for a connection of its own. */
  connect: buildConnector.connector;
  release(): Promise<void>;
}

/** Base64 SHA-256 of the leaf public key a TLS socket's peer presented; undefined without one. */
export function peerPublicKeyPin(socket: TLSSocket): string | undefined {
  const cert = socket.getPeerX509Certificate();
  if (cert === undefined) return undefined;
  const spki = cert.publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(spki).digest('base64');
}

/**
 * `connector` refusing a TLS connection whose leaf public key matches none of `pins` (an
 * `UpstreamPinError`, the socket destroyed before anything is written to it); `connector` itself
 * without pins.
 */
function pinnedConnector(
  connector: buildConnector.connector,
  pins: readonly string[],
): buildConnector.connector {
  if (pins.length === 0) return connector;
  const accepted = new Set(pins);
  return (opts, callback) => {
    connector(opts, (err, socket) => {
      if (err !== null) {
        callback(err, null);
        return;
      }
      if (socket instanceof TLSSocket) {
        const presented = peerPublicKeyPin(socket);
        if (presented === undefined || !accepted.has(presented)) {
          socket.destroy();
          callback(
            new UpstreamPinError(
              `the public key of ${opts.hostname} (sha256/${presented ?? 'none'}) matches none of the pinned public keys`,
            ),
            null,
          );
          return;
        }
      }
      callback(null, socket);
    });
  };
}

/** The agents of one gateway process. */
export class Dispatchers {
  readonly #timeouts: UpstreamTimeouts;
  readonly #agents = new Map<string, Agent>();
  /** Agents of routes with their own TLS settings, with the number of routes holding each. */
  readonly #held = new Map<string, { agent: Agent; connect: buildConnector.connector; users: number }>();
  /** Connectors for transport settings alone (`connectorFor`), by the key of `#connectOptions`. */
  readonly #connectors = new Map<string, buildConnector.connector>();

  constructor(timeouts: UpstreamTimeouts) {
    this.#timeouts = timeouts;
  }

  #connectOptions(transport: ProxyTransport | undefined): {
    key: string;
    options: { rejectUnauthorized?: boolean; minVersion?: (typeof TLS_VERSIONS)[keyof typeof TLS_VERSIONS] };
  } {
    const insecure = transport?.ssl_insecure_skip_verify === true;
    const minVersion =
      transport?.ssl_min_version === undefined ? undefined : TLS_VERSIONS[transport.ssl_min_version];
    return {
      key: `${insecure ? 'insecure' : 'verify'}/${minVersion ?? 'default'}`,
      options: {
        ...(insecure ? { rejectUnauthorized: false } : {}),
        ...(minVersion === undefined ? {} : { minVersion }),
      },
    };
  }

  #agent(connect: Agent.Options['connect']): Agent {
    return new Agent({
      connect,
      headersTimeout: this.#timeouts.timeoutMs,
      bodyTimeout: this.#timeouts.timeoutMs,
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 600_000,
    });
  }

  /** The agent for an API's transport settings. */
  for(transport: ProxyTransport | undefined): Dispatcher {
    const { key } = this.#connectOptions(transport);
    let agent = this.#agents.get(key);
    if (agent === undefined) {
      agent = this.#agent(this.connectorFor(transport));
      this.#agents.set(key, agent);
    }
    return agent;
  }

  /**
   * Connects as the agent of `for(transport)` does, for a connection the gateway uses itself
   * rather than through a pool (a relayed WebSocket).
   */
  connectorFor(transport: ProxyTransport | undefined): buildConnector.connector {
    const { key, options } = this.#connectOptions(transport);
    let connect = this.#connectors.get(key);
    if (connect === undefined) {
      connect = buildConnector({ timeout: this.#timeouts.connectTimeoutMs, ...options });
      this.#connectors.set(key, connect);
    }
    return connect;
  }

  /**
   * The agent for a route with its own TLS settings: it presents the client certificate, and
   * refuses a connection whose leaf public key matches none of the pins (an `UpstreamPinError`;
   * the pins are checked on every new connection, whatever `ssl_insecure_skip_verify` says, and
   * TLS sessions are not resumed, so no connection skips the check). Release it when the route
   * closes.
   */
  acquire(transport: ProxyTransport | undefined, tls: UpstreamTls): HeldDispatcher {
    const { key: base, options } = this.#connectOptions(transport);
    const pins = [...new Set(tls.pins ?? [])].sort();
    const key = `${base}/${tls.client?.id ?? '-'}/${pins.join(',')}`;
    let held = this.#held.get(key);
    if (held === undefined) {
      const connect = pinnedConnector(
        buildConnector({
          timeout: this.#timeouts.connectTimeoutMs,
          ...options,
          ...(tls.client === undefined ? {} : { cert: tls.client.cert, key: tls.client.key }),
          ...(pins.length === 0 ? {} : { maxCachedSessions: 0 }),
        }),
        pins,
      );
      held = { agent: this.#agent(connect), connect, users: 0 };
      this.#held.set(key, held);
    }
    const entry = held;
    return {
      dispatcher: entry.agent,
      connect: entry.connect,
      release: holdShared(entry, async () => {
        if (this.#held.get(key) !== entry) return;
        this.#held.delete(key);
        await entry.agent.close();
      }),
    };
  }

  /** Closes every pool (in-flight requests finish first). */
  async close(): Promise<void> {
    const agents = [...this.#agents.values(), ...[...this.#held.values()].map((h) => h.agent)];
    this.#agents.clear();
    this.#held.clear();
    await Promise.all(agents.map((a) => a.close()));
  }
}
