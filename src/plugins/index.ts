// Every plugin of this deployment, in the order their tools and prompt sections come. Adding a
// plugin is one line here; a character turns an opt-in plugin on by naming it in `plugins`
// (docs/plugins.md).
import { catalogPlugin } from "./catalog/plugin.ts";
import { instagramPlugin } from "./instagram/plugin.ts";
import type { Plugin } from "./plugin-api.ts";
import { skillsPlugin } from "./skills/plugin.ts";
import { webPlugin } from "./web/plugin.ts";

export const PLUGINS: readonly Plugin[] = [instagramPlugin, skillsPlugin, catalogPlugin, webPlugin];
