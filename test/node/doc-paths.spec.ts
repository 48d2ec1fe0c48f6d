// Every path the docs name exists: README.md, docs/*.md, bench/RESULTS.md and every folder's
// README.md under src/ are read for repository paths in backticks (`src/…`, `test/…`, `scripts/…`,
// …) and relative links, and README's layout block for its folders and files under src/. A folder
// README may also name its own files relative to its folder (`turn/turn-runner.ts`, `stores/`). A
// doc that names a file that moved fails here, so a layout change cannot leave a guide pointing at
// nothing. Fenced examples (files the reader is to write, commands) are skipped, except README's
// layout, which is the tree.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const TOP_FOLDERS = [
  "src",
  "test",
  "bench",
  "scripts",
  "docs",
  "migrations",
  "characters",
  "public",
];

/** Folders .gitignore keeps out of the tree (test output, build copies): a doc may name them. */
function ignoredFolders(): string[] {
  return readFileSync(join(ROOT, ".gitignore"), "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.endsWith("/") && !/[*!#]/.test(line));
}

/** Every README.md under src/, at any depth: the guide of the folder it sits in. */
function folderReadmes(): string[] {
  const found: string[] = [];
  const visit = (folder: string) => {
    for (const entry of readdirSync(join(ROOT, folder), { withFileTypes: true })) {
      if (entry.isDirectory()) visit(`${folder}/${entry.name}`);
      else if (entry.name === "README.md") found.push(`${folder}/README.md`);
    }
  };
  visit("src");
  return found.sort();
}

function docs(): string[] {
  const inDocs = readdirSync(join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`);
  return ["README.md", "bench/RESULTS.md", ...inDocs, ...folderReadmes()];
}

/** The text outside fenced code blocks. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, "");
}

/**
 * A name a folder README gives relative to its own folder: a source or doc file (`agent-room.ts`,
 * `wasm/rank.wat`) or a folder (`conversation/`). Packages (`drizzle-orm/d1`, `@hono/zod-openapi`),
 * settings (`settings.tasks`) and root files (`mcp-servers.json`) are none of these.
 */
const FOLDER_RELATIVE = /^[\w-][\w.-]*(\/[\w.-]+)*(\.(ts|wat|wasm|md)|\/)$/;

/**
 * Backticked repository paths: `src/http/auth.ts`, `test/security/`, `scripts/deploy.ts:12`. In a
 * README under src/ (`doc`), a name relative to its folder is resolved from there.
 */
function backtickedPaths(text: string, doc = "README.md"): string[] {
  const folder = doc.startsWith("src/") ? dirname(doc) : null;
  const found: string[] = [];
  for (const [, raw] of prose(text).matchAll(/`([^`\s]+)`/g)) {
    const path = raw!.replace(/[:#].*$/, "").replace(/[.,;)]+$/, "");
    // Patterns and placeholders name no one file.
    if (/[*<>{}$]|\.\.\./.test(path)) continue;
    const top = path.split("/")[0]!;
    if (TOP_FOLDERS.includes(top) && path.includes("/")) found.push(path);
    else if (folder && FOLDER_RELATIVE.test(path)) found.push(`${folder}/${path}`);
  }
  return found;
}

/** Relative markdown links to files of the repository, resolved from the doc's folder. */
function linkedPaths(doc: string, text: string): string[] {
  const found: string[] = [];
  for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:|^#|^\//i.test(target!)) continue;
    const path = target!.replace(/#.*$/, "");
    if (path) found.push(join(dirname(doc), path));
  }
  return found;
}

/** README's layout block: the folders and files it lists under `src/`. */
function layoutPaths(readme: string): string[] {
  const block = /## Layout\s+```\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
  const found: string[] = [];
  let parent: string | null = null;
  for (const line of block.split("\n")) {
    const top = /^(\S+\/)/.exec(line);
    if (top) {
      parent = top[1]!;
      found.push(parent);
      continue;
    }
    const child = /^ {2}(\S+?(?:\/|\.ts|\.json))\s/.exec(line);
    if (child && parent) found.push(`${parent}${child[1]}`);
  }
  return found;
}

describe("paths named in the docs", () => {
  it("exist, in every doc", () => {
    const missing: string[] = [];
    const ignored = ignoredFolders();
    for (const doc of docs()) {
      const text = readFileSync(join(ROOT, doc), "utf8");
      for (const path of [...backtickedPaths(text, doc), ...linkedPaths(doc, text)]) {
        // Made by a run (the browser test's screenshots, the docs viewer's copy), not committed.
        if (ignored.some((folder) => `${path}/`.startsWith(folder))) continue;
        if (!existsSync(join(ROOT, path))) missing.push(`${doc}: ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("exist for every entry of README's layout", () => {
    const listed = layoutPaths(readFileSync(join(ROOT, "README.md"), "utf8"));
    expect(listed.length).toBeGreaterThan(10);
    expect(listed.filter((path) => !existsSync(join(ROOT, path)))).toEqual([]);
  });

  it("lets a doc name the folders a run makes, and only those", () => {
    expect(ignoredFolders()).toEqual(expect.arrayContaining(["test/artifacts/", "public/vendor/"]));
    expect(ignoredFolders()).not.toContain("src/");
  });

  it("reads the README of every top folder of src/", () => {
    const folders = readdirSync(join(ROOT, "src"), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `src/${entry.name}/README.md`);
    expect(folders.length).toBeGreaterThan(10);
    expect(docs()).toEqual(expect.arrayContaining(folders));
  });

  it("notices a path that does not exist", () => {
    expect(backtickedPaths("see `src/http/no-such-file.ts` and `npm test`")).toEqual([
      "src/http/no-such-file.ts",
    ]);
    // A folder README's own names resolve from its folder; packages, settings and root files do not.
    const inFolder = backtickedPaths(
      "`turn/no-such-file.ts`, `ports/`, `src/db/db.ts`, `drizzle-orm/d1`, `@hono/zod-openapi`, " +
        "`settings.tasks`, `mcp-servers.json`, `cloudflare:*`",
      "src/runtime/README.md",
    );
    expect(inFolder).toEqual([
      "src/runtime/turn/no-such-file.ts",
      "src/runtime/ports/",
      "src/db/db.ts",
    ]);
    expect(inFolder.filter((path) => !existsSync(join(ROOT, path)))).toEqual([
      "src/runtime/turn/no-such-file.ts",
    ]);
    // Outside src/, only paths from the repository root count.
    expect(backtickedPaths("`turn/no-such-file.ts` and `ports/`", "docs/api.md")).toEqual([]);
    expect(linkedPaths("docs/api.md", "[x](memory.md#top) [y](https://example.com)")).toEqual([
      "docs/memory.md",
    ]);
    expect(
      layoutPaths("## Layout\n\n```\nsrc/\n  http/   routes\n  index.ts  entry\n```\n"),
    ).toEqual(["src/", "src/http/", "src/index.ts"]);
  });
});
