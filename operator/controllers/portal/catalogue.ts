/**
 * PortalAPICatalogue: a catalogue of the dashboard's developer portal, its products those of the
 * APIDescriptions it lists, by their portal IDs (`APIDescriptionNotFound` until each exists,
 * `APIDescriptionNotReady` until the portal holds it).
 */
import type { PortalAPICatalogue, PortalAPICatalogueStatus } from '../../../schemas/generated/kinds.ts';
import { CATALOGUE_FINALIZER } from '../../../schemas/finalizers.ts';
import { catalogueEntries, catalogueProblems } from '../../../schemas/rules/portal-kinds.ts';
import type { ControllerSpec } from '../../../lib/k8s/manager.ts';
import type { WorkResult } from '../../../lib/k8s/workqueue.ts';
import { derivedId } from '../../ids.ts';
import { portalCatalogue } from '../../translate/portal.ts';
import type { ControllerEnv } from '../env.ts';
import type { APIDescriptionObject } from './api-description.ts';
import {
  contextWatch,
  isReady,
  portalWatch,
  reconcilePortal,
  referenceWatch,
  type Desired,
  type PortalDeps,
  type PortalKind,
  type PortalObject,
} from './reconcile.ts';

/** A stored PortalAPICatalogue. */
export type CatalogueObject = PortalObject<PortalAPICatalogue['spec'], PortalAPICatalogueStatus>;

/** What reconcilePortalAPICatalogue needs besides the shared flow's. */
export interface CatalogueDeps extends PortalDeps<CatalogueObject> {
  description: (namespace: string, name: string) => APIDescriptionObject | undefined;
}

/** The catalogue's products by their portal IDs; or the first that is not there yet. */
function catalogueOf(
  obj: CatalogueObject,
  id: string,
  deps: Pick<CatalogueDeps, 'description'>,
): Desired<PortalAPICatalogueStatus> {
  const ids: string[] = [];
  for (const e of catalogueEntries(obj.spec, obj.metadata.namespace)) {
    if (e.ref === undefined) continue;
    const d = deps.description(e.ref.namespace, e.ref.name);
    const what = `APIDescription ${e.ref.namespace}/${e.ref.name}`;
    if (d === undefined || d.metadata.deletionTimestamp !== undefined) {
      return {
        reason: 'APIDescriptionNotFound',
        message: `spec.${e.path}: ${what} does not exist: the catalogue is published once it does`,
      };
    }
    if (d.status?.id === undefined || !isReady(d)) {
      return {
        reason: 'APIDescriptionNotReady',
        message: `spec.${e.path}: ${what} is not Ready yet (not held by the portal): the catalogue is published once it is`,
      };
    }
    ids.push(d.status.id);
  }
  const name = `${obj.metadata.namespace}/${obj.metadata.name}`;
  return { doc: portalCatalogue(id, name, ids), status: { apis: ids } };
}

/** Makes the dashboard's portal hold the catalogue a PortalAPICatalogue describes. */
export function reconcilePortalAPICatalogue(key: string, deps: CatalogueDeps): Promise<WorkResult> {
  const kind: PortalKind<CatalogueObject> = {
    kind: 'PortalAPICatalogue',
    finalizer: CATALOGUE_FINALIZER,
    collection: 'catalogues',
    id: (o) => derivedId(o.metadata.namespace, o.metadata.name),
    problems: (o) => catalogueProblems(o.spec, o.metadata.namespace),
    desired: (o, id) => catalogueOf(o, id, deps),
  };
  return reconcilePortal(key, kind, deps);
}

/**
 * The PortalAPICatalogue controller: catalogues are reconciled when they change, when an
 * APIDescription they list appears, gets its portal ID, becomes Ready or goes, and when their
 * OperatorContext changes.
 */
export function portalAPICatalogueController(env: ControllerEnv): ControllerSpec {
  const { spec, informer: catalogues, deps } = portalWatch<CatalogueObject>(env, 'PortalAPICatalogue');
  const descriptions = referenceWatch<CatalogueObject, APIDescriptionObject>(
    env,
    catalogues,
    'APIDescription',
    (c) =>
      catalogueEntries(c.spec, c.metadata.namespace).flatMap((e) =>
        e.ref === undefined ? [] : [`${e.ref.namespace}/${e.ref.name}`],
      ),
    (d) => d.status?.id,
  );
  return {
    name: 'portalapicatalogue',
    watch: spec,
    workers: 2,
    reconcile: (key) =>
      reconcilePortalAPICatalogue(key, {
        ...deps,
        description: (namespace, name) => descriptions.informer.get(namespace, name),
      }),
    watches: [descriptions.watch, contextWatch(env, catalogues)],
  };
}
