// The room object stays a thin adapter (STYLE.md, line 3): `agent-room.ts` answers RPC, schedules
// and queue items and hands the work to its parts (room-parts.ts, room-runtime.ts), so it stays
// under ROOM_OBJECT_MAX_LINES. Issue 23 asked for that once and the file grew back past it.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const ROOM_OBJECT = "src/objects/conversation/agent-room.ts";
const ROOM_OBJECT_MAX_LINES = 250;

describe("the room object", () => {
  it(`keeps agent-room.ts under ${ROOM_OBJECT_MAX_LINES} lines`, () => {
    const lines = readFileSync(resolve(ROOT, ROOM_OBJECT), "utf8").split("\n").length;
    expect(lines, `${ROOM_OBJECT} has ${lines} lines`).toBeLessThan(ROOM_OBJECT_MAX_LINES);
  });
});
