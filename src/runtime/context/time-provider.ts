// The current date and time, so answers about "today" or "tomorrow" are right. `now` comes from
// the injected clock, never from Date directly, to keep turns reproducible in tests.
import type { Provider } from "./compose-state.ts";

/** UTC weekdays from Sunday, as Date.getUTCDay numbers them (toLocaleDateString cost ~1 ms a call). */
const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

export const timeProvider: Provider = {
  name: "time",
  position: 20,
  async get({ clock }) {
    const now = new Date(clock.now());
    const weekday = WEEKDAYS[now.getUTCDay()];
    return { text: `# Current time\n${now.toISOString()} (${weekday}, UTC)` };
  },
};
