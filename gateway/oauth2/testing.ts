/**
 * The set-up of the token endpoint's tests: a gateway serving `oa` (`/oa/`), an API that accepts
 * OAuth2 client credentials, with the policy `oa-pol` that its clients get.
 */
import assert from 'node:assert/strict';
import { keyed, startGateway, type InProcessGateway } from '../testing/harness.ts';

/**
 * A gateway serving `oa` in front of `upstream` (a getter such as useEcho's, read once the
 * gateway has started: a file's `before` hooks do not wait for each other), with the policy
 * `oa-pol` and no client yet.
 */
export async function startOauthGateway(upstream: () => { url: string }): Promise<InProcessGateway> {
  const gw = await startGateway();
  await gw.addApi(
    keyed('oa', '/oa/', upstream().url, {
      use_oauth2: true,
      oauth_meta: { allowed_access_types: ['client_credentials'] },
    }),
  );
  const policy = {
    id: 'oa-pol',
    name: 'oa-pol',
    state: 'active',
    rate: 1000,
    per: 1,
    quota_max: -1,
    access_rights: { oa: { api_id: 'oa', versions: ['Default'] } },
  };
  assert.equal((await gw.admin('POST', '/svc/policies', policy)).status, 200);
  await gw.reload();
  return gw;
}

/** Makes the client `clientId` of `oa` under `oa-pol`, with `secret` (else one the gateway makes). */
export async function addOauthClient(gw: InProcessGateway, clientId: string, secret?: string): Promise<void> {
  const c = await gw.admin('POST', '/svc/oauth/clients/create', {
    api_id: 'oa',
    policy_id: 'oa-pol',
    client_id: clientId,
    ...(secret === undefined ? {} : { secret }),
  });
  assert.equal(c.status, 200, c.text);
}
