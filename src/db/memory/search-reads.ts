// Hybrid search's reads of memory rows (src/db/memory/hybrid-search.ts): the full-text leg's one
// statement (its hits' rows and the neighbours of the best few), and the rows and neighbourhoods
// of given ids, each a batch through a reader (one call's own, or a turn's shared batch). Rows are
// read raw and mapped by hand (memoryRowOf), not through drizzle's row mapping.
import type { Memory } from "../../runtime/ports/memory.ts";
import type { RetrievalQuery } from "../../runtime/ports/retrieval.ts";
import type { Db } from "../db.ts";
import {
  adjacentFromRows,
  memoryRowOf,
  rowsAndNeighbourStatements,
  withEmbedded,
} from "./memory-repo.ts";
import type { RowReader } from "./row-reader.ts";
import { rankTextWithRows } from "./text-search.ts";

export type Loaded = Memory & { embedded: boolean };

/** A fused hit whose row was asked for and not found (deleted since it was ranked). */
export const GONE = { id: "" } as Loaded;

/** Rows and neighbourhoods read so far, by memory id (GONE: asked for, not found). */
export interface Read {
  rows: Map<string, Loaded>;
  around: Map<string, Loaded[]>;
}

/** The full-text leg: its hits best first, their rows, and the neighbours of the first `seeds`. */
export async function readText(
  db: Db,
  reader: RowReader,
  query: RetrievalQuery,
  seeds: number,
): Promise<Read & { hits: Array<{ id: string; score: number }> }> {
  const read: Read & { hits: Array<{ id: string; score: number }> } = {
    hits: [],
    rows: new Map(),
    around: new Map(),
  };
  const statement = rankTextWithRows(db, query, seeds);
  if (!statement) return read;
  const [raws = []] = await reader([statement]);
  const scored: Array<{ id: string; score: number }> = [];
  const neighbours: Array<{ seedId: string; memory: ReturnType<typeof memoryRowOf> }> = [];
  for (const raw of raws) {
    const row = memoryRowOf(raw);
    if (raw.seed_id === null || raw.seed_id === undefined) {
      read.rows.set(row.id, withEmbedded(row));
      scored.push({ id: row.id, score: raw.score as number });
    } else neighbours.push({ seedId: raw.seed_id as string, memory: row });
  }
  // BM25 is lower for better matches; equal scores keep the statement's order.
  read.hits = scored.sort((a, b) => a.score - b.score);
  const found = adjacentFromRows(query.agentId, neighbours);
  for (const { id } of read.hits.slice(0, seeds)) read.around.set(id, found.get(id) ?? []);
  return read;
}

/** The rows of `ids` and the neighbourhoods of `around`, in one D1 batch (none if both are empty). */
export async function readRows(
  db: Db,
  reader: RowReader,
  agentId: string,
  ids: string[],
  around: string[],
): Promise<Read> {
  const read: Read = { rows: new Map(), around: new Map() };
  const { rows: rowQueries, around: aroundQueries } = rowsAndNeighbourStatements(
    db,
    agentId,
    ids,
    around,
  );
  if (rowQueries.length + aroundQueries.length === 0) return read;
  const results = await reader([...rowQueries, ...aroundQueries]);
  for (const raw of results.slice(0, rowQueries.length).flat()) {
    const row = memoryRowOf(raw);
    read.rows.set(row.id, withEmbedded(row));
  }
  for (const id of ids) if (!read.rows.has(id)) read.rows.set(id, GONE);
  const aroundRows = results
    .slice(rowQueries.length)
    .flat()
    .map((raw) => ({ seedId: raw.seed_id as string, memory: memoryRowOf(raw) }));
  const found = adjacentFromRows(agentId, aroundRows);
  for (const id of around) read.around.set(id, found.get(id) ?? []);
  return read;
}
