/** Defaults of SvcOasApiDefinition: the namespaces of configmapRef and contextRef. */
import { defaultDocumentApi } from './document-api.ts';

/** A copy of `obj` with `configmapRef.namespace` and `contextRef.namespace` filled in. */
export function defaultSvcOasApiDefinition(obj: unknown): unknown {
  return defaultDocumentApi('SvcOasApiDefinition', obj);
}
