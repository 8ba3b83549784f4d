/**
 * Virtual endpoints (`extended_paths.virtual`), written once for the webhooks and the gateway:
 * the function's name must be a JavaScript identifier (the gateway calls it by name), its source
 * is base64 text (`function_source_type: blob`) or a `.js` file under the gateway's `plugin_dir`
 * (`file`: a relative path, no `..`; the gateway also refuses a symbolic link out of the
 * directory), and the source must be there. The gateway runs it (gateway/middleware/virtual-endpoints/).
 */
import type { VirtualMeta } from '../generated/models.ts';
import { quote, type FieldProblem } from './field-problem.ts';
import { model, problem, text } from './read.ts';

/**
 * Why the gateway refuses an API with virtual endpoints while its `enable_jsvm` is off (the
 * default): their functions run in a `node:vm` context, which is no security boundary.
 */
export const JSVM_OFF = 'JavaScript virtual endpoints are off on this gateway: set enable_jsvm';

/** The sources the gateway reads. */
export const VIRTUAL_SOURCE_TYPES = ['blob', 'file'] as const;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const BASE64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;
const SCRIPT_FILE = /\.(?:js|mjs|cjs)$/;

/** Why `path` can't name a virtual endpoint's file under `plugin_dir`, or undefined. */
export function virtualSourceProblem(path: string): string | undefined {
  if (path.startsWith('/') || path.includes('\\') || /^[A-Za-z]:/.test(path)) {
    return `${quote(path)}: write the file's path relative to the gateway's plugin_dir, such as virtual/hello.js`;
  }
  if (path.split('/').some((s) => s === '..' || s === '.' || s === '')) {
    return `${quote(path)}: the file stays inside the gateway's plugin_dir: remove "..", "." and empty segments`;
  }
  if (!SCRIPT_FILE.test(path)) return `${quote(path)}: name a JavaScript file (.js, .mjs or .cjs)`;
  return undefined;
}

/** Problems of one `virtual` entry (`where`: its field path). */
export function virtualProblems(where: string, e: unknown): FieldProblem[] {
  const entry = model<VirtualMeta>(e);
  if (entry === undefined || entry.disabled === true) return [];
  const out: FieldProblem[] = [];
  const name = text(entry.response_function_name) ?? '';
  if (!IDENTIFIER.test(name)) {
    out.push(
      problem(
        `${where}.response_function_name`,
        name === '' ? 'Required' : 'Invalid',
        `${quote(name)}: name the function the source defines, a JavaScript identifier such as myVirtualHandler`,
      ),
    );
  }
  const type = text(entry.function_source_type) ?? '';
  const uri = text(entry.function_source_uri) ?? '';
  if (!(VIRTUAL_SOURCE_TYPES as readonly string[]).includes(type)) {
    out.push(
      problem(
        `${where}.function_source_type`,
        'NotSupported',
        `${quote(type)}: write blob (the source in function_source_uri, base64) or file (a file under the gateway's plugin_dir)`,
      ),
    );
  } else if (uri.trim() === '') {
    out.push(
      problem(
        `${where}.function_source_uri`,
        'Required',
        'give the function source (blob: base64) or its file',
      ),
    );
  } else if (type === 'blob' && !BASE64.test(uri)) {
    out.push(
      problem(
        `${where}.function_source_uri`,
        'Invalid',
        'not base64: encode the JavaScript source with base64',
      ),
    );
  } else if (type === 'file') {
    const bad = virtualSourceProblem(uri);
    if (bad !== undefined) out.push(problem(`${where}.function_source_uri`, 'Invalid', bad));
  }
  return out;
}
