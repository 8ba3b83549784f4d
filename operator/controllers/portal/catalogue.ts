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
import { portalCatalogue } from '../../translate/portal.ts';
import type { ControllerEnv } from '../env.ts';
import type { APIDescriptionObject } from './api-description.ts';
import {
  portalIdOf,
  reconcilePortal,
  referencedId,
  referringController,
  type Desired,
  type PortalDeps,
  type PortalKind,
  type PortalObject,
  type Reference,
} from './reconcile.ts';

/** A stored PortalAPICatalogue. */
export type CatalogueObject = PortalObject<PortalAPICatalogue['spec'], PortalAPICatalogueStatus>;

/** What reconcilePortalAPICatalogue needs besides the shared flow's. */
export interface CatalogueDeps extends PortalDeps<CatalogueObject> {
  description: (namespace: string, name: string) => APIDescriptionObject | undefined;
}

/** The APIDescriptions a catalogue lists (`apis`): its products. */
const DESCRIPTIONS: Reference<CatalogueObject, APIDescriptionObject> = {
  kind: 'APIDescription',
  reason: 'APIDescription',
  heldBy: 'the portal',
  refsOf: (c) =>
    catalogueEntries(c.spec, c.metadata.namespace).flatMap((e) =>
      e.ref === undefined ? [] : [`${e.ref.namespace}/${e.ref.name}`],
    ),
  idOf: (d) => d.status?.id,
};

/** The catalogue's products by their portal IDs; or the first that is not there yet. */
function catalogueOf(
  obj: CatalogueObject,
  id: string,
  deps: Pick<CatalogueDeps, 'description'>,
): Desired<PortalAPICatalogueStatus> {
  const ids: string[] = [];
  for (const e of catalogueEntries(obj.spec, obj.metadata.namespace)) {
    if (e.ref === undefined) continue;
    const product = referencedId(DESCRIPTIONS, deps.description, e.ref, `spec.${e.path}`, 'the catalogue');
    if (!('id' in product)) return product;
    ids.push(product.id);
  }
  const name = `${obj.metadata.namespace}/${obj.metadata.name}`;
  return { doc: portalCatalogue(id, name, ids), status: { apis: ids } };
}

/** PortalAPICatalogue, as the shared flow reconciles it. */
const CATALOGUE: PortalKind<CatalogueObject, CatalogueDeps> = {
  kind: 'PortalAPICatalogue',
  finalizer: CATALOGUE_FINALIZER,
  collection: 'catalogues',
  id: portalIdOf,
  problems: (o) => catalogueProblems(o.spec, o.metadata.namespace),
  desired: catalogueOf,
};

/** Makes the dashboard's portal hold the catalogue a PortalAPICatalogue describes. */
export function reconcilePortalAPICatalogue(key: string, deps: CatalogueDeps): Promise<WorkResult> {
  return reconcilePortal(key, CATALOGUE, deps);
}

/**
 * The PortalAPICatalogue controller: catalogues are reconciled when they change, when an
 * APIDescription they list appears, gets its portal ID, becomes Ready or goes, and when their
 * OperatorContext changes.
 */
export function portalAPICatalogueController(env: ControllerEnv): ControllerSpec {
  return referringController(
    env,
    CATALOGUE,
    { name: 'portalapicatalogue', workers: 2 },
    DESCRIPTIONS,
    (deps, description) => ({ ...deps, description }),
  );
}
