/**
 * API templates: an ApiDefinition or SvcOasApiDefinition labelled `svc.io/template: "true"` (or
 * the reference's `template: "true"`) is never served itself; Ingresses annotated
 * `svc.io/template: <name>` build their APIs from it. The webhooks and the operator read it here.
 */
import { asPlainObject } from '../lib/plain-object.ts';

/** The labels that make an API resource a template (value `"true"`). */
export const TEMPLATE_LABELS = ['svc.io/template', 'template'] as const;
/** The Ingress annotation naming a template. */
export const TEMPLATE_ANNOTATION = 'svc.io/template';

/** Whether an object (checked or not) is labelled as a template. */
export function isTemplate(obj: unknown): boolean {
  const labels = asPlainObject(asPlainObject(asPlainObject(obj)?.metadata)?.labels) ?? {};
  return TEMPLATE_LABELS.some((l) => labels[l] === 'true');
}
