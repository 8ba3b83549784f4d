import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import ts from 'typescript';

/**
 * The import graph of the repository's TypeScript and the circles in it. One checker for the
 * whole tree: `make lint` runs it through tools/lint/no-cycle.ts, and schemas/imports.test.ts
 * holds schemas/ to the stricter rule (type imports counted too). Read docs/design/imports.md.
 */

/** Which imports make an edge: `value` (what Node loads) or `all` (type-only imports too). */
export type EdgeKind = 'value' | 'all';

/** Folders never walked: dependencies, fixtures, build output. */
const SKIP = new Set(['node_modules', 'testdata', '.git', '.tmp', 'dist', 'generated-ui']);

/** Every .ts/.tsx module under `dir` (recursively); `tests` false leaves out *.test.ts. */
export function modules(dir: string, tests = true): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return SKIP.has(e.name) ? [] : modules(path, tests);
    if (!/\.tsx?$/.test(e.name) || e.name.endsWith('.d.ts')) return [];
    return tests || !/\.test\.tsx?$/.test(e.name) ? [path] : [];
  });
}

/**
 * The relative imports and re-exports of a module, as absolute paths. A static `import` or
 * `export ... from` is a value edge unless it is `import type`/`export type` as a whole (an
 * `import { type A }` still loads the module under verbatimModuleSyntax). A dynamic `import()`
 * is no edge: it runs after every module has loaded, so it cannot make a loading circle.
 */
export function importsOf(file: string, kind: EdgeKind): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  const out: string[] = [];
  for (const node of source.statements) {
    let spec: ts.Expression | undefined;
    let typeOnly = false;
    if (ts.isImportDeclaration(node)) {
      spec = node.moduleSpecifier;
      typeOnly = node.importClause?.phaseModifier === ts.SyntaxKind.TypeKeyword;
    } else if (ts.isExportDeclaration(node)) {
      spec = node.moduleSpecifier;
      typeOnly = node.isTypeOnly;
    }
    if (spec === undefined || !ts.isStringLiteral(spec) || !spec.text.startsWith('.')) continue;
    if (typeOnly && kind === 'value') continue;
    out.push(resolve(dirname(file), spec.text));
  }
  return out;
}

/** The graph over `files`: each file to the files among them it imports. */
export function importGraph(files: readonly string[], kind: EdgeKind): Map<string, string[]> {
  const known = new Set(files);
  return new Map(files.map((f) => [f, importsOf(f, kind).filter((d) => known.has(d))]));
}

/**
 * The import circles of a graph: its strongly connected groups of more than one file, and
 * self-imports, each sorted, in a stable order (Tarjan's algorithm).
 */
export function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v) ?? 0);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string | undefined;
    do {
      w = stack.pop();
      if (w !== undefined) {
        onStack.delete(w);
        group.push(w);
      }
    } while (w !== undefined && w !== v);
    if (group.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(group.sort());
  };
  for (const f of [...graph.keys()].sort()) if (!index.has(f)) visit(f);
  return out.sort((a, b) => (a[0] ?? '').localeCompare(b[0] ?? ''));
}

/** One path around a circle (a cycle through its first file), to print where it closes. */
export function cyclePath(graph: ReadonlyMap<string, readonly string[]>, group: readonly string[]): string[] {
  const inGroup = new Set(group);
  const start = group[0];
  if (start === undefined) return [];
  const prev = new Map<string, string>();
  const queue: string[] = [start];
  while (queue.length > 0) {
    const v: string = queue.shift() ?? start;
    for (const w of graph.get(v) ?? []) {
      if (!inGroup.has(w)) continue;
      if (w === start) {
        const path: string[] = [];
        for (let at: string | undefined = v; at !== undefined && at !== start; at = prev.get(at))
          path.unshift(at);
        return [start, ...path, start];
      }
      if (!prev.has(w)) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}
