CREATE TABLE `media_posts` (
	`id` text PRIMARY KEY NOT NULL,
	`agent_id` text NOT NULL,
	`status` text NOT NULL,
	`caption` text DEFAULT '' NOT NULL,
	`alt_text` text,
	`items` text NOT NULL,
	`container_id` text,
	`children` text,
	`media_id` text,
	`permalink` text,
	`error` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`processing_since` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `media_posts_agent_idx` ON `media_posts` (`agent_id`,`created_at`);