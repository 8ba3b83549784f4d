/**
 * Admission rules of access rights in the SecurityPolicy form, written once for the kinds that
 * carry them: a SecurityPolicy's `access_rights_array` and an ApiKey's `spec.accessRights`.
 */
import { asArray, asObject, asString } from './access.ts';
import { fe, type FieldError } from './field-error.ts';
import { API_KINDS } from './lookups.ts';
import type { ApiKind, Lookups } from './lookups.ts';
import { limitVerdict } from '../schemas/rules/limits.ts';
import { regexProblem } from '../schemas/rules/values.ts';

function isApiKind(kind: string): kind is ApiKind {
  return (API_KINDS as readonly string[]).includes(kind);
}

/** The limits rule (schemas/rules/limits.ts) at `base` (`spec`, `spec.access_rights_array[0].limit`). */
export function limitRules(
  limits: Record<string, unknown>,
  base: string,
  errors: FieldError[],
  warnings: string[],
): void {
  const verdict = limitVerdict(limits, `${base}.`);
  errors.push(...verdict.problems);
  warnings.push(...verdict.warnings.map((w) => `${w.path}: ${w.message}`));
}

/**
 * Checks the access rights at `field` (`spec.access_rights_array`, `spec.accessRights`) of a
 * `holder` (`policy`, `key`) in `namespace`: limits, regular expressions of allowed URLs and
 * endpoints, no API twice (errors); `Default` named for an OAS or streams API, and an API that
 * does not exist yet (warnings: objects may come in any order). An HTTPRoute entry: version
 * `Default` only, no GraphQL field permissions (errors); the route itself is not looked up (the
 * operator waits until APIs are generated for it).
 */
export async function accessRightRules(
  rights: unknown,
  field: string,
  holder: 'policy' | 'key',
  namespace: string,
  lookups: Lookups,
  out: { errors: FieldError[]; warnings: string[] },
): Promise<void> {
  const { errors, warnings } = out;
  const list = field.replace(/^spec\./, '');
  const seen = new Map<string, number>();
  for (const [i, r] of asArray(rights).entries()) {
    const right = asObject(r);
    if (right === undefined) continue;
    const base = `${field}[${i}]`;
    const limit = asObject(right.limit);
    if (limit !== undefined) limitRules(limit, `${base}.limit`, errors, warnings);
    for (const [j, u] of asArray(right.allowed_urls).entries()) {
      const url = asString(asObject(u)?.url);
      if (url === undefined) continue;
      const problem = regexProblem(url);
      if (problem !== undefined) errors.push(fe.invalid(`${base}.allowed_urls[${j}].url`, problem));
    }
    for (const [j, e] of asArray(right.endpoints).entries()) {
      const path = asString(asObject(e)?.path);
      const problem = path === undefined ? undefined : regexProblem(path);
      if (problem !== undefined) errors.push(fe.invalid(`${base}.endpoints[${j}].path`, problem));
    }

    const name = asString(right.name);
    const kind = asString(right.kind) ?? 'ApiDefinition';
    if (name === undefined || (!isApiKind(kind) && kind !== 'HTTPRoute')) continue; // the schema reports it
    const ns = asString(right.namespace) ?? namespace;
    const id = `${kind} ${ns}/${name}`;
    const first = seen.get(id);
    if (first !== undefined) {
      errors.push(fe.invalid(base, `duplicates ${list}[${first}] (${id}): merge the two entries`));
      continue;
    }
    seen.set(id, i);
    if (!isApiKind(kind)) {
      routeRightRules(right, base, errors);
      // The route (and the APIs generated for it) may come later: the operator waits for them.
      continue;
    }
    if (kind !== 'ApiDefinition' && asArray(right.versions).includes('Default')) {
      warnings.push(
        `${base}.versions: ${kind} APIs name their default version "" (an empty string), not "Default"`,
      );
    }
    if ((await lookups.get(kind, ns, name)) === undefined) {
      warnings.push(`${base}: ${id} does not exist yet: the ${holder} covers it once it is created`);
    }
  }
}

/**
 * The shape of an access right naming an HTTPRoute: its rights land on the classic APIs generated
 * for the route, which have one version, `Default`, and no GraphQL schema.
 */
function routeRightRules(right: Record<string, unknown>, base: string, errors: FieldError[]): void {
  const versions = asArray(right.versions);
  if (right.versions !== undefined && (versions.length !== 1 || versions[0] !== 'Default')) {
    errors.push(
      fe.invalid(
        `${base}.versions`,
        'the APIs generated for an HTTPRoute have one version, "Default": write versions: ["Default"] or leave it out',
      ),
    );
  }
  for (const field of ['restricted_types', 'allowed_types'] as const) {
    if (right[field] !== undefined) {
      errors.push(
        fe.forbidden(
          `${base}.${field}`,
          'GraphQL field permissions apply to GraphQL APIs; the APIs generated for an HTTPRoute proxy HTTP: remove it',
        ),
      );
    }
  }
}
