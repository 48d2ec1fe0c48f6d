CREATE TABLE `turn_inspections` (
	`agent_id` text NOT NULL,
	`turn_id` text NOT NULL,
	`room_id` text NOT NULL,
	`user_id` text NOT NULL,
	`detail` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`agent_id`, `turn_id`),
	FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `turn_inspections_created_idx` ON `turn_inspections` (`created_at`);