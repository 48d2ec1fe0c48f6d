/// <reference path="./peers/provided-context.d.ts" />
// Types for the test-only bindings and for `cloudflare:workers` imports in tests.
import type { D1Migration } from "cloudflare:test";
import type { Env as AppEnv } from "../src/env.ts";

declare global {
  namespace Cloudflare {
    interface Env extends AppEnv {
      TEST_MIGRATIONS?: D1Migration[];
      /** An empty D1 database, for applying the migrations one step at a time. */
      TEST_MIGRATION_DB?: D1Database;
      /** PKCS#8, base64: signs test interactions for DISCORD_PUBLIC_KEY. */
      TEST_DISCORD_PRIVATE_KEY?: string;
      /** wrangler.toml's assets.run_worker_first, as JSON. */
      TEST_RUN_WORKER_FIRST?: string;
      /** FUZZ_RUNS from the shell (the full tier); empty: the fuzz test's default. */
      TEST_FUZZ_RUNS?: string;
    }
    interface GlobalProps {
      mainModule: typeof import("../src/index.ts");
      durableNamespaces:
        | "AgentRoom"
        | "RateLimiter"
        | "AgentTasks"
        | "PostPublisher"
        | "SchemaGate"
        | "DiscordGateway";
    }
  }
}
