// Knowledge ingestion: a document (text or markdown) becomes one `document` memory and its
// token-sized, overlapping `fragment` memories, written in one atomic batch that also removes any
// earlier version of the same document, so re-ingesting replaces it and a failure leaves the old
// version whole. Fragments are then embedded in batches; any that fail stay pending (found by text).
import { and, eq, or } from "drizzle-orm";
import { chunkDocument, DEFAULT_CHUNK_OPTIONS } from "../../runtime/retrieval/chunking.ts";
import type { TokenCounter } from "../../runtime/util/tokens.ts";
import type { Character } from "../../runtime/character.ts";
import type { Memory } from "../../runtime/ports/memory.ts";
import type { Db } from "../db.ts";
import type { EmbeddingPipeline } from "./embedding-pipeline.ts";
import { overwriteMemoriesStatements } from "./memory-repo.ts";
import { memories } from "../schema.ts";
import { sha256Hex } from "../../runtime/util/hashing.ts";

/** A document's longest text, in characters (its request body is also capped at 512 KiB). */
export const MAX_DOCUMENT_CHARS = 500_000;

export const DOCUMENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;

export interface KnowledgeInput {
  agentId: string;
  text: string;
  title?: string;
  documentId?: string;
  format: "text" | "markdown";
  /** Where it came from: "api", "character". */
  source: string;
  now: number;
}

export interface IngestResult {
  documentId: string;
  fragments: number;
  embedded: number;
  replaced: boolean;
  /** Why embedding did not finish, when it did not (the fragments are still found by text). */
  embeddingError?: string;
}

export interface BuiltDocument {
  documentId: string;
  /** The stored id of the document memory; fragments are `<memoryId>:<position>`. */
  memoryId: string;
  document: Memory;
  fragments: Memory[];
}

/** Chunks a document into its memories, without writing anything. */
export async function buildDocument(
  tokens: TokenCounter,
  input: KnowledgeInput,
): Promise<BuiltDocument> {
  const documentId =
    input.documentId ?? slugFor(input.title) ?? `doc-${(await sha256Hex(input.text)).slice(0, 16)}`;
  // The stored id is a short hash of agent and document id, so a document id of any length makes
  // short memory ids, its fragments' too; the document id itself is metadata. Ids are unique per
  // agent (migration 0013): another agent's memory under the same id changes nothing here.
  const memoryId = await documentMemoryId(input.agentId, documentId);
  const chunks = chunkDocument(input.text, tokens, {
    ...DEFAULT_CHUNK_OPTIONS,
    format: input.format,
  });
  const document: Memory = {
    id: memoryId,
    type: "document",
    agentId: input.agentId,
    roomId: null,
    userId: null,
    content: { text: input.text, source: input.source },
    metadata: {
      documentId,
      title: input.title ?? null,
      format: input.format,
      fragments: chunks.length,
      tokens: tokens.count(input.text),
    },
    createdAt: input.now,
  };
  const fragments: Memory[] = chunks.map((chunk) => ({
    id: `${memoryId}:${chunk.position}`,
    type: "fragment",
    agentId: input.agentId,
    roomId: null,
    userId: null,
    parentId: memoryId,
    content: { text: chunk.text, source: input.source },
    metadata: {
      documentId,
      position: chunk.position,
      heading: chunk.heading || input.title || null,
      title: input.title ?? null,
      tokens: chunk.tokens,
    },
    createdAt: input.now,
  }));
  return { documentId, memoryId, document, fragments };
}

/**
 * Statements that remove a document (if stored) and write its new version: put them in one batch.
 * The writes overwrite, so a memory stored through the API under one of its ids cannot fail them.
 */
export function replaceDocumentStatements(db: Db, built: BuiltDocument) {
  const inserts = overwriteMemoriesStatements(db, [built.document, ...built.fragments]);
  return { remove: removeDocumentStatement(db, built.document.agentId, built.memoryId), inserts };
}

export function removeDocumentStatement(db: Db, agentId: string, memoryId: string) {
  return db
    .delete(memories)
    .where(
      and(
        eq(memories.agentId, agentId),
        or(
          and(eq(memories.id, memoryId), eq(memories.type, "document")),
          and(eq(memories.parentId, memoryId), eq(memories.type, "fragment")),
        ),
      ),
    )
    .returning({ id: memories.id });
}

export async function ingestDocument(
  db: Db,
  pipeline: EmbeddingPipeline,
  tokens: TokenCounter,
  input: KnowledgeInput,
): Promise<IngestResult> {
  const built = await buildDocument(tokens, input);
  const { remove, inserts } = replaceDocumentStatements(db, built);
  const [removed] = await db.batch([remove, ...inserts]);
  const result: IngestResult = {
    documentId: built.documentId,
    fragments: built.fragments.length,
    embedded: 0,
    replaced: removed.length > 0,
  };
  try {
    result.embedded = await pipeline.embed(built.fragments);
  } catch (error) {
    result.embeddingError = error instanceof Error ? error.message : String(error);
  }
  return result;
}

/** The document id under which a character file's `knowledge` text entries are stored. */
export const CHARACTER_DOCUMENT_ID = "character-knowledge";

/**
 * A character's `knowledge` text entries as one document (entries are paragraphs, so chunks keep
 * them whole). Path and directory entries name files a worker cannot read: ingest those through
 * POST /agents/:agentId/knowledge.
 */
export async function characterKnowledge(
  tokens: TokenCounter,
  agentId: string,
  character: Character,
  now: number,
): Promise<BuiltDocument | null> {
  const texts = character.knowledge.flatMap((item) =>
    item.kind === "text" && item.text.trim() ? [item.text.trim()] : [],
  );
  if (texts.length === 0) return null;
  return buildDocument(tokens, {
    agentId,
    text: texts.join("\n\n"),
    title: `${character.name}'s knowledge`,
    documentId: CHARACTER_DOCUMENT_ID,
    format: "text",
    source: "character",
    now,
  });
}

/** Deletes a document with its fragments; returns how many memories went (0: no such document). */
export async function deleteDocument(db: Db, agentId: string, documentId: string): Promise<number> {
  const id = await documentMemoryId(agentId, documentId);
  const removed = await db
    .delete(memories)
    .where(and(eq(memories.agentId, agentId), or(eq(memories.id, id), eq(memories.parentId, id))))
    .returning({ id: memories.id });
  return removed.length;
}

/** The stored id of an agent's document (its fragments are `<that>:<position>`). */
export async function documentMemoryId(agentId: string, documentId: string): Promise<string> {
  return `doc-${(await sha256Hex(`${agentId}\u0000${documentId}`)).slice(0, 24)}`;
}

/** A title as a document id: the same title ingested again replaces the earlier version. */
function slugFor(title: string | undefined): string | null {
  const slug = (title ?? "")
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 96);
  return slug || null;
}
