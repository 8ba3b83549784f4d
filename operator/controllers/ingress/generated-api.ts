/**
 * The ApiDefinition objects an Ingress owns: each generated API (translate/ingress.ts) as the
 * resource written to the cluster, and whether a stored one still says what it should.
 */
import { isDeepStrictEqual } from 'node:util';
import { API_VERSION } from '../../../schemas/common.ts';
import { API_FINALIZER } from '../../../schemas/finalizers.ts';
import { isPlainObject } from '../../../lib/plain-object.ts';
import { hashOf } from '../../ids.ts';
import { INGRESS_LABEL, type GeneratedApi } from '../../translate/ingress.ts';
import type { ApiObject } from '../objects.ts';
import { SPEC_HASH_ANNOTATION, type IngressObject } from './types.ts';

/** The ApiDefinition resource of a generated API, owned by its Ingress. */
export function apiObjectOf(ingress: IngressObject, api: GeneratedApi): ApiObject {
  return {
    apiVersion: API_VERSION,
    kind: 'ApiDefinition',
    metadata: {
      name: api.name,
      namespace: ingress.metadata.namespace,
      labels: { [INGRESS_LABEL]: ingress.metadata.name },
      // Created with the finalizer its controller would add: one API-server write fewer per API.
      finalizers: [API_FINALIZER],
      annotations: { [SPEC_HASH_ANNOTATION]: hashOf(api.spec) },
      ownerReferences: [
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'Ingress',
          name: ingress.metadata.name,
          uid: ingress.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: api.spec,
  };
}

/**
 * Whether `want` is contained in `have`: every field it sets has the same value there (objects
 * compared field by field, anything else whole). The API server adds the CRD's defaults to what
 * it stores, so the stored spec is a superset of the one written.
 */
export function contains(have: unknown, want: unknown): boolean {
  if (isPlainObject(want) && isPlainObject(have))
    return Object.entries(want).every(([k, v]) => contains(have[k], v));
  return isDeepStrictEqual(have, want);
}

/**
 * Whether a generated ApiDefinition already says what `want` says: the hash of the spec last
 * written (a field the Ingress or template dropped changes it) and the stored spec (someone
 * else's edit of a field the Ingress sets is put back).
 */
export function upToDate(have: ApiObject, want: ApiObject): boolean {
  return (
    have.metadata.annotations?.[SPEC_HASH_ANNOTATION] === want.metadata.annotations?.[SPEC_HASH_ANNOTATION] &&
    contains(have.spec, want.spec) &&
    have.metadata.labels?.[INGRESS_LABEL] === want.metadata.labels?.[INGRESS_LABEL] &&
    isDeepStrictEqual(
      have.metadata.ownerReferences?.map((o) => o.uid),
      want.metadata.ownerReferences?.map((o) => o.uid),
    )
  );
}
