// The bot's slash commands: the one definition that `npm run discord:register` sends to Discord
// and the interaction route dispatches on. Option types and permission bits are Discord's.
export const OptionType = { STRING: 3, ATTACHMENT: 11 } as const;
/** MANAGE_GUILD: who may choose the agent that serves a channel (server managers). */
export const MANAGE_GUILD = 1n << 5n;

export interface CommandOption {
  type: number;
  name: string;
  description: string;
  required?: boolean;
  autocomplete?: boolean;
  max_length?: number;
}

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
];
