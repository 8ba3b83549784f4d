/**
 * An example plugin module (docs/gateway.md, "Plugins"). Copy it into the gateway's plugin_dir
 * and name its functions in an API's custom_middleware:
 *
 * - `tagRequest` (pre): adds `X-Request-Tag` for the upstream's logs;
 * - `partnerKey` (auth_check): partners send `X-Partner-Key`; the API's `config_data.partners`
 *   maps each key to the partner's name and policy (in a real deployment, look keys up in your
 *   own store rather than in the API definition);
 * - `forwardPartner` (post_key_auth): tells the upstream who the partner is, and removes the key;
 * - `poweredBy` (response): adds a header to the answer.
 *
 * Type-only imports vanish when Node strips the types, so the module runs wherever it is copied.
 */
import type { AuthCheck, RequestHook, ResponseHook } from '../../gateway/plugins/types.ts';

interface Partner {
  name: string;
  policy: string;
}

export const tagRequest: RequestHook = (req) => ({
  setHeaders: { 'x-request-tag': `${req.apiId}:${req.method}` },
});

export const partnerKey: AuthCheck = (req) => {
  const key = req.headers['x-partner-key'] ?? '';
  const partners = (req.config.partners ?? {}) as Record<string, Partner | undefined>;
  const partner = Object.hasOwn(partners, key) ? partners[key] : undefined;
  if (partner === undefined) return { refuse: { status: 401, message: 'Partner key missing or unknown' } };
  return {
    keyId: partner.name,
    session: { apply_policies: [partner.policy], meta_data: { partner: partner.name } },
  };
};

export const forwardPartner: RequestHook = (req) => {
  const partner = req.session?.meta_data?.partner;
  return {
    setHeaders: { 'x-partner': typeof partner === 'string' ? partner : 'unknown' },
    removeHeaders: ['x-partner-key'],
  };
};

export const poweredBy: ResponseHook = () => ({ setHeaders: { 'x-powered-by': 'svc gateway plugins' } });
