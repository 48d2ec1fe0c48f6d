// Seeds the characters shipped in characters/ into D1 so a newcomer can talk to an agent at once.
// Each file is validated with the same parser as POST /agents; an agent that already exists is
// left alone (your edits win). Usage: node scripts/seed.ts --local | --remote
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseCharacter } from "../src/characters/parse-character.ts";
import { agentIdFor } from "../src/db/stores/agent-store.ts";
import { buildDocument, characterKnowledge } from "../src/db/memory/knowledge.ts";
import { loadTokenCounter } from "../src/runtime/util/tokens.ts";
import { KnowledgeFileError, readKnowledgeFiles } from "./knowledge-files.ts";

const target = process.argv.includes("--remote") ? "--remote" : "--local";
const dir = "characters";
const now = Date.now();
const quote = (value: string | null) =>
  value === null ? "NULL" : `'${value.replaceAll("'", "''")}'`;

const statements: string[] = [];
const tokens = await loadTokenCounter();
const seeded: string[] = [];
const knowledgeFiles: string[] = [];
for (const file of readdirSync(dir)
  .filter((name) => name.endsWith(".json"))
  .sort()) {
  const raw: unknown = JSON.parse(readFileSync(join(dir, file), "utf8"));
  const character = parseCharacter(raw);
  if (Object.keys(character.secrets).length > 0) {
    throw new Error(
      `${file} has secrets: create it through POST /agents so they are encrypted with SECRETS_KEY`,
    );
  }
  const id = agentIdFor(character);
  seeded.push(`${id} (${file}, ${character.format})`);
  statements.push(
    `INSERT INTO agents (id, name, username, format, character, secrets, created_at, updated_at) VALUES (${quote(id)}, ${quote(character.name)}, ${quote(character.username ?? null)}, ${quote(character.format)}, ${quote(JSON.stringify(raw))}, NULL, ${now}, ${now}) ON CONFLICT(id) DO NOTHING;`,
  );
  character.lore.forEach((text, index) => {
    // Lore goes in only with a freshly seeded agent (same guard as the agent row).
    statements.push(
      `INSERT OR IGNORE INTO memories (id, type, agent_id, room_id, user_id, content, metadata, created_at) SELECT ${quote(`${id}:lore:${index}`)}, 'lore', ${quote(id)}, NULL, NULL, ${quote(JSON.stringify({ text, source: "character" }))}, ${quote(JSON.stringify({ index }))}, ${now} WHERE (SELECT created_at FROM agents WHERE id = ${quote(id)}) = ${now};`,
    );
  });
  // The file's knowledge entries, chunked as POST /agents would; vectors follow on first use
  // (the cron sweep, or `npm run memory -- init --agent <id>`), and text search finds them at once.
  // Text entries make one document; each file a `path` or `directory` entry names makes its own.
  const documents = [];
  const knowledge = await characterKnowledge(tokens, id, character, now);
  if (knowledge) documents.push(knowledge);
  const { files, skipped } = await readKnowledgeFiles(dir, character.knowledge, {
    confined: true,
  }).catch((error: unknown) => {
    throw error instanceof KnowledgeFileError ? new Error(`${file}: ${error.message}`) : error;
  });
  for (const skip of skipped)
    console.warn(`${file}: knowledge file ${skip.path} skipped: ${skip.reason}`);
  for (const knowledgeFile of files) {
    const { text, title, documentId, format } = knowledgeFile;
    documents.push(
      await buildDocument(tokens, {
        agentId: id,
        text,
        title,
        documentId,
        format,
        source: "character",
        now,
      }),
    );
  }
  for (const memory of documents.flatMap((document) => [
    document.document,
    ...document.fragments,
  ])) {
    statements.push(
      `INSERT OR IGNORE INTO memories (id, type, agent_id, room_id, user_id, parent_id, content, metadata, created_at) SELECT ${quote(memory.id)}, ${quote(memory.type)}, ${quote(id)}, NULL, NULL, ${quote(memory.parentId ?? null)}, ${quote(JSON.stringify(memory.content))}, ${quote(JSON.stringify(memory.metadata))}, ${now} WHERE (SELECT created_at FROM agents WHERE id = ${quote(id)}) = ${now};`,
    );
  }
  if (files.length > 0) knowledgeFiles.push(`${id}: ${files.map((f) => f.path).join(", ")}`);
}

const work = mkdtempSync(join(tmpdir(), "edge-agents-seed-"));
try {
  const sqlFile = join(work, "seed.sql");
  writeFileSync(sqlFile, statements.join("\n"));
  execFileSync("wrangler", ["d1", "execute", "DB", target, `--file=${sqlFile}`], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  console.log(
    `Seeded ${target.slice(2)} D1 with: ${seeded.join(", ")} (existing agents left unchanged)`,
  );
  if (knowledgeFiles.length > 0)
    console.log(
      `Knowledge files (stored with newly seeded agents only): ${knowledgeFiles.join("; ")}`,
    );
} finally {
  rmSync(work, { recursive: true, force: true });
}
