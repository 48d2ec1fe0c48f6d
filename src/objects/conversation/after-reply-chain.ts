// A room's work after its replies (each reply's write to D1, then its evaluators), chained so it
// reaches D1 in turn order. Its own object so that both sides can hold it without holding each
// other: the turn queue adds to it, and the room's history cache and history reads wait on it.
export class AfterReplyChain {
  private tail: Promise<void> = Promise.resolve();

  /** Runs `work` after everything added before it; a failure is the work's own to report. */
  add(work: () => Promise<void>): void {
    this.tail = this.tail.then(work).catch(() => undefined);
  }

  /** Resolves once everything added so far has run (or failed). */
  settled(): Promise<void> {
    return this.tail;
  }
}
