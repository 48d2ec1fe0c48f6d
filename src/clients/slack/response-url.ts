// Slack's response_url: where an answer to an ephemeral message (which chat.update cannot reach)
// goes. The URL comes from the payload, so it is only used when it is Slack's own
// (https://hooks.slack.com/…) or the configured API base's host (a stand-in in tests): never a
// host a payload names. Best effort, one attempt, and nothing of Slack's answer is repeated.
import { errorField, log } from "../../log.ts";

const SLACK_HOOKS_HOST = "hooks.slack.com";

/** Whether a response_url may be posted to: Slack's hooks host over https, or the API base's. */
export function isSlackResponseUrl(url: string, apiBase: string): boolean {
  let target: URL;
  let base: URL;
  try {
    target = new URL(url);
    base = new URL(apiBase);
  } catch {
    return false;
  }
  if (target.username || target.password) return false;
  if (target.protocol === "https:" && target.host === SLACK_HOOKS_HOST) return true;
  return target.protocol === base.protocol && target.host === base.host;
}

export interface ResponseUrlMessage {
  /** Plain text; Slack's `&`, `<`, `>` are escaped by the caller when they come from elsewhere. */
  text: string;
  replace_original?: boolean;
  delete_original?: boolean;
  response_type?: "ephemeral" | "in_channel";
}

export async function postToResponseUrl(
  url: string,
  apiBase: string,
  message: ResponseUrlMessage,
): Promise<boolean> {
  if (!isSlackResponseUrl(url, apiBase)) {
    log.warn("slack_response_url_refused", {});
    return false;
  }
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify(message),
    });
    await response.body?.cancel();
    return response.ok;
  } catch (error) {
    log.warn("slack_response_url_failed", { error: errorField(error) });
    return false;
  }
}
