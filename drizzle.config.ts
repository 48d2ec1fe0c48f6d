// drizzle-kit reads the schema and writes SQL migrations into migrations/, which wrangler applies
// (`npm run db:migrate:local|remote`). Hand-written migrations (e.g. FTS5) live beside them.
import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./migrations",
});
