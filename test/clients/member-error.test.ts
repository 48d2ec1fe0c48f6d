// What a chat member reads when their turn failed (src/clients/chat/member-error.ts): the
// deployment's failures in one neutral sentence, whatever their message said; failures about the
// member's own message in their own words.
import { describe, expect, it } from "vitest";
import { memberErrorText, UNAVAILABLE_TEXT } from "../../src/clients/chat/member-error.ts";
import type { ErrorCode } from "../../src/runtime/util/errors.ts";

const deployment: ErrorCode[] = [
  "model",
  "model_not_configured",
  "upstream",
  "not_configured",
  "embedding",
  "dimension_mismatch",
  "database_unavailable",
  "internal",
  "tool",
  "conflict",
  "unauthorized",
];

describe("a failed turn's text for a member", () => {
  it("says nothing of the deployment's failures but that it cannot answer now", () => {
    for (const code of deployment)
      expect(
        memberErrorText({
          code,
          message: "model fake-large: network error after 4 attempts: Network connection lost.",
        }),
      ).toBe(UNAVAILABLE_TEXT);
  });

  it("keeps the words of a failure about the member's own message", () => {
    expect(
      memberErrorText({ code: "rate_limited", message: "rate limit reached; retry in 12 s" }),
    ).toBe("⚠️ I couldn't answer that: rate limit reached; retry in 12 s");
    expect(
      memberErrorText({ code: "payload_too_large", message: "the attachment is over 20 MB" }),
    ).toBe("⚠️ I couldn't answer that: the attachment is over 20 MB");
  });
});
