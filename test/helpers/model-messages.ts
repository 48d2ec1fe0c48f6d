// Small readers over what the model stand-in received, so tests can say what the model saw.
import type { StandInCall } from "../stand-ins/openai-stand-in.ts";

/** What the person wrote in the newest message, without the context block the turn adds to it. */
export function lastUserText(call: StandInCall): string {
  return splitContext(lastUserContent(call)).said;
}

/** The newest message's context block (the time, what was retrieved), or "" without one. */
export function contextOf(call: StandInCall): string {
  return splitContext(lastUserContent(call)).context;
}

/** The instructions and data the model got for this turn: the system message and the context block. */
export function promptOf(call: StandInCall): string {
  const system = call.messages.find((m) => m.role === "system");
  return `${typeof system?.content === "string" ? system.content : ""}\n\n${contextOf(call)}`;
}

function lastUserContent(call: StandInCall): string {
  const last = call.messages.filter((m) => m.role === "user").at(-1);
  return typeof last?.content === "string" ? last.content : "";
}

function splitContext(content: string): { said: string; context: string } {
  const at = content.lastIndexOf("\n\n<context>\n");
  return at < 0 || !content.endsWith("\n</context>")
    ? { said: content, context: "" }
    : { said: content.slice(0, at), context: content.slice(at + 2) };
}

export function toolMessages(call: StandInCall): string[] {
  return call.messages.filter((m) => m.role === "tool").map((m) => String(m.content));
}

export function roles(call: StandInCall): string[] {
  return call.messages.map((m) => String(m.role));
}
