/** The template an Ingress names: an ApiDefinition or an SvcOasApiDefinition labelled as one. */
import type { ApiDefinitionSpec } from '../../../schemas/generated/kinds.ts';
import { isTemplate } from '../../../schemas/templates.ts';
import { TEMPLATE_ANNOTATION } from '../../translate/ingress.ts';
import type { IngressDeps } from './types.ts';

/**
 * The spec of the template `name`: an ApiDefinition labelled as a template, else an
 * SvcOasApiDefinition labelled as one (its document converted); or the problem to report.
 */
export function resolveTemplate(
  namespace: string,
  name: string,
  deps: Pick<IngressDeps, 'apiDefinition' | 'oasTemplate'>,
): { spec: ApiDefinitionSpec } | { reason: 'TemplateNotFound' | 'TemplateInvalid'; message: string } {
  const field = `metadata.annotations[${TEMPLATE_ANNOTATION}]`;
  const label = 'label it svc.io/template: "true"';
  const api = deps.apiDefinition(namespace, name);
  if (api && !api.metadata.deletionTimestamp) {
    if (!isTemplate(api)) {
      return {
        reason: 'TemplateInvalid',
        message: `${field}: Invalid value: ApiDefinition ${namespace}/${name} is not a template: ${label}`,
      };
    }
    return { spec: api.spec };
  }
  const oas = deps.oasTemplate(namespace, name);
  if (!oas || oas.deleting) {
    return {
      reason: 'TemplateNotFound',
      message: `${field}: Not found: no ApiDefinition or SvcOasApiDefinition ${namespace}/${name}: create one, labelled svc.io/template: "true"`,
    };
  }
  if (!oas.labelled) {
    return {
      reason: 'TemplateInvalid',
      message: `${field}: Invalid value: SvcOasApiDefinition ${namespace}/${name} is not a template: ${label}`,
    };
  }
  if (!oas.spec.ok) {
    return {
      reason: 'TemplateInvalid',
      message: `${field}: Invalid value: SvcOasApiDefinition ${namespace}/${name}: ${oas.spec.message}`,
    };
  }
  return { spec: oas.spec.spec };
}
