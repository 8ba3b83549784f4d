/**
 * Writes of a classic API's endpoint features: what svc does not serve yet (`transform_jq`), a
 * malformed list path, a virtual endpoint without its function's source and an `expires` that is
 * not a time are refused by path, all in one answer. The features' own tables are beside their middlewares (middleware/size-limits,
 * endpoint-lists, version-expiry).
 */
import { test } from 'node:test';
import { useEcho } from '../testing/echo.ts';
import { keyless, oneVersion, assertWriteRefused, withGateway } from '../testing/harness.ts';

const echo = useEcho();

test('writes: what the endpoint features do not serve yet is refused by path, with the rest', async () => {
  await withGateway((gw) =>
    assertWriteRefused(
      gw,
      keyless(
        'refused',
        '/refused/',
        echo().url,
        oneVersion({
          expires: 'tomorrow',
          extended_paths: {
            transform_jq: [{ path: '/a', filter: '.' }],
            black_list: [{ path: '/b[', method: 'GET' }],
            virtual: [{ path: '/c', method: 'GET', response_function_name: 'f' }],
            size_limits: [],
          },
        }),
      ),
      [
        'version_data.versions.Default.extended_paths.black_list[0].path: Invalid value: "/b["',
        'version_data.versions.Default.extended_paths.transform_jq: not supported by svc yet',
        'version_data.versions.Default.extended_paths.virtual[0].function_source_type: Unsupported value',
        'version_data.versions.Default.expires: Invalid value: "tomorrow" is not a time',
      ],
    ),
  );
});
