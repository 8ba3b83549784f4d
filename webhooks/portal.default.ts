/**
 * Defaults of the portal kinds (APIDescription, PortalAPICatalogue, PortalConfig): the namespace
 * of contextRef and of the references they hold (policyRef, each catalogue entry's
 * apiDescriptionRef), written out so that what is stored names its object whole. `version` is
 * defaulted by the CRD schema.
 */
import { asObject, metaOf } from './access.ts';
import { clone, defaultContextRef, defaultRefNamespace, eachObject } from './defaults.ts';

/** A copy of a portal object with its references' namespaces filled in. */
export function defaultPortal(obj: unknown): unknown {
  const out = asObject(clone(obj));
  if (out === undefined) return obj;
  defaultContextRef(out);
  const { namespace } = metaOf(out);
  const spec = asObject(out.spec);
  defaultRefNamespace(spec?.policyRef, namespace);
  eachObject(spec?.apis, (entry) => {
    defaultRefNamespace(entry.apiDescriptionRef, namespace);
  });
  return out;
}
