// Types for the two ElizaOS 1.7.2 plugins the driver uses whose packages ship none TypeScript can
// resolve (plugin-bootstrap has no declarations; plugin-sql's are not in its package "exports").
declare module "@elizaos/plugin-bootstrap" {
  import type { Plugin } from "@elizaos/core";
  const bootstrapPlugin: Plugin;
  export default bootstrapPlugin;
}

declare module "@elizaos/plugin-sql" {
  import type { IDatabaseAdapter, Plugin, UUID } from "@elizaos/core";
  export function createDatabaseAdapter(
    config: { dataDir?: string; postgresUrl?: string },
    agentId: UUID,
  ): IDatabaseAdapter & Required<Pick<IDatabaseAdapter, "runPluginMigrations">>;
  /** Its schema: the drizzle tables it migrates. */
  const sqlPlugin: Plugin & { schema: Record<string, Record<string, unknown>> };
  export default sqlPlugin;
}
