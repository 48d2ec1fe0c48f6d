// Worker entry: the Hono app answers every request; the AgentRoom Durable Object class is
// exported for the ROOMS binding.
import { createApp } from "./http/app.ts";

export { AgentRoom } from "./room/agent-room.ts";

export default createApp();
