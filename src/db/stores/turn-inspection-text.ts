// The bulky part of a turn inspector record (the prompt's sections' text, the tools' arguments
// and results) as one gzip JSON object in R2 (the MEDIA bucket), so D1 keeps only the outline.
// Keys start with the turn's UTC day (`inspections/2026-11-27/<agent>/<turn>`): the store deletes
// a pruned row's object by its key, and a sweep of whole days a day past the retention (one
// listing of day prefixes) takes whatever no row points at any more (an agent deleted with its
// rows, a delete that failed).
import { checkJsonValue } from "../json-column.ts";
import { type InspectionText, InspectionTextShape } from "./turn-inspection-shapes.ts";

const PREFIX = "inspections/";
const DAY_MS = 86_400_000;
/** R2 deletes up to 1,000 keys a call, and lists up to 1,000 a page. */
const R2_KEYS_PER_CALL = 1_000;

export function inspectionTextKey(agentId: string, turnId: string, startedAt: number): string {
  return `${PREFIX}${dayOf(startedAt)}/${agentId}/${turnId}`;
}

/** `expiresAt` (ms) goes in the object's metadata, for whoever looks at the bucket. */
export async function putInspectionText(
  bucket: R2Bucket,
  key: string,
  text: InspectionText,
  expiresAt: number,
): Promise<void> {
  const gzipped = await new Response(
    new Blob([JSON.stringify(text)]).stream().pipeThrough(new CompressionStream("gzip")),
  ).arrayBuffer();
  await bucket.put(key, gzipped, {
    httpMetadata: { contentType: "application/json", contentEncoding: "gzip" },
    customMetadata: { expiresAt: new Date(expiresAt).toISOString() },
  });
}

/** The text, or null when there is none (never written, or already pruned). */
export async function getInspectionText(
  bucket: R2Bucket,
  key: string,
): Promise<InspectionText | null> {
  const object = await bucket.get(key);
  if (!object) return null;
  const json = await new Response(
    object.body.pipeThrough(new DecompressionStream("gzip")),
  ).json<unknown>();
  return checkJsonValue(InspectionTextShape, json, `the inspector text ${key}`);
}

export async function deleteInspectionTexts(bucket: R2Bucket, keys: string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += R2_KEYS_PER_CALL)
    await bucket.delete(keys.slice(i, i + R2_KEYS_PER_CALL));
}

/**
 * Deletes every object of the UTC days that ended a day or more before `before`; returns how
 * many. The day's margin lets every database's prune take its rows (and their objects) first.
 */
export async function sweepInspectionTexts(bucket: R2Bucket, before: number): Promise<number> {
  const days = await bucket.list({ prefix: PREFIX, delimiter: "/" });
  let deleted = 0;
  for (const prefix of days.delimitedPrefixes) {
    const day = Date.parse(`${prefix.slice(PREFIX.length, -1)}T00:00:00Z`);
    if (!Number.isFinite(day) || day + 2 * DAY_MS > before) continue;
    for (let cursor: string | undefined, more = true; more; ) {
      const page = await bucket.list({ prefix, cursor, limit: R2_KEYS_PER_CALL });
      const keys = page.objects.map((object) => object.key);
      if (keys.length > 0) await bucket.delete(keys);
      deleted += keys.length;
      more = page.truncated;
      cursor = page.truncated ? page.cursor : undefined;
    }
  }
  return deleted;
}

function dayOf(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}
