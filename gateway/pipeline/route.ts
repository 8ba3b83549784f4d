/**
 * What a request sees of its route (`RequestContext.route`): the compiled API's settings, without
 * its compiled chain. A leaf of the floor, so that the context (context.ts), the middleware
 * contract (middleware.ts) and the route table (router.ts) import it without a circle: the chain
 * (`Route.handle`, `Route.handlers`) names the context, the context names only this.
 */
import type { Duplex } from 'node:stream';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import type { Target } from '../../schemas/rules/target.ts';
import type { ApiEvents } from '../events/events.ts';

export type { Target };

/**
 * Opens a connection to an upstream with a route's settings towards it (undici's connector
 * shape): calls back with the socket once connected (for TLS: established, verified unless the
 * API says not to, its public key checked against the API's pins), or with the error.
 */
export type UpstreamConnect = (
  options: { hostname: string; host: string; protocol: string; port: string; servername?: string },
  callback: (...args: [null, Duplex] | [Error, null]) => void,
) => void;

/** `main` is the gateway port; a number is an API's own `listen_port`. */
export type ListenerKey = 'main' | number;

/** One compiled API, as its requests see it; router.ts's `Route` adds the chain. */
export interface RouteInfo {
  id: string;
  api: GatewayApiDefinition;
  listener: ListenerKey;
  /** Lower-case host, `*.suffix` for a wildcard, undefined for any host. */
  domain: string | undefined;
  /**
   * `domain_wildcard_one_label`: the wildcard `domain` serves names exactly one label below it
   * (an Ingress wildcard host), not any depth.
   */
  domainOneLabel?: boolean | undefined;
  /** Listen path without its trailing slash (`''` for `/`). */
  listenPath: string;
  /**
   * `proxy.listen_path_exact`: the listen path as written, ASCII lower case; the route serves
   * that request path alone, not the paths under it.
   */
  exactPath?: string | undefined;
  /**
   * `proxy.listen_path_case_sensitive`: the listen path as the request must write it (without its
   * trailing slash, or as written when exact); a request path that differs only in case is not
   * this route's (the table then looks further, as if the route were not there).
   */
  casedPath?: string | undefined;
  /** Remove the listen path before proxying. */
  strip: boolean;
  /**
   * `proxy.disable_strip_slash`: nothing left after the listen path goes to the target's path as
   * written, its trailing slash kept (upstream/proxy.ts, `upstreamPathOf`).
   */
  keepSlash?: boolean | undefined;
  target: Target | undefined;
  /**
   * Whether the connection-level fast path (server/fast-path/) may serve this route: decided
   * once, by `fastPathServes` in routes/compile.ts.
   */
  fastPath: boolean;
  /**
   * Request paths (exact, as `ctx.path`) whose requests the fast path leaves to node:http, though
   * it serves the route's others: a middleware reads the body there (`Middleware.bodyPaths`).
   */
  bodyPaths?: ReadonlySet<string> | undefined;
  /**
   * How to connect to one of the route's upstreams with the TLS settings its HTTP calls have
   * (`proxy.transport`, `upstream_certificates`, `pinned_public_keys`), for what the route dials
   * itself rather than through its pools (a relayed WebSocket).
   */
  upstreamConnector(target: Target): UpstreamConnect;
  /** Frees what the route's middleware hold; called once no table serving it is left. */
  close(): Promise<void>;
  /**
   * Compiled from the stored definition alone (no certificate or plugin file read): while the
   * stored text is unchanged, the next reload reuses this route instead of compiling it again.
   */
  reusable: boolean;
  /** The API's compiled event handlers (`event_handlers`). */
  events: ApiEvents;
}
