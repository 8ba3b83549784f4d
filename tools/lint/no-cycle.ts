import { relative, resolve } from 'node:path';
import { circles, cyclePath, importGraph, modules } from './import-graph.ts';

/**
 * `make lint`'s import-circle check over the whole tree: no import may close a circle, type-only
 * imports included (the circles issue 29 found in gateway/admin, operator/controllers and
 * webhooks were of types; a rule on value imports alone would not keep them gone). Prints each
 * circle with one path around it and exits 1. Read docs/design/imports.md.
 */

const root = resolve(import.meta.dirname, '../..');

/** The folders checked: every part, lib/ and schemas/, the tests and the tools. */
export const FOLDERS = [
  'lib',
  'schemas',
  'operator',
  'webhooks',
  'gateway',
  'dashboard',
  'e2e',
  'tools',
  'examples',
];

/**
 * Circles allowed for now, each as its sorted files relative to the root, with the issue that
 * removes it. A circle that grows or changes is no longer this entry and fails.
 */
export const EXEMPT: readonly (readonly string[])[] = [];

/** The import circles of the tree not in {@link EXEMPT}, as paths relative to the root. */
export function treeCircles(): { files: string[]; path: string[] }[] {
  const files = FOLDERS.flatMap((f) => modules(resolve(root, f)));
  const graph = importGraph(files, 'all');
  const exempt = new Set(EXEMPT.map((g) => g.join('\n')));
  return circles(graph)
    .map((group) => ({
      files: group.map((f) => relative(root, f)),
      path: cyclePath(graph, group).map((f) => relative(root, f)),
    }))
    .filter((c) => !exempt.has(c.files.join('\n')));
}

if (import.meta.main) {
  const found = treeCircles();
  for (const c of found) {
    console.error(`import circle (${c.files.length} files): ${c.path.join(' -> ')}`);
    for (const f of c.files) console.error(`  ${f}`);
  }
  if (found.length > 0) {
    console.error(
      `${found.length} import circle(s); break them by moving what they share down (docs/design/imports.md)`,
    );
    process.exit(1);
  }
}
