// The internal form of a character, whichever file format (ElizaOS v1 or legacy v0.x) it came
// from. The runtime only ever sees this shape; parsing and conversion live in src/characters/.
// Our own settings (model, tools, respond rules) sit under `settings` so files stay portable.

export type CharacterFormat = "v1" | "v0";

/** One line of an example conversation. `speaker` is `{{user1}}`-style or the character's name. */
export interface ExampleLine {
  speaker: string;
  text: string;
  actions?: string[];
}

export type KnowledgeItem =
  | { kind: "text"; text: string }
  | { kind: "path"; path: string; shared: boolean }
  | { kind: "directory"; directory: string; shared: boolean };

/** When the agent answers a message that is neither a REST call, a DM nor a mention. */
export type RespondMode = "always" | "mentions" | "llm" | "never";

export interface RespondSettings {
  /** Default "mentions": outside DMs and mentions, stay quiet unless told otherwise. */
  mode: RespondMode;
  /** Messages from other bots are ignored unless this is true. */
  replyToBots: boolean;
  /** Words that count as a mention when they appear in the text (the name always does). */
  keywords: string[];
}

/** Whose direct messages the agent answers: nobody, the bot's owners (the default), or anyone. */
export type DirectMessagePolicy = "off" | "owners" | "everyone";

/**
 * The DM policy on each chat platform, resolved from the file: `settings.<platform>.directMessages`,
 * else `settings.directMessages`, else "owners".
 */
export type DirectMessageSettings = Record<"discord" | "telegram" | "slack", DirectMessagePolicy>;

/** Our additions, all optional in the file; defaults are applied by the runtime. */
export interface RuntimeSettings {
  model?: string;
  smallModel?: string;
  modelFallbacks?: string[];
  temperature?: number;
  maxOutputTokens?: number;
  /** Names of MCP servers from the registry that this character needs. */
  mcpServers: string[];
  /** Tool names (built-in or `server__tool`) that need a human's approval before they run. */
  toolApproval: string[];
  respond: RespondSettings;
  maxSteps?: number;
  maxConsecutiveFailures?: number;
  /** Token budget for the room's recent messages in the prompt. */
  historyTokens?: number;
  /** Model tokens this agent may spend per UTC day (overrides DAILY_TOKEN_LIMIT). */
  dailyTokens?: number;
  /** US dollars per million input and output tokens, by model name, for usage cost estimates. */
  prices?: Record<
    string,
    {
      inputPerMillion: number;
      outputPerMillion: number;
      /** Input tokens read from the provider's prompt cache; absent: priced as other input. */
      cachedInputPerMillion?: number;
    }
  >;
  /** Agent ids this agent may ask for help (ask_agent, delegate_task); absent or empty: none. */
  delegates?: string[];
  /** How the agent's autonomous tasks run: `concurrency` at once (default 2, at most 8). */
  tasks?: { concurrency?: number };
  memory: MemorySettings;
  directMessages: DirectMessageSettings;
  /** Procedures written with the character (`settings.skills`); more can be added later. */
  skills: SkillDefinition[];
}

/** A markdown procedure with a name and a one-line description (docs/skills.md). */
export interface SkillDefinition {
  name: string;
  description: string;
  body: string;
}

/** Long-term memory knobs from `settings.memory`; unset ones take the runtime's defaults. */
export interface MemorySettings {
  /** Extract facts about a user every N of their messages. */
  factsEvery?: number;
  /** Summarize a room's older messages once this many are not yet summarized. */
  summarizeAfter?: number;
  /** Delete conversation memories (messages, summaries) older than this. */
  retentionDays?: number;
  knowledgeTokens?: number;
  factsTokens?: number;
  recallTokens?: number;
  /** Minimum vector similarity for retrieved knowledge and older messages. */
  threshold?: number;
  /**
   * How long a turn waits for its query's embedding (ms, default DEFAULT_EMBEDDING_BUDGET_MS in
   * src/runtime/retrieval/query-embedding.ts); past it, the turn searches by text alone.
   */
  embeddingBudgetMs?: number;
}

export interface Character {
  format: CharacterFormat;
  /** ElizaOS `id` if the file had one. */
  id?: string;
  name: string;
  username?: string;
  system?: string;
  bio: string[];
  /** v0 lore lines; v1 files have none. Lore feeds `lore` memories. */
  lore: string[];
  messageExamples: ExampleLine[][];
  postExamples: string[];
  topics: string[];
  adjectives: string[];
  knowledge: KnowledgeItem[];
  plugins: string[];
  style: { all: string[]; chat: string[]; post: string[] };
  templates: Record<string, string>;
  /** Our typed settings; the file's other settings keys are kept in `extraSettings`. */
  settings: RuntimeSettings;
  extraSettings: Record<string, unknown>;
  /** Secret values. Never returned by the API, never put in a prompt. */
  secrets: Record<string, string>;
  /** v0 only, kept for round-trips: clients, modelProvider, clientConfig. */
  clients: string[];
  modelProvider?: string;
  clientConfig?: Record<string, unknown>;
}
