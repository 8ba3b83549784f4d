/**
 * What an operator suite runs against, whichever way it was obtained (world.ts says the two
 * modes): the `World` both local-world.ts and cluster-world.ts give, and the options they take.
 */
import type { ControlPlane, KubectlOptions, KubectlResult } from './control-plane.ts';
import type { GatewayProc, OperatorProc } from './processes.ts';

/** Runs kubectl against the world's cluster. */
export type Kubectl = (args: string[], opts?: KubectlOptions) => Promise<KubectlResult>;

/** A gateway as the suite reaches it: its base URL and management secret. */
export interface GatewayEndpoint {
  url: string;
  secret: string;
}

/** An echo upstream: answers every request with what it received, as JSON, and `x-upstream: <name>`. */
export interface Upstream {
  name: string;
  /** The URL the gateway proxies to (a cluster Service address in cluster mode). */
  url: string;
}

/** The processes of a local world, for tests that stop, restart or inspect them. */
export interface LocalWorld {
  cp: ControlPlane;
  /** Logs and gateway data. */
  dir: string;
  /** The gateway the operator pushes to (the same as `world.gateway`). */
  gw: GatewayProc;
  /** A second gateway (for OperatorContext tests); a test that restarts it replaces it here. */
  gw2: GatewayProc;
  /** The running operator, undefined while stopped. */
  operator: OperatorProc | undefined;
  /** Starts the operator again with the world's settings (after {@link stopOperator}). */
  startOperator(): Promise<OperatorProc>;
  stopOperator(): Promise<void>;
}

/** A gateway an OperatorContext points at. */
export interface ContextGateway extends GatewayEndpoint {
  /**
   * The URL the operator reaches it at: an OperatorContext's `spec.env.url`, a resource's
   * `status.pushedTo.url` (the same as `url` locally; its Service's address in the cluster).
   */
  operatorUrl: string;
}

export interface World {
  /** True in cluster mode (`SVC_E2E_CLUSTER=1`). */
  readonly cluster: boolean;
  kubectl: Kubectl;
  gateway: GatewayEndpoint;
  /**
   * The second gateway, for OperatorContext tests (a process locally, a second svc-gateway
   * release in the cluster). After {@link startSecondGateway} ask again: its `url` may change.
   */
  secondGateway(): Promise<ContextGateway>;
  /** Stops the second gateway (its process; in the cluster its Deployment scaled to 0). */
  stopSecondGateway(): Promise<void>;
  /** Starts the second gateway again at the same `operatorUrl` with the same secret. */
  startSecondGateway(): Promise<ContextGateway>;
  /**
   * Stops the operator: nothing reconciles until {@link startOperator}. Locally the process
   * ends; in the cluster the suite holds the leader Lease and the operator's pod is deleted (its
   * replacement stands by, its webhooks keep answering).
   */
  stopOperator(): Promise<void>;
  /** Starts the operator again (in the cluster: frees the Lease; the standing-by pod leads). */
  startOperator(): Promise<void>;
  /** The operator's Prometheus metrics (its `/metrics` text). */
  operatorMetrics(): Promise<string>;
  /** The organisation the operator writes into the gateway (its SVC_ORG). */
  org: string;
  /** The real name of the suite's namespace `name` (the name itself in local mode). */
  ns(name: string): string;
  /** The first echo upstream, answering as `echo`. */
  upstream: Upstream;
  /** Another echo upstream answering as `name` (in the first namespace, in cluster mode). */
  startUpstream(name: string): Promise<Upstream>;
  /** Local mode only. */
  local: LocalWorld | undefined;
  /** Stops what was started and deletes what was created (cluster: the namespaces, with their contents). */
  stop(): Promise<void>;
}

export interface WorldOptions {
  /** The suite's name: log file names, namespace prefix. */
  name: string;
  /** The suite's namespaces, created before the operator starts. */
  namespaces: readonly string[];
  /** Local: the management secrets of the two gateways. */
  secrets: readonly [string, string];
  /** Local: the operator's SVC_ORG (default e2e-org). Cluster: the installed operator's is used. */
  org?: string;
  /**
   * The operator's settings. Local: its environment. Cluster: written into the Secret
   * svc-operator-conf (WATCH_NAMESPACE's names of the suite's namespaces replaced by their real
   * names) and the operator's pods restarted; the chart's own settings (LOG_LEVEL, ...) win over
   * the Secret's.
   */
  operatorEnv?: Record<string, string>;
}
