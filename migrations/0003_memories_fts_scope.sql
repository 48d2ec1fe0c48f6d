-- The text index learns who a memory belongs to, so a search is narrowed inside FTS5 and ranked
-- with a LIMIT there, instead of scoring every matching row of every agent and joining them all.
-- `scope` holds one token per filter value: a<agent>x, t<type>x, r<room>x, u<user>x (values as
-- lowercase hex of their UTF-8 bytes, so any id becomes one alphanumeric token that the porter
-- stemmer leaves alone), plus `sharedx` for facts shared with everyone. Queries weigh the column 0
-- in bm25. Hand-written (drizzle-kit does not model virtual tables); see 0002 for the backup note.
DROP TRIGGER IF EXISTS `memories_fts_insert`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `memories_fts_update`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `memories_fts_delete`;
--> statement-breakpoint
DROP TABLE IF EXISTS `memories_fts`;
--> statement-breakpoint
CREATE VIRTUAL TABLE `memories_fts` USING fts5(`text`, `scope`, tokenize = 'porter unicode61 remove_diacritics 2');
--> statement-breakpoint
-- A memory written again under a deleted one's id (a re-ingested document, a replaced profile)
-- must not lose its new vector to the sweeper: its pending deletion is withdrawn.
CREATE TRIGGER `memories_fts_insert` AFTER INSERT ON `memories` BEGIN
  DELETE FROM `vector_deletions` WHERE `memory_id` = new.`id`;
  INSERT INTO `memories_fts`(rowid, `text`, `scope`) VALUES (
    new.`seq`,
    coalesce(json_extract(new.`content`, '$.userName') || ': ', '') || json_extract(new.`content`, '$.text'),
    'a' || lower(hex(new.`agent_id`)) || 'x t' || lower(hex(new.`type`)) || 'x'
      || coalesce(' r' || lower(hex(new.`room_id`)) || 'x', '') || coalesce(' u' || lower(hex(new.`user_id`)) || 'x', '')
      || CASE WHEN json_extract(new.`metadata`, '$.shared') = 1 THEN ' sharedx' ELSE '' END
  );
END;
--> statement-breakpoint
CREATE TRIGGER `memories_fts_update` AFTER UPDATE OF `content`, `metadata`, `agent_id`, `type`, `room_id`, `user_id` ON `memories` BEGIN
  UPDATE `memories_fts` SET
    `text` = coalesce(json_extract(new.`content`, '$.userName') || ': ', '') || json_extract(new.`content`, '$.text'),
    `scope` = 'a' || lower(hex(new.`agent_id`)) || 'x t' || lower(hex(new.`type`)) || 'x'
      || coalesce(' r' || lower(hex(new.`room_id`)) || 'x', '') || coalesce(' u' || lower(hex(new.`user_id`)) || 'x', '')
      || CASE WHEN json_extract(new.`metadata`, '$.shared') = 1 THEN ' sharedx' ELSE '' END
  WHERE rowid = new.`seq`;
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
INSERT INTO `memories_fts`(rowid, `text`, `scope`)
  SELECT `seq`,
    coalesce(json_extract(`content`, '$.userName') || ': ', '') || json_extract(`content`, '$.text'),
    'a' || lower(hex(`agent_id`)) || 'x t' || lower(hex(`type`)) || 'x'
      || coalesce(' r' || lower(hex(`room_id`)) || 'x', '') || coalesce(' u' || lower(hex(`user_id`)) || 'x', '')
      || CASE WHEN json_extract(`metadata`, '$.shared') = 1 THEN ' sharedx' ELSE '' END
  FROM `memories`;
