import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ClassicApiInput } from './read.ts';
import { idExtractorOf, idExtractorProblems } from './id-extractor.ts';
import { checkClassicApi } from './api-definition.ts';

/** An API whose gRPC plugin server's auth_check has this identity extractor. */
const api = (id_extractor: unknown, driver = 'grpc'): ClassicApiInput => ({
  name: 'a',
  proxy: { listen_path: '/a/', target_url: 'http://u' },
  enable_coprocess_auth: driver === 'grpc',
  custom_middleware: {
    driver,
    auth_check: { name: 'Check', path: driver === 'grpc' ? '' : 'c.ts' },
    id_extractor,
  },
});

/** The reference sample's extractor (bdd/custom_resources/httpbin.keyless.grpc-auth...). */
const SAMPLE = {
  extract_from: 'header',
  extract_with: 'value',
  extractor_config: { header_name: 'Authorization' },
};

const paths = (a: ClassicApiInput): [string, string][] => idExtractorProblems(a).map((p) => [p.path, p.type]);
const AT = 'custom_middleware.id_extractor';

describe('custom_middleware.id_extractor', () => {
  test("the reference sample's: served", () => {
    assert.deepEqual(paths(api(SAMPLE)), []);
    assert.deepEqual(idExtractorOf(api(SAMPLE)), {
      from: 'header',
      headerName: 'Authorization',
      with: 'value',
    });
  });

  test('none, disabled, or the empty shape of exported definitions: no extractor, no problem', () => {
    for (const x of [
      undefined,
      { ...SAMPLE, disabled: true },
      { extract_from: '', extract_with: '', extractor_config: {}, disabled: false },
    ]) {
      assert.deepEqual(paths(api(x)), []);
      assert.equal(idExtractorOf(api(x)), undefined);
    }
  });

  test('a form parameter; a regular expression over the body, its match index', () => {
    const form = { extract_from: 'form', extract_with: 'value', extractor_config: { param_name: 'token' } };
    assert.deepEqual(paths(api(form)), []);
    assert.deepEqual(idExtractorOf(api(form)), { from: 'form', paramName: 'token', with: 'value' });
    const body = {
      extract_from: 'body',
      extract_with: 'regex',
      extractor_config: { regex_expression: 'user-[0-9]+', regex_match_index: 1 },
    };
    assert.deepEqual(paths(api(body)), []);
    assert.deepEqual(idExtractorOf(api(body)), {
      from: 'body',
      with: 'regex',
      expression: 'user-[0-9]+',
      matchIndex: 1,
    });
  });

  test('without a gRPC auth_check it keeps nothing: refused', () => {
    assert.deepEqual(paths(api(SAMPLE, 'svc')), [[AT, 'Invalid']]);
    assert.deepEqual(paths({ ...api(SAMPLE), custom_middleware: { driver: 'grpc', id_extractor: SAMPLE } }), [
      [AT, 'Invalid'],
    ]);
  });

  test('xpath is not built yet: refused by name', () => {
    assert.deepEqual(
      paths(
        api({
          extract_from: 'body',
          extract_with: 'xpath',
        }),
      ),
      [[`${AT}.extract_with`, 'NotSupported']],
    );
  });

  test('each setting missing or wrong is named', () => {
    assert.deepEqual(paths(api({ extract_with: 'value' })), [[`${AT}.extract_from`, 'Required']]);
    assert.deepEqual(paths(api({ ...SAMPLE, extract_from: 'cookie' })), [
      [`${AT}.extract_from`, 'NotSupported'],
    ]);
    assert.deepEqual(paths(api({ ...SAMPLE, extract_with: 'jq' })), [[`${AT}.extract_with`, 'NotSupported']]);
    assert.deepEqual(paths(api({ ...SAMPLE, extractor_config: {} })), [
      [`${AT}.extractor_config.header_name`, 'Required'],
    ]);
    assert.deepEqual(paths(api({ ...SAMPLE, extractor_config: { header_name: 'a b' } })), [
      [`${AT}.extractor_config.header_name`, 'Invalid'],
    ]);
    assert.deepEqual(paths(api({ extract_from: 'form', extract_with: 'value' })), [
      [`${AT}.extractor_config.param_name`, 'Required'],
    ]);
    // The reference's value extractor reads no body (every request would be one identity).
    assert.deepEqual(paths(api({ extract_from: 'body', extract_with: 'value' })), [
      [`${AT}.extract_with`, 'Invalid'],
    ]);
    assert.deepEqual(paths(api({ extract_from: 'body', extract_with: 'regex' })), [
      [`${AT}.extractor_config.regex_expression`, 'Required'],
    ]);
    assert.deepEqual(
      paths(
        api({
          extract_from: 'body',
          extract_with: 'regex',
          extractor_config: { regex_expression: 'a(', regex_match_index: -1 },
        }),
      ),
      [
        [`${AT}.extractor_config.regex_expression`, 'Invalid'],
        [`${AT}.extractor_config.regex_match_index`, 'Invalid'],
      ],
    );
  });

  test('a setting the chosen source and method do not read is refused, not ignored', () => {
    assert.deepEqual(paths(api({ ...SAMPLE, extractor_config: { header_name: 'X-Id', param_name: 'id' } })), [
      [`${AT}.extractor_config.param_name`, 'Invalid'],
    ]);
    assert.deepEqual(
      paths(api({ ...SAMPLE, extractor_config: { header_name: 'X-Id', regex_expression: 'x' } })),
      [[`${AT}.extractor_config.regex_expression`, 'Invalid']],
    );
  });

  test('through the whole API rule: xpath_expression is not supported yet, refused alone', () => {
    const got = checkClassicApi({
      ...api({
        extract_from: 'body',
        extract_with: 'xpath',
        extractor_config: { xpath_expression: '//user' },
      }),
      api_id: 'a',
      org_id: 'o',
    });
    assert.deepEqual(
      got
        .filter((p) => p.path.startsWith(AT))
        .map((p) => [p.path, p.type])
        .sort(),
      [[`${AT}.extractor_config.xpath_expression`, 'NotSupportedYet']],
    );
  });
});
