/**
 * Golden tests of a translation: each `testdata/<prefix>.*.in.yaml` is translated and compared
 * with its `.out.json`; `UPDATE_GOLDEN=1` rewrites the outputs instead.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { environment } from '../../lib/config.ts';

const dir = join(import.meta.dirname, 'testdata');

/** The inputs of `prefix`, parsed, by file name. */
export async function goldenInputs(prefix: string): Promise<{ file: string; input: unknown }[]> {
  const files = (await readdir(dir)).filter((f) => f.startsWith(`${prefix}.`) && f.endsWith('.in.yaml'));
  return Promise.all(
    files
      .sort()
      .map(async (file) => ({ file, input: parse(await readFile(join(dir, file), 'utf8')) as unknown })),
  );
}

/** One test per input: `check` asserts what must hold of the output, then the golden file is compared. */
export async function goldenTests<I, O>(
  prefix: string,
  translate: (input: I) => O,
  check: (output: O, input: I) => void,
): Promise<void> {
  const update = environment().UPDATE_GOLDEN === '1';
  for (const { file, input } of await goldenInputs(prefix)) {
    test(`golden: ${file}`, async () => {
      const got = translate(input as I);
      check(got, input as I);
      const goldenPath = join(dir, file.replace('.in.yaml', '.out.json'));
      const text = `${JSON.stringify(got, null, 2)}\n`;
      if (update) await writeFile(goldenPath, text);
      assert.equal(text, await readFile(goldenPath, 'utf8'));
    });
  }
}
