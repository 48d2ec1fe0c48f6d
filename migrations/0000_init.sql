CREATE TABLE `agents` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`username` text,
	`format` text NOT NULL,
	`character` text NOT NULL,
	`secrets` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `memories` (
	`id` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`agent_id` text NOT NULL,
	`room_id` text,
	`user_id` text,
	`content` text NOT NULL,
	`metadata` text DEFAULT '{}' NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `memories_room_idx` ON `memories` (`agent_id`,`room_id`,`type`,`created_at`);--> statement-breakpoint
CREATE INDEX `memories_user_idx` ON `memories` (`agent_id`,`user_id`,`type`,`created_at`);--> statement-breakpoint
CREATE INDEX `memories_type_idx` ON `memories` (`agent_id`,`type`,`created_at`);--> statement-breakpoint
CREATE TABLE `participants` (
	`agent_id` text NOT NULL,
	`room_id` text NOT NULL,
	`user_id` text NOT NULL,
	`first_seen_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	PRIMARY KEY(`agent_id`, `room_id`, `user_id`),
	FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `participants_user_idx` ON `participants` (`user_id`);--> statement-breakpoint
CREATE TABLE `relationships` (
	`agent_id` text NOT NULL,
	`user_id` text NOT NULL,
	`interaction_count` integer DEFAULT 0 NOT NULL,
	`last_interaction` integer,
	`sentiment` real,
	`last_turn_id` text,
	PRIMARY KEY(`agent_id`, `user_id`),
	FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `rooms` (
	`agent_id` text NOT NULL,
	`id` text NOT NULL,
	`source` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`agent_id`, `id`),
	FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `users` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text,
	`source` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
