CREATE TABLE `usage_records` (
	`id` text NOT NULL,
	`agent_id` text NOT NULL,
	`kind` text NOT NULL,
	`day` text NOT NULL,
	`room_id` text,
	`user_id` text,
	`guild_id` text,
	`source` text,
	`model` text,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`model_calls` integer DEFAULT 0 NOT NULL,
	`tools` text DEFAULT '[]' NOT NULL,
	`tool_calls` integer DEFAULT 0 NOT NULL,
	`error` text,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`agent_id`, `id`),
	FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `usage_records_day_idx` ON `usage_records` (`agent_id`,`day`);--> statement-breakpoint
CREATE INDEX `usage_records_user_idx` ON `usage_records` (`agent_id`,`user_id`,`day`);--> statement-breakpoint
CREATE INDEX `usage_records_guild_idx` ON `usage_records` (`agent_id`,`guild_id`,`day`);