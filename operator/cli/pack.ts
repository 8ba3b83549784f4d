/**
 * The plugin's npm package: `node operator/cli/pack.ts [--out DIR]` writes
 * `kubectl-svc-<version>.tgz` to DIR (default: the current folder) and prints its path; it
 * installs with `npm install -g kubectl-svc-<version>.tgz`, without a registry.
 *
 * Node strips types only outside `node_modules`, so an installed package must be JavaScript: the
 * plugin and what it imports from the repository (translators, schemas, lib) are compiled by tsc
 * with the repository's tsconfig (relative `.ts` imports rewritten to `.js`), and the npm packages
 * the compiled code imports are bundled (`bundleDependencies`), copied with their own
 * dependencies from the repository's `node_modules` at the versions of its package.json. The
 * package is staged in a temporary folder: nothing is written to the checkout but the tarball.
 */
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import ts from 'typescript';

const REPO = path.resolve(import.meta.dirname, '../..');
const ENTRY = path.join(REPO, 'operator/cli/kubectl-svc.ts');

/**
 * The oldest Node the package runs on: the one it is tested with (undici, which the plugin uses
 * to reach gateways, needs 22.19 at least). Written into `engines` and checked by the executable.
 */
export const PLUGIN_NODE_MAJOR = 24;

interface PackageJson {
  name?: string;
  version?: string;
  description?: string;
  license?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

function readPackageJson(dir: string): PackageJson {
  return JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as PackageJson;
}

/** Compiles the plugin and its imports to `<stage>/dist`; returns the files written. */
function compile(stage: string): string[] {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    path.join(REPO, 'tsconfig.json'),
    {
      noEmit: false,
      outDir: path.join(stage, 'dist'),
      rootDir: REPO,
      rewriteRelativeImportExtensions: true,
      noEmitOnError: true,
      listEmittedFiles: true,
    },
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        fail([d]);
      },
    },
  );
  if (parsed === undefined) throw new Error('tsconfig.json: cannot be read');
  // Only the plugin's import graph, not every file the tsconfig includes.
  const program = ts.createProgram({ rootNames: [ENTRY], options: parsed.options });
  const result = program.emit();
  fail([...ts.getPreEmitDiagnostics(program), ...result.diagnostics]);
  return result.emittedFiles ?? [];
}

/** Throws with tsc's own rendering of the errors, if any. */
function fail(diagnostics: readonly ts.Diagnostic[]): void {
  const errors = diagnostics.filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length === 0) return;
  throw new Error(
    ts.formatDiagnostics(errors, {
      getCanonicalFileName: (f) => f,
      getCurrentDirectory: () => REPO,
      getNewLine: () => '\n',
    }),
  );
}

/** The npm packages the compiled files import (type-only imports are gone from them). */
async function importedPackages(files: readonly string[]): Promise<string[]> {
  const names = new Set<string>();
  for (const file of files.filter((f) => f.endsWith('.js'))) {
    const { importedFiles } = ts.preProcessFile(await readFile(file, 'utf8'), true, true);
    for (const { fileName: spec } of importedFiles) {
      if (spec.startsWith('.') || spec.startsWith('node:')) continue;
      const parts = spec.split('/');
      names.add(spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? spec));
    }
  }
  return [...names].sort();
}

/**
 * The folders (relative to the repository) of `names` and their dependencies as Node resolves
 * them from the repository: the top-level ones under `node_modules/`; a nested one comes with
 * the package holding it.
 */
function dependencyFolders(names: readonly string[]): string[] {
  const seen = new Set<string>();
  const visit = (name: string, from: string, optional: boolean): void => {
    for (let dir = from; ; dir = path.dirname(dir)) {
      const candidate = path.join(dir, 'node_modules', name);
      if (existsSync(path.join(candidate, 'package.json'))) {
        if (seen.has(candidate)) return;
        seen.add(candidate);
        const pkg = readPackageJson(candidate);
        for (const dep of Object.keys(pkg.dependencies ?? {})) visit(dep, candidate, false);
        for (const dep of Object.keys({ ...pkg.optionalDependencies, ...pkg.peerDependencies })) {
          visit(dep, candidate, true);
        }
        return;
      }
      if (dir === REPO || path.dirname(dir) === dir) {
        if (optional) return;
        throw new Error(
          `${name} (needed from ${path.relative(REPO, from) || '.'}) is not installed: run npm ci`,
        );
      }
    }
  };
  for (const name of names) visit(name, REPO, false);
  return [...seen]
    .map((dir) => path.relative(REPO, dir))
    .filter((rel) => /^node_modules\/(@[^/]+\/)?[^/@][^/]*$/.test(rel))
    .sort();
}

/** The executable: refuses an older Node in words before anything is imported. */
function executable(): string {
  return `#!/usr/bin/env node
// kubectl-svc, compiled from operator/cli/kubectl-svc.ts by operator/cli/pack.ts.
const major = Number(process.versions.node.split('.')[0]);
if (major < ${PLUGIN_NODE_MAJOR}) {
  process.stderr.write('error: kubectl-svc needs Node ${PLUGIN_NODE_MAJOR} or later; this is Node ' + process.version + '\\n');
  process.exit(1);
}
await import('../dist/operator/cli/kubectl-svc.js');
`;
}

function run(command: string, args: readonly string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${command} ${args.join(' ')}: ${err.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** Builds the package and packs it into `outDir`; resolves to the tarball's path. */
export async function packPlugin(outDir: string): Promise<string> {
  const root = readPackageJson(REPO);
  const stage = await mkdtemp(path.join(os.tmpdir(), 'kubectl-svc-pack-'));
  try {
    const emitted = compile(stage);
    const packages = await importedPackages(emitted);
    const dependencies: Record<string, string> = {};
    for (const name of packages) {
      const version = root.dependencies?.[name];
      if (version === undefined) {
        throw new Error(`the plugin imports ${name}, which is not in the dependencies of package.json`);
      }
      dependencies[name] = version;
    }
    for (const rel of dependencyFolders(packages)) {
      await cp(path.join(REPO, rel), path.join(stage, rel), { recursive: true, verbatimSymlinks: true });
    }
    await mkdir(path.join(stage, 'bin'));
    await writeFile(path.join(stage, 'bin/kubectl-svc.js'), executable(), { mode: 0o755 });
    await cp(path.join(REPO, 'docs/kubectl-plugin.md'), path.join(stage, 'README.md'));
    const manifest = {
      name: 'kubectl-svc',
      version: root.version,
      description: 'kubectl svc: the kubectl plugin of svc (translate, explain, diff, status)',
      license: root.license,
      type: 'module',
      bin: { 'kubectl-svc': 'bin/kubectl-svc.js' },
      engines: { node: `>=${PLUGIN_NODE_MAJOR}` },
      dependencies,
      bundleDependencies: packages,
    };
    await writeFile(path.join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    await mkdir(outDir, { recursive: true });
    const out = path.resolve(outDir);
    const packed = JSON.parse(
      await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', out], stage),
    ) as { filename: string }[];
    const filename = packed[0]?.filename;
    if (filename === undefined) throw new Error('npm pack wrote no tarball');
    return path.join(out, filename);
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: '.' } } });
  process.stdout.write(`${await packPlugin(values.out)}\n`);
}
