/**
 * Bento's verdict on the streams of an SvcStreamsApiDefinition's document, at admission: the same
 * check the gateway's management API runs (lib/bento/streams.ts `checkStreams`), on one
 * long-lived Bento process (its streams API lints without creating anything), so an admission
 * costs one loopback call per stream, not a process. Without a linter (no Bento on the machine)
 * the webhook admits what its schema admits, and the gateway refuses the rest at write time.
 */
import { bentoMissing, bentoPath } from '../lib/bento/binary.ts';
import { BentoProcess } from '../lib/bento/process.ts';
import { checkStreams } from '../lib/bento/streams.ts';
import type { Logger } from '../lib/log.ts';

let linter: BentoProcess | undefined;

/** Starts the linter when Bento is installed (`binary`, default: the one `make deps` builds). */
export function startStreamsLinter(log: Logger, binary?: string): BentoProcess | undefined {
  const file = bentoPath(binary);
  const missing = bentoMissing(file);
  if (missing !== undefined) {
    log.warn('streams are checked without Bento', { reason: missing });
    return undefined;
  }
  linter = new BentoProcess({ binary: file, log: log.child({ part: 'streams-lint' }) });
  return linter;
}

/** Stops the linter (tests, shutdown). */
export async function stopStreamsLinter(): Promise<void> {
  const l = linter;
  linter = undefined;
  await l?.stop();
}

/** Bento's problems with the streams of `doc` as `<document path>: <message>`; none without a linter. */
export async function lintStreamsDocument(doc: Record<string, unknown>): Promise<string[]> {
  if (linter === undefined) return [];
  await linter.up();
  return checkStreams(linter, 'admission', doc);
}
