// The V8 CPU profiler over every isolate of a local workerd (its inspector must be open: the bench
// harness's `inspectorPort`), for `npm run bench:profile` and `npm run bench:discord -- --profile`.
// Counts busy samples per isolate and per function (bundle names keep the source's), each sample
// worth the profiler's interval: not the gap since the one before, which would credit an isolate's
// waits to whatever ran next. Idle and "(program)" samples are left out.
import { markdownTable } from "./stats.ts";

/** The profiler's sampling interval, in microseconds. */
const INTERVAL_US = 200;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}

/** One Chrome DevTools protocol session over a target's WebSocket. */
async function session(url: string) {
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.addEventListener("open", resolve, { once: true });
    socket.addEventListener("error", reject, { once: true });
  });
  let next = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) waiting.get(message.id)?.(message.result);
  });
  const send = (method: string, params: object = {}) =>
    new Promise<unknown>((resolve) => {
      const id = ++next;
      waiting.set(id, resolve);
      socket.send(JSON.stringify({ id, method, params }));
    });
  return { send, close: () => socket.close() };
}

export interface IsolateProfiler {
  /** Stops sampling and prints per isolate and per function the milliseconds a unit took. */
  stop(units: number, unit: string, top: number): Promise<void>;
}

/** Starts sampling every isolate workerd lists on its inspector port. */
export async function profileIsolates(port: number): Promise<IsolateProfiler> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{
    title?: string;
    id: string;
    webSocketDebuggerUrl: string;
  }>;
  const sessions = await Promise.all(
    targets.map(async (target) => ({
      name: target.title ?? target.id,
      cdp: await session(target.webSocketDebuggerUrl),
    })),
  );
  for (const { cdp } of sessions) {
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: INTERVAL_US });
    await cdp.send("Profiler.start");
  }
  return {
    async stop(units, unit, top) {
      const rows: Array<[string, string, number]> = [];
      const perIsolate: Array<[string, number]> = [];
      for (const { name, cdp } of sessions) {
        const { profile } = (await cdp.send("Profiler.stop")) as { profile: Profile };
        cdp.close();
        const byNode = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
        const counts = new Map<string, number>();
        let busy = 0;
        for (const sample of profile.samples) {
          const frame = byNode.get(sample);
          const fn = frame?.functionName || "(anonymous)";
          if (fn === "(idle)" || fn === "(program)") continue;
          busy += 1;
          const key = `${fn}\u0000${frame?.url.split("/").at(-1) ?? ""}:${(frame?.lineNumber ?? 0) + 1}`;
          counts.set(key, (counts.get(key) ?? 0) + 1);
        }
        if (busy > 0) perIsolate.push([name.replace(/^workerd: worker /, ""), busy]);
        for (const [key, count] of counts) {
          const [fn, where] = key.split("\u0000") as [string, string];
          rows.push([`${name.replace(/^workerd: worker /, "")}: ${fn}`, where, count]);
        }
      }
      const ms = (samples: number) => ((samples * INTERVAL_US) / 1000 / units).toFixed(2);
      console.log(
        `\nV8 samples every ${INTERVAL_US} us over ${units} ${unit}s, busy samples only (idle and "(program)" left out)\n`,
      );
      console.log(
        markdownTable(
          ["isolate", "busy samples", `ms a ${unit}`],
          perIsolate
            .sort((a, b) => b[1] - a[1])
            .map(([name, busy]) => [name, String(busy), ms(busy)]),
        ),
      );
      const total = rows.reduce((sum, row) => sum + row[2], 0);
      console.log(`\nthe ${top} functions with the most samples of their own:\n`);
      console.log(
        markdownTable(
          ["isolate: function", "where (bundle:line)", "share", `ms a ${unit}`],
          rows
            .sort((a, b) => b[2] - a[2])
            .slice(0, top)
            .map(([fn, where, count]) => [
              fn,
              where,
              `${((count / total) * 100).toFixed(1)}%`,
              ms(count),
            ]),
        ),
      );
    },
  };
}
