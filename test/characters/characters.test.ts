// Character files: both ElizaOS formats load into the one internal form, broken files are
// rejected with every failing path listed, and the public view never carries secret values.

import { describe, expect, it } from "vitest";
import ada from "../../characters/ada.json";
import marlowe from "../../characters/marlowe.json";
import {
  parseCharacter,
  publicCharacter,
  type CharacterIssue,
} from "../../src/characters/parse-character.ts";
import { ValidationError } from "../../src/runtime/util/errors.ts";

function issuesOf(input: unknown): CharacterIssue[] {
  try {
    parseCharacter(input);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    const details = (error as ValidationError).details as { issues: CharacterIssue[] };
    return details.issues;
  }
  throw new Error("expected parseCharacter to throw");
}

function pathsOf(input: unknown): string[] {
  return [...new Set(issuesOf(input).map((issue) => issue.path))].sort();
}

describe("parseCharacter: ElizaOS v1 files", () => {
  it("normalizes a minimal file: bio string becomes one line, examples become speaker/text", () => {
    const character = parseCharacter({
      name: "Tess",
      bio: "A tester.",
      messageExamples: [
        [
          { name: "{{user1}}", content: { text: "hi" } },
          { name: "Tess", content: { text: "hello", actions: ["REPLY"] } },
        ],
      ],
    });
    expect(character.format).toBe("v1");
    expect(character.bio).toEqual(["A tester."]);
    expect(character.messageExamples).toEqual([
      [
        { speaker: "{{user1}}", text: "hi" },
        { speaker: "Tess", text: "hello", actions: ["REPLY"] },
      ],
    ]);
    expect(character.lore).toEqual([]);
    expect(character.clients).toEqual([]);
    expect(character.style).toEqual({ all: [], chat: [], post: [] });
  });

  it("applies our settings defaults when the file has none", () => {
    const character = parseCharacter({ name: "Tess", bio: ["A tester."] });
    expect(character.settings).toEqual({
      mcpServers: [],
      toolApproval: [],
      respond: { mode: "mentions", replyToBots: false, keywords: [] },
      memory: {},
      directMessages: { discord: "owners", telegram: "owners", slack: "owners" },
      skills: [],
    });
    expect(character.extraSettings).toEqual({});
    expect(character.secrets).toEqual({});
  });

  it("reads our typed settings and keeps every other settings key verbatim", () => {
    const character = parseCharacter({
      name: "Tess",
      bio: [],
      settings: {
        model: "gpt-4o",
        modelFallbacks: "gpt-4o-mini, claude-haiku ,",
        temperature: 0.2,
        maxSteps: 4,
        mcpServers: ["github"],
        respond: { mode: "llm" },
        memory: { factsEvery: 3, retentionDays: 30 },
        avatar: "https://example.com/tess.png",
        voice: { model: "en_US-female-medium" },
      },
    });
    expect(character.settings).toEqual({
      model: "gpt-4o",
      modelFallbacks: ["gpt-4o-mini", "claude-haiku"],
      temperature: 0.2,
      maxSteps: 4,
      mcpServers: ["github"],
      toolApproval: [],
      respond: { mode: "llm", replyToBots: false, keywords: [] },
      memory: { factsEvery: 3, retentionDays: 30 },
      directMessages: { discord: "owners", telegram: "owners", slack: "owners" },
      skills: [],
    });
    expect(character.extraSettings).toEqual({
      avatar: "https://example.com/tess.png",
      voice: { model: "en_US-female-medium" },
    });
  });

  it("reads settings.discord.directMessages and keeps ElizaOS's own Discord keys verbatim", () => {
    const character = parseCharacter({
      name: "Tess",
      bio: [],
      settings: { discord: { directMessages: "everyone", shouldIgnoreBotMessages: true } },
    });
    expect(character.settings.directMessages).toEqual({
      discord: "everyone",
      telegram: "owners",
      slack: "owners",
    });
    expect(character.extraSettings).toEqual({ discord: { shouldIgnoreBotMessages: true } });
    expect(
      pathsOf({ name: "Tess", bio: [], settings: { discord: { directMessages: "friends" } } }),
    ).toEqual(["settings.discord.directMessages"]);
  });

  it("takes settings.directMessages for every platform, a platform's own key winning", () => {
    const character = parseCharacter({
      name: "Tess",
      bio: [],
      settings: {
        directMessages: "everyone",
        telegram: { directMessages: "off", parseMode: "HTML" },
      },
    });
    expect(character.settings.directMessages).toEqual({
      discord: "everyone",
      telegram: "off",
      slack: "everyone",
    });
    expect(character.extraSettings).toEqual({ telegram: { parseMode: "HTML" } });
    expect(pathsOf({ name: "Tess", bio: [], settings: { directMessages: "some" } })).toEqual([
      "settings.directMessages",
    ]);
    expect(
      pathsOf({ name: "Tess", bio: [], settings: { slack: { directMessages: true } } }),
    ).toEqual(["settings.slack.directMessages"]);
  });

  it("turns knowledge strings into text and keeps file and directory references", () => {
    const character = parseCharacter({
      name: "Tess",
      bio: [],
      knowledge: [
        "Water boils at 100 °C at sea level.",
        { path: "docs/faq.md" },
        { directory: "docs", shared: true },
      ],
    });
    expect(character.knowledge).toEqual([
      { kind: "text", text: "Water boils at 100 °C at sea level." },
      { kind: "path", path: "docs/faq.md", shared: false },
      { kind: "directory", directory: "docs", shared: true },
    ]);
  });

  it("stringifies secret values and lets top-level secrets win over settings.secrets", () => {
    const character = parseCharacter({
      name: "Tess",
      bio: [],
      secrets: { API_KEY: "top", RETRIES: 3, DEBUG: true },
      settings: { secrets: { API_KEY: "nested", OTHER: "kept" } },
    });
    expect(character.secrets).toEqual({
      API_KEY: "top",
      OTHER: "kept",
      RETRIES: "3",
      DEBUG: "true",
    });
    expect(character.extraSettings).toEqual({});
  });

  it("ignores unknown top-level keys instead of rejecting newer files", () => {
    const character = parseCharacter({
      name: "Tess",
      bio: [],
      advancedPlanning: true,
      description: "x",
    });
    expect(character).not.toHaveProperty("advancedPlanning");
  });
});

describe("parseCharacter: legacy v0.x files", () => {
  const legacy = {
    name: "Old Timer",
    modelProvider: "openai",
    clients: ["discord", "direct"],
    plugins: [],
    bio: "Been around.",
    lore: ["Remembers the first release."],
    messageExamples: [
      [
        { user: "{{user1}}", content: { text: "hey" } },
        { user: "Old Timer", content: { text: "howdy", action: "CONTINUE" } },
      ],
    ],
    postExamples: [],
    topics: ["history"],
    adjectives: ["wry"],
    style: { all: ["short"], chat: [], post: [] },
    settings: {
      secrets: { DISCORD_TOKEN: "abc" },
      model: "gpt-4o-mini",
      embeddingModel: "text-embedding-3-small",
    },
    clientConfig: { discord: { shouldIgnoreBotMessages: true } },
    // v0 extras seen in the wild: tolerated, then dropped.
    imageModelProvider: "openai",
    modelEndpointOverride: "https://llm.example.com",
    twitterProfile: { username: "old", screenName: "Old", bio: "x" },
    nft: { prompt: "x" },
    extends: [],
    people: ["someone"],
  };
  const v0Extras = [
    "imageModelProvider",
    "modelEndpointOverride",
    "twitterProfile",
    "nft",
    "extends",
    "people",
  ];

  it("keeps lore, normalizes `user` examples, merges settings.secrets and drops v0 extras", () => {
    const character = parseCharacter(legacy);
    expect(character.format).toBe("v0");
    expect(character.lore).toEqual(["Remembers the first release."]);
    expect(character.bio).toEqual(["Been around."]);
    expect(character.messageExamples).toEqual([
      [
        { speaker: "{{user1}}", text: "hey" },
        { speaker: "Old Timer", text: "howdy", actions: ["CONTINUE"] },
      ],
    ]);
    expect(character.secrets).toEqual({ DISCORD_TOKEN: "abc" });
    expect(character.settings.model).toBe("gpt-4o-mini");
    expect(character.extraSettings).toEqual({ embeddingModel: "text-embedding-3-small" });
    expect(character.clients).toEqual(["discord", "direct"]);
    expect(character.modelProvider).toBe("openai");
    expect(character.clientConfig).toEqual({ discord: { shouldIgnoreBotMessages: true } });
    for (const key of v0Extras) expect(character).not.toHaveProperty(key);
  });

  it("treats a file as v0 when its examples use `user`, and accepts a mix of `name` and `user`", () => {
    const character = parseCharacter({
      name: "Mix",
      bio: [],
      messageExamples: [
        [{ user: "{{user1}}", content: { text: "a" } }],
        [{ name: "Mix", content: { text: "b" } }],
      ],
    });
    expect(character.format).toBe("v0");
    expect(character.messageExamples).toEqual([
      [{ speaker: "{{user1}}", text: "a" }],
      [{ speaker: "Mix", text: "b" }],
    ]);
  });

  it("keeps the names of plugins given as objects", () => {
    const plugins = ["@elizaos/plugin-node", { name: "custom", description: "x" }];
    const character = parseCharacter({ ...legacy, plugins });
    expect(character.plugins).toEqual(["@elizaos/plugin-node", "custom"]);
  });
});

describe("parseCharacter: shipped characters", () => {
  it("loads characters/ada.json as a v1 character", () => {
    const character = parseCharacter(ada);
    expect(character.format).toBe("v1");
    expect(character.name).toBe("Ada");
    expect(character.system).toBeTruthy();
    expect(character.bio.length).toBeGreaterThan(1);
    expect(character.messageExamples.length).toBeGreaterThan(0);
    expect(character.settings.respond).toEqual({
      mode: "mentions",
      replyToBots: false,
      keywords: ["ada"],
    });
  });

  it("loads characters/marlowe.json as a v0 character", () => {
    const character = parseCharacter(marlowe);
    expect(character.format).toBe("v0");
    expect(character.name).toBe("Marlowe");
    expect(character.lore.length).toBeGreaterThan(0);
    expect(character.clients).toEqual(["discord"]);
    expect(character.modelProvider).toBe("openai");
    expect(character.messageExamples[0]?.[1]?.speaker).toBe("Marlowe");
    expect(character.extraSettings).toEqual({ voice: { model: "en_US-male-medium" } });
  });
});

describe("parseCharacter: broken files", () => {
  it("lists every failing path at once", () => {
    const paths = pathsOf({
      bio: 42,
      settings: { maxSteps: "six", respond: { mode: "sometimes" }, temperature: 3 },
      messageExamples: [[{ name: "{{user1}}", content: { text: "hi" } }, { name: "Ada" }]],
      knowledge: [{ path: 7 }],
      secrets: { TOKEN: { nested: true } },
    });
    expect(paths).toEqual(
      [
        "name",
        "bio",
        "settings.maxSteps",
        "settings.respond.mode",
        "settings.temperature",
        "messageExamples.0.1.content",
        "knowledge.0.path",
        "secrets.TOKEN",
      ].sort(),
    );
  });

  it("reports an example line with neither name nor user, alongside its other problems", () => {
    expect(pathsOf({ name: "Tess", bio: [], messageExamples: [[{ content: 5 }]] })).toEqual([
      "messageExamples.0.0.content",
      "messageExamples.0.0.name",
    ]);
  });

  it("rejects input that is not an object", () => {
    expect(issuesOf(["name"])).toEqual([{ path: "", message: "expected a JSON object" }]);
    expect(issuesOf(null)).toEqual([{ path: "", message: "expected a JSON object" }]);
  });

  it("says `required` for a missing name and rejects a blank one", () => {
    expect(issuesOf({ bio: [] })).toEqual([{ path: "name", message: "required" }]);
    expect(pathsOf({ name: "   ", bio: [] })).toEqual(["name"]);
  });

  it("enforces the size limits on hostile input", () => {
    expect(pathsOf({ name: "x".repeat(101), bio: [] })).toEqual(["name"]);
    expect(pathsOf({ name: "Tess", bio: ["x".repeat(20_001)] })).toEqual(["bio.0"]);
    expect(pathsOf({ name: "Tess", bio: Array.from({ length: 1001 }, () => "x") })).toEqual([
      "bio",
    ]);
    let deep: unknown = "bottom";
    for (let level = 0; level < 20; level++) deep = { next: deep };
    const [tooDeep] = issuesOf({ name: "Tess", bio: [], settings: { plugin: deep } });
    expect(tooDeep?.path).toMatch(/^settings\.plugin(\.next)+$/);
  });

  it("caps the number of reported problems", () => {
    const issues = issuesOf({ name: "Tess", bio: Array.from({ length: 500 }, () => 1) });
    expect(issues).toHaveLength(101);
    expect(issues.at(-1)?.message).toBe("400 more problems not listed");
  });

  it("validates our settings strictly, including unknown keys under respond", () => {
    const settings = {
      mcpServers: "github",
      maxConsecutiveFailures: 11,
      historyTokens: -1,
      maxOutputTokens: 1.5,
      respond: { replyToBot: true },
    };
    expect(pathsOf({ name: "Tess", bio: [], settings })).toEqual([
      "settings.historyTokens",
      "settings.maxConsecutiveFailures",
      "settings.maxOutputTokens",
      "settings.mcpServers",
      "settings.respond",
    ]);
  });

  it("reads settings.prices, and names the model whose price is malformed", () => {
    const prices = { "gpt-4.1-mini": { inputPerMillion: 0.4, outputPerMillion: 1.6 } };
    expect(parseCharacter({ name: "Tess", bio: [], settings: { prices } }).settings.prices).toEqual(
      prices,
    );
    expect(
      pathsOf({
        name: "Tess",
        bio: [],
        settings: { prices: { cheap: { inputPerMillion: -1, outputPerMillion: 1, extra: 2 } } },
      }),
    ).toEqual(["settings.prices.cheap", "settings.prices.cheap.inputPerMillion"]);
  });

  it("never echoes a secret value in an error message", () => {
    const issues = issuesOf({ name: "Tess", bio: [], secrets: { TOKEN: ["sk-very-secret"] } });
    expect(JSON.stringify(issues)).not.toContain("sk-very-secret");
  });
});

describe("publicCharacter", () => {
  it("lists secret names without their values", () => {
    const secrets = { OPENAI_API_KEY: "sk-top-secret" };
    const settings = { secrets: { DISCORD_TOKEN: "discord-secret" } };
    const view = publicCharacter(parseCharacter({ name: "Tess", bio: [], secrets, settings }));
    expect(view.secretNames).toEqual(["DISCORD_TOKEN", "OPENAI_API_KEY"]);
    expect(view).not.toHaveProperty("secrets");
    expect(JSON.stringify(view)).not.toMatch(/sk-top-secret|discord-secret/);
  });
});
