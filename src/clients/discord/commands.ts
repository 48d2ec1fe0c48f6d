// The bot's slash commands: the one definition that `npm run discord:register` sends to Discord
// and the interaction route dispatches on. Option types and permission bits are Discord's.
export const OptionType = {
  SUB_COMMAND: 1,
  STRING: 3,
  INTEGER: 4,
  BOOLEAN: 5,
  ATTACHMENT: 11,
} as const;
/** MANAGE_GUILD: who may choose a channel's agent and change settings (server managers). */
export const MANAGE_GUILD = 1n << 5n;

export interface CommandOption {
  type: number;
  name: string;
  description: string;
  required?: boolean;
  autocomplete?: boolean;
  max_length?: number;
  /** INTEGER bounds. */
  min_value?: number;
  max_value?: number;
  /** The only values a STRING may take (Discord shows them as a list). */
  choices?: Array<{ name: string; value: string }>;
  /** A SUB_COMMAND's own options. */
  options?: CommandOption[];
}

/** Where `/settings` writes: the whole server, or only the channel it is used in. */
const SCOPE: CommandOption = {
  type: OptionType.STRING,
  name: "scope",
  description: "The whole server, or only this channel",
  required: true,
  choices: [
    { name: "server", value: "server" },
    { name: "channel", value: "channel" },
  ],
};

/** Discord's largest INTEGER option value (2^53 - 1) is far above a daily budget; ten billion. */
export const MAX_DAILY_TOKENS_OPTION = 10_000_000_000;

export interface CommandDefinition {
  name: string;
  description: string;
  options?: CommandOption[];
  default_member_permissions?: string;
  /** 0 guild, 1 bot DM, 2 private channel. */
  contexts?: number[];
}

/** Discord's limit for a STRING option; /chat texts longer than this come as an attachment. */
export const MAX_OPTION_CHARS = 2_000;

export const COMMANDS: CommandDefinition[] = [
  {
    name: "chat",
    description: "Talk to the agent that serves this channel",
    options: [
      {
        type: OptionType.STRING,
        name: "message",
        description: "What you want to say",
        required: true,
        max_length: MAX_OPTION_CHARS,
      },
      {
        type: OptionType.ATTACHMENT,
        name: "attachment",
        description: "A file for the agent to look at",
      },
    ],
    contexts: [0, 1, 2],
  },
  {
    name: "remember",
    description: "Tell the agent a fact about you to keep",
    options: [
      {
        type: OptionType.STRING,
        name: "fact",
        description: "The fact, e.g. I am vegetarian",
        required: true,
        max_length: 1_000,
      },
    ],
    contexts: [0, 1, 2],
  },
  {
    name: "recall",
    description: "What the agent knows about you",
    options: [
      {
        type: OptionType.STRING,
        name: "query",
        description: "Narrow it down, e.g. food",
        max_length: 200,
      },
    ],
    contexts: [0, 1, 2],
  },
  {
    name: "forget",
    description: "Delete everything the agent remembers about you (asks first)",
    contexts: [0, 1, 2],
  },
  { name: "tools", description: "The tools the agent can use here", contexts: [0, 1, 2] },
  {
    name: "agent",
    description: "Choose the agent that serves this channel",
    options: [
      {
        type: OptionType.STRING,
        name: "name",
        description: "The agent",
        required: true,
        autocomplete: true,
        max_length: 64,
      },
    ],
    default_member_permissions: MANAGE_GUILD.toString(),
    contexts: [0, 1, 2],
  },
  {
    name: "task",
    description:
      "Give the agent a goal to work through on its own; it posts progress and the result here",
    options: [
      {
        type: OptionType.STRING,
        name: "goal",
        description: "What the agent should get done",
        required: true,
        max_length: MAX_OPTION_CHARS,
      },
    ],
    contexts: [0, 1, 2],
  },
  {
    name: "settings",
    description: "Show or change the bot's settings for this server and channel",
    options: [
      {
        type: OptionType.SUB_COMMAND,
        name: "show",
        description: "This server's and this channel's settings, and where each comes from",
      },
      {
        type: OptionType.SUB_COMMAND,
        name: "respond",
        description: "Which messages the bot answers without /chat",
        options: [
          {
            type: OptionType.STRING,
            name: "mode",
            description: "mentions and replies, every message, none, or back to the default",
            required: true,
            choices: [
              { name: "mentions", value: "mentions" },
              { name: "always", value: "always" },
              { name: "never", value: "never" },
              { name: "default", value: "default" },
            ],
          },
          SCOPE,
        ],
      },
      {
        type: OptionType.SUB_COMMAND,
        name: "autothread",
        description: "Whether a mention opens a thread for the conversation",
        options: [
          {
            type: OptionType.BOOLEAN,
            name: "enabled",
            description: "On or off",
            required: true,
          },
          SCOPE,
        ],
      },
      {
        type: OptionType.SUB_COMMAND,
        name: "budget",
        description: "Model tokens this server may spend a day (UTC); 0 removes a limit",
        options: [
          {
            type: OptionType.INTEGER,
            name: "server_tokens",
            description: "For the whole server, every member together (0: no limit)",
            min_value: 0,
            max_value: MAX_DAILY_TOKENS_OPTION,
          },
          {
            type: OptionType.INTEGER,
            name: "member_tokens",
            description: "For each member (0: no limit)",
            min_value: 0,
            max_value: MAX_DAILY_TOKENS_OPTION,
          },
        ],
      },
    ],
    default_member_permissions: MANAGE_GUILD.toString(),
    // Settings belong to a server: not offered in DMs.
    contexts: [0],
  },
];
