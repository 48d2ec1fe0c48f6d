// The plugin API (src/plugins/): a plugin defined here registers a tool, a provider and an
// evaluator that run in a turn (the runtime over fakes, the scripted model); characters turn
// plugins on and off; their settings are checked with every bad path listed; names no plugin has
// are kept and reported in the agent's JSON, never on /health; a plugin's tools are listed with
// the agent's.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { definePlugin } from "../../src/plugins/plugin-api.ts";
import type { ChatResponse } from "../../src/runtime/ports/model.ts";
import { api, createTestAgent, json } from "../helpers/api.ts";
import { scriptedModel, textReply } from "../helpers/fakes.ts";
import { runPluginTurn } from "../helpers/plugin-turn.ts";

function toolCall(name: string, args: unknown): ChatResponse {
  return {
    model: "test-primary",
    text: null,
    toolCalls: [{ id: `call_${name}`, name, arguments: JSON.stringify(args) }],
    usage: { promptTokens: 10, completionTokens: 2 },
    finishReason: "tool_calls",
  };
}

/** A plugin as a developer would write it: a tool, a prompt section, an after-reply step. */
function tidesPlugin(ran: string[]) {
  return definePlugin({
    name: "tides",
    description: "Tide times for a home port.",
    settings: z.strictObject({ port: z.string().default("Brest") }),
    secrets: ["TIDE_API_KEY"],
    tools: ({ defineTool }) => [
      defineTool({
        name: "next_high_tide",
        description: "The next high tide at a port.",
        args: z.strictObject({ port: z.string().min(2).describe("The port's name.") }),
        async run({ port }, context) {
          ran.push(
            `tool ${port}; home ${context.settings.port}; secrets ${Object.keys(context.secrets).join(",")}; room ${context.roomId}`,
          );
          return `High tide at ${port}: 06:12`;
        },
      }),
    ],
    providers: ({ defineProvider }) => [
      defineProvider({
        name: "home-port",
        position: 25,
        async get({ settings }) {
          return `# Home port\n${settings.port}`;
        },
      }),
    ],
    evaluators: ({ defineEvaluator }) => [
      defineEvaluator({
        name: "tide-log",
        async run({ reply, userId }) {
          ran.push(`evaluator ${userId}: ${reply}`);
        },
      }),
    ],
  });
}

describe("the plugin API", () => {
  it("runs a plugin's tool, provider and evaluator in a turn, with its settings and only its declared secrets", async () => {
    const ran: string[] = [];
    const model = scriptedModel([
      toolCall("next_high_tide", { port: "Saint-Malo" }),
      textReply("High tide is at 06:12."),
    ]);
    const { outcome } = await runPluginTurn({
      plugins: [tidesPlugin(ran)],
      model,
      character: { plugins: ["tides"], settings: { plugins: { tides: { port: "Cancale" } } } },
      variables: { TIDE_API_KEY: "tide-key", OPENAI_API_KEY: "sk-not-for-plugins" },
    });
    expect(outcome.reply?.text).toBe("High tide is at 06:12.");
    expect(outcome.toolCalls).toMatchObject([{ name: "next_high_tide", ok: true }]);
    expect(ran).toEqual([
      "tool Saint-Malo; home Cancale; secrets TIDE_API_KEY; room room-1",
      "evaluator user-1: High tide is at 06:12.",
    ]);
    const first = model.requests[0]!;
    const system = first.messages[0]?.content ?? "";
    expect(system).toContain("# Home port\nCancale");
    // The zod schema is the JSON Schema the model sees.
    expect(first.tools?.find((tool) => tool.name === "next_high_tide")).toEqual({
      name: "next_high_tide",
      description: "The next high tide at a port.",
      parameters: {
        type: "object",
        properties: { port: { type: "string", minLength: 2, description: "The port's name." } },
        required: ["port"],
        additionalProperties: false,
      },
    });
  });

  it("offers nothing of a plugin the character does not turn on", async () => {
    const ran: string[] = [];
    const model = scriptedModel([textReply("No plugin here.")]);
    await runPluginTurn({ plugins: [tidesPlugin(ran)], model, character: {} });
    const request = model.requests[0]!;
    expect(request.tools?.map((tool) => tool.name)).not.toContain("next_high_tide");
    expect(request.messages[0]?.content).not.toContain("Home port");
    expect(ran).toEqual([]);
  });

  it("turns a plugin that is on by default off with settings.plugins.<name>.enabled: false", async () => {
    const always = definePlugin({
      name: "always",
      description: "On unless turned off.",
      enabledByDefault: true,
      providers: [{ name: "hello", position: 25, get: async () => "# Always here" }],
    });
    const on = scriptedModel([textReply("ok")]);
    await runPluginTurn({ plugins: [always], model: on });
    expect(on.requests[0]!.messages[0]?.content).toContain("# Always here");
    const off = scriptedModel([textReply("ok")]);
    await runPluginTurn({
      plugins: [always],
      model: off,
      character: { settings: { plugins: { always: { enabled: false } } } },
    });
    expect(off.requests[0]!.messages[0]?.content).not.toContain("# Always here");
  });

  it("checks a tool's arguments against its schema and tells the model what is wrong", async () => {
    const ran: string[] = [];
    const model = scriptedModel([
      toolCall("next_high_tide", { port: "X" }),
      textReply("Let me try a real port."),
    ]);
    const { outcome } = await runPluginTurn({
      plugins: [tidesPlugin(ran)],
      model,
      character: { plugins: ["tides"] },
    });
    expect(outcome.toolCalls).toMatchObject([{ name: "next_high_tide", ok: false }]);
    expect(outcome.toolCalls[0]!.output).toMatch(/invalid arguments for next_high_tide: \/port/);
    expect(ran).toEqual(["evaluator user-1: Let me try a real port."]);
  });
});

describe("plugins in a character file", () => {
  it("accepts a character enabling a plugin this deployment lacks, and reports it in the agent's JSON only", async () => {
    const id = `plugged-${crypto.randomUUID().slice(0, 8)}`;
    const created = await api("POST", "/agents", {
      body: { id, name: "Plugged", bio: ["x"], plugins: ["@elizaos/plugin-bootstrap", "web"] },
    });
    expect(created.status).toBe(201);
    const expected = {
      // The test deployment has Instagram configured: that plugin is on by default.
      enabled: ["instagram", "skills", "catalog", "web"],
      unknown: ["@elizaos/plugin-bootstrap"],
    };
    expect((await json(created)).plugins).toEqual(expected);
    const read = await json<{ plugins: unknown; character: { plugins: string[] } }>(
      await api("GET", `/agents/${id}`),
    );
    expect(read.plugins).toEqual(expected);
    // The file keeps the name, so it stays portable.
    expect(read.character.plugins).toEqual(["@elizaos/plugin-bootstrap", "web"]);
    const health = await (await api("GET", "/health", { token: null })).text();
    expect(health).not.toContain("plugin-bootstrap");
  });

  it("refuses plugin settings with every bad path listed, and ignores settings of plugins it does not have", async () => {
    const response = await api("POST", "/agents", {
      body: {
        name: "Badly Set",
        bio: ["x"],
        plugins: ["web"],
        settings: {
          plugins: {
            web: { maxChars: 10, searchResults: "many", colour: "red" },
            skills: { autoApprove: "yes", enabled: "sometimes" },
            instagram: "on",
            "some-elizaos-plugin": { anything: true },
          },
        },
      },
    });
    expect(response.status).toBe(400);
    const body = await json<{ error: { details: { issues: Array<{ path: string }> } } }>(response);
    expect(body.error.details.issues.map((issue) => issue.path).sort()).toEqual([
      "settings.plugins.instagram",
      "settings.plugins.skills.autoApprove",
      "settings.plugins.skills.enabled",
      "settings.plugins.web.colour",
      "settings.plugins.web.maxChars",
      "settings.plugins.web.searchResults",
    ]);
    const fine = await api("POST", "/agents", {
      body: {
        name: "Well Set",
        bio: ["x"],
        settings: { plugins: { web: { maxChars: 4000 }, "some-elizaos-plugin": { anything: 1 } } },
      },
    });
    expect(fine.status).toBe(201);
  });

  it("lists a plugin's tools with the agent's, and Instagram's as a plugin's", async () => {
    const agentId = await createTestAgent({ plugins: ["web"] });
    const listed = await json<{ tools: Array<{ name: string; source: string }> }>(
      await api("GET", `/agents/${agentId}/tools`),
    );
    expect(listed.tools.filter((tool) => tool.source.startsWith("plugin:"))).toEqual([
      expect.objectContaining({ name: "instagram_publish", source: "plugin:instagram" }),
      expect.objectContaining({ name: "save_skill", source: "plugin:skills" }),
      // No search key in this deployment: web_search is not offered.
      expect.objectContaining({ name: "read_url", source: "plugin:web" }),
    ]);
  });
});
