// zod schema for legacy ElizaOS v0.x character files (`CharacterSchema` in the v0.x
// packages/core/src/environment.ts): the v1 fields plus lore, clients, modelProvider and
// clientConfig. v0-only extras (twitterProfile, nft, people, ...) are stripped, not rejected.

import { z } from "zod";
import { boundedArray, boundedString, jsonObject, stringList } from "./limits.ts";
import { characterV1Schema } from "./schema-v1.ts";

/** v0 plugins were package names or, rarely, plugin objects; we keep the name either way. */
const pluginRefSchema = z
  .union([boundedString(), z.looseObject({ name: boundedString() })], {
    error: "expected a plugin name or an object with a name",
  })
  .transform((plugin) => (typeof plugin === "string" ? plugin : plugin.name));

/** Keys whose presence marks a file as v0 (besides examples that name speakers `user`). */
export const LEGACY_KEYS = ["lore", "clients", "modelProvider", "clientConfig"] as const;

export const characterV0Schema = characterV1Schema.extend({
  lore: stringList().optional(),
  clients: stringList().optional(),
  modelProvider: boundedString().optional(),
  clientConfig: jsonObject().optional(),
  plugins: boundedArray(pluginRefSchema).optional(),
});

export type CharacterV0File = z.infer<typeof characterV0Schema>;
