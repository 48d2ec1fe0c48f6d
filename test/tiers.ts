// Which test files run where (docs/testing.md, "Tiers"). A test runs in workerd only when the
// platform is its subject (storage, Durable Objects, the worker's HTTP surface); the files below
// need none of it and run in plain Node, in the fast tier (`npm run test:fast`), beside
// test/runtime/. test/node/test-tiers.spec.ts holds both directions: nothing here reaches a
// platform module, and no workerd test that could run here is left out of this list.

/** Platform-free tests outside test/runtime/: the `fast` project, in plain Node. */
export const NODE_TIER_FILES = [
  "test/characters/characters.test.ts",
  "test/clients/member-error.test.ts",
  "test/clients/slack/blocks.test.ts",
  "test/clients/slack/events.test.ts",
  "test/clients/slack/message-text.test.ts",
  "test/clients/slack/signature.test.ts",
  "test/clients/slack/slack-stand-in.test.ts",
  "test/clients/slack/web-api.test.ts",
  "test/clients/telegram/approval.test.ts",
  "test/clients/telegram/bot-api.test.ts",
  "test/clients/telegram/message-text.test.ts",
  "test/clients/telegram/update.test.ts",
  "test/db/json-column-checker.test.ts",
  "test/db/stores/turn-inspection-shapes.test.ts",
  "test/http/openai-chat-response.test.ts",
  "test/http/turn-body.test.ts",
  "test/mcp/mcp-core.test.ts",
  "test/mcp/oauth-client.test.ts",
  "test/media/sniff.test.ts",
  "test/media/validate.test.ts",
  "test/db/memory/rows.test.ts",
  "test/model/model-client.test.ts",
  "test/model/transcriber.test.ts",
  "test/net/retrying-call.test.ts",
  "test/objects/conversation/history-cache.test.ts",
  "test/objects/conversation/model-retry.test.ts",
  "test/objects/conversation/room-upkeep.test.ts",
  "test/objects/tasks/event-feed.test.ts",
  "test/objects/tasks/task-delegations.test.ts",
  "test/plugins/web/markdown-writer.test.ts",
  "test/plugins/web/page-shape.test.ts",
  "test/rate-limits/admission.test.ts",
  "test/rate-limits/token-bucket.test.ts",
  "test/security/url-safety-ranges.test.ts",
  "test/security/web-reader-bounds.test.ts",
  "test/telemetry/turn-spans.test.ts",
];

/**
 * Workerd tests that import no platform module and still run in workerd, each for its reason.
 * Keep it short: a reason that goes away takes its file to NODE_TIER_FILES.
 */
export const WORKERD_BY_CHOICE: Record<string, string> = {
  "test/media/multipart.test.ts":
    "3 of its tests read a stream with workerd's ReadableStreamBYOBReader.readAtLeast, which Node lacks",
};
