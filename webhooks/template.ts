/**
 * API templates, ApiDefinitions and SvcOasApiDefinitions (labelled `svc.io/template: "true"`, or the reference's
 * `template: "true"`): Ingresses annotated `svc.io/template: <name>` build their APIs from them,
 * supplying the listen path and the target, so a template needs neither; it claims no route and
 * is never served itself. Deleting one that Ingresses of its namespace use is refused.
 */
import { isTemplate, TEMPLATE_ANNOTATION } from '../schemas/templates.ts';
import { metaOf } from './access.ts';
import type { FieldError, Verdict } from './field-error.ts';
import type { Lookups } from './lookups.ts';
import { deleteVerdict } from './references.ts';

export { TEMPLATE_ANNOTATION };

/** The fields an Ingress fills in, which a template may leave out. */
const SUPPLIED = ['spec.proxy.listen_path', 'spec.proxy.target_url'];

/** A template's errors without those about the fields the Ingress supplies being absent. */
export function templateErrors(errors: readonly FieldError[]): FieldError[] {
  return errors.filter((e) => !(e.type === 'Required' && SUPPLIED.includes(e.path)));
}

/**
 * The Ingresses (`Ingress namespace/name`) that name the template `namespace/name`, sorted, as the
 * API server lists them now (webhooks/watch-lookups.ts: no cache of Ingresses, which could miss
 * one created a moment ago).
 */
export async function templateUsers(lookups: Lookups, namespace: string, name: string): Promise<string[]> {
  return (await lookups.ingresses(namespace))
    .filter((i) => !i.deleting && i.annotations[TEMPLATE_ANNOTATION] === name)
    .map((i) => `Ingress ${namespace}/${i.name}`)
    .sort();
}

/** Refuses the DELETE of a template (an ApiDefinition or SvcOasApiDefinition) that Ingresses still name. */
export async function templateDeleteVerdict(
  old: unknown,
  lookups: Lookups,
  kind: 'ApiDefinition' | 'SvcOasApiDefinition' = 'ApiDefinition',
): Promise<Verdict> {
  if (!isTemplate(old)) return { errors: [], warnings: [] };
  const { namespace, name } = metaOf(old);
  return deleteVerdict(
    `template ${kind} ${namespace}/${name}`,
    await templateUsers(lookups, namespace, name),
    `remove their ${TEMPLATE_ANNOTATION} annotation (or delete them) first`,
  );
}
