/**
 * The whole check of an OAS document as the gateway will serve it: the conversion's problems,
 * then the classic model's schema and rules on the classic form, mapped back to document paths.
 */
import type { GatewayApiDefinition } from '../generated/models.ts';
import { apiDefinitionModel } from '../models/api-definition/index.ts';
import { checkClassicApi } from '../rules/api-definition.ts';
import { fromSchemaProblem, type FieldProblem } from '../rules/field-problem.ts';
import { compile } from '../validate.ts';
import { oasToClassic } from './convert.ts';
import { EXT, obj } from './document.ts';

const classicSchema = compile(apiDefinitionModel);

/**
 * Every reason the gateway can't serve the document as the classic definition it converts to,
 * besides the document's own schema (which callers check first, or beside it): the conversion's
 * problems, then the classic model's schema and rules (and `more`, what a gateway's configuration
 * adds), mapped back to document paths. A classic problem with no document field behind it is
 * reported at `x-svc-api-gateway`, naming the classic field.
 */
export function checkOasDocument(
  doc: unknown,
  more?: (api: GatewayApiDefinition) => FieldProblem[],
): { api: GatewayApiDefinition; problems: FieldProblem[] } {
  const conversion = oasToClassic(doc);
  const { api, problems } = conversion;
  if (obj(obj(doc)?.[EXT]) === undefined) return { api, problems };
  const classic = [
    ...classicSchema(api).map((p) => fromSchemaProblem(p)),
    ...checkClassicApi(api),
    ...(more?.(api) ?? []),
  ];
  const out = [...problems];
  const reported = new Set(problems.map((p) => p.path));
  const seen = new Set<string>();
  for (const p of classic) {
    const mapped = conversion.documentPathOf(p.path);
    const found: FieldProblem =
      mapped === undefined ? { ...p, path: EXT, message: `${p.path}: ${p.message}` } : { ...p, path: mapped };
    const key = `${found.path}\n${found.message}`;
    if (reported.has(found.path) || seen.has(key)) continue;
    seen.add(key);
    out.push(found);
  }
  return { api, problems: out };
}
