/**
 * One error base class for all parts. `code` is stable and greppable (`GW_ERR_QUOTA_EXCEEDED`,
 * `OP_ERR_SPEC_INVALID`), `status` is the HTTP status when the error crosses HTTP, and `cause`
 * keeps the original error. Expected outcomes are values, not exceptions: throw these only for
 * failures.
 */
export class SvcError extends Error {
  readonly code: string;
  readonly status: number;

  constructor(code: string, message: string, opts: { status?: number; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = opts.status ?? 500;
  }
}

/** Bad input from a user or client: a field or value is wrong; retrying the same input won't help. */
export class InputError extends SvcError {
  constructor(code: string, message: string, opts: { status?: number; cause?: unknown } = {}) {
    super(code, message, { status: 400, ...opts });
  }
}

/** The named thing does not exist. */
export class NotFoundError extends SvcError {
  constructor(code: string, message: string, opts: { cause?: unknown } = {}) {
    super(code, message, { status: 404, ...opts });
  }
}

/** The request conflicts with the current state (a concurrent change, a duplicate). */
export class ConflictError extends SvcError {
  constructor(code: string, message: string, opts: { cause?: unknown } = {}) {
    super(code, message, { status: 409, ...opts });
  }
}

/** A failure that may pass: network errors, timeouts, 429 and 5xx from a peer. Retry with backoff. */
export class TransientError extends SvcError {
  constructor(code: string, message: string, opts: { status?: number; cause?: unknown } = {}) {
    super(code, message, { status: 503, ...opts });
  }
}

/** The message of any thrown value, for logs and status fields. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
