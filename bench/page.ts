// `npm run bench:page`: what a browser downloads to open the playground (`/`, its script and its
// stylesheet) and the API reference (`/docs`, the spec and Swagger UI's files), served by the bundled worker's
// static assets in local workerd. Raw bytes as served, gzip (level 6, what most CDNs use) and brotli
// (quality 11) computed here, and what local workerd itself put on the wire when asked for gzip
// (Cloudflare's edge compresses in production; locally nothing may). Sizes are exact, not sampled.
import { request } from "node:http";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import { markdownTable, type Cell } from "./stats.ts";
import { startBenchWorker } from "./worker-harness.ts";

export const PLAYGROUND_FILES = [
  "/",
  "/playground.js",
  "/playground-skills.js",
  "/playground-usage.js",
  "/playground-inspector.js",
  "/playground.css",
];
export const DOCS_FILES = [
  "/docs",
  "/openapi.json",
  "/vendor/swagger-ui-dist/swagger-ui-bundle.js",
  "/vendor/swagger-ui-dist/swagger-ui.css",
];

export interface FileSize {
  path: string;
  status: number;
  raw: number;
  gzip: number;
  brotli: number;
  /** Bytes on the wire from local workerd with `accept-encoding: gzip`, and the encoding it used. */
  wire: number;
  encoding: string;
}

/** Fetches every path twice: plainly (the bytes) and with accept-encoding (what the server sent). */
export async function measureFiles(base: string, paths: readonly string[]): Promise<FileSize[]> {
  const sizes: FileSize[] = [];
  for (const path of paths) {
    const response = await fetch(`${base}${path}`, { headers: { "accept-encoding": "identity" } });
    const body = Buffer.from(await response.arrayBuffer());
    const wire = await wireBytes(`${base}${path}`);
    sizes.push({
      path,
      status: response.status,
      raw: body.length,
      gzip: gzipSync(body, { level: 6 }).length,
      brotli: brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
      ...wire,
    });
  }
  return sizes;
}

function wireBytes(url: string): Promise<{ wire: number; encoding: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { "accept-encoding": "gzip" } }, (res) => {
      let wire = 0;
      res.on("data", (chunk: Buffer) => (wire += chunk.length));
      res.on("end", () =>
        resolve({ wire, encoding: String(res.headers["content-encoding"] ?? "none") }),
      );
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

export function sizeTable(groups: { name: string; files: FileSize[] }[]): string {
  const kb = (bytes: number) => bytes / 1024;
  const rows: Cell[][] = [];
  for (const { name, files } of groups) {
    for (const file of files)
      rows.push([
        name,
        file.path,
        file.status,
        kb(file.raw),
        kb(file.gzip),
        kb(file.brotli),
        kb(file.wire),
        file.encoding,
      ]);
    const sum = (pick: (file: FileSize) => number) =>
      files.reduce((total, file) => total + pick(file), 0);
    rows.push([
      name,
      "**total**",
      "",
      kb(sum((f) => f.raw)),
      kb(sum((f) => f.gzip)),
      kb(sum((f) => f.brotli)),
      kb(sum((f) => f.wire)),
      "",
    ]);
  }
  return markdownTable(
    [
      "page",
      "file",
      "status",
      "raw KiB",
      "gzip KiB",
      "brotli KiB",
      "sent locally KiB",
      "local encoding",
    ],
    rows,
    [0, 0, 0, 1, 1, 1, 1, 0],
  );
}

async function main(): Promise<void> {
  console.log(
    "\nedge-agents page size: what a browser downloads (bundled worker, static assets, local workerd)\n",
  );
  const worker = await startBenchWorker({});
  try {
    const groups = [
      { name: "playground `/`", files: await measureFiles(worker.base, PLAYGROUND_FILES) },
      { name: "API reference `/docs`", files: await measureFiles(worker.base, DOCS_FILES) },
    ];
    const failed = groups.flatMap((group) => group.files).filter((file) => file.status !== 200);
    if (failed.length > 0)
      throw new Error(
        `not served: ${failed.map((file) => `${file.path} (${file.status})`).join(", ")}`,
      );
    console.log(sizeTable(groups));
  } finally {
    await worker.stop();
  }
}

if (import.meta.main) await main();
