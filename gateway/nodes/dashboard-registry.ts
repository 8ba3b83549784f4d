/**
 * The registry of gateways in mode pro is the dashboard's (dashboard/nodes/): the gateways that
 * load an organisation are the ones connected to the dashboard for it, whatever store they keep
 * their keys in. Each process reports there what it serves (`POST /system/applied`, as the node
 * it registered as): in full after it registers (and whenever the dashboard lost it: a restart,
 * another dashboard process), then what changed, with the APIs its reload left out and why
 * (`left_out`, whole, when it changed); a heartbeat sends it only while the dashboard
 * has not taken it (registered again, the node reports in full when its notification stream
 * reopens). The operator reads them from the dashboard
 * (`GET /api/nodes/{apis|policies}/{id}`). The process leaves with its notification stream.
 */
import { TransientError } from '../../lib/errors.ts';
import {
  APPLIED_KINDS,
  localRegistry,
  type AppliedKind,
  type AppliedRevision,
  type AppliedView,
  type NodeInfo,
  type NodeRegistry,
} from './registry.ts';

/** What the registry needs of the connection to the dashboard (store/pro/connection.ts). */
export interface DashboardLink {
  /** Calls the dashboard as this node (node secret, node ID). */
  call(method: string, path: string, body?: unknown): Promise<Response>;
  /** Calls `fn` each time the node has registered and its notification stream is open. */
  onOpened(fn: () => void): void;
}

/** A revision as compared between two reports. */
const encode = (a: AppliedRevision): string => `${a.revision} ${a.applied_at}`;

/** The registry of a gateway in mode pro (see the top of this file). */
export function dashboardRegistry(link: DashboardLink): NodeRegistry {
  let self: { info: NodeInfo; applied: AppliedView } | undefined;
  /** What the dashboard holds of this process; undefined: nothing known, send in full. */
  let written: Map<AppliedKind, Map<string, string>> | undefined;
  /** The APIs left out, as the dashboard holds them (JSON), when `written` is known. */
  let writtenLeftOut: string | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = queue.then(fn, fn);
    queue = next.catch(() => undefined);
    return next;
  };
  const send = async (info: NodeInfo, applied: AppliedView, full: boolean): Promise<void> => {
    const now = new Map<AppliedKind, Map<string, string>>();
    const body: Record<string, unknown> = { name: info.name, full };
    for (const kind of APPLIED_KINDS) {
      const all = applied.all(kind);
      const current = new Map(Object.entries(all).map(([id, a]) => [id, encode(a)]));
      now.set(kind, current);
      const before = full ? new Map<string, string>() : (written?.get(kind) ?? new Map<string, string>());
      const changes: Record<string, AppliedRevision | null> = {};
      for (const [id, text] of current) if (before.get(id) !== text) changes[id] = all[id] ?? null;
      for (const id of before.keys()) if (!current.has(id)) changes[id] = null;
      body[kind] = changes;
    }
    // The APIs left out and why, whole, when they changed: users see why one is not served.
    const leftOut = JSON.stringify(applied.leftOut?.() ?? {});
    if (full || leftOut !== writtenLeftOut) body.left_out = JSON.parse(leftOut) as unknown;
    const res = await link.call('POST', '/system/applied', body).catch((err: unknown) => {
      written = undefined;
      throw new TransientError('GW_ERR_DASHBOARD_UNAVAILABLE', 'dashboard unreachable', { cause: err });
    });
    const text = await res.text();
    // The dashboard holds no full report of this node (restarted, or another process): in full.
    if (res.status === 409 && !full) return send(info, applied, true);
    if (res.status !== 200) {
      written = undefined;
      throw new TransientError(
        'GW_ERR_DASHBOARD_UNAVAILABLE',
        `POST /system/applied answered ${String(res.status)}: ${text}`,
      );
    }
    written = now;
    writtenLeftOut = leftOut;
  };
  const report = (info: NodeInfo, applied: AppliedView): Promise<void> => {
    self = { info, applied };
    return serial(() => send(info, applied, written === undefined));
  };
  // Registered again (a new node ID): the dashboard knows nothing of this process yet.
  link.onOpened(() => {
    written = undefined;
    if (self !== undefined) void report(self.info, self.applied).catch(() => undefined);
  });
  return {
    publish: report,
    heartbeat: (info, applied) => {
      if (written !== undefined) {
        self = { info, applied };
        return Promise.resolve();
      }
      return report(info, applied);
    },
    // This process: the dashboard lists every gateway to the users of an organisation.
    list: (of) => {
      const s = self;
      return s === undefined ? Promise.resolve([]) : localRegistry(() => s).list(of);
    },
    leave: () => Promise.resolve(),
  };
}
