// Agents in D1. The submitted character file is stored as written (minus its secrets, which are
// sealed with SECRETS_KEY in their own column) and re-parsed on read, so one schema validates it
// both ways and nothing of the author's file is lost. Creating or replacing an agent writes its
// lore memories and its knowledge document in the same atomic batch when the agent's data lives in
// the catalog; in a memory database (src/db/shards.ts) they are written there first, under an
// anchor row that gives its foreign keys something to cascade from, then the catalog row.
import { and, asc, eq, gt, inArray, sql } from "drizzle-orm";
import { z } from "zod";
import { parseCharacter } from "../../characters/parse-character.ts";
import type { Character } from "../../runtime/character.ts";
import {
  ConflictError,
  InternalError,
  NotConfiguredError,
  NotFoundError,
  ValidationError,
} from "../../runtime/util/errors.ts";
import type { Memory } from "../../runtime/ports/memory.ts";
import { compiled } from "../memory/compiled.ts";
import type { Db } from "../db.ts";
import { readJsonColumn } from "../json-column.ts";
import { overwriteMemoriesStatements } from "../memory/memory-repo.ts";
import { agentFences, agents, memories } from "../schema.ts";
import type { SecretBox } from "../secret-box.ts";
import { CATALOG_DB, type DatabaseName } from "../shards.ts";
import type { AgentPlacement } from "./agent-placement.ts";
import {
  CHARACTER_DOCUMENT_ID,
  documentMemoryId,
  removeDocumentStatement,
  replaceDocumentStatements,
  type BuiltDocument,
} from "../memory/knowledge.ts";

export const AGENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export interface AgentRecord {
  id: string;
  character: Character;
  createdAt: number;
  /** Strictly increases on every change; rooms use it to know their cached character is stale. */
  updatedAt: number;
}

export interface AgentSummary {
  id: string;
  name: string;
  username: string | null;
  format: "v1" | "v0";
  createdAt: number;
  updatedAt: number;
}

/** Builds the character's knowledge document, written in the same batch as the agent. */
export type KnowledgeBuilder = (
  agentId: string,
  character: Character,
) => Promise<BuiltDocument | null>;

export interface AgentStore {
  create(file: unknown, now: number, knowledge?: KnowledgeBuilder): Promise<AgentRecord>;
  get(id: string): Promise<AgentRecord | null>;
  /** Only the version, for the hot path (is the agent there, is a room's copy current). */
  version(id: string): Promise<number | null>;
  /** `only` limits the listing to those ids (a token limited to some agents sees just those). */
  list(options: {
    limit: number;
    after?: string;
    only?: readonly string[];
  }): Promise<{ agents: AgentSummary[]; nextCursor: string | null }>;
  replace(
    id: string,
    file: unknown,
    now: number,
    knowledge?: KnowledgeBuilder,
  ): Promise<AgentRecord>;
  remove(id: string): Promise<boolean>;
  /** Marks the agent changed (its tools changed), so rooms re-read what they cached. */
  touch(id: string, now: number): Promise<boolean>;
}

/** The sealed secrets column, opened: secret name -> value. */
const StoredSecrets = z.record(z.string(), z.string());

/** Every turn's check that its agent exists and its character is current. */
const agentVersion = compiled((db) =>
  db
    .select({ updatedAt: agents.updatedAt })
    .from(agents)
    .where(eq(agents.id, sql.placeholder("id"))),
);

/** Where agents' data lives, and a handle on each database. */
export interface AgentHomes {
  placement: AgentPlacement;
  open(name: DatabaseName): Db;
}

export function createAgentStore(
  db: Db,
  secretBox: SecretBox | null,
  homes: AgentHomes,
): AgentStore {
  const sealSecrets = async (id: string, character: Character): Promise<string | null> => {
    if (Object.keys(character.secrets).length === 0) return null;
    if (!secretBox) {
      throw new NotConfiguredError(
        "this character has secrets, and SECRETS_KEY is not set to encrypt them at rest",
      );
    }
    return secretBox.seal(JSON.stringify(character.secrets), `agent:${id}`);
  };

  const toRecord = async (row: typeof agents.$inferSelect): Promise<AgentRecord> => {
    let character: Character;
    try {
      character = parseCharacter(JSON.parse(row.character));
    } catch {
      throw new InternalError(`agent ${row.id} has a stored character that no longer parses`);
    }
    if (row.secrets) {
      if (!secretBox)
        throw new NotConfiguredError(
          `agent ${row.id} has secrets, and SECRETS_KEY is not set to decrypt them`,
        );
      character.secrets = readJsonColumn(
        StoredSecrets,
        await secretBox.open(row.secrets, `agent:${row.id}`),
        `agents.secrets of ${row.id}`,
      );
    }
    return { id: row.id, character, createdAt: row.createdAt, updatedAt: row.updatedAt };
  };

  return {
    async create(file, now, knowledge) {
      const character = parseCharacter(file);
      const id = agentIdFor(character);
      const existing = await db
        .select({ id: agents.id })
        .from(agents)
        .where(eq(agents.id, id))
        .get();
      if (existing) {
        throw new ConflictError(
          `an agent with id "${id}" already exists; give the character a different "id" or name, or PUT /agents/${id} to replace it`,
        );
      }
      const secrets = await sealSecrets(id, character);
      const built = knowledge ? await knowledge(id, character) : null;
      const home = await homes.placement.choose();
      const row = {
        id,
        name: character.name,
        username: character.username ?? null,
        format: character.format,
        character: JSON.stringify(withoutSecrets(file)),
        secrets,
        shard: home === CATALOG_DB ? null : home,
        createdAt: now,
        updatedAt: now,
      };
      const memoryWrites = (target: Db) => [
        ...loreInserts(target, id, character, now),
        ...(built ? replaceDocumentStatements(target, built).inserts : []),
      ];
      if (home === CATALOG_DB) {
        await db.batch([
          // A fence an agent of this id left when it moved away must not hold the new one.
          db.delete(agentFences).where(eq(agentFences.agentId, id)),
          db.insert(agents).values(row),
          ...memoryWrites(db),
        ]);
        return { id, character, createdAt: now, updatedAt: now };
      }
      const data = homes.open(home);
      const anchor = anchorRow(id, character.name, now);
      // A row left by a create that failed half-way (the catalog does not know this id) goes
      // first, with everything cascading from it.
      await data.batch([
        data.delete(agentFences).where(eq(agentFences.agentId, id)),
        data.delete(agents).where(eq(agents.id, id)),
        data.insert(agents).values(anchor),
        ...memoryWrites(data),
      ]);
      try {
        await db.insert(agents).values(row);
      } catch (error) {
        // Ours only (the anchor's text): a create of the same id that won must keep its data.
        await data
          .delete(agents)
          .where(and(eq(agents.id, id), eq(agents.character, anchor.character)))
          .catch(() => undefined);
        throw error;
      }
      return { id, character, createdAt: now, updatedAt: now };
    },

    async get(id) {
      const row = await db.select().from(agents).where(eq(agents.id, id)).get();
      return row ? toRecord(row) : null;
    },

    async touch(id, now) {
      const updated = await db
        .update(agents)
        .set({ updatedAt: sql`max(${now}, ${agents.updatedAt} + 1)` })
        .where(eq(agents.id, id))
        .returning({ id: agents.id });
      return updated.length > 0;
    },

    async version(id) {
      const row = await agentVersion.bind(db, { id }).first<{ updated_at: number }>();
      return row?.updated_at ?? null;
    },

    async list({ limit, after, only }) {
      const rows = await db
        .select({
          id: agents.id,
          name: agents.name,
          username: agents.username,
          format: agents.format,
          createdAt: agents.createdAt,
          updatedAt: agents.updatedAt,
        })
        .from(agents)
        .where(
          and(
            after ? gt(agents.id, after) : undefined,
            only ? inArray(agents.id, [...only]) : undefined,
          ),
        )
        .orderBy(asc(agents.id))
        .limit(limit + 1);
      const page = rows.slice(0, limit);
      return { agents: page, nextCursor: rows.length > limit ? (page.at(-1)?.id ?? null) : null };
    },

    async replace(id, file, now, knowledge) {
      const character = parseCharacter(file);
      if (character.id !== undefined && character.id !== id) {
        throw new ValidationError(
          `the character's id "${character.id}" does not match the agent id "${id}" in the URL`,
        );
      }
      const current = await db
        .select({ createdAt: agents.createdAt, updatedAt: agents.updatedAt })
        .from(agents)
        .where(eq(agents.id, id))
        .get();
      if (!current) throw new NotFoundError(`no agent with id "${id}"`);
      const secrets = await sealSecrets(id, character);
      const updatedAt = Math.max(now, current.updatedAt + 1);
      const built = knowledge ? await knowledge(id, character) : null;
      const update = db
        .update(agents)
        .set({
          name: character.name,
          username: character.username ?? null,
          format: character.format,
          character: JSON.stringify(withoutSecrets(file)),
          secrets,
          updatedAt,
        })
        .where(eq(agents.id, id));
      const memoryWrites = async (target: Db) => [
        target.delete(memories).where(and(eq(memories.agentId, id), eq(memories.type, "lore"))),
        ...loreInserts(target, id, character, now),
        // The file's knowledge replaces what the previous version of the file brought.
        removeDocumentStatement(target, id, await documentMemoryId(id, CHARACTER_DOCUMENT_ID)),
        ...(built ? replaceDocumentStatements(target, built).inserts : []),
      ];
      const home = await homes.placement.of(id);
      if (home === CATALOG_DB) {
        await db.batch([update, ...(await memoryWrites(db))]);
      } else {
        // The memories first: should the catalog's update then fail, a retry writes both again.
        const data = homes.open(home);
        const [first, ...rest] = await memoryWrites(data);
        if (first) await data.batch([first, ...rest]);
        await update;
      }
      return { id, character, createdAt: current.createdAt, updatedAt };
    },

    async remove(id) {
      // Memories, rooms, participants and relationships go with it (ON DELETE CASCADE), in its
      // memory database first (no foreign key crosses databases), then in the catalog.
      const home = await homes.placement.of(id);
      if (home !== CATALOG_DB) await homes.open(home).delete(agents).where(eq(agents.id, id));
      homes.placement.forget(id);
      const result = await db.delete(agents).where(eq(agents.id, id)).returning({ id: agents.id });
      return result.length > 0;
    },
  };
}

/** The agent id: the file's own `id` when it has one, else a slug of the name. */
export function agentIdFor(character: Character): string {
  if (character.id !== undefined) {
    if (!AGENT_ID_PATTERN.test(character.id)) {
      throw new ValidationError("invalid character file", {
        issues: [
          {
            path: "id",
            message: "must be 1-64 letters, digits, '-' or '_', starting with a letter or digit",
          },
        ],
      });
    }
    return character.id;
  }
  const slug = (character.username ?? character.name)
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 64);
  if (!slug) {
    throw new ValidationError("invalid character file", {
      issues: [
        {
          path: "id",
          message: "the name has no letters or digits to make an id from; set an explicit id",
        },
      ],
    });
  }
  return slug;
}

function withoutSecrets(file: unknown): unknown {
  if (typeof file !== "object" || file === null) return file;
  const { secrets: _secrets, ...rest } = file as Record<string, unknown>;
  const settings = rest.settings;
  if (typeof settings === "object" && settings !== null && "secrets" in settings) {
    const { secrets: _nested, ...otherSettings } = settings as Record<string, unknown>;
    return { ...rest, settings: otherSettings };
  }
  return rest;
}

/**
 * The agent's row in its memory database: only an anchor for the foreign keys there (the catalog
 * holds the character; nothing reads agents from a memory database). Its character is a nonce,
 * so a failed create removes only its own.
 */
function anchorRow(id: string, name: string, now: number) {
  return {
    id,
    name,
    username: null,
    format: "v1" as const,
    character: JSON.stringify({ anchor: crypto.randomUUID() }),
    secrets: null,
    shard: null,
    createdAt: now,
    updatedAt: now,
  };
}

function loreInserts(db: Db, agentId: string, character: Character, now: number) {
  const rows = character.lore.map(
    (text, index): Memory => ({
      id: `${agentId}:lore:${index}`,
      type: "lore",
      agentId,
      roomId: null,
      userId: null,
      content: { text, source: "character" },
      metadata: { index },
      createdAt: now,
    }),
  );
  // Overwrites: a memory stored through the API under a lore id must not fail the whole write.
  return overwriteMemoriesStatements(db, rows);
}
