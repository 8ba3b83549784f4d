import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { apiDefinitionModel } from '../models/api-definition/index.ts';
import { policyModel } from '../models/policy.ts';
import { compile } from '../validate.ts';
import type { FieldProblemType } from './field-problem.ts';
import {
  ID_PATTERN,
  ID_RULE,
  MAX_ID_LENGTH,
  MAX_KEY_ID_LENGTH,
  idProblem,
  isValidId,
  keyIdProblem,
} from './ids.ts';

/** Each case: the ID, and the problem type it gets (undefined: valid). */
type Case = [name: string, id: string, want: FieldProblemType | undefined];

const objectIds: Case[] = [
  ['hex', '3f2a9c0d5e1b4a7f8c6d2e0b9a1f3c5d', undefined],
  ['every allowed character', 'Az09._~-', undefined],
  ['base64url of namespace/name (the operator derives IDs so)', 'ZGVmYXVsdC9wZXRzdG9yZQ', undefined],
  ['dots only', '...', 'Invalid'],
  ['dots around a letter', '..a.', undefined],
  ['the longest', 'a'.repeat(MAX_ID_LENGTH), undefined],
  ['empty', '', 'Required'],
  ['.', '.', 'Invalid'],
  ['..', '..', 'Invalid'],
  ['a slash', 'a/b', 'Invalid'],
  ['a slash alone', '/', 'Invalid'],
  ['a newline', 'a\nb', 'Invalid'],
  ['NUL', 'a\u0000', 'Invalid'],
  ['DEL', 'a\u007f', 'Invalid'],
  ['a C1 control', 'a\u0085', 'Invalid'],
  ['percent', 'a%2Fb', 'Invalid'],
  ['question mark', 'a?b', 'Invalid'],
  ['hash', 'a#b', 'Invalid'],
  ['backslash', 'a\\b', 'Invalid'],
  ['a space', 'a b', 'Invalid'],
  ['white space only', '   ', 'Invalid'],
  ['non-ASCII', 'café', 'Invalid'],
  ['too long', 'a'.repeat(MAX_ID_LENGTH + 1), 'TooLong'],
];

const keyIds: Case[] = [
  ['hex', '3f2a9c0d5e1b4a7f8c6d2e0b9a1f3c5d', undefined],
  ['base64 with + and =', 'dGVzdCtrZXk+PQ+x==', undefined],
  ['an email as a basic-auth user name', 'ops@example.com', undefined],
  ['colons', 'org:name', undefined],
  ['a percent sign', '100%', undefined],
  ['question mark and hash', 'a?b#c', undefined],
  ['backslash', 'domain\\user', undefined],
  ['an inner space', 'John Smith', undefined],
  ['non-ASCII', 'jörg', undefined],
  ['three dots', '...', undefined],
  ['the longest', 'k'.repeat(MAX_KEY_ID_LENGTH), undefined],
  ['empty', '', 'Required'],
  ['.', '.', 'Invalid'],
  ['..', '..', 'Invalid'],
  ['a slash (base64 with /)', 'ab/cd==', 'Invalid'],
  ['a newline', 'key\n', 'Invalid'],
  ['a tab', 'a\tb', 'Invalid'],
  ['NUL', '\u0000', 'Invalid'],
  ['DEL', 'a\u007f', 'Invalid'],
  ['white space only', '   ', 'Invalid'],
  ['a leading space', ' key', 'Invalid'],
  ['a trailing space', 'key ', 'Invalid'],
  ['too long', 'k'.repeat(MAX_KEY_ID_LENGTH + 1), 'TooLong'],
];

describe('idProblem (APIs, policies, organisations)', () => {
  for (const [name, id, want] of objectIds) {
    test(name, () => {
      const p = idProblem('id', id);
      assert.equal(p?.type, want, JSON.stringify(p));
      if (p !== undefined) assert.equal(p.path, 'id');
      assert.equal(isValidId(id), want === undefined);
      // The schema pattern (with the models' maxLength) says the same as the function.
      assert.equal(new RegExp(ID_PATTERN).test(id) && id.length <= MAX_ID_LENGTH, want === undefined);
    });
  }
  test('a value that is not a string', () => {
    assert.equal(idProblem('api_id', 7)?.type, 'Invalid');
  });
  test('the messages say how to fix it', () => {
    assert.match(idProblem('id', '..')?.message ?? '', /a URL resolves \. and \.\. away/);
    assert.match(idProblem('id', 'a/b')?.message ?? '', /without \//);
    assert.match(
      idProblem('id', 'a b')?.message ?? '',
      new RegExp(`" " is not allowed: ${ID_RULE.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    );
  });
  test('the pattern answers at once on a long input that almost matches', () => {
    const started = performance.now();
    assert.equal(new RegExp(ID_PATTERN).test(`${'a'.repeat(1_000_000)}!`), false);
    assert.ok(performance.now() - started < 1000);
  });
});

describe('keyIdProblem (custom keys, basic-auth user names)', () => {
  for (const [name, id, want] of keyIds) {
    test(name, () => {
      const p = keyIdProblem('keyID', id);
      assert.equal(p?.type, want, JSON.stringify(p));
      if (p !== undefined) assert.equal(p.path, 'keyID');
    });
  }
});

describe('the models use the rule', () => {
  const api = compile(apiDefinitionModel);
  const policy = compile(policyModel);
  test('api_id ..', () => {
    assert.deepEqual(
      api({ api_id: '..', name: 'a', proxy: { listen_path: '/a/', target_url: 'http://u' } }).filter(
        (p) => p.path === 'api_id',
      ),
      [{ path: 'api_id', message: `Invalid value: ${ID_RULE}` }],
    );
  });
  test('policy id .', () => {
    assert.deepEqual(
      policy({ id: '.' }).filter((p) => p.path === 'id'),
      [{ path: 'id', message: `Invalid value: ${ID_RULE}` }],
    );
  });
});
