// A room's turn journal (src/objects/conversation/turn-journal.ts) read from its Durable Object's SQLite, so a test
// can assert on the final state (STYLE.md rule 18): wait until every turn the room holds is
// finished and its reply handed over, then count turns and replies, instead of sleeping a while
// and seeing nothing.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, vi } from "vitest";
import { roomName } from "../../src/objects/conversation/room-client.ts";

export interface JournalRow {
  idempotencyKey: string | null;
  status: string;
  deliveryStatus: string | null;
  deliveredParts: number;
}

/** The room of a Discord channel served by `agentId`. */
export const discordRoom = (agentId: string, channel: string): string =>
  roomName(agentId, `discord:${channel}`);

/** Every turn the room journalled, in arrival order (none for a room that was never started). */
export async function journalRows(room: string): Promise<JournalRow[]> {
  return runInDurableObject(env.ROOMS.getByName(room), (_instance, state) => {
    const { sql } = state.storage;
    // The room makes the table when it starts: a room no turn ever reached may have none.
    const made = sql
      .exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'turn_journal'")
      .toArray();
    if (made.length === 0) return [];
    return sql
      .exec<{
        idempotency_key: string | null;
        status: string;
        delivery_status: string | null;
        delivered_parts: number;
      }>(
        "SELECT idempotency_key, status, delivery_status, delivered_parts FROM turn_journal ORDER BY seq",
      )
      .toArray()
      .map((row) => ({
        idempotencyKey: row.idempotency_key,
        status: row.status,
        deliveryStatus: row.delivery_status,
        deliveredParts: row.delivered_parts,
      }));
  });
}

/** Nothing more will happen to the turn: stored and evaluated (or failed), nothing left to send. */
export const isSettled = (row: JournalRow): boolean =>
  (row.status === "evaluated" || row.status === "failed") && row.deliveryStatus !== "pending";

/**
 * Waits until the room holds at least `turns` turns and every one is settled, and returns them.
 * Call it once every request that could start a turn has been answered: a turn is journalled
 * before its request is answered, so the rows are then all the turns there will be.
 */
export async function settledJournal(
  room: string,
  turns = 1,
  timeout = 15_000,
): Promise<JournalRow[]> {
  let rows: JournalRow[] = [];
  await vi.waitFor(
    async () => {
      rows = await journalRows(room);
      expect(rows.length).toBeGreaterThanOrEqual(turns);
      expect(rows.filter((row) => !isSettled(row))).toEqual([]);
    },
    { timeout, interval: 50 },
  );
  return rows;
}

/** How each turn the room journalled ended (`replied`, `ignored`…; null while it runs), in order. */
export async function turnOutcomes(room: string): Promise<Array<string | null>> {
  return runInDurableObject(env.ROOMS.getByName(room), (_instance, state) =>
    state.storage.sql
      .exec<{ status: string | null }>(
        "SELECT json_extract(outcome, '$.status') AS status FROM turn_journal ORDER BY seq",
      )
      .toArray()
      .map((row) => row.status),
  );
}
