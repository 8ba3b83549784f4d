/** Fixtures for tests of the parts that read the models: OAS documents built from a few settings. */
import { merge } from '../lib/testing/merge.ts';

type Json = Record<string, unknown>;

/** The name of the gateway extension, for fixtures. */
const X = 'x-svc-api-gateway';

/** What distinguishes one OAS API from another in a test. */
export interface OasBasics {
  /** `info.id`; none by default. */
  id?: string;
  /** `info.name`; the ID, else `pets`. */
  name?: string;
  listenPath?: string;
  target?: string;
  /** `server.listenPath.strip`; not set by default. */
  strip?: boolean;
}

/**
 * A keyless OAS API (`/pets/` to `http://pets.default.svc:8080` by default) with `ext` merged into
 * its extension and `rest` into the document (`merge`: objects key by key, undefined removes).
 */
export function oasDocument(basics: OasBasics = {}, ext: Json = {}, rest: Json = {}): Json {
  const { id, strip } = basics;
  return merge(
    {
      openapi: '3.0.3',
      info: { title: 'Pets', version: '1.0.0' },
      paths: {},
      [X]: {
        info: {
          ...(id === undefined ? {} : { id }),
          name: basics.name ?? id ?? 'pets',
          state: { active: true },
        },
        upstream: { url: basics.target ?? 'http://pets.default.svc:8080' },
        server: {
          listenPath: { value: basics.listenPath ?? '/pets/', ...(strip === undefined ? {} : { strip }) },
        },
      },
    },
    { ...rest, [X]: ext },
  );
}

/**
 * The extension and document parts that require the scheme `name`, declared as `decl` and
 * configured as `settings` (`auth` adds to `server.authentication`): `oasDocument(b, ...requiring(...))`.
 */
export function requiring(name: string, decl: Json, settings: Json = {}, auth: Json = {}): [Json, Json] {
  return [
    {
      server: {
        authentication: {
          enabled: true,
          ...auth,
          securitySchemes: { [name]: { enabled: true, ...settings } },
        },
      },
    },
    { components: { securitySchemes: { [name]: decl } }, security: [{ [name]: [] }] },
  ];
}
