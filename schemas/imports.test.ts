import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * schemas/ reads downwards only: models and rules share no circle, and the rules of one model
 * do not import each other both ways (rules/target.ts and rules/read.ts hold what several
 * rules share). A circle, even of type imports, fails here with the files that make it.
 */

const root = import.meta.dirname;

/** Every module of schemas/ (tests and generated files aside). */
function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'testdata' ? [] : modules(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The relative imports and re-exports of a module, as absolute paths. */
function importsOf(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  const found = source.matchAll(/^(?:import|export)\s[^;]*?\sfrom\s+'(\.[^']+)'/gms);
  return [...found].map((m) => resolve(dirname(file), m[1] ?? ''));
}

/** The import circles among `files`: strongly connected groups of more than one file, or a self-import. */
function circles(files: readonly string[]): string[][] {
  const graph = new Map(files.map((f) => [f, importsOf(f).filter((d) => files.includes(d))]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v) ?? 0);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (stack.includes(w)) {
        low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string | undefined;
    do {
      w = stack.pop();
      if (w !== undefined) group.push(w);
    } while (w !== undefined && w !== v);
    if (group.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(group.sort());
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return out;
}

test('schemas/ has no import circle', () => {
  const found = circles(modules(root)).map((group) => group.map((f) => relative(root, f)));
  assert.deepEqual(found, []);
});
