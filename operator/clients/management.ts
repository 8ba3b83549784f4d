import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';

/**
 * What the operator needs from a gateway (mode ce) or a dashboard (mode pro). Failures are
 * typed (lib/errors.ts): TransientError for anything worth retrying (network, time-outs,
 * 429, 5xx), InputError when the peer refused the object itself, SvcError with status 401/403
 * for bad credentials.
 */
export interface ManagementClient {
  /** Where the client talks to, for messages. */
  readonly url: string;
  /** The API, or undefined when the peer has none with this ID. */
  getApi(id: string): Promise<GatewayApiDefinition | undefined>;
  createApi(def: GatewayApiDefinition): Promise<void>;
  updateApi(id: string, def: GatewayApiDefinition): Promise<void>;
  /** False when there was nothing to delete. */
  deleteApi(id: string): Promise<boolean>;
  /**
   * Makes the peer serve what was written. Calls made close together share one reload
   * (`/svc/reload/group` once per burst); the promise settles when that reload is done.
   */
  reload(): Promise<void>;
  close(): Promise<void>;
}

/** How to reach a gateway or dashboard. */
export interface Connection {
  mode: 'ce' | 'pro';
  url: string;
  auth: string;
  org: string;
  insecureSkipVerify: boolean;
}
