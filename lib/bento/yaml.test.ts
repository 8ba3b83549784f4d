import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { emitYaml, locate } from './yaml.ts';

const config = {
  input: { http_server: { path: '/in', allowed_verbs: ['POST', 'PUT'] } },
  pipeline: { processors: [{ mapping: 'root = this\nfoo bar' }, { log: { message: 'x' } }] },
  output: { broker: { pattern: 'fan_out', outputs: [{ drop: {} }, { http_server: {} }] } },
};

test('emitYaml: the YAML is the same value', () => {
  assert.deepEqual(parse(emitYaml(config).text), config);
});

const cases: { name: string; problem: string; want: string }[] = [
  {
    name: 'a field',
    problem: '(3,1) field bogus not recognised',
    want: 's.input.http_server.path: field bogus not recognised',
  },
  {
    name: 'a Bloblang position becomes the mapping line and column',
    problem: '(11,23) expected =, got: bar',
    want: 's.pipeline.processors[0].mapping: line 2 column 5: expected =, got: bar',
  },
  {
    name: 'an item of a broker',
    problem: 'Error: (18,1) unable to infer output type',
    want: 's.output.broker.outputs[0].drop: unable to infer output type',
  },
  { name: 'no position', problem: 'something else', want: 's: something else' },
];

for (const c of cases) {
  test(`locate: ${c.name}`, () => {
    assert.equal(locate(c.problem, emitYaml(config, 's'), 's'), c.want);
  });
}
