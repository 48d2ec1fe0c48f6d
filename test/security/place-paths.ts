// The place matrix's rows and columns (issue 53): every path by which text reaches a model, or is
// stored for a model to read later, and the rules of a chat place each must keep. The rows are
// checked against the code by test/node/place-paths.spec.ts: every call of a sink below in src/
// must be a row here (and every row a call), so a new path that is not in the matrix fails. Each
// cell names the test that holds it ("file › title", checked to exist) or why it does not apply.
// No vitest or platform import: the Node spec and the workerd matrix both read it.

/** The rules of a place (docs/security.md, "The rules of a place"). */
export const PLACE_RULES = [
  "filter word",
  "filter pattern",
  "role-gated tool",
  "channel tool list",
  "member budget",
  "server budget",
  "DM policy",
] as const;
export type PlaceRule = (typeof PLACE_RULES)[number];

/** The functions through which an edge hands text to a model or to memory. */
export const SINKS = [
  "enqueueTurn",
  "submitTurn",
  "streamTurn",
  "createTask",
  "createSchedule",
  "answerTaskQuestion",
  "answerTaskInput",
  "takeMessage",
  "amendMessage",
  "insertMemories",
] as const;
export type Sink = (typeof SINKS)[number];

/** A cell: the test that holds the rule on this path, or why the rule has nothing to hold. */
export type Cell = { heldBy: string } | { na: string };

export interface EntryPath {
  name: string;
  /** Where the edge calls its sink (a path under src/). */
  file: string;
  sink: Sink;
  /**
   * `place`: a chat place's member; its admission yields the place's policy. `token`: an API
   * token, which speaks from no chat place (its scopes and agents are the cross-tenant matrix's).
   * `inherits`: work another principal's turn or task asked for, carrying its place on.
   * `funnel`: the admission step itself, which the place paths call.
   */
  kind: "place" | "token" | "inherits" | "funnel";
  rules?: Record<PlaceRule, Cell>;
}

const MATRIX = "test/security/place-matrix.test.ts";
const held = (title: string, file = MATRIX): Cell => ({ heldBy: `${file} › ${title}` });
const na = (why: string): Cell => ({ na: why });

/** The cells of a Discord interaction command, held by the workerd matrix. */
function discordCommand(command: "chat" | "task" | "remember"): Record<PlaceRule, Cell> {
  const cell = (rule: PlaceRule) => held(`/${command} keeps the ${rule}`);
  return {
    "filter word": cell("filter word"),
    "filter pattern": cell("filter pattern"),
    "role-gated tool": cell("role-gated tool"),
    "channel tool list": cell("channel tool list"),
    "member budget":
      command === "remember" ? na("/remember makes no model call") : cell("member budget"),
    "server budget":
      command === "remember" ? na("/remember makes no model call") : cell("server budget"),
    "DM policy": cell("DM policy"),
  };
}

/** An edit's cells: the filter reads the edited text; the rest started no turn to hold. */
function editCells(filterWord: Cell): Record<PlaceRule, Cell> {
  const noTurn = na("an edit starts no turn: it amends a stored message");
  return {
    "filter word": filterWord,
    "filter pattern": na("an edit goes through the same admitEdit verdict as a word"),
    "role-gated tool": noTurn,
    "channel tool list": noTurn,
    "member budget": noTurn,
    "server budget": noTurn,
    "DM policy": na("only a message that was taken has anything to amend"),
  };
}

const NO_ROLES = (platform: string) =>
  na(`${platform} has no roles or channel tool lists: its client settings have neither`);

export const ENTRY_PATHS: EntryPath[] = [
  {
    name: "Discord /chat",
    file: "src/http/routes/discord/discord-commands.ts",
    sink: "enqueueTurn",
    kind: "place",
    rules: discordCommand("chat"),
  },
  {
    name: "Discord /task",
    file: "src/http/routes/discord/discord-commands.ts",
    sink: "createTask",
    kind: "place",
    rules: discordCommand("task"),
  },
  {
    name: "Discord /remember",
    file: "src/http/routes/discord/discord-commands.ts",
    sink: "insertMemories",
    kind: "place",
    rules: discordCommand("remember"),
  },
  {
    name: "Discord Gateway message",
    file: "src/clients/discord/gateway/gateway-events.ts",
    sink: "takeMessage",
    kind: "place",
    rules: {
      // Its configuration holds a word and a pattern, and both kinds of message are declined.
      "filter word": held(
        "stores a filtered mention as declined, with no model call, and answers the next one",
        "test/gateway/message-filter.spec.ts",
      ),
      "filter pattern": held(
        "stores a filtered mention as declined, with no model call, and answers the next one",
        "test/gateway/message-filter.spec.ts",
      ),
      "role-gated tool": held(
        "a role-gated tool is offered to a member with its role and not to one without",
        "test/gateway/gateway.spec.ts",
      ),
      "channel tool list": held(
        "a channel's tool list is all a mention there is offered",
        "test/gateway/gateway.spec.ts",
      ),
      "member budget": held(
        "a member over the server's daily member budget gets one notice and no model call; another member is answered",
        "test/gateway/gateway.spec.ts",
      ),
      "server budget": held(
        "a server over its daily budget tells each member once and asks the model nothing",
        "test/gateway/gateway.spec.ts",
      ),
      "DM policy": held(
        "answers an owner's DM and makes no turn of a stranger's (directMessages: owners)",
        "test/gateway/gateway.spec.ts",
      ),
    },
  },
  {
    name: "Discord Gateway edit",
    file: "src/clients/discord/gateway/gateway-events.ts",
    sink: "amendMessage",
    kind: "place",
    rules: editCells(
      held(
        "an answered message edited into spam leaves memory and is deleted in Discord; a clean edit stays",
        "test/gateway/message-filter.spec.ts",
      ),
    ),
  },
  {
    name: "Telegram message",
    file: "src/http/routes/telegram/telegram.ts",
    sink: "takeMessage",
    kind: "place",
    rules: {
      "filter word": held(
        "stores a mention holding a filtered word, with no model call, and answers the next",
        "test/surfaces/telegram/telegram-filter.test.ts",
      ),
      "filter pattern": held(
        "stores a mention holding a filtered word, with no model call, and answers the next",
        "test/surfaces/telegram/telegram-filter.test.ts",
      ),
      "role-gated tool": NO_ROLES("Telegram"),
      "channel tool list": NO_ROLES("Telegram"),
      "member budget": held(
        "over it: one notice, then silence, and no model call; someone else is answered",
        "test/surfaces/telegram/telegram-budgets.test.ts",
      ),
      "server budget": na("Telegram has no servers: a member's budget counts every chat"),
      "DM policy": held(
        "refuses a non-owner's private chat under the default policy (owners)",
        "test/surfaces/telegram/telegram-webhook.test.ts",
      ),
    },
  },
  {
    name: "Telegram voice note",
    file: "src/http/routes/telegram/telegram.ts",
    sink: "takeMessage",
    kind: "place",
    rules: {
      "filter word": held(
        "filters a voice note's transcript before the model, as it filters typed text",
        "test/surfaces/telegram/telegram-filter.test.ts",
      ),
      "filter pattern": na("the transcript goes through the same filterVerdict as a word"),
      "role-gated tool": NO_ROLES("Telegram"),
      "channel tool list": NO_ROLES("Telegram"),
      "member budget": held(
        "over it: a voice note is not transcribed, and the model is not called",
        "test/surfaces/telegram/telegram-budgets.test.ts",
      ),
      "server budget": na("Telegram has no servers: a member's budget counts every chat"),
      "DM policy": na("a voice note is a message: the same intake, the same DM policy"),
    },
  },
  {
    name: "Telegram edit",
    file: "src/http/routes/telegram/telegram.ts",
    sink: "amendMessage",
    kind: "place",
    rules: editCells(
      held(
        "an answered message edited into a filtered word leaves memory",
        "test/surfaces/telegram/telegram-filter.test.ts",
      ),
    ),
  },
  {
    name: "Slack mention",
    file: "src/http/routes/slack/slack.ts",
    sink: "takeMessage",
    kind: "place",
    rules: {
      "filter word": held(
        "stores a filtered mention as declined, with no model call, and answers another",
        "test/surfaces/slack/slack-filter.test.ts",
      ),
      "filter pattern": held(
        "stores a filtered mention as declined, with no model call, and answers another",
        "test/surfaces/slack/slack-filter.test.ts",
      ),
      "role-gated tool": NO_ROLES("Slack"),
      "channel tool list": NO_ROLES("Slack"),
      "member budget": held(
        "a member over memberDailyTokens gets one notice in the thread and no model call",
        "test/surfaces/slack/slack-budgets.test.ts",
      ),
      "server budget": held(
        "reached: a member is told once, then nothing, and the model is not asked",
        "test/surfaces/slack/slack-budgets.test.ts",
      ),
      "DM policy": held(
        "refuses a stranger's DM under the default policy (owners)",
        "test/surfaces/slack/slack-events.test.ts",
      ),
    },
  },
  {
    name: "Slack /ask",
    file: "src/http/routes/slack/slack-commands.ts",
    sink: "takeMessage",
    kind: "place",
    rules: {
      "filter word": held(
        "declines a filtered /ask before the bot posts the question, telling only the asker",
        "test/surfaces/slack/slack-filter.test.ts",
      ),
      "filter pattern": na("/ask goes through the same admission as a mention"),
      "role-gated tool": NO_ROLES("Slack"),
      "channel tool list": NO_ROLES("Slack"),
      "member budget": na("/ask goes through the same intake and turn as a mention"),
      "server budget": na("/ask goes through the same intake and turn as a mention"),
      "DM policy": na("/ask goes through the same intake as a mention"),
    },
  },
  {
    name: "Slack edit",
    file: "src/http/routes/slack/slack.ts",
    sink: "amendMessage",
    kind: "place",
    rules: editCells(
      held(
        "a mention edited into a filtered word leaves memory, so no later prompt reads it",
        "test/surfaces/slack/slack-filter.test.ts",
      ),
    ),
  },
  {
    name: "Discord task question's answer",
    file: "src/http/routes/discord/discord-task-input.ts",
    sink: "answerTaskQuestion",
    kind: "place",
    rules: {
      "filter word": held("a task question's answer goes through the server's filter"),
      "filter pattern": na("an answer goes through the same admitText verdict as a word"),
      "role-gated tool": na("the task it answers was admitted with its place, which it keeps"),
      "channel tool list": na("the task it answers was admitted with its place, which it keeps"),
      "member budget": na("the task it answers reads its budgets before every model call"),
      "server budget": na("the task it answers reads its budgets before every model call"),
      "DM policy": na("only the person who started the task may answer it"),
    },
  },
  // The admission funnel: the place paths above reach their room through these two.
  { name: "chat intake", file: "src/clients/chat/intake.ts", sink: "enqueueTurn", kind: "funnel" },
  { name: "chat edits", file: "src/clients/chat/intake.ts", sink: "amendMessage", kind: "funnel" },
  // API tokens speak from no chat place: their rules are scopes, agents and user prefixes.
  // REST's messages route and the OpenAI-compatible chat completions reach the room through the
  // one turn writer, whole or streamed.
  {
    name: "REST and OpenAI-compatible turns",
    file: "src/http/turn-writer.ts",
    sink: "submitTurn",
    kind: "token",
  },
  {
    name: "REST and OpenAI-compatible turns, streamed",
    file: "src/http/turn-writer.ts",
    sink: "streamTurn",
    kind: "token",
  },
  {
    name: "REST schedule",
    file: "src/http/routes/tasks/schedules.ts",
    sink: "createSchedule",
    kind: "token",
  },
  {
    name: "REST task input",
    file: "src/http/routes/tasks/answer-routes.ts",
    sink: "answerTaskInput",
    kind: "token",
  },
  {
    name: "MCP chat tool",
    file: "src/http/routes/mcp-server/chat-tool.ts",
    sink: "submitTurn",
    kind: "token",
  },
  { name: "REST task", file: "src/http/routes/tasks/tasks.ts", sink: "createTask", kind: "token" },
  {
    name: "MCP start_task",
    file: "src/http/routes/mcp-server/task-tools.ts",
    sink: "createTask",
    kind: "token",
  },
  {
    name: "REST memories",
    file: "src/http/routes/memories.ts",
    sink: "insertMemories",
    kind: "token",
  },
  // Work asked on someone's behalf carries their place on (src/runtime/access/place-policy.ts).
  {
    name: "ask_agent",
    file: "src/objects/conversation/agent-calls.ts",
    sink: "submitTurn",
    kind: "inherits",
  },
  {
    name: "delegate_task",
    file: "src/objects/tasks/task-delegations.ts",
    sink: "createTask",
    kind: "inherits",
  },
  {
    name: "delegate_task (the parent's step)",
    file: "src/objects/tasks/task-pauses.ts",
    sink: "createTask",
    kind: "inherits",
  },
  // A schedule's run acts for its creator, who can only be an API token (no chat place).
  {
    name: "schedule run",
    file: "src/objects/tasks/agent-tasks.ts",
    sink: "createTask",
    kind: "inherits",
  },
];
