import * as k8s from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import type { NamespacedRef, OperatorContext } from '../schemas/generated/kinds.ts';
import type { SvcObjects } from '../lib/k8s/objects.ts';
import { DashboardClient } from './clients/dashboard.ts';
import { GatewayClient } from './clients/gateway.ts';
import type { Connection, ManagementClient } from './clients/management.ts';
import { LicenseChecker } from './license.ts';
import { effectiveSecretRef } from '../schemas/rules/earlier-names.ts';

/** The management client of a connection: a gateway in mode ce, a dashboard in mode pro. */
export function clientFor(conn: Connection): ManagementClient {
  return conn.mode === 'pro' ? new DashboardClient(conn) : new GatewayClient(conn);
}

/** A resolved connection, or why there is none (a condition reason and message). */
export type Resolved =
  | { ok: true; conn: Connection; client: ManagementClient }
  | {
      ok: false;
      reason: 'ContextNotFound' | 'ContextInvalid' | 'SecretNotFound' | 'ModeNotSupported' | 'LicenseInvalid';
      message: string;
    };

/** Reads a Secret's data as strings; undefined when the Secret does not exist. */
export type SecretReader = (namespace: string, name: string) => Promise<Record<string, string> | undefined>;

/** A SecretReader over the API. */
export function secretReader(kc: k8s.KubeConfig): SecretReader {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  return async (namespace, name) => {
    try {
      const s = await core.readNamespacedSecret({ namespace, name });
      return Object.fromEntries(
        Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
      );
    } catch (err) {
      if (err instanceof k8s.ApiException && err.code === 404) return undefined;
      throw err;
    }
  };
}

/**
 * Which gateway or dashboard a resource talks to: the operator's own settings, or those of the
 * OperatorContext named by `contextRef` (its `env`, with unset fields filled from the Secret in
 * its `secretRef`). Clients are shared per connection, so one reload batch serves all resources
 * of a gateway.
 */
export class Connections {
  readonly #default: Connection;
  readonly #contexts: SvcObjects<OperatorContext & { metadata: { name: string; namespace: string } }>;
  readonly #secrets: SecretReader;
  readonly #makeClient: (conn: Connection) => ManagementClient;
  readonly #clients = new Map<string, ManagementClient>();
  readonly #license: LicenseChecker;

  constructor(opts: {
    default: Connection;
    contexts: SvcObjects<OperatorContext & { metadata: { name: string; namespace: string } }>;
    secrets: SecretReader;
    makeClient: (conn: Connection) => ManagementClient;
    /**
     * Checks the license key of mode-pro connections (expiry honoured at every resolve). Unset:
     * a checker without a public key, which refuses every key (mode pro fails closed).
     */
    license?: LicenseChecker;
  }) {
    this.#license = opts.license ?? new LicenseChecker();
    this.#default = opts.default;
    this.#contexts = opts.contexts;
    this.#secrets = opts.secrets;
    this.#makeClient = opts.makeClient;
  }

  /** The connection of a resource in `namespace` with this `contextRef`. */
  async resolve(ref: NamespacedRef | undefined, namespace: string): Promise<Resolved> {
    if (!ref) return await this.#withClient(this.#default);
    const ns = ref.namespace ?? namespace;
    const ctx = await this.#contexts.get(ns, ref.name);
    if (!ctx) {
      return {
        ok: false,
        reason: 'ContextNotFound',
        message: `OperatorContext ${ns}/${ref.name} does not exist`,
      };
    }
    const conn = await this.contextConnection(ctx);
    return conn.ok ? await this.#withClient(conn.conn) : conn;
  }

  /** The connection an OperatorContext describes, or the problems with it. */
  async contextConnection(
    ctx: OperatorContext,
  ): Promise<
    | { ok: true; conn: Connection }
    | { ok: false; reason: 'ContextInvalid' | 'SecretNotFound'; message: string }
  > {
    const env = ctx.spec.env ?? {};
    let secret: Record<string, string> = {};
    const where = `OperatorContext ${ctx.metadata.namespace ?? ''}/${ctx.metadata.name ?? ''}`;
    // secretRef, else the reference's earlier name of it, fromSecret (schemas/rules/earlier-names.ts).
    const secretRef = effectiveSecretRef(ctx.spec);
    if (secretRef) {
      const sns = secretRef.namespace ?? ctx.metadata.namespace ?? 'default';
      const data = await this.#secrets(sns, secretRef.name);
      if (!data) {
        return {
          ok: false,
          reason: 'SecretNotFound',
          message: `${where}: Secret ${sns}/${secretRef.name} does not exist (yet): the context is used once it does`,
        };
      }
      secret = data;
    }
    const mode = env.mode ?? secret.SVC_MODE;
    const url = env.url ?? secret.SVC_URL;
    const auth = env.auth ?? secret.SVC_AUTH;
    const org = env.org ?? secret.SVC_ORG ?? '';
    const insecure = env.insecureSkipVerify ?? secret.SVC_TLS_INSECURE_SKIP_VERIFY === 'true';
    const problems: string[] = [];
    if (mode !== 'ce' && mode !== 'pro') problems.push('mode must be ce or pro (env.mode or SVC_MODE)');
    if (!url || !/^https?:\/\/\S+$/.test(url))
      problems.push('url must be an http(s) URL (env.url or SVC_URL)');
    if (!auth) problems.push('auth is required (env.auth or SVC_AUTH)');
    if (problems.length > 0 || (mode !== 'ce' && mode !== 'pro') || !url || !auth) {
      return { ok: false, reason: 'ContextInvalid', message: `${where}: ${problems.join('; ')}` };
    }
    const licenseKey = env.licenseKey ?? secret.SVC_OPERATOR_LICENSEKEY ?? this.#default.licenseKey;
    return {
      ok: true,
      conn: {
        mode,
        url,
        auth,
        org,
        insecureSkipVerify: insecure,
        ...(licenseKey === undefined ? {} : { licenseKey }),
        ...(env.user_owners === undefined ? {} : { userOwners: env.user_owners }),
        ...(env.user_group_owners === undefined ? {} : { userGroupOwners: env.user_group_owners }),
      },
    };
  }

  /** Closes every client. */
  async close(): Promise<void> {
    await Promise.all([...this.#clients.values()].map((c) => c.close()));
    this.#clients.clear();
  }

  async #withClient(conn: Connection): Promise<Resolved> {
    if (conn.mode === 'pro') {
      const problem = await this.#license.problem(conn.licenseKey);
      if (problem !== undefined) {
        return {
          ok: false,
          reason: 'LicenseInvalid',
          message: `mode pro (dashboard at ${conn.url}): ${problem}`,
        };
      }
    }
    const key = createHash('sha256')
      .update(
        [
          conn.mode,
          conn.url,
          conn.auth,
          String(conn.insecureSkipVerify),
          (conn.userOwners ?? []).join(','),
          (conn.userGroupOwners ?? []).join(','),
        ].join('\n'),
      )
      .digest('hex');
    let client = this.#clients.get(key);
    if (!client) {
      client = this.#makeClient(conn);
      this.#clients.set(key, client);
    }
    return { ok: true, conn, client };
  }
}
