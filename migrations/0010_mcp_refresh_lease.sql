ALTER TABLE `mcp_credentials` ADD `refresh_lease_owner` text;--> statement-breakpoint
ALTER TABLE `mcp_credentials` ADD `refresh_lease_until` integer;