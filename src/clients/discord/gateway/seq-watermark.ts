// The highest sequence number whose events, and every one before it, have been handed to their
// rooms. Events of different channels are handed over concurrently and finish out of order; a
// RESUME from this number makes Discord replay whatever was received but not yet handed over
// (each message turn is keyed by its message id, so a replay is never a second turn).

export class SeqWatermark {
  private settled: number | null;
  private readonly open = new Set<number>();
  private readonly done = new Set<number>();

  constructor(start: number | null = null) {
    this.settled = start;
  }

  /** The watermark: resume from here. */
  get value(): number | null {
    return this.settled;
  }

  /** Events started and not yet finished. */
  get inFlight(): number {
    return this.open.size;
  }

  /** A new session numbers its events from 1 again. */
  reset(start: number | null = null): void {
    this.settled = start;
    this.open.clear();
    this.done.clear();
  }

  begin(seq: number): void {
    if (this.settled !== null && seq <= this.settled) return;
    this.open.add(seq);
  }

  /** Marks one event handed over; returns true when the watermark moved. */
  finish(seq: number): boolean {
    if (!this.open.delete(seq)) return false;
    this.done.add(seq);
    const lowestOpen = this.open.size > 0 ? Math.min(...this.open) : Number.POSITIVE_INFINITY;
    let moved = false;
    for (const candidate of [...this.done].sort((a, b) => a - b)) {
      if (candidate > lowestOpen) break;
      this.done.delete(candidate);
      if (this.settled === null || candidate > this.settled) {
        this.settled = candidate;
        moved = true;
      }
    }
    return moved;
  }
}
