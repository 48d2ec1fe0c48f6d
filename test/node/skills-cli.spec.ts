// The skills CLI (scripts/skills.ts) as a user runs it: a child process against the real worker in
// local workerd (the benchmarks' harness), adding skills from Agent Skills files, listing, showing
// and removing them, and answering for proposals. The skill file reader is checked on its own.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBenchWorker, type BenchWorker } from "../../bench/worker-harness.ts";
import { formatSkillFile, parseSkillFile, SkillFileError } from "../../scripts/skill-file.ts";

const run = promisify(execFile);
const AGENT = "cli-skills";

let worker: BenchWorker;
let work: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "edge-agents-skills-cli-"));
  worker = await startBenchWorker({});
  const created = await worker.call("POST", "/agents", {
    id: AGENT,
    name: "Sam",
    bio: ["A helper."],
    system: "You are Sam.",
    settings: {
      skills: [
        { name: "greeting", description: "Greet a newcomer.", body: "1. Say hello by name." },
      ],
    },
  });
  expect(created.status).toBe(201);
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  rmSync(work, { recursive: true, force: true });
});

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ["scripts/skills.ts", ...args, "--url", worker.base, `--token=${worker.token}`],
      { env: { ...process.env, COLUMNS: "200" } },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const REPORT = `---
name: weekly-report
description: "Write the Monday status report: from the team's notes"
license: MIT
---

1. Read the notes of the past week.
2. Group them by project.
`;

describe("skills CLI", () => {
  it("adds a skill from a SKILL.md folder, lists it after the character's, shows it and removes it", async () => {
    mkdirSync(join(work, "weekly-report"), { recursive: true });
    writeFileSync(join(work, "weekly-report", "SKILL.md"), REPORT);

    const added = await cli("add", join(work, "weekly-report"), "--agent", AGENT);
    expect(added).toMatchObject({ code: 0 });
    expect(added.stdout).toContain("saved the skill weekly-report");

    const listed = await cli("list", "--agent", AGENT);
    expect(listed.code).toBe(0);
    const rows = listed.stdout.split("\n").slice(2);
    expect(rows[0]).toMatch(/^greeting\s+character\s+Greet a newcomer\./);
    expect(rows[1]).toMatch(/^weekly-report\s+api\s+Write the Monday status report: from/);

    const shown = await cli("show", "weekly-report", "--agent", AGENT);
    expect(shown.code).toBe(0);
    expect(parseSkillFile(shown.stdout, "shown")).toEqual({
      name: "weekly-report",
      description: "Write the Monday status report: from the team's notes",
      body: "1. Read the notes of the past week.\n2. Group them by project.",
    });

    const kept = await cli("remove", "greeting", "--agent", AGENT);
    expect(kept.code).toBe(1);
    expect(kept.stderr).toContain("comes from the character file");

    expect((await cli("remove", "weekly-report", "--agent", AGENT)).code).toBe(0);
    const after = (await (await worker.call("GET", `/agents/${AGENT}/skills`)).json()) as {
      skills: Array<{ name: string }>;
    };
    expect(after.skills.map((skill) => skill.name)).toEqual(["greeting"]);
  }, 60_000);

  it("says what is wrong with a skill file and sends nothing", async () => {
    const bare = join(work, "bare.md");
    writeFileSync(bare, "1. Do the thing.\n");
    const noFront = await cli("add", bare, "--agent", AGENT);
    expect(noFront.code).toBe(1);
    expect(noFront.stderr).toContain("has no front matter");

    const badName = join(work, "bad-name.md");
    writeFileSync(badName, "---\nname: Weekly Report\ndescription: x\n---\n\nSteps.\n");
    const refused = await cli("add", badName, "--agent", AGENT);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("HTTP 400");

    const skills = (await (await worker.call("GET", `/agents/${AGENT}/skills`)).json()) as {
      skills: unknown[];
    };
    expect(skills.skills).toHaveLength(1);
  }, 60_000);

  it("lists the agent's proposals and refuses to decide one that does not exist", async () => {
    const listed = await cli("proposals", "--agent", AGENT, "--status", "pending");
    expect(listed).toMatchObject({ code: 0 });
    expect(listed.stdout.trim()).toBe("(none)");
    const missing = await cli("approve", "0123456789abcdef", "--agent", AGENT);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("HTTP 404");
    const wrongStatus = await cli("proposals", "--agent", AGENT, "--status", "maybe");
    expect(wrongStatus.code).toBe(1);
    expect(wrongStatus.stderr).toContain("--status is one of pending, approved, denied");
  }, 60_000);
});

describe("skill file reader", () => {
  it("reads name and description from the front matter, ignores other keys, and writes it back", () => {
    const skill = parseSkillFile(REPORT, "SKILL.md");
    expect(skill.name).toBe("weekly-report");
    expect(parseSkillFile(formatSkillFile(skill), "again")).toEqual(skill);
    expect(
      parseSkillFile("---\nname: a\ndescription: 'it''s short'\n---\nbody", "x").description,
    ).toBe("it's short");
  });

  it("names what is missing", () => {
    expect(() => parseSkillFile("---\nname: a\n---\nbody", "x.md")).toThrow(
      new SkillFileError("x.md: the front matter lacks description"),
    );
    expect(() => parseSkillFile("---\nname: a\ndescription: b\n", "x.md")).toThrow(
      "no closing ---",
    );
    expect(() => parseSkillFile("---\nname: a\ndescription: b\n---\n\n", "x.md")).toThrow(
      "has no body",
    );
  });
});
