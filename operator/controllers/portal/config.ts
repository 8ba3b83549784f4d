/**
 * PortalConfig: the settings of an organisation's developer portal. The dashboard keeps one set
 * per organisation, so the PortalConfigs that reach it through the same OperatorContext (or
 * through none) are one setting: the oldest (then the first by namespace/name) is written, the
 * others get `Ready=False`, `Conflict`, naming it, and one of them takes over when it goes.
 * Deleting the one written puts the dashboard's defaults back.
 */
import type * as k8s from '@kubernetes/client-node';
import type { PortalConfig, PortalConfigStatus } from '../../../schemas/generated/kinds.ts';
import { PORTAL_CONFIG_FINALIZER } from '../../../schemas/finalizers.ts';
import { portalConfigProblems } from '../../../schemas/rules/portal-kinds.ts';
import { objectKey, type InformerEvent } from '../../../lib/k8s/informer.ts';
import type { ControllerSpec } from '../../../lib/k8s/manager.ts';
import type { WorkResult } from '../../../lib/k8s/workqueue.ts';
import { portalSettings } from '../../translate/portal.ts';
import { contextKeyOf, contextWatch, type ControllerEnv } from '../env.ts';
import {
  portalWatch,
  reconcilePortal,
  type Desired,
  type PortalDeps,
  type PortalKind,
  type PortalObject,
} from './reconcile.ts';

/** A stored PortalConfig. */
export type PortalConfigObject = PortalObject<PortalConfig['spec'], PortalConfigStatus>;

/** What reconcilePortalConfig needs besides the shared flow's. */
export interface PortalConfigDeps extends PortalDeps<PortalConfigObject> {
  /** Every PortalConfig (a superset will do). */
  configs: () => readonly PortalConfigObject[];
}

/** The OperatorContext a PortalConfig reaches its dashboard through (`""`: the operator's own). */
const connectionOf = (o: k8s.KubernetesObject): string => contextKeyOf(o)[0] ?? '';

/** The PortalConfig of `o`'s connection that is written: the oldest, then by namespace/name. */
function holderOf(o: PortalConfigObject, all: readonly PortalConfigObject[]): PortalConfigObject {
  const key = (c: PortalConfigObject): string =>
    `${c.metadata.creationTimestamp ? new Date(c.metadata.creationTimestamp).toISOString() : '~'} ${objectKey(c)}`;
  const same = all.filter(
    (c) => c.metadata.deletionTimestamp === undefined && connectionOf(c) === connectionOf(o),
  );
  return [...same, o].reduce((a, b) => (key(b) < key(a) ? b : a));
}

function settingsOf(
  obj: PortalConfigObject,
  deps: Pick<PortalConfigDeps, 'configs'>,
): Desired<PortalConfigStatus> {
  const holder = holderOf(obj, deps.configs());
  if (objectKey(holder) !== objectKey(obj)) {
    return {
      reason: 'Conflict',
      message: `PortalConfig ${objectKey(holder)} sets the portal of the same dashboard organisation (the oldest is used): the portal has one set of settings; merge them into it, or delete it`,
    };
  }
  return { doc: portalSettings(obj.spec), status: {} };
}

/** PortalConfig, as the shared flow reconciles it: one document, `config`, per organisation. */
const SETTINGS: PortalKind<PortalConfigObject, PortalConfigDeps> = {
  kind: 'PortalConfig',
  finalizer: PORTAL_CONFIG_FINALIZER,
  collection: 'config',
  id: () => 'config',
  problems: (o) => portalConfigProblems(o.spec),
  desired: (o, _id, deps) => settingsOf(o, deps),
};

/** Makes the dashboard's portal hold the settings a PortalConfig describes. */
export function reconcilePortalConfig(key: string, deps: PortalConfigDeps): Promise<WorkResult> {
  return reconcilePortal(key, SETTINGS, deps);
}

/**
 * The PortalConfig controller: settings are reconciled when they change, when another
 * PortalConfig of the same connection appears or goes (which one is written may change), and
 * when their OperatorContext changes.
 */
export function portalConfigController(env: ControllerEnv): ControllerSpec {
  const { spec, informer: configs, deps } = portalWatch<PortalConfigObject>(env, 'PortalConfig');
  configs.addIndex('portal-config-connection', (c) => [connectionOf(c)]);
  return {
    name: 'portalconfig',
    watch: spec,
    workers: 1,
    reconcile: (key) =>
      reconcilePortalConfig(key, {
        ...deps,
        configs: () => configs.list(),
      }),
    watches: [
      {
        // Another PortalConfig of the connection created or deleted: which one is written may change.
        watch: spec,
        map: (c: k8s.KubernetesObject, _old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
          event === 'update' && c.metadata?.deletionTimestamp === undefined
            ? []
            : configs.byIndex('portal-config-connection', connectionOf(c)).map((o) => objectKey(o)),
      },
      contextWatch(env, (contextKey) => configs.list().filter((c) => connectionOf(c) === contextKey)),
    ],
  };
}
