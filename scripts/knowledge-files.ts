// Reads the files a character's `path` and `directory` knowledge entries name, for the tools that
// run where the files are (`npm run seed`, `npm run memory -- knowledge`): a worker has no disk.
// A character file is data, possibly someone else's, so its entries stay inside its own folder
// (no absolute paths, no `..`, no symlink out of it) and only text and markdown files are read.
import { readdir, readFile, realpath, stat } from "node:fs/promises";
import { extname, isAbsolute, join, normalize, relative, resolve, sep } from "node:path";
import type { KnowledgeItem } from "../src/runtime/character.ts";
import { MAX_DOCUMENT_CHARS } from "../src/db/memory/knowledge.ts";
import { sha256Hex } from "../src/runtime/util/hashing.ts";

/** Files one run reads at most: a directory entry pointing at the wrong folder should not upload it all. */
export const MAX_KNOWLEDGE_FILES = 200;
const FORMATS: Readonly<Record<string, "text" | "markdown">> = {
  ".md": "markdown",
  ".markdown": "markdown",
  ".txt": "text",
  ".text": "text",
};
const MAX_DOCUMENT_ID_CHARS = 128;

export class KnowledgeFileError extends Error {}

export interface KnowledgeFile {
  /** Path relative to the base folder, with `/` separators: what the user wrote, shown back. */
  path: string;
  /** `file:` and the path, so reading the same file again replaces its document. */
  documentId: string;
  title: string;
  format: "text" | "markdown";
  text: string;
}

export interface KnowledgeFiles {
  files: KnowledgeFile[];
  /** Files a directory held that were not read, with the reason (other formats, empty). */
  skipped: Array<{ path: string; reason: string }>;
}

export interface ReadKnowledgeOptions {
  /** Entries must stay inside `base` (a character file's entries); off for paths a user typed. */
  confined: boolean;
}

/** The files of the `path` and `directory` entries, each once, in entry order (directories sorted). */
export async function readKnowledgeFiles(
  base: string,
  items: readonly KnowledgeItem[],
  options: ReadKnowledgeOptions,
): Promise<KnowledgeFiles> {
  const root = await realpath(base).catch(() => {
    throw new KnowledgeFileError(`knowledge folder ${base} does not exist`);
  });
  const files: KnowledgeFile[] = [];
  const skipped: KnowledgeFiles["skipped"] = [];
  const seen = new Set<string>();
  const add = async (absolute: string, shown: string, fromDirectory: boolean) => {
    if (seen.has(absolute)) return;
    seen.add(absolute);
    const format = FORMATS[extname(absolute).toLowerCase()];
    if (!format) {
      if (fromDirectory)
        return skipped.push({ path: shown, reason: "not a .md, .markdown, .txt or .text file" });
      throw new KnowledgeFileError(
        `${shown}: only .md, .markdown, .txt and .text files can be knowledge`,
      );
    }
    const text = await readText(absolute, shown);
    if (!text.trim()) return skipped.push({ path: shown, reason: "empty" });
    if (files.length === MAX_KNOWLEDGE_FILES)
      throw new KnowledgeFileError(
        `more than ${MAX_KNOWLEDGE_FILES} knowledge files: split them across runs or agents`,
      );
    files.push({ path: shown, documentId: await documentIdFor(shown), title: shown, format, text });
  };
  for (const item of items) {
    if (item.kind === "text") continue;
    const entry = item.kind === "path" ? item.path : item.directory;
    const absolute = await locate(root, entry, options);
    const info = await stat(absolute);
    if (item.kind === "path") {
      if (!info.isFile())
        throw new KnowledgeFileError(
          `knowledge path "${entry}" is not a file (use { "directory": … } for a folder)`,
        );
      await add(absolute, shownPath(root, absolute, entry, options), false);
    } else {
      if (!info.isDirectory())
        throw new KnowledgeFileError(`knowledge directory "${entry}" is not a folder`);
      for (const file of await walk(root, absolute, options, new Set()))
        await add(
          file,
          shownPath(root, file, join(entry, relative(absolute, file)), options),
          true,
        );
    }
  }
  return { files, skipped };
}

/** The entry's real path, refused (when confined) if it is absolute or leads outside the folder. */
async function locate(root: string, entry: string, options: ReadKnowledgeOptions): Promise<string> {
  if (options.confined && isAbsolute(entry))
    throw new KnowledgeFileError(
      `knowledge entry "${entry}": absolute paths are refused; name a file inside the character's folder`,
    );
  const real = await realpath(resolve(root, entry)).catch(() => {
    throw new KnowledgeFileError(
      `knowledge entry "${entry}" does not exist (paths are relative to ${root})`,
    );
  });
  if (options.confined && !inside(root, real))
    throw new KnowledgeFileError(
      `knowledge entry "${entry}" leads outside the character's folder ${root}: refused`,
    );
  return real;
}

function inside(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/**
 * Every file under `folder`, sorted, without hidden ones; symlinks out of the folder are refused,
 * and a folder reached again through a symlink (a cycle) is read once.
 */
async function walk(
  root: string,
  folder: string,
  options: ReadKnowledgeOptions,
  visited: Set<string>,
): Promise<string[]> {
  if (visited.has(folder)) return [];
  visited.add(folder);
  const out: string[] = [];
  const entries = (await readdir(folder, { withFileTypes: true }))
    .filter((entry) => !entry.name.startsWith("."))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const real = await realpath(join(folder, entry.name));
    if (options.confined && !inside(root, real))
      throw new KnowledgeFileError(
        `${join(folder, entry.name)} leads outside the character's folder ${root}: refused`,
      );
    const info = await stat(real);
    if (info.isDirectory()) out.push(...(await walk(root, real, options, visited)));
    else if (info.isFile()) out.push(real);
  }
  return out;
}

/** Strict UTF-8 within the size limit: a binary file renamed .txt is an error, not garbage in memory. */
async function readText(path: string, shown: string): Promise<string> {
  const bytes = await readFile(path);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new KnowledgeFileError(`${shown} is not UTF-8 text`);
  }
  const length = text.trim().length;
  if (length > MAX_DOCUMENT_CHARS)
    throw new KnowledgeFileError(
      `${shown} has ${length.toLocaleString("en")} characters; a document takes at most ${MAX_DOCUMENT_CHARS.toLocaleString("en")}: split it`,
    );
  return text;
}

function shownPath(
  root: string,
  absolute: string,
  written: string,
  options: ReadKnowledgeOptions,
): string {
  const path = options.confined ? relative(root, absolute) : normalize(written);
  return path.split(sep).join("/");
}

/**
 * `file:` and the path with `/` as `:` (document ids allow letters, digits and `._:@-`); anything
 * else becomes `-`, and a long or altered path keeps a hash of the original so two files never share an id.
 */
export async function documentIdFor(path: string): Promise<string> {
  const plain = `file:${path.replace(/\//g, ":")}`;
  const safe = plain.replace(/[^A-Za-z0-9._:@-]/g, "-");
  if (safe === plain && safe.length <= MAX_DOCUMENT_ID_CHARS) return safe;
  const hash = (await sha256Hex(path)).slice(0, 12);
  return `${safe.slice(0, MAX_DOCUMENT_ID_CHARS - hash.length - 1)}-${hash}`;
}
