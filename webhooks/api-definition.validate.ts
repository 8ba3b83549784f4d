/** Admission rules of ApiDefinition (classic APIs), after its full schema. */
import { asArray, asNumber, asObject, asString, at, isTrue, metaOf, refOf } from './access.ts';
import { fe, mergeErrors, quote } from './field-error.ts';
import type { FieldError, Verdict } from './field-error.ts';
import type { Lookups } from './lookups.ts';
import { contextRefWarnings, deleteVerdict, policiesCovering } from './references.ts';
import { allClaims, apiDefinitionClaim, conflictMessage, conflictingClaim } from './routes.ts';
import { schemaErrors } from './schema.ts';
import { isIpOrCidr, urlProblem } from './values.ts';

/** Authentication switches that `use_keyless` excludes. */
const AUTH_FLAGS = ['use_standard_auth', 'use_basic_auth', 'enable_jwt', 'use_mutual_tls_auth'] as const;
/** Schemes a classic API may proxy to (HTTP, TCP and TLS passthrough, WebSocket). */
const TARGET_SCHEMES = ['http:', 'https:', 'h2c:', 'tcp:', 'tls:', 'ws:', 'wss:'];

/** Validates an ApiDefinition on create or update. */
export async function validateApiDefinition(obj: unknown, _old: unknown, lookups: Lookups): Promise<Verdict> {
  const errors: FieldError[] = [];
  const warnings: string[] = [];
  const spec = asObject(at(obj, 'spec')) ?? {};

  const on = AUTH_FLAGS.filter((f) => isTrue(spec[f]));
  if (isTrue(spec.use_keyless) && on.length > 0) {
    errors.push(
      fe.forbidden(
        'spec.use_keyless',
        `use_keyless excludes authentication, but ${on.join(', ')} ${on.length > 1 ? 'are' : 'is'} true: set use_keyless to false, or turn ${on.join(' and ')} off`,
      ),
    );
  }

  const graphqlOn = isTrue(at(spec, 'graphql.enabled'));
  const target = at(spec, 'proxy.target_url');
  if (!graphqlOn && (target === undefined || target === '')) {
    errors.push(
      fe.required(
        'spec.proxy.target_url',
        'set the upstream address, such as http://<service>.<namespace>.svc:<port>, or enable GraphQL (graphql.enabled: true)',
      ),
    );
  } else if (typeof target === 'string' && target !== '') {
    const problem = urlProblem(target, TARGET_SCHEMES, 'http://orders.default.svc:8080');
    if (problem !== undefined) errors.push(fe.invalid('spec.proxy.target_url', problem));
  }

  const listenPath = at(spec, 'proxy.listen_path');
  if (typeof listenPath === 'string' && !listenPath.startsWith('/')) {
    errors.push(
      fe.invalid(
        'spec.proxy.listen_path',
        `${quote(listenPath)} must start with "/", such as "/${listenPath}"`,
      ),
    );
  }

  const port = asNumber(spec.listen_port) ?? 0;
  if (port > 0 && (asString(spec.protocol) ?? '') === '') {
    errors.push(
      fe.required(
        'spec.protocol',
        'listen_port needs a protocol: set protocol to http, https, h2c, tcp or tls, or remove listen_port',
      ),
    );
  }

  if (isTrue(spec.enable_jwt)) {
    if (asString(spec.jwt_signing_method) === undefined) {
      errors.push(
        fe.required('spec.jwt_signing_method', 'enable_jwt needs the signing method: set hmac, rsa or ecdsa'),
      );
    }
    if ((asString(spec.jwt_source) ?? '') === '') {
      errors.push(
        fe.required(
          'spec.jwt_source',
          'enable_jwt needs the key that verifies tokens: set a base64 secret, a PEM public key or a JWKS URL',
        ),
      );
    }
  }

  ipListRules(spec, 'allowed_ips', 'enable_ip_whitelisting', errors, warnings);
  ipListRules(spec, 'blacklisted_ips', 'enable_ip_blacklisting', errors, warnings);
  graphqlRules(asObject(spec.graphql), errors, warnings);

  const claim = apiDefinitionClaim(obj);
  if (claim?.listenPath.startsWith('/') === true) {
    const other = conflictingClaim(claim, await allClaims(lookups));
    if (other !== undefined) errors.push(fe.invalid('spec.proxy.listen_path', conflictMessage(claim, other)));
  }

  warnings.push(...(await contextRefWarnings(obj, lookups)), ...(await referenceWarnings(obj, lookups)));
  return { errors: mergeErrors(schemaErrors('ApiDefinition', obj), errors), warnings };
}

/** Refuses the DELETE of an API that SecurityPolicies still cover. */
export async function validateApiDefinitionDelete(old: unknown, lookups: Lookups): Promise<Verdict> {
  const { namespace, name } = metaOf(old);
  return deleteVerdict(
    `ApiDefinition ${namespace}/${name}`,
    await policiesCovering(lookups, 'ApiDefinition', namespace, name),
    'remove it from the access_rights_array of these policies (or delete them) first',
  );
}

function ipListRules(
  spec: Record<string, unknown>,
  field: 'allowed_ips' | 'blacklisted_ips',
  flag: 'enable_ip_whitelisting' | 'enable_ip_blacklisting',
  errors: FieldError[],
  warnings: string[],
): void {
  const list = asArray(spec[field]);
  list.forEach((entry, i) => {
    if (typeof entry !== 'string') return; // the schema reports it
    const path = `spec.${field}[${i}]`;
    if (entry.includes('*')) {
      errors.push(
        fe.invalid(
          path,
          `${quote(entry)}: wildcards are not supported: write the range in CIDR notation, such as 10.0.0.0/8`,
        ),
      );
    } else if (!isIpOrCidr(entry)) {
      errors.push(
        fe.invalid(
          path,
          `${quote(entry)} is not an IP address or CIDR range, such as 192.0.2.10 or 10.0.0.0/8`,
        ),
      );
    }
  });
  const enabled = isTrue(spec[flag]);
  if (enabled && list.length === 0) {
    warnings.push(
      field === 'allowed_ips'
        ? `spec.allowed_ips: ${flag} is true but allowed_ips is empty: every client is refused`
        : `spec.blacklisted_ips: ${flag} is true but blacklisted_ips is empty: no client is blocked`,
    );
  } else if (!enabled && list.length > 0) {
    warnings.push(`spec.${flag}: ${field} is set but ${flag} is not true: the list is ignored`);
  }
}

const DATA_SOURCE_KINDS = ['GraphQLDataSource', 'HTTPJSONDataSource'];

function graphqlRules(
  graphql: Record<string, unknown> | undefined,
  errors: FieldError[],
  warnings: string[],
): void {
  if (graphql === undefined) return;
  const mode = asString(graphql.execution_mode) ?? 'proxyOnly';
  if (isTrue(graphql.enabled) && mode === 'executionEngine' && (asString(graphql.schema) ?? '') === '') {
    errors.push(
      fe.required(
        'spec.graphql.schema',
        'execution_mode executionEngine needs the GraphQL schema (SDL) of the API: set graphql.schema',
      ),
    );
  }
  const fields = asArray(graphql.type_field_configurations);
  if (fields.length > 0 && mode !== 'executionEngine') {
    warnings.push(
      'spec.graphql.type_field_configurations: data sources are used only when execution_mode is executionEngine',
    );
  }
  fields.forEach((f, i) => {
    const base = `spec.graphql.type_field_configurations[${i}].data_source`;
    const source = asObject(asObject(f)?.data_source);
    if (source === undefined) return;
    const kind = source.kind;
    if (typeof kind === 'string' && !DATA_SOURCE_KINDS.includes(kind)) {
      errors.push(
        fe.notSupported(`${base}.kind`, `${quote(kind)}: use GraphQLDataSource or HTTPJSONDataSource`),
      );
    }
    const url = asString(asObject(source.data_source_config)?.url);
    if (url === undefined || url === '') return;
    const problem = templatedUrlProblem(url);
    if (problem !== undefined) errors.push(fe.invalid(`${base}.data_source_config.url`, problem));
  });
}

/** A data source URL may hold `{{ .object.id }}` templates; everything else must be a URL. */
function templatedUrlProblem(url: string): string | undefined {
  const filled = url.replace(/\{\{[^{}]*\}\}/g, 'x');
  if (filled.includes('{{') || filled.includes('}}')) {
    return `${quote(url)} has an unbalanced template: close each {{ with }}, such as {{ .object.id }}`;
  }
  let parsed: URL;
  try {
    parsed = new URL(filled);
  } catch {
    return `${quote(url)} is not an absolute http(s) URL: write the scheme and host, such as http://users.default.svc:8080/graphql`;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return `${quote(url)} has the scheme ${quote(parsed.protocol.slice(0, -1))}: data sources are called over http or https`;
  }
  return undefined;
}

/** Warnings for Secrets and SecurityPolicies the API names but that don't exist yet. */
async function referenceWarnings(obj: unknown, lookups: Lookups): Promise<string[]> {
  const { namespace } = metaOf(obj);
  const warnings: string[] = [];
  const secrets = asArray(at(obj, 'spec.certificate_secret_names'));
  for (const [i, name] of secrets.entries()) {
    if (typeof name !== 'string' || name === '') continue;
    if ((await lookups.secretKeys(namespace, name)) === undefined) {
      warnings.push(
        `spec.certificate_secret_names[${i}]: Secret ${namespace}/${name} does not exist yet: the API is served without that certificate until it does`,
      );
    }
  }
  const policies = asArray(at(obj, 'spec.jwt_default_policies'));
  for (const [i, r] of policies.entries()) {
    const ref = refOf(r, namespace);
    if (ref === undefined) continue;
    if ((await lookups.get('SecurityPolicy', ref.namespace, ref.name)) === undefined) {
      warnings.push(
        `spec.jwt_default_policies[${i}]: SecurityPolicy ${ref.namespace}/${ref.name} does not exist yet: tokens without a policy claim get no policy until it does`,
      );
    }
  }
  return warnings;
}
