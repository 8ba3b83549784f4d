/**
 * Bento's verdict on the streams of an SvcStreamsApiDefinition's document, at admission: the same
 * check the gateway's management API runs (lib/bento/streams.ts `checkStreams`), on one
 * long-lived Bento process (its streams API lints without creating anything), so an admission
 * costs one loopback call per stream, not a process. The operator image ships Bento
 * (images/operator.Containerfile, SVC_WEBHOOK_BENTO_PATH). A server whose Bento is missing refuses
 * every document with streams, naming why, after the rules that need no Bento
 * (schemas/rules/streams.ts): admitting them unchecked would let the gateway refuse later what
 * the webhook admitted (docs/design/streams.md, `The admission webhook runs Bento`).
 */
import { bentoMissing, bentoPath } from '../lib/bento/binary.ts';
import { BentoProcess } from '../lib/bento/process.ts';
import { checkStreams } from '../lib/bento/streams.ts';
import type { Logger } from '../lib/log.ts';
import { hasStreams, planStreams, STREAMS_PATH } from '../schemas/rules/streams.ts';

/** The running linter, or why there is none (Bento missing); undefined until started. */
let linter: BentoProcess | { missing: string } | undefined;

/** Starts the linter (`binary`, default: the one `make deps` builds); undefined when Bento is missing. */
export function startStreamsLinter(log: Logger, binary?: string): BentoProcess | undefined {
  const file = bentoPath(binary);
  const missing = bentoMissing(file);
  if (missing !== undefined) {
    log.error('documents with streams are refused: Bento is not installed', { path: file });
    linter = {
      missing: `the stream processor (Bento) the webhook checks streams with is not installed at ${file}: set SVC_WEBHOOK_BENTO_PATH (the operator image has it at /usr/local/bin/bento)`,
    };
    return undefined;
  }
  const started = new BentoProcess({ binary: file, log: log.child({ part: 'streams-lint' }) });
  linter = started;
  return started;
}

/** Stops the linter (tests, shutdown). */
export async function stopStreamsLinter(): Promise<void> {
  const l = linter;
  linter = undefined;
  if (l instanceof BentoProcess) await l.stop();
}

/**
 * Bento's problems with the streams of `doc` as `<document path>: <message>`. Without Bento, the
 * problems of the rules that need none, else one saying the streams can't be checked. Nothing
 * when no linter was started (validators tested on their own).
 */
export async function lintStreamsDocument(doc: Record<string, unknown>): Promise<string[]> {
  if (linter === undefined) return [];
  if (!(linter instanceof BentoProcess)) {
    if (!hasStreams(doc)) return [];
    const { problems } = planStreams('admission', doc);
    if (problems.length > 0) return problems.map((p) => `${p.path}: ${p.message}`);
    return [`${STREAMS_PATH}: ${linter.missing}`];
  }
  await linter.up();
  return checkStreams(linter, 'admission', doc);
}
