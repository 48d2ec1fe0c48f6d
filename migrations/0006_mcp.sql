CREATE TABLE `agent_mcp_servers` (
	`agent_id` text NOT NULL,
	`name` text NOT NULL,
	`config` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`agent_id`, `name`),
	FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `mcp_credentials` (
	`agent_id` text NOT NULL,
	`server` text NOT NULL,
	`sealed` text NOT NULL,
	`state_hash` text,
	`state_expires_at` integer,
	`token_expires_at` integer,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`agent_id`, `server`),
	FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `mcp_credentials_state_idx` ON `mcp_credentials` (`state_hash`);