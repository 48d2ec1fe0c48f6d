-- Full-text index over memory text, prefixed with the speaker's name where there is one, so
-- "what did Alice say about ..." finds Alice's messages (hand-written: drizzle-kit does not model
-- virtual tables).
-- Porter stemming over unicode61, so "running" finds "runs". Keyed by memories.seq and kept in
-- sync by triggers, so every write path (inserts, deletes, cascades from a deleted agent) is
-- covered without application code. Note: `wrangler d1 export` refuses databases with FTS5
-- tables; back up with D1 Time Travel instead (see README).
CREATE VIRTUAL TABLE `memories_fts` USING fts5(`text`, tokenize = 'porter unicode61 remove_diacritics 2');
--> statement-breakpoint
-- A memory written again under a deleted one's id (a re-ingested document, a replaced profile)
-- must not lose its new vector to the sweeper: its pending deletion is withdrawn.
CREATE TRIGGER `memories_fts_insert` AFTER INSERT ON `memories` BEGIN
  DELETE FROM `vector_deletions` WHERE `memory_id` = new.`id`;
  INSERT INTO `memories_fts`(rowid, `text`) VALUES (new.`seq`, coalesce(json_extract(new.`content`, '$.userName') || ': ', '') || json_extract(new.`content`, '$.text'));
END;
--> statement-breakpoint
CREATE TRIGGER `memories_fts_update` AFTER UPDATE OF `content` ON `memories` BEGIN
  UPDATE `memories_fts` SET `text` = coalesce(json_extract(new.`content`, '$.userName') || ': ', '') || json_extract(new.`content`, '$.text') WHERE rowid = new.`seq`;
END;
--> statement-breakpoint
-- A deleted memory leaves the text index, and, if it had a vector, a note for the Vectorize
-- sweeper (the local index drops its row through the foreign key).
CREATE TRIGGER `memories_fts_delete` AFTER DELETE ON `memories` BEGIN
  DELETE FROM `memories_fts` WHERE rowid = old.`seq`;
  INSERT OR REPLACE INTO `vector_deletions`(`memory_id`, `agent_id`, `deleted_at`)
    SELECT old.`id`, old.`agent_id`, CAST(unixepoch('subsec') * 1000 AS INTEGER) WHERE old.`embedded_at` IS NOT NULL;
END;
--> statement-breakpoint
INSERT INTO `memories_fts`(rowid, `text`) SELECT `seq`, coalesce(json_extract(`content`, '$.userName') || ': ', '') || json_extract(`content`, '$.text') FROM `memories`;
