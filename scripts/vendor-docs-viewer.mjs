// Copies the API reference's viewer (Swagger UI, from the swagger-ui-dist package) into the static
// assets directory, so /docs loads it from this worker instead of a CDN. wrangler runs it as the
// `[build]` command before `wrangler dev` and `wrangler deploy`; the copy is git-ignored, the pinned
// package in package-lock.json is the source of truth. Plain JavaScript, not TypeScript: wrangler
// runs it with whichever `node` is first on PATH, which may be older than the project's Node 22.
import { copyFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** Only what the page loads, plus the licence that must travel with it. */
const FILES = ["swagger-ui-bundle.js", "swagger-ui.css", "LICENSE", "NOTICE"];
/** @hono/swagger-ui builds `${baseUrl}/swagger-ui-dist/<file>`: /docs passes baseUrl "/vendor". */
const TARGET = join("public", "vendor", "swagger-ui-dist");

const source = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
mkdirSync(TARGET, { recursive: true });
for (const file of FILES) copyFileSync(join(source, file), join(TARGET, file));
