/**
 * The types every management handler shares: what the management API works with and one call
 * to it. Apart from index.ts (the routes) so that the handler files and index.ts import it
 * rather than each other (no import circle: docs/design/imports.md).
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from '../../lib/log.ts';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import type { Counters } from '../limits/counters.ts';
import type { CompileEnv } from '../routes/check.ts';
import type { Sessions } from '../sessions/sessions.ts';
import type { Collection, Store } from '../store/store.ts';
import type { AdminResponse } from './http.ts';
import type { ExplainInput, Explanation } from '../server/explain.ts';
import type { AppliedOf, AppliedRevision, NodeEntry, NodeInfo } from '../nodes/registry.ts';

/** The outcome of a reload, as the management API reports it. */
export interface ReloadReport {
  ok: boolean;
  /** Empty when ok; otherwise what failed. */
  message: string;
}

/** What the management API works with. */
export interface AdminDeps {
  secret: string;
  store: Store;
  env: CompileEnv;
  log: Logger;
  version: string;
  /** Reloads every process of this gateway node. */
  reloadNode(): Promise<ReloadReport>;
  /** Reloads every node sharing the store. */
  reloadGroup(): Promise<ReloadReport>;
  /** A key or policy was written: every gateway process forgets what it cached of it. */
  changed(collection: Collection, id: string): Promise<void>;
  /** Counters of limits and quotas (quota resets, live quota values). */
  counters: Counters;
  /** Keys with their policies applied. */
  sessions: Sessions;
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * `policies.allow_explicit_policy_id`: whether `POST /svc/policies` keeps a body's `id` (false:
   * refused, every ID generated). Absent: kept, the configuration's default.
   */
  allowExplicitPolicyId?: boolean;
  /** True once routes have loaded successfully. */
  isReady(): boolean;
  /** Why the node is not ready beyond its routes (the stream processor down), if it is not. */
  notReady?: (() => string | undefined) | undefined;
  /**
   * Why the streams of an API document (`x-svc-streaming`) can't run on this gateway, as
   * `<path>: <message>` lines; empty when they can or there are none (gateway/streams/).
   */
  streamProblems?: ((apiId: string, doc: Record<string, unknown>) => Promise<string[]>) | undefined;
  /**
   * Why the plugins of a classic API can't be loaded on this gateway (the load a reload does: the
   * otto middleware files, gateway/plugins/otto.ts), as `<path>: <message>` lines; empty when
   * they can or there are none.
   */
  pluginProblems?: ((api: GatewayApiDefinition) => Promise<string[]>) | undefined;
  /** The Prometheus text of this node's metrics; absent when metrics are off (`metrics_enabled`). */
  metrics?: (() => Promise<string>) | undefined;
  /** This process and the revision of each API and policy it serves (`GET /svc/applied`). */
  applied?:
    | (() => {
        node: NodeInfo;
        apis: Record<string, AppliedRevision>;
        policies: Record<string, AppliedRevision>;
        /** The APIs stored but left out of the routes by the last reload, with the reason. */
        left_out: Record<string, string>;
      })
    | undefined;
  /**
   * The gateway processes sharing the store, with the revision of one API or policy when given
   * (`GET /svc/nodes`).
   */
  nodes?: ((of?: AppliedOf) => Promise<NodeEntry[]>) | undefined;
  /** How the gateway would answer a request, in a dry run (`POST /svc/explain`). */
  explain?: ((input: ExplainInput) => Promise<Explanation>) | undefined;
}

/** One management call: the request, the path parameters, the dependencies. */
export interface AdminRequest {
  req: IncomingMessage;
  params: string[];
  deps: AdminDeps;
}

/** A handler of one method on one route. */
export type AdminHandler = (r: AdminRequest) => Promise<AdminResponse>;
