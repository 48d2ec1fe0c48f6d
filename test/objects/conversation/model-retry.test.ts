// When a chat turn that failed on the model runs again (src/objects/conversation/model-retry.ts):
// only a turn with a surface to answer, only for a failure a later try can fix, backing off,
// and never starting after the window.
import { describe, expect, it } from "vitest";
import { MODEL_RETRY, modelRetryAt } from "../../../src/objects/conversation/model-retry.ts";
import { AppError, ModelCallError } from "../../../src/runtime/util/errors.ts";
import type { DeliveryTarget } from "../../../src/objects/shared/reply-surface.ts";

const delivery = { kind: "telegram" } as unknown as DeliveryTarget;
const arrived = 1_000_000;
const down = new ModelCallError({
  model: "m",
  message: "network error after 4 attempts",
  failover: true,
  cause: "unreachable",
});
const busy = new ModelCallError({
  model: "m",
  message: "HTTP 503",
  failover: true,
  upstreamStatus: 503,
});

describe("modelRetryAt", () => {
  it("backs off from 30 s to every 2 min while the model is unreachable or failing", () => {
    const at = (retries: number, now: number) =>
      modelRetryAt({ delivery, createdAt: arrived, retries }, down, now);
    expect(at(0, arrived + 5_000)).toBe(arrived + 35_000);
    expect(at(1, arrived + 40_000)).toBe(arrived + 100_000);
    expect(at(2, arrived + 100_000)).toBe(arrived + 220_000);
    expect(at(3, arrived + 220_000)).toBe(arrived + 340_000);
    expect(modelRetryAt({ delivery, createdAt: arrived, retries: 0 }, busy, arrived)).toBe(
      arrived + 30_000,
    );
  });

  it("gives up when the next try would start after the window", () => {
    const late = arrived + MODEL_RETRY.windowMs - 60_000;
    expect(modelRetryAt({ delivery, createdAt: arrived, retries: 5 }, down, late)).toBeNull();
    expect(modelRetryAt({ delivery, createdAt: arrived, retries: 0 }, down, late)).toBe(
      late + 30_000,
    );
  });

  it("answers at once a caller that waits (REST), and any failure another try cannot fix", () => {
    expect(
      modelRetryAt({ delivery: null, createdAt: arrived, retries: 0 }, down, arrived),
    ).toBeNull();
    const unknownModel = new ModelCallError({
      model: "m",
      message: "HTTP 404",
      failover: true,
      upstreamStatus: 404,
    });
    const badKey = new ModelCallError({
      model: "m",
      message: "HTTP 401",
      failover: false,
      upstreamStatus: 401,
    });
    const invalid = new ModelCallError({
      model: "m",
      message: "not JSON",
      failover: true,
      cause: "invalid_reply",
    });
    for (const error of [
      unknownModel,
      badKey,
      invalid,
      new AppError("rate_limited", 429, "slow down"),
      new Error("x"),
    ])
      expect(modelRetryAt({ delivery, createdAt: arrived, retries: 0 }, error, arrived)).toBeNull();
  });
});
