#!/usr/bin/env node
/**
 * `kubectl svc`: the kubectl plugin (kubectl runs `kubectl-svc` from the PATH). Wiring only: each
 * subcommand is a module of this folder. docs/kubectl-plugin.md is its manual.
 */
import { main } from './main.ts';

process.exitCode = await main(process.argv.slice(2), {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  env: process.env,
});
