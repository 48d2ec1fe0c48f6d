// A bounded cache for the Gateway object's lookups per channel or agent (gateway-events.ts): an
// entry is reused until its time runs out, and past `maxEntries` the least recently used goes.
// The object lives as long as its socket and sees every channel the bot is in, a DM channel per
// person who writes to it included, so a plain Map of them would only ever grow.

export interface ExpiringCacheOptions {
  /** How long an entry is reused after it was set. */
  ttlMs: number;
  /** The most entries kept; the least recently used go first. */
  maxEntries: number;
}

export class ExpiringCache<K, V> {
  private readonly options: ExpiringCacheOptions;
  /** In order of use, least recent first (a Map keeps insertion order). */
  private readonly entries = new Map<K, { value: V; until: number }>();

  constructor(options: ExpiringCacheOptions) {
    this.options = options;
  }

  /** The value set for `key`, unless its time ran out; counts as a use. */
  get(key: K, now: number): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (now >= entry.until) return undefined;
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: K, value: V, now: number): void {
    this.entries.delete(key);
    this.entries.set(key, { value, until: now + this.options.ttlMs });
    // Entries that ran out go from the least recent end; then the size cap.
    for (const [oldest, entry] of this.entries) {
      if (now < entry.until && this.entries.size <= this.options.maxEntries) break;
      this.entries.delete(oldest);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
