/**
 * `kubectl svc diff`: the live gateway's objects against what the operator would push, so drift
 * (an object changed in the gateway behind the operator's back) shows before the next resync.
 * For each ApiDefinition, SvcOasApiDefinition and SecurityPolicy: the gateway's copy (by the
 * status ID) is hashed as the operator hashes it (`hashOf`) and compared with
 * `status.latestSvcSpecHash`, the hash of the copy the operator last read back; the fields that
 * differ from the translation (translate.ts, the operator's translators) are listed.
 */
import { canonicalJson, hashOf } from '../ids.ts';
import { isPlainObject } from '../../lib/plain-object.ts';

/** Where two JSON values differ: `path: want -> have` lines (want: the operator's). Pure. */
export function fieldDiff(want: unknown, have: unknown, path = ''): string[] {
  if (isPlainObject(want) && isPlainObject(have)) {
    const keys = [...new Set([...Object.keys(want), ...Object.keys(have)])].sort();
    return keys.flatMap((k) => fieldDiff(want[k], have[k], path === '' ? k : `${path}.${k}`));
  }
  if (canonicalJson(want) === canonicalJson(have)) return [];
  const show = (v: unknown): string => (v === undefined ? '(absent)' : canonicalJson(v));
  return [`${path === '' ? '(root)' : path}: ${show(want)} -> ${show(have)}`];
}

/** One resource's comparison. */
export interface DiffEntry {
  resource: string;
  id: string;
  /** `in sync`, `drifted` (changed in the gateway since the operator's push), `missing`, `not pushed`. */
  state: 'in sync' | 'drifted' | 'missing' | 'not pushed';
  /** Fields where the gateway's copy differs from the translation. */
  fields: string[];
}

/** The comparison of one resource, given the gateway's copy (undefined: 404). Pure. */
export function compare(
  resource: string,
  id: string,
  lastHash: string | undefined,
  want: unknown,
  have: unknown,
): DiffEntry {
  if (id === '' || lastHash === undefined) return { resource, id, state: 'not pushed', fields: [] };
  if (have === undefined) return { resource, id, state: 'missing', fields: [] };
  const fields = want === undefined ? [] : fieldDiff(want, have);
  return { resource, id, state: hashOf(have) === lastHash ? 'in sync' : 'drifted', fields };
}

/** The comparison as text. Pure. */
export function diffText(entries: readonly DiffEntry[]): string {
  if (entries.length === 0) return 'No svc resources found.\n';
  return entries
    .map((e) => {
      const head = `${e.resource} (${e.id === '' ? 'no ID yet' : e.id}): ${e.state}`;
      return [head, ...e.fields.map((f) => `  ${f}`)].join('\n');
    })
    .join('\n')
    .concat('\n');
}
