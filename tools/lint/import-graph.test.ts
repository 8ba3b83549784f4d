import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { circles, cyclePath, importGraph, modules } from './import-graph.ts';
import { treeCircles } from './no-cycle.ts';

/** Writes `files` (name -> source) into a fresh folder and returns the folder. */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'import-graph-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const cases: {
  name: string;
  files: Record<string, string>;
  value: string[][];
  all: string[][];
}[] = [
  {
    name: 'a value circle of three',
    files: {
      'a.ts': "import { b } from './b.ts';\nexport const a = b;",
      'b.ts': "export { c as b } from './c.ts';",
      'c.ts': "import { a } from './a.ts';\nexport const c = () => a;",
    },
    value: [['a.ts', 'b.ts', 'c.ts']],
    all: [['a.ts', 'b.ts', 'c.ts']],
  },
  {
    name: 'a circle closed by a type-only import',
    files: {
      'a.ts': "import { b } from './b.ts';\nexport type A = string;\nexport const a = b;",
      'b.ts': "import type { A } from './a.ts';\nexport const b: A = '';",
    },
    value: [],
    all: [['a.ts', 'b.ts']],
  },
  {
    name: 'an export type and an inline type import',
    files: {
      // `import { type A }` still loads the module (verbatimModuleSyntax): a value edge.
      'a.ts': "import { type B } from './b.ts';\nexport type A = B;",
      'b.ts': "export type { A as B } from './a.ts';",
    },
    value: [],
    all: [['a.ts', 'b.ts']],
  },
  {
    name: 'a dynamic import and a package import make no edge',
    files: {
      'a.ts': "import 'node:fs';\nimport { b } from './b.ts';\nexport const a = b;",
      'b.ts': "export const b = async () => import('./a.ts');",
    },
    value: [],
    all: [],
  },
  {
    name: 'a self-import',
    files: { 'a.ts': "import './a.ts';" },
    value: [['a.ts']],
    all: [['a.ts']],
  },
];

for (const c of cases) {
  test(`import circles: ${c.name}`, () => {
    const dir = tree(c.files);
    try {
      const files = modules(dir);
      const names = (groups: string[][]): string[][] =>
        groups.map((g) => g.map((f) => f.slice(dir.length + 1)));
      assert.deepEqual(names(circles(importGraph(files, 'value'))), c.value);
      assert.deepEqual(names(circles(importGraph(files, 'all'))), c.all);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });
}

test('cyclePath walks a circle back to where it starts', () => {
  const graph = new Map([
    ['a', ['b']],
    ['b', ['c', 'd']],
    ['c', ['a']],
    ['d', []],
  ]);
  assert.deepEqual(cyclePath(graph, ['a', 'b', 'c']), ['a', 'b', 'c', 'a']);
});

test('the tree has no import circle but the exempt ones (make lint)', () => {
  assert.deepEqual(treeCircles(), []);
});
