CREATE INDEX `usage_records_member_idx` ON `usage_records` (`user_id`,`day`);--> statement-breakpoint
CREATE INDEX `usage_records_server_idx` ON `usage_records` (`guild_id`,`day`);