// A database's size against D1's ceiling, cheaply enough for every /health call: D1 reports the
// database's size with every statement (`meta.size_after`), so one small read of the daily
// samples (database_size_daily, written by the hourly upkeep) gives the size now and the size a
// week ago, hence the growth per day and the days left. No table is scanned. Each database (the
// catalog, each memory database) keeps its own samples: each has its own ceiling.
import type { Env } from "../../env.ts";
import { openDb, type Db } from "../db.ts";
import { CATALOG_DB, type DatabaseName, databaseBinding, memoryDatabases } from "../shards.ts";

/** D1's ceiling per database (paid plan), in bytes: 10 GB, counted in decimal to err early. */
export const D1_MAX_DATABASE_BYTES = 10_000_000_000;
/** Growth is measured against the oldest sample this many days back (at least a day's worth). */
export const GROWTH_WINDOW_DAYS = 7;
/** Samples older than this are deleted when a new one is taken. */
export const SIZE_SAMPLE_RETENTION_DAYS = 90;
const DAY_MS = 86_400_000;

export interface DatabaseSize {
  /** Bytes now, as D1 reports them; null when D1 reports no size (it always does when deployed). */
  bytes: number | null;
  limitBytes: number;
  /** Growth per day over the last GROWTH_WINDOW_DAYS; null until samples span a day. */
  bytesPerDay: number | null;
  /** Whole days until the ceiling at that rate; null when not growing or not yet known. */
  daysLeft: number | null;
}

interface Sample {
  bytes: number;
  sampled_at: number;
}

const SAMPLES = `SELECT bytes, sampled_at FROM database_size_daily WHERE day >= ? ORDER BY day LIMIT 1`;
const SAMPLE = `INSERT INTO database_size_daily (day, bytes, sampled_at) VALUES (?1, ?2, ?3)
  ON CONFLICT (day) DO UPDATE SET bytes = excluded.bytes, sampled_at = excluded.sampled_at`;
const PRUNE = `DELETE FROM database_size_daily WHERE day < ?`;

const utcDay = (at: number) => new Date(at).toISOString().slice(0, 10);

/** The catalog and each memory database of this deployment, each with its own ceiling. */
export function deploymentDatabases(env: Env): { name: DatabaseName; db: Db }[] {
  const names: DatabaseName[] = [CATALOG_DB, ...memoryDatabases(env)];
  return names.map((name) => ({ name, db: openDb(databaseBinding(env, name)) }));
}

/** Every database's size and days left (for /health): one small read each, at once. */
export async function deploymentSizes(
  env: Env,
  now: number,
): Promise<({ name: DatabaseName } & DatabaseSize)[]> {
  return Promise.all(
    deploymentDatabases(env).map(async ({ name, db }) => ({
      name,
      ...(await databaseSize(db, now)),
    })),
  );
}

/** The size now and the rate since the window's oldest sample: one indexed read. */
export async function databaseSize(db: Db, now: number): Promise<DatabaseSize> {
  const result = await db.$client
    .prepare(SAMPLES)
    .bind(utcDay(now - GROWTH_WINDOW_DAYS * DAY_MS))
    .all<Sample>();
  const size = result.meta.size_after;
  const bytes = typeof size === "number" && size > 0 ? size : null;
  return projection(bytes, result.results[0] ?? null, now);
}

/** Today's sample of this database's size (the last of the day stays); returns the size. */
export async function sampleDatabaseSize(db: Db, now: number): Promise<number | null> {
  const { bytes } = await databaseSize(db, now);
  if (bytes === null) return null;
  const client = db.$client;
  await client.batch([
    client.prepare(SAMPLE).bind(utcDay(now), bytes, now),
    client.prepare(PRUNE).bind(utcDay(now - SIZE_SAMPLE_RETENTION_DAYS * DAY_MS)),
  ]);
  return bytes;
}

/** Days left at the window's rate; a rate from less than a day of samples is noise. */
export function projection(bytes: number | null, oldest: Sample | null, now: number): DatabaseSize {
  const known = { bytes, limitBytes: D1_MAX_DATABASE_BYTES, bytesPerDay: null, daysLeft: null };
  if (bytes === null || oldest === null) return known;
  const days = (now - oldest.sampled_at) / DAY_MS;
  if (days < 1) return known;
  const bytesPerDay = Math.round((bytes - oldest.bytes) / days);
  const daysLeft =
    bytesPerDay > 0 ? Math.max(0, Math.floor((D1_MAX_DATABASE_BYTES - bytes) / bytesPerDay)) : null;
  return { ...known, bytesPerDay, daysLeft };
}
