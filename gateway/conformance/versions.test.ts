/**
 * Writes of versioning and header settings the gateway cannot serve (`definition.versions`, a
 * missing `definition.key`, an `override_target` scheme, header names and `$secret_env`
 * values, a `method_transforms` target) are refused by path, all in one answer. The tables of
 * the features are beside their middlewares (middleware/versions, headers, method-transforms).
 */
import { test } from 'node:test';
import { useEcho } from '../testing/echo.ts';
import { keyless, assertWriteRefused, withGateway } from '../testing/harness.ts';

const echo = useEcho();

test('writes: versioning and header settings the gateway cannot serve are refused by path', async () => {
  await withGateway((gw) =>
    assertWriteRefused(
      gw,
      keyless('refused', '/refused/', echo().url, {
        definition: { location: 'header', key: '', versions: { v2: 'other-api' } },
        version_data: {
          not_versioned: false,
          versions: {
            v1: {
              name: 'v1',
              override_target: 'ftp://x',
              global_headers: { 'bad name': 'x', 'x-meta': '$secret_env.USER' },
              extended_paths: { method_transforms: [{ path: '/a', method: 'GET', to_method: 'HEAD' }] },
            },
          },
        },
      }),
      [
        'definition.versions: not supported by svc yet',
        'definition.key: Required value',
        'version_data.versions.v1.override_target: Unsupported value',
        'version_data.versions.v1.global_headers["bad name"]: Invalid value',
        'version_data.versions.v1.global_headers.x-meta: not supported by svc yet',
        'version_data.versions.v1.extended_paths.method_transforms[0].to_method: Unsupported value',
      ],
    ),
  );
});
