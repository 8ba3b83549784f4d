/**
 * What the authentication and access tables share (auth-token, basic-auth, key-state,
 * access-rights, strip-auth, ip-lists, and conformance/policies): the row shape (a request in;
 * the status, the `error`, the headers out, and on a 200 what the echo upstream received), a test
 * per row, the suite of a table (an echo upstream for the file, the four setups of tables.ts),
 * the access rights of a key or policy, and the policies a table stores.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho, type Echoed } from './echo.ts';
import { keyed, type GatewayClient } from './harness.ts';
import { assertAnswer, describeEachSetup, sendRow, type Expected, type RowRequest } from './tables.ts';

/** A row: the request, and what the answer must be. */
export interface AuthRow extends Expected, RowRequest {
  name: string;
  error?: string;
  /** The query the upstream received (a 200 only). */
  upstreamQuery?: string;
  /** The body the upstream received (a 200 only). */
  upstreamBody?: string;
}

/**
 * Declares a test per row (`<name>`): the request (`sendRow`), the answer (`assertAnswer`: status,
 * `error`, the headers out), and on a 200 that the echo upstream answered, with the query and body
 * the row says it received.
 */
export function testAuthRows(gw: () => GatewayClient, rows: readonly AuthRow[]): void {
  for (const row of rows) {
    test(row.name, async () => {
      const { res } = await sendRow(gw(), row);
      assertAnswer(res, row);
      if (row.status === 200) {
        const echoed = res.json as Echoed;
        assert.equal(echoed.upstream, 'echo');
        if (row.upstreamQuery !== undefined) assert.equal(echoed.query, row.upstreamQuery);
        if (row.upstreamBody !== undefined) assert.equal(echoed.body, row.upstreamBody);
      }
    });
  }
}

/**
 * Declares the table once per setup (`describeEachSetup`), against an echo upstream named `echo`
 * started for the file: `setUp` stores what the rows use (given the gateway and the upstream's
 * URL), then a test per row (`testAuthRows`).
 */
export function describeAuthTable(
  title: string,
  setUp: (gw: GatewayClient, upstream: string) => Promise<void>,
  rows: readonly AuthRow[],
): void {
  const echo = useEcho();
  describeEachSetup(
    title,
    () => ({}),
    ({ gw }) => {
      before(async () => {
        await setUp(gw(), echo().url);
      });
      testAuthRows(gw, rows);
    },
  );
}

/**
 * The keyed API `tokq` at `/tokq/` (auth-token's and strip-auth's tables): its token read from
 * the `api_key` query parameter and the `session` cookie too, and stripped before it is proxied.
 */
export const tokenInQueryAndCookie = (upstream: string): Record<string, unknown> =>
  keyed('tokq', '/tokq/', upstream, {
    use_standard_auth: true,
    auth: { use_param: true, param_name: 'api_key', use_cookie: true, cookie_name: 'session' },
    strip_auth_data: true,
  });

/** Access rights to the `Default` version of each API named. */
export const accessTo = (...ids: string[]): Record<string, unknown> =>
  Object.fromEntries(ids.map((id) => [id, { api_id: id, api_name: id, versions: ['Default'] }]));

/** Stores the policies (through the management API), failing the set-up on a refusal. */
export async function addPolicies(
  gw: GatewayClient,
  policies: readonly Record<string, unknown>[],
): Promise<void> {
  for (const p of policies) {
    const res = await gw.admin('POST', '/svc/policies', p);
    assert.equal(res.status, 200, `policy ${String(p.id)}: ${res.text}`);
  }
}
