/**
 * `validate_json` as a table: a valid body is proxied; a wrong type, a missing property or a body
 * that is not JSON is refused with 422 and the first error (`error_response_code` where set),
 * another method is not checked. Runs against the files and Redis stores with the fast path on
 * and off; the route reads bodies, so node:http serves every row.
 */
import { useEcho } from '../../testing/echo.ts';
import { keyless, oneVersion } from '../../testing/harness.ts';
import { describeTable, type Row } from '../../testing/tables.ts';

const userSchema = {
  $schema: 'http://json-schema.org/draft-04/schema#',
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string' } },
};

const echo = useEcho();

const apis = (): Record<string, unknown>[] => [
  keyless(
    'valid',
    '/valid/',
    echo().url,
    oneVersion({
      extended_paths: {
        validate_json: [
          { path: '/users', method: 'POST', schema: userSchema },
          {
            path: '/b64',
            method: 'POST',
            schema_b64: Buffer.from(JSON.stringify(userSchema)).toString('base64'),
            error_response_code: 400,
          },
        ],
      },
    }),
  ),
];

const rows: Row[] = [
  // JSON Schema validation (the route reads bodies: node:http).
  {
    name: 'validate_json: a valid body',
    method: 'POST',
    path: '/valid/users',
    body: '{"name":"ada"}',
    status: 200,
    nodeHttp: true,
  },
  {
    name: 'validate_json: a wrong type',
    method: 'POST',
    path: '/valid/users',
    body: '{"name":1}',
    status: 422,
    error: '/name: must be string',
    nodeHttp: true,
  },
  {
    name: 'validate_json: a missing property',
    method: 'POST',
    path: '/valid/users',
    body: '{}',
    status: 422,
    error: "payload: must have required property 'name'",
    nodeHttp: true,
  },
  {
    name: 'validate_json: not JSON',
    method: 'POST',
    path: '/valid/users',
    body: 'name=ada',
    status: 422,
    error: 'payload: the body is not JSON',
    nodeHttp: true,
  },
  {
    name: 'validate_json: schema_b64 and error_response_code',
    method: 'POST',
    path: '/valid/b64',
    body: '[]',
    status: 400,
    error: 'payload: must be object',
    nodeHttp: true,
  },
  { name: 'validate_json: another method', path: '/valid/users', status: 200, nodeHttp: true },
];

describeTable('validate_json', apis, rows);
