// Reads server-sent events the way a browser's EventSource would: `event:` and `data:` lines,
// events separated by a blank line, comment lines (`:`) ignored.

export interface ServerEvent {
  event: string;
  data: unknown;
}

export function parseEvents(text: string): ServerEvent[] {
  const events: ServerEvent[] = [];
  for (const block of text.split("\n\n")) {
    let event = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":") || line === "") continue;
      if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
    }
    if (data.length > 0) events.push({ event, data: JSON.parse(data.join("\n")) as unknown });
  }
  return events;
}

/** Reads a stream until `stop` says so (or it ends); returns the events read so far. */
export async function readEventsUntil(
  body: ReadableStream<Uint8Array>,
  stop: (events: ServerEvent[]) => boolean,
): Promise<{ events: ServerEvent[]; reader: ReadableStreamDefaultReader<Uint8Array> }> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    const complete = text.slice(0, text.lastIndexOf("\n\n") + 2);
    const events = parseEvents(complete);
    if (stop(events)) return { events, reader };
  }
  return { events: parseEvents(text), reader };
}
