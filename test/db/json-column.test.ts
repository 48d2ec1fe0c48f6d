// JSON columns read back from D1 are validated (src/db/json-column.ts): a hand-edited or
// older-shaped value becomes a typed internal error that names the row, never a crash that echoes
// the value, and never a value the code trusts by assertion.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api, json } from "../helpers/api.ts";

type ErrorBody = { error: { code: string; message: string } };

async function mint(scopes: string[]): Promise<{ id: string; token: string }> {
  const response = await api("POST", "/auth/tokens", { body: { name: "json-columns", scopes } });
  expect(response.status).toBe(201);
  return json<{ id: string; token: string }>(response);
}

describe("JSON columns read back from D1", () => {
  it("refuses a token whose stored scopes no longer parse, naming the row and not the value", async () => {
    const minted = await mint(["agents:read"]);
    await env.DB.prepare("UPDATE api_tokens SET scopes = ? WHERE id = ?")
      .bind('["agents:read","root-of-all-SECRET"]', minted.id)
      .run();
    const response = await api("GET", "/agents", { token: minted.token });
    expect(response.status).toBe(500);
    const body = await json<ErrorBody>(response);
    expect(body.error.code).toBe("internal");
    expect(body.error.message).toContain(`api_tokens.scopes of ${minted.id}`);
    expect(body.error.message).not.toContain("SECRET");
  });

  it("reports a stored value that is not JSON at all the same way", async () => {
    const minted = await mint(["agents:read"]);
    await env.DB.prepare("UPDATE api_tokens SET agents = ? WHERE id = ?")
      .bind("{not json", minted.id)
      .run();
    const response = await api("GET", "/agents", { token: minted.token });
    expect(response.status).toBe(500);
    expect((await json<ErrorBody>(response)).error.message).toContain(
      `api_tokens.agents of ${minted.id} is not valid JSON`,
    );
  });

  it("refuses a Discord client config of the wrong shape instead of using it", async () => {
    await env.DB.prepare(
      "INSERT INTO client_configs (client_id, config, updated_at) VALUES ('discord', ?, 0) ON CONFLICT (client_id) DO UPDATE SET config = excluded.config",
    )
      .bind('{"allowedChannels":"everywhere"}')
      .run();
    try {
      const response = await api("GET", "/clients/discord/config");
      expect(response.status).toBe(500);
      expect((await json<ErrorBody>(response)).error.message).toContain(
        "client_configs.config of discord",
      );
    } finally {
      await env.DB.prepare("DELETE FROM client_configs WHERE client_id = 'discord'").run();
    }
  });
});
