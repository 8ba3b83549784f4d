/** kubectl against the node (its admin kubeconfig). */
import { nodeDir, paths, tool } from './layout.ts';
import { sh } from './processes.ts';

/** Runs kubectl against the node. */
export async function nodeKubectl(args: string[], input?: string, dir = nodeDir()): Promise<string> {
  return sh(tool('kubectl'), [`--kubeconfig=${paths(dir).kubeconfig}`, ...args], { input });
}
