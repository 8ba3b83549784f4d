import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_NESTING_DEPTH, nestingMessage, nestingProblem, parseDocumentText, tooDeep } from './nesting.ts';

/** A list nested `depth` levels deep (the outermost counted), as JSON. */
const lists = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
/** Objects nested `depth` levels deep under the top-level field `top`, as JSON. */
const objects = (depth: number, top = 'deep'): string =>
  `{"${top}":${'{"a":'.repeat(depth - 2)}{}${'}'.repeat(depth - 2)}}`;

describe('tooDeep', () => {
  const cases: [name: string, value: unknown, want: string | undefined][] = [
    ['a scalar', 7, undefined],
    ['null', null, undefined],
    ['an empty object', {}, undefined],
    ['lists at the limit', JSON.parse(lists(MAX_NESTING_DEPTH)), undefined],
    ['lists one past the limit', JSON.parse(lists(MAX_NESTING_DEPTH + 1)), '[0]'],
    ['objects at the limit', JSON.parse(objects(MAX_NESTING_DEPTH)), undefined],
    ['objects one past the limit', JSON.parse(objects(MAX_NESTING_DEPTH + 1)), 'deep'],
    ['5,000 levels', JSON.parse(objects(5000, 'x-deep')), 'x-deep'],
    ['1,000,000 levels', JSON.parse(lists(1_000_000)), '[0]'],
    ['a field name that needs quotes', JSON.parse(objects(200, 'a b')), '"a b"'],
    [
      'a wide document stays within the limit',
      { paths: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`/p${String(i)}`, { get: {} }])) },
      undefined,
    ],
  ];
  for (const [name, value, want] of cases) {
    test(name, () => {
      assert.deepEqual(tooDeep(value), want === undefined ? undefined : { under: want });
    });
  }
});

describe('nestingProblem', () => {
  test('names the field, the limit and where', () => {
    assert.deepEqual(nestingProblem('spec', JSON.parse(objects(300, 'config_data')), 'spec'), {
      path: 'spec',
      type: 'Invalid',
      message:
        'spec is nested more than 128 levels deep (under config_data): at most 128 objects and lists may be nested in one another',
    });
    assert.equal(nestingProblem('spec', { a: [1, { b: 2 }] }), undefined);
  });
});

describe('parseDocumentText', () => {
  const refused = (under: string): { nesting: string } => ({
    nesting: nestingMessage('the document', under === '' ? undefined : { under }),
  });
  const cases: [name: string, text: string, want: unknown][] = [
    ['JSON', '{"openapi": "3.0.3"}', { value: { openapi: '3.0.3' } }],
    ['YAML', 'openapi: 3.0.3\n', { value: { openapi: '3.0.3' } }],
    [
      'JSON at the limit',
      objects(MAX_NESTING_DEPTH),
      { value: JSON.parse(objects(MAX_NESTING_DEPTH)) as unknown },
    ],
    ['JSON one past the limit', objects(MAX_NESTING_DEPTH + 1), refused('deep')],
    ['JSON 5,000 levels deep', objects(5000), refused('deep')],
    [
      'YAML flow at the limit',
      `deep: ${lists(MAX_NESTING_DEPTH - 1)}\n`,
      { value: { deep: JSON.parse(lists(MAX_NESTING_DEPTH - 1)) as unknown } },
    ],
    ['YAML flow one past the limit', `deep: ${lists(MAX_NESTING_DEPTH)}\n`, refused('deep')],
    // The YAML parser's recursion gives out first: refused all the same, by the limit.
    ['YAML flow 5,000 levels deep', `deep: ${lists(5000)}\n`, refused('')],
    [
      'a syntax error',
      'openapi: [',
      {
        syntax:
          'Flow sequence in block collection must be sufficiently indented and end with a ] at line 1, column 11',
      },
    ],
  ];
  for (const [name, text, want] of cases) {
    test(name, () => {
      assert.deepEqual(parseDocumentText(text), want);
    });
  }
  test('the message names the limit', () => {
    assert.match(
      nestingMessage('the document', { under: 'paths' }),
      /more than 128 levels deep \(under paths\)/,
    );
  });
});
