// Each variable and secret is declared once, in src/settings.ts; what is written elsewhere is
// generated from it (`npm run config:docs`) or must agree with it. These fail when a copy drifts.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  CONFIGURATION_DOC,
  configurationDoc,
  DEV_VARS_EXAMPLE,
  devVarsExample,
} from "../../scripts/config-docs.ts";
import { SETTINGS } from "../../src/settings.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const read = (path: string) => readFileSync(resolve(ROOT, path), "utf8");
const declared = (name: string) => Object.hasOwn(SETTINGS, name);
/** The upper-case keys of an object literal written in a file (a binding or a variable name). */
const namesIn = (text: string) =>
  [...text.matchAll(/^\s+([A-Z][A-Z0-9_]+)\??:/gm)].map((m) => m[1]!);

describe("settings declared once (src/settings.ts)", () => {
  it(".dev.vars.example is generated from the declaration (npm run config:docs)", () => {
    expect(readFileSync(DEV_VARS_EXAMPLE, "utf8")).toBe(devVarsExample());
  });

  it("the variables table of docs/configuration.md is generated from it (npm run config:docs)", () => {
    const doc = readFileSync(CONFIGURATION_DOC, "utf8");
    expect(doc).toBe(configurationDoc(doc));
  });

  it("src/env.ts lists bindings only: its variables come from the declaration", () => {
    const own = namesIn(read("src/env.ts"));
    expect(own).toContain("DB");
    expect(own.filter(declared)).toEqual([]);
  });

  it("every variable the tests bind (vitest.config.ts) is declared", () => {
    // TEST_* are the tests' own; MCP_* secrets are a family named by characters (docs/mcp.md).
    const bound = namesIn(read("vitest.config.ts")).filter(
      (name) => !name.startsWith("TEST_") && !name.startsWith("MCP_"),
    );
    expect(bound.length).toBeGreaterThan(20);
    expect(bound.filter((name) => !declared(name))).toEqual([]);
  });

  it("every variable `npm run dev` writes to .dev.vars (scripts/dev-vars.ts) is declared", () => {
    const written = [...read("scripts/dev-vars.ts").matchAll(/has\("([A-Z_]+)"\)/g)].map(
      (m) => m[1]!,
    );
    expect(written).toContain("ADMIN_TOKEN");
    expect(written.filter((name) => !declared(name))).toEqual([]);
  });

  it("the deploy script reads which secrets and variables exist from the declaration", () => {
    const deploy = read("scripts/deploy.ts");
    expect(deploy).toMatch(/from "\.\.\/src\/settings\.ts"/);
    expect(deploy).not.toMatch(/^\s+"[A-Z_]+_(KEY|TOKEN|SECRET)",$/m);
  });
});
