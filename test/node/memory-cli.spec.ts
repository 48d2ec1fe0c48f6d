// The memory CLI (scripts/memory.ts) as a user runs it: a child process against the real worker in
// local workerd (the benchmarks' harness: the bundle `wrangler deploy` would upload, D1 with the
// migrations). Also the knowledge file reader the CLI and `npm run seed` share, on real folders,
// including the character files that try to read outside their folder.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBenchWorker, type BenchWorker } from "../../bench/worker-harness.ts";
import {
  documentIdFor,
  KnowledgeFileError,
  readKnowledgeFiles,
} from "../../scripts/knowledge-files.ts";
import type { KnowledgeItem } from "../../src/runtime/character.ts";

const run = promisify(execFile);
const AGENT = "cli-ada";

let worker: BenchWorker;
let work: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "edge-agents-cli-"));
  worker = await startBenchWorker({});
  const created = await worker.call("POST", "/agents", {
    id: AGENT,
    name: "Ada",
    bio: ["A helper."],
    system: "You are Ada.",
  });
  expect(created.status).toBe(201);
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** Runs the CLI; never throws on a non-zero exit, so tests can look at what a failing run said. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ["scripts/memory.ts", ...args, "--url", worker.base, `--token=${worker.token}`],
      { env: { ...process.env, COLUMNS: "200" } },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

function write(path: string, text: string | Buffer): void {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
}

async function documents(): Promise<
  Array<{ id: string; text: string; metadata: { documentId: string; fragments: number } }>
> {
  const response = await worker.call("GET", `/memories?agentId=${AGENT}&type=document&limit=100`);
  return (
    (await response.json()) as {
      memories: Array<{
        id: string;
        text: string;
        metadata: { documentId: string; fragments: number };
      }>;
    }
  ).memories;
}

describe("memory CLI: knowledge files", () => {
  it("stores each file of a folder as its own document, and replaces it when sent again", async () => {
    const docs = join(work, "docs");
    write(
      join(docs, "garden.md"),
      "# Garden\n\nAda grows basil and cherry tomatoes on a balcony facing south.\n",
    );
    write(
      join(docs, "notes", "bikes.txt"),
      "The blue bicycle needs a new chain before the spring ride.",
    );
    write(join(docs, "photo.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47]));

    const first = await cli("knowledge", docs, "--agent", AGENT);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/garden\.md\s+file:.*garden\.md\s+1\s+1\s+no/);
    expect(first.stdout).toMatch(/bikes\.txt\s+file:.*bikes\.txt\s+1\s+1\s+no/);
    expect(first.stdout).toContain("skipped");
    expect(first.stdout).toContain("photo.png: not a .md, .markdown, .txt or .text file");
    expect((await documents()).map((d) => d.text).sort()).toEqual([
      "# Garden\n\nAda grows basil and cherry tomatoes on a balcony facing south.",
      "The blue bicycle needs a new chain before the spring ride.",
    ]);

    write(join(docs, "garden.md"), "# Garden\n\nThe basil died; Ada now grows mint.\n");
    const again = await cli("knowledge", join(docs, "garden.md"), "--agent", AGENT, "--json");
    expect(again.code).toBe(0);
    const body = JSON.parse(again.stdout) as {
      documents: Array<{ replaced: boolean; fragments: number }>;
    };
    expect(body.documents).toEqual([expect.objectContaining({ replaced: true, fragments: 1 })]);
    const stored = await documents();
    expect(stored).toHaveLength(2);
    expect(stored.map((d) => d.text)).toContain("# Garden\n\nThe basil died; Ada now grows mint.");

    // What a turn's retrieval finds: the new fragment, not the replaced one.
    const similar = await cli(
      "similar",
      "what grows on the balcony",
      "--agent",
      AGENT,
      "--type",
      "fragment",
    );
    expect(similar.code).toBe(0);
    expect(similar.stdout).toContain("now grows mint");
    expect(similar.stdout).not.toContain("cherry tomatoes");
  });

  it("reads a character file's path and directory entries relative to it", async () => {
    const folder = join(work, "characters");
    write(
      join(folder, "knowledge", "faq.md"),
      "## Opening hours\n\nThe repair café opens on Saturdays from ten to two.",
    );
    write(
      join(folder, "knowledge", "more", "tools.txt"),
      "Bring your own screwdrivers; soldering irons are provided.",
    );
    const character = {
      id: AGENT,
      name: "Fixer",
      bio: ["Runs a repair café."],
      knowledge: [
        "Inline text stays with the agent.",
        { path: "knowledge/faq.md" },
        { directory: "knowledge/more" },
      ],
    };
    write(join(folder, "fixer.json"), JSON.stringify(character));

    // No --agent: the character file names it.
    const result = await cli("knowledge", "--character", join(folder, "fixer.json"), "--json");
    expect(result.code).toBe(0);
    const body = JSON.parse(result.stdout) as {
      agentId: string;
      documents: Array<{ path: string; documentId: string }>;
    };
    expect(body.agentId).toBe(AGENT);
    expect(body.documents.map((d) => [d.path, d.documentId])).toEqual([
      ["knowledge/faq.md", "file:knowledge:faq.md"],
      ["knowledge/more/tools.txt", "file:knowledge:more:tools.txt"],
    ]);
    const found = await cli("similar", "when is the repair café open", "--agent", AGENT, "--json");
    expect(JSON.parse(found.stdout).memories[0].text).toContain("Saturdays from ten to two");
  });

  it("refuses a character entry that leads outside its folder, and sends nothing", async () => {
    const outside = join(work, "secret.txt");
    write(outside, "a private note that must not reach the agent");
    const folder = join(work, "hostile");
    write(join(folder, "ok.md"), "This file alone would be fine.");
    symlinkSync(outside, join(folder, "link.txt"));
    const before = (await documents()).length;

    for (const [entry, reason] of [
      [{ path: "../secret.txt" }, "leads outside the character's folder"],
      [{ path: outside }, "absolute paths are refused"],
      [{ path: "link.txt" }, "leads outside the character's folder"],
      [{ directory: "." }, "leads outside the character's folder"],
    ] as const) {
      write(
        join(folder, "bad.json"),
        JSON.stringify({ name: "Bad", bio: ["x"], knowledge: [{ path: "ok.md" }, entry] }),
      );
      const result = await cli(
        "knowledge",
        "--character",
        join(folder, "bad.json"),
        "--agent",
        AGENT,
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(reason);
      expect(result.stderr).toContain("Nothing was sent");
      expect(result.stderr).not.toContain("private note");
    }
    expect(await documents()).toHaveLength(before);
  });

  it("says what is wrong with bad input and stores nothing", async () => {
    const before = (await documents()).length;
    write(join(work, "bad", "binary.txt"), Buffer.from([0xff, 0xfe, 0x00, 0x41]));
    write(join(work, "bad", "big.md"), "words".repeat(120_000));
    write(
      join(work, "bad", "invalid.json"),
      JSON.stringify({ name: "", knowledge: [{ path: "a", directory: "b" }] }),
    );

    const cases: Array<[string[], RegExp]> = [
      [[join(work, "bad", "binary.txt")], /binary\.txt is not UTF-8 text/],
      [
        [join(work, "bad", "big.md")],
        /big\.md has 600,000 characters; a document takes at most 500,000: split it/,
      ],
      [[join(work, "nowhere.md")], /does not exist/],
      [["--character", join(work, "bad", "invalid.json")], /is not a valid character: /],
      [["--character", join(work, "bad", "missing.json")], /cannot read the character file/],
      [[], /one of the two/],
    ];
    for (const [args, message] of cases) {
      const result = await cli("knowledge", ...args, "--agent", AGENT);
      expect(result.code, args.join(" ")).toBe(1);
      expect(result.stderr).toMatch(message);
    }
    // Files name no agent; only a character file can.
    const noAgent = await cli("knowledge", join(work, "docs", "garden.md"));
    expect(noAgent.code).toBe(1);
    expect(noAgent.stderr).toMatch(/--agent is required/);
    const unknownAgent = await cli(
      "knowledge",
      join(work, "docs", "garden.md"),
      "--agent",
      "nobody",
    );
    expect(unknownAgent.code).toBe(1);
    expect(unknownAgent.stderr).toMatch(/HTTP 404 not_found/);
    expect(await documents()).toHaveLength(before);
  });
});

describe("memory CLI: list, stats, init, clear", () => {
  it("lists, counts and deletes what the API holds, asking before it deletes", async () => {
    const stored = await worker.call("POST", "/memories", {
      memories: [
        {
          agentId: AGENT,
          type: "fact",
          userId: "alice",
          text: "Alice keeps bees on her allotment.",
        },
        { agentId: AGENT, type: "fact", userId: "bob", text: "Bob restores old radios." },
      ],
    });
    expect(stored.status).toBe(201);

    const list = await cli("list", "--agent", AGENT, "--user", "alice");
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/fact\s+alice\s+yes\s+Alice keeps bees/);
    expect(list.stdout).not.toContain("radios");

    const stats = await cli("stats", "--agent", AGENT, "--json");
    expect(JSON.parse(stats.stdout)).toMatchObject({ byType: { fact: 2 }, pendingEmbedding: 0 });

    const init = await cli("init", "--agent", AGENT);
    expect(init.code).toBe(0);
    expect(init.stdout).toMatch(/embedder: +local:hash-v1 \(local\), 384 dimensions/);
    expect(init.stdout).toMatch(/done: 0 embedded; .*, 0 waiting for a vector/);

    const dryRun = await cli("clear", "--agent", AGENT, "--user", "alice");
    expect(dryRun.code).toBe(1);
    expect(dryRun.stdout).toContain("This would delete 1 memory of agent cli-ada (user alice)");
    expect(dryRun.stderr).toContain("nothing deleted: run again with --yes");
    const cleared = await cli("clear", "--agent", AGENT, "--user", "alice", "--yes");
    expect(cleared.stdout).toContain("deleted 1 memory of cli-ada");
    const bobsId = (
      JSON.parse((await cli("list", "--agent", AGENT, "--user", "bob", "--json")).stdout) as {
        memories: Array<{ id: string }>;
      }
    ).memories[0]!.id;
    const oneDryRun = await cli("clear", "--agent", AGENT, "--id", bobsId);
    expect(oneDryRun.code).toBe(1);
    expect(oneDryRun.stdout).toContain(
      `This would delete 1 memory of agent cli-ada (id ${bobsId})`,
    );
    expect(oneDryRun.stdout).toContain("Bob restores old radios");
    const docId = (await documents())[0]!.id;
    expect((await cli("clear", "--agent", AGENT, "--id", docId)).stdout).toContain(
      "Documents take their fragments with them.",
    );
    const after = await cli("similar", "who keeps bees", "--agent", AGENT, "--json");
    expect(after.code).toBe(0);
    expect(after.stdout).not.toContain("Alice keeps bees");
    const bob = await cli("list", "--agent", AGENT, "--user", "bob");
    expect(bob.stdout).toContain("Bob restores old radios");
    expect((await cli("clear", "--agent", AGENT, "--id", bobsId, "--yes")).stdout).toContain(
      "deleted 1 memory of cli-ada",
    );
    expect((await cli("list", "--agent", AGENT, "--user", "bob")).stdout.trim()).toBe("(none)");
  });

  it("explains a wrong token instead of failing obscurely", async () => {
    const { stderr } = await run(process.execPath, [
      "scripts/memory.ts",
      "stats",
      "--agent",
      AGENT,
      "--url",
      worker.base,
      "--token",
      "wrong",
    ]).catch((error: { stderr: string }) => error);
    expect(stderr).toMatch(/HTTP 401 unauthorized: .*\(check --token or EDGE_AGENTS_TOKEN\)/);
  });
});

describe("memory CLI: moving an agent between memory databases", () => {
  let sharded: BenchWorker;
  beforeAll(async () => {
    sharded = await startBenchWorker({}, { memoryDatabases: 2 });
  }, 120_000);
  afterAll(async () => {
    await sharded?.stop();
  });
  const moveCli = async (...args: string[]) => {
    try {
      const { stdout, stderr } = await run(process.execPath, [
        "scripts/memory.ts",
        "move",
        ...args,
        "--url",
        sharded.base,
        `--token=${sharded.token}`,
      ]);
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  };

  it("moves an agent to the other database and says what it verified", async () => {
    expect(
      (
        await sharded.call("POST", "/agents", {
          id: "mover",
          name: "Mover",
          bio: ["b"],
          system: "You move.",
        })
      ).status,
    ).toBe(201);
    const memories = Array.from({ length: 50 }, (_, i) => ({
      agentId: "mover",
      type: "fact",
      userId: "member",
      text: `fact ${i}`,
    }));
    expect((await sharded.call("POST", "/memories", { memories })).status).toBe(201);
    // New agents go to the emptiest memory database; the other one is where it moves.
    const first = await moveCli("MEMORY_DB_1", "--agent", "mover");
    const target = first.code === 0 ? "MEMORY_DB_1" : "MEMORY_DB_2";
    const moved = first.code === 0 ? first : await moveCli("MEMORY_DB_2", "--agent", "mover");
    if (first.code !== 0) expect(first.stderr).toContain("already lives in MEMORY_DB_1");
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout).toMatch(
      new RegExp(
        `moved mover to ${target}: \\d+ rows verified \\(counts (\\d+) = \\1, hash chains equal: true\\)`,
      ),
    );
    const listed = await sharded.call("GET", "/memories?agentId=mover&type=fact&limit=100");
    expect(((await listed.json()) as { memories: unknown[] }).memories).toHaveLength(50);
  });

  it("refuses a database the worker does not bind, and an abort with nothing under way", async () => {
    const unknown = await moveCli("MEMORY_DB_9", "--agent", "mover");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("MEMORY_DB_9 is not bound");
    const abort = await moveCli("--abort", "--agent", "mover");
    expect(abort.code).toBe(1);
    expect(abort.stderr).toContain("not being moved");
  });
});

describe("knowledge file reader", () => {
  const items = (...entries: KnowledgeItem[]) => entries;

  it("reads each file once, directories in name order, hidden files left out", async () => {
    const base = join(work, "reader");
    write(join(base, "b.md"), "bee");
    write(join(base, "dir", "z.txt"), "zed");
    write(join(base, "dir", "a.markdown"), "ay");
    write(join(base, "dir", ".draft.md"), "hidden");
    write(join(base, "dir", "empty.txt"), "   \n");
    const { files, skipped } = await readKnowledgeFiles(
      base,
      items(
        { kind: "path", path: "b.md", shared: false },
        { kind: "directory", directory: "dir", shared: false },
        { kind: "path", path: "dir/z.txt", shared: false },
      ),
      { confined: true },
    );
    expect(files.map((f) => [f.path, f.format, f.text])).toEqual([
      ["b.md", "markdown", "bee"],
      ["dir/a.markdown", "markdown", "ay"],
      ["dir/z.txt", "text", "zed"],
    ]);
    expect(skipped).toEqual([{ path: "dir/empty.txt", reason: "empty" }]);
  });

  it("reads a folder once when a symlink inside it loops back", async () => {
    const base = join(work, "loop");
    write(join(base, "docs", "a.md"), "once");
    symlinkSync("..", join(base, "docs", "up"));
    const { files } = await readKnowledgeFiles(
      base,
      items({ kind: "directory", directory: "docs", shared: false }),
      { confined: true },
    );
    expect(files.map((f) => f.path)).toEqual(["docs/a.md"]);
  });

  it("names a file explicitly only when it is text or markdown", async () => {
    const base = join(work, "reader2");
    write(join(base, "data.csv"), "a,b");
    await expect(
      readKnowledgeFiles(base, items({ kind: "path", path: "data.csv", shared: false }), {
        confined: true,
      }),
    ).rejects.toThrow(KnowledgeFileError);
    await expect(
      readKnowledgeFiles(base, items({ kind: "directory", directory: "data.csv", shared: false }), {
        confined: true,
      }),
    ).rejects.toThrow(/is not a folder/);
  });

  it("makes document ids the knowledge endpoint accepts, distinct for distinct paths", async () => {
    expect(await documentIdFor("guides/setup.md")).toBe("file:guides:setup.md");
    const spaced = await documentIdFor("my notes/día 1.md");
    expect(spaced).toMatch(/^file:my-notes:d-a-1\.md-[0-9a-f]{12}$/);
    expect(spaced).not.toBe(await documentIdFor("my notes/dia 1.md"));
    const long = await documentIdFor(`${"deep/".repeat(40)}x.md`);
    expect(long.length).toBeLessThanOrEqual(128);
    expect(long).toMatch(/^[A-Za-z0-9][A-Za-z0-9._:@-]*$/);
  });
});
