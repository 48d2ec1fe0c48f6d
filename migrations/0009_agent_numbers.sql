-- Each agent's memories get their own rowid range in the FTS5 index, so a search reads one agent's
-- range (`rowid BETWEEN num << 40 AND ...`) instead of AND-ing the per-agent scope token that all
-- of the agent's rows carry: at 100k memories of one agent that token's doclist, and the BM25
-- statistics FTS5 gathers for it, were more than half of a query's cost. The table was generated
-- by drizzle-kit; the trigger and the index rebuild below are hand-written (drizzle-kit does not
-- model virtual tables). A memory's FTS rowid is `num << 40 | seq`: 2^40 memories in all and 2^22
-- agents before it overflows. See 0002 for the backup note (`wrangler d1 export` and FTS5).
CREATE TABLE `agent_numbers` (
	`num` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`agent_id` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `agent_numbers_agent_id_unique` ON `agent_numbers` (`agent_id`);
--> statement-breakpoint
INSERT INTO `agent_numbers`(`agent_id`) SELECT `id` FROM `agents` ORDER BY `created_at`, `id`;
--> statement-breakpoint
-- Numbers outlive their agents: deleting an agent cascades to its memories, whose delete trigger
-- must still find the number to remove their index rows. An agent created again keeps its number.
CREATE TRIGGER `agents_number` AFTER INSERT ON `agents` BEGIN
  INSERT OR IGNORE INTO `agent_numbers`(`agent_id`) VALUES (new.`id`);
END;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `memories_fts_insert`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `memories_fts_update`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `memories_fts_delete`;
--> statement-breakpoint
DROP TABLE IF EXISTS `memories_fts`;
--> statement-breakpoint
-- As in 0003, less the agent token (the rowid range does its work): `scope` holds t<type>x,
-- r<room>x, u<user>x (values in lowercase hex) and `sharedx`, and is weighed 0 by queries.
CREATE VIRTUAL TABLE `memories_fts` USING fts5(`text`, `scope`, tokenize = 'porter unicode61 remove_diacritics 2');
--> statement-breakpoint
-- A memory written again under a deleted one's id (a re-ingested document, a replaced profile)
-- must not lose its new vector to the sweeper: its pending deletion is withdrawn.
CREATE TRIGGER `memories_fts_insert` AFTER INSERT ON `memories` BEGIN
  DELETE FROM `vector_deletions` WHERE `memory_id` = new.`id`;
  INSERT INTO `memories_fts`(rowid, `text`, `scope`) VALUES (
    ((SELECT `num` FROM `agent_numbers` WHERE `agent_id` = new.`agent_id`) << 40) | new.`seq`,
    coalesce(json_extract(new.`content`, '$.userName') || ': ', '') || json_extract(new.`content`, '$.text'),
    't' || lower(hex(new.`type`)) || 'x'
      || coalesce(' r' || lower(hex(new.`room_id`)) || 'x', '') || coalesce(' u' || lower(hex(new.`user_id`)) || 'x', '')
      || CASE WHEN json_extract(new.`metadata`, '$.shared') = 1 THEN ' sharedx' ELSE '' END
  );
END;
--> statement-breakpoint
-- Delete and insert rather than update: the rowid follows the agent.
CREATE TRIGGER `memories_fts_update` AFTER UPDATE OF `content`, `metadata`, `agent_id`, `type`, `room_id`, `user_id` ON `memories` BEGIN
  DELETE FROM `memories_fts` WHERE rowid = ((SELECT `num` FROM `agent_numbers` WHERE `agent_id` = old.`agent_id`) << 40) | old.`seq`;
  INSERT INTO `memories_fts`(rowid, `text`, `scope`) VALUES (
    ((SELECT `num` FROM `agent_numbers` WHERE `agent_id` = new.`agent_id`) << 40) | new.`seq`,
    coalesce(json_extract(new.`content`, '$.userName') || ': ', '') || json_extract(new.`content`, '$.text'),
    't' || lower(hex(new.`type`)) || 'x'
      || coalesce(' r' || lower(hex(new.`room_id`)) || 'x', '') || coalesce(' u' || lower(hex(new.`user_id`)) || 'x', '')
      || CASE WHEN json_extract(new.`metadata`, '$.shared') = 1 THEN ' sharedx' ELSE '' END
  );
END;
--> statement-breakpoint
-- A deleted memory leaves the text index, and, if it had a vector, a note for the Vectorize
-- sweeper (the local index drops its row through the foreign key).
CREATE TRIGGER `memories_fts_delete` AFTER DELETE ON `memories` BEGIN
  DELETE FROM `memories_fts` WHERE rowid = ((SELECT `num` FROM `agent_numbers` WHERE `agent_id` = old.`agent_id`) << 40) | old.`seq`;
  INSERT OR REPLACE INTO `vector_deletions`(`memory_id`, `agent_id`, `deleted_at`)
    SELECT old.`id`, old.`agent_id`, CAST(unixepoch('subsec') * 1000 AS INTEGER) WHERE old.`embedded_at` IS NOT NULL;
END;
--> statement-breakpoint
INSERT INTO `memories_fts`(rowid, `text`, `scope`)
  SELECT ((SELECT `num` FROM `agent_numbers` WHERE `agent_id` = m.`agent_id`) << 40) | m.`seq`,
    coalesce(json_extract(m.`content`, '$.userName') || ': ', '') || json_extract(m.`content`, '$.text'),
    't' || lower(hex(m.`type`)) || 'x'
      || coalesce(' r' || lower(hex(m.`room_id`)) || 'x', '') || coalesce(' u' || lower(hex(m.`user_id`)) || 'x', '')
      || CASE WHEN json_extract(m.`metadata`, '$.shared') = 1 THEN ' sharedx' ELSE '' END
  FROM `memories` m;
--> statement-breakpoint
-- Merge b-tree segments once 2 of a level exist (FTS5's default is 4). Memories arrive in many
-- small transactions, each writing a segment, and a query reads every segment of each of its
-- terms: at 100k memories written 500 at a time this takes a query from 11.6 to 8.0 ms (native
-- SQLite), for twice the (small) index-merge work on writes.
INSERT INTO `memories_fts`(`memories_fts`, `rank`) VALUES ('automerge', 2);
--> statement-breakpoint
-- One segment to start from: the rebuild above wrote many.
INSERT INTO `memories_fts`(`memories_fts`) VALUES ('optimize');
