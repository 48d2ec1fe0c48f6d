// `npm run bench:media`: Instagram uploads through the worker in local workerd. 1. Upload-to-202
// latency of a 2 MiB JPEG (multipart, stored in R2 and D1, publish=false so no Graph call is
// timed). 2. The workerd process's resident memory while 8 MiB photos are uploaded, one at a time
// and four at once, and while ten 8 MiB photos go up in one carousel request, sampled from /proc
// every 10 ms: how much memory an upload costs. The figures include the local R2 simulator, which
// runs in the same workerd process, and garbage V8 has not collected yet.
import { readFileSync, readdirSync } from "node:fs";
import { cpus } from "node:os";
import { markdownTable, summarize } from "./stats.ts";
import { startBenchWorker, type BenchWorker } from "./worker-harness.ts";

const SMALL_UPLOADS = 200;
const WARMUP = 10;
const LARGE_UPLOADS = 12;
const CAROUSEL_FILES = 10;
const CAROUSELS = 3;
const MiB = 1024 * 1024;

/** A JPEG's structure (SOI, frame header, scan, EOI) padded to `bytes`. */
function jpeg(bytes: number, seed: number): Uint8Array {
  const head = [
    0xff, 0xd8, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x04, 0x38, 0x04, 0x38, 0x03, 0x01, 0x22, 0x00, 0x02,
    0x11, 0x01, 0x03, 0x11, 0x01, 0xff, 0xda, 0x00, 0x0c, 0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11,
    0x00, 0x3f, 0x00,
  ];
  const out = new Uint8Array(bytes);
  out.set(head);
  for (let i = head.length; i < bytes - 2; i++) out[i] = (i * 31 + seed) & 0x7f;
  out[bytes - 2] = 0xff;
  out[bytes - 1] = 0xd9;
  return out;
}

async function upload(worker: BenchWorker, ...files: Uint8Array[]): Promise<number> {
  const form = new FormData();
  for (const [i, bytes] of files.entries())
    form.append("file", new File([bytes], `photo-${i + 1}.jpg`));
  form.append("publish", "false");
  const started = performance.now();
  const response = await fetch(`${worker.base}/agents/media-bench/media`, {
    method: "POST",
    headers: { authorization: `Bearer ${worker.token}` },
    body: form,
  });
  const text = await response.text();
  if (response.status !== 202) throw new Error(`upload failed: ${response.status} ${text}`);
  return performance.now() - started;
}

/** The workerd process Miniflare started for this benchmark (a child of this process). */
function workerdPid(): number {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (
        ppid === process.pid &&
        readFileSync(`/proc/${entry}/cmdline`, "utf8").includes("workerd")
      )
        return Number(entry);
    } catch {
      // The process went away while we looked.
    }
  }
  throw new Error("no workerd child process found (this benchmark reads /proc: Linux only)");
}

function rssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) * 1024 : NaN;
}

async function peakDuring(
  pid: number,
  work: () => Promise<unknown>,
): Promise<{ before: number; peak: number }> {
  const before = rssBytes(pid);
  let peak = before;
  const timer = setInterval(() => {
    peak = Math.max(peak, rssBytes(pid));
  }, 10);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return { before, peak: Math.max(peak, rssBytes(pid)) };
}

async function main(): Promise<void> {
  const cpu = cpus();
  console.log(
    `\nedge-agents media bench: ${cpu[0]?.model ?? "unknown CPU"} x${cpu.length}, Node ${process.version}`,
  );
  const worker = await startBenchWorker({
    INSTAGRAM_USER_ID: "17841400000000001",
    INSTAGRAM_ACCESS_TOKEN: "bench",
    INSTAGRAM_GRAPH_BASE: "http://127.0.0.1:9/v26.0",
    PUBLIC_BASE_URL: "https://bench.invalid",
  });
  try {
    const created = await worker.call("POST", "/agents", {
      id: "media-bench",
      name: "Media",
      bio: ["A media benchmark agent."],
    });
    if (created.status !== 201)
      throw new Error(`creating the agent failed: ${created.status} ${await created.text()}`);

    const latencies: number[] = [];
    for (let i = 0; i < WARMUP + SMALL_UPLOADS; i++) {
      const ms = await upload(worker, jpeg(2 * MiB, i));
      if (i >= WARMUP) latencies.push(ms);
    }
    const small = summarize(latencies);
    console.log(
      `\n1. Upload to 202 of a 2 MiB JPEG (multipart, checked, SHA-256, R2 put, D1 insert), ${SMALL_UPLOADS} uploads:\n`,
    );
    console.log(
      markdownTable(
        ["p50 ms", "p95 ms", "p99 ms", "MiB/s at p50"],
        [[small.p50, small.p95, small.p99, 2 / (small.p50 / 1000)]],
        [1, 1, 1, 1],
      ),
    );

    const pid = workerdPid();
    const sequential = await peakDuring(pid, async () => {
      for (let i = 0; i < LARGE_UPLOADS; i++) await upload(worker, jpeg(8 * MiB - 1024, i));
    });
    const parallel = await peakDuring(pid, () =>
      Promise.all(
        Array.from({ length: 4 }, (_, i) => upload(worker, jpeg(8 * MiB - 1024, 100 + i))),
      ),
    );
    const carouselMs: number[] = [];
    const carousel = await peakDuring(pid, async () => {
      for (let c = 0; c < CAROUSELS; c++) {
        const files = Array.from({ length: CAROUSEL_FILES }, (_, i) =>
          jpeg(8 * MiB - 1024, 200 + c * CAROUSEL_FILES + i),
        );
        carouselMs.push(await upload(worker, ...files));
      }
    });
    console.log(
      `\n2. workerd resident memory while uploading 8 MiB photos (sampled every 10 ms):\n`,
    );
    console.log(
      markdownTable(
        ["uploads of 8 MiB", "RSS before MiB", "peak MiB", "growth MiB", "growth per upload MiB"],
        [
          [
            `${LARGE_UPLOADS}, one at a time`,
            sequential.before / MiB,
            sequential.peak / MiB,
            (sequential.peak - sequential.before) / MiB,
            (sequential.peak - sequential.before) / MiB / LARGE_UPLOADS,
          ],
          [
            "4 at once",
            parallel.before / MiB,
            parallel.peak / MiB,
            (parallel.peak - parallel.before) / MiB,
            (parallel.peak - parallel.before) / MiB / 4,
          ],
          [
            `${CAROUSELS} carousels of ${CAROUSEL_FILES}, one at a time`,
            carousel.before / MiB,
            carousel.peak / MiB,
            (carousel.peak - carousel.before) / MiB,
            (carousel.peak - carousel.before) / MiB / CAROUSELS,
          ],
        ],
        1,
      ),
    );
    const carouselTimes = summarize(carouselMs);
    console.log(
      `\n   A carousel of ${CAROUSEL_FILES} x 8 MiB (80 MiB) to 202: p50 ${carouselTimes.p50.toFixed(0)} ms over ${CAROUSELS} uploads. Growth includes the`,
    );
    console.log(
      "   R2 simulator's memory (same process) and garbage V8 has not collected yet (one at a time, it accumulates).",
    );
  } finally {
    await worker.stop();
  }
}

main().catch((error: unknown) => {
  console.error(`bench failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
