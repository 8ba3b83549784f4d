/**
 * What both relays of a response to the client share (the upstream call's and the stream
 * endpoint's to Bento): the request's context, the undici call's controller once it starts, and
 * one `done` heard once when the exchange is over. A client already gone when the call starts
 * ends the call at once.
 */
import type { Dispatcher } from 'undici';
import type { HttpContext } from '../pipeline/context.ts';

export abstract class ClientRelay {
  protected readonly ctx: HttpContext;
  protected controller: Dispatcher.DispatchController | undefined;
  readonly #done: () => void;
  #finished = false;

  constructor(ctx: HttpContext, done: () => void) {
    this.ctx = ctx;
    this.#done = done;
  }

  /** The exchange is over (`done` was heard). */
  protected get finished(): boolean {
    return this.#finished;
  }

  /** Ends the exchange: `done` is heard once, whatever calls this first. */
  protected finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#done();
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.ctx.res.destroyed) controller.abort(new Error('client closed the connection'));
  }
}
