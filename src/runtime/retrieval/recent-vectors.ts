// An embedder that remembers its last texts' vectors, so a text costs one embedding call however
// often it is asked within a while: a question repeated, a query asked again after its turn stopped
// waiting for it (a late vector is kept, and used by whoever asks next), and above all a turn's
// message, whose stored copy is embedded after the reply with the very vector its query got.
// A text still being embedded is shared as it is; a failed call is forgotten, so the next ask
// tries again. Texts nobody waits for (a turn's reply) can ride along with the next call (later):
// a room's turns then cost one embedding call each, the query's. The search and the embedding
// pipeline share one of these per agent and isolate.
import type { Embedder } from "../ports/vectors.ts";

/** How many texts' vectors are kept (each 1.5-6 KB for 384-1,536 dimensions). */
export const RECENT_VECTORS = 512;
/** How many texts may wait to ride along; past it the oldest is dropped (its memory stays pending). */
const MAX_WAITING = 64;

export function withRecentVectors(embedder: Embedder, size = RECENT_VECTORS): Embedder {
  // Keyed by the embedder's id too: a pinned embedder may settle on another one (model/embedder.ts).
  const recent = new Map<string, Promise<Float32Array>>();
  const keep = (key: string, vector: Promise<Float32Array>) => {
    recent.delete(key);
    recent.set(key, vector);
    if (recent.size > size) recent.delete(recent.keys().next().value!);
  };
  const keyOf = (text: string) => `${embedder.id}\n${text}`;
  /** Texts waiting for the next call (later), oldest first. */
  let waiting: string[] = [];
  return {
    get id() {
      return embedder.id;
    },
    get kind() {
      return embedder.kind;
    },
    get dimensions() {
      return embedder.dimensions;
    },
    get maxBatch() {
      return embedder.maxBatch;
    },
    ...(embedder.ready ? { ready: () => embedder.ready!() } : {}),
    known: (text) => recent.has(keyOf(text)),
    later(texts) {
      waiting = [...new Set([...waiting, ...texts])].slice(-MAX_WAITING);
    },
    async embed(texts, signal) {
      // A pinned embedder settles which one it is first, so the keys name the one that embeds.
      await embedder.ready?.();
      const keys = texts.map(keyOf);
      const vectors = new Map<string, Promise<Float32Array>>();
      for (const key of keys) {
        const known = recent.get(key);
        if (known) vectors.set(key, known);
      }
      const missing = [...new Set(keys.filter((key) => !vectors.has(key)))];
      if (missing.length > 0) {
        // The waiting texts fill the call up to the embedder's batch size.
        const riders = waiting
          .map(keyOf)
          .filter((key) => !recent.has(key) && !missing.includes(key));
        const room = Math.max(0, embedder.maxBatch - missing.length);
        waiting = [];
        missing.push(...riders.slice(0, room));
        const call = embedder.embed(
          missing.map((key) => key.slice(key.indexOf("\n") + 1)),
          signal,
        );
        missing.forEach((key, i) => {
          const vector = call.then((found) => {
            const one = found[i];
            if (!one)
              throw new Error(
                `the embedder returned ${found.length} vectors for ${missing.length} texts`,
              );
            return one;
          });
          vectors.set(key, vector);
          vector.catch(() => {
            if (recent.get(key) === vector) recent.delete(key);
          });
        });
      }
      for (const [key, vector] of vectors) keep(key, vector);
      return Promise.all(keys.map((key) => vectors.get(key)!));
    },
  };
}
