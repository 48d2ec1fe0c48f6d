// Small readers over what the model stand-in received, so tests can say what the model saw.
import type { StandInCall } from "../stand-ins/openai-stand-in.ts";

export function lastUserText(call: StandInCall): string {
  const users = call.messages.filter((m) => m.role === "user");
  const last = users.at(-1);
  return typeof last?.content === "string" ? last.content : "";
}

export function toolMessages(call: StandInCall): string[] {
  return call.messages.filter((m) => m.role === "tool").map((m) => String(m.content));
}

export function roles(call: StandInCall): string[] {
  return call.messages.map((m) => String(m.role));
}
