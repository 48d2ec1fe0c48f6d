// The current date and time, so answers about "today" or "tomorrow" are right. `now` comes from
// the injected clock, never from Date directly, to keep turns reproducible in tests. To the minute:
// a model needs no more, and the section rides in the new message's context block, not the cached
// system message.
import type { Provider } from "./compose-state.ts";

/** UTC weekdays from Sunday, as Date.getUTCDay numbers them (toLocaleDateString cost ~1 ms a call). */
const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

export const timeProvider: Provider = {
  name: "time",
  position: 20,
  slot: "context",
  async get({ clock }) {
    const now = new Date(clock.now());
    const weekday = WEEKDAYS[now.getUTCDay()];
    // "2026-11-28T18:35" from the ISO form.
    const minute = now.toISOString().slice(0, 16).replace("T", " ");
    return { text: `# Current time\n${minute} UTC (${weekday})` };
  },
};
