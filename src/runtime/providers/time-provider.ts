// The current date and time, so answers about "today" or "tomorrow" are right. `now` comes from
// the injected clock, never from Date directly, to keep turns reproducible in tests.
import type { Provider } from "../providers.ts";

export const timeProvider: Provider = {
  name: "time",
  position: 20,
  async get({ clock }) {
    const now = new Date(clock.now());
    const weekday = now.toLocaleDateString("en-US", { weekday: "long", timeZone: "UTC" });
    return { text: `# Current time\n${now.toISOString()} (${weekday}, UTC)` };
  },
};
