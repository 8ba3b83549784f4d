import { test } from 'node:test';
import assert from 'node:assert/strict';
import { relative } from 'node:path';
import { circles, importGraph, modules } from '../tools/lint/import-graph.ts';

/**
 * schemas/ reads downwards only: models and rules share no circle, and the rules of one model
 * do not import each other both ways (rules/target.ts and rules/read.ts hold what several
 * rules share). A circle, even of type imports, fails here with the files that make it. The
 * whole tree is held to the same rule by `make lint` (tools/lint/no-cycle.ts).
 */

const root = import.meta.dirname;

test('schemas/ has no import circle', () => {
  const files = modules(root, false);
  const found = circles(importGraph(files, 'all')).map((group) => group.map((f) => relative(root, f)));
  assert.deepEqual(found, []);
});
