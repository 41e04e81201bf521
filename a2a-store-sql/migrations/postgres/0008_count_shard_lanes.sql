-- A task's count shard from a digest the writer can compute too: the first
-- byte of the MD5 digest of its id, modulo 32 (before: PostgreSQL's own
-- hashtext, which no client can reproduce).
--
-- The writer commits writes in groups, in parallel lanes; a group holds the
-- count rows of all its tasks until it commits. Lanes that split the tasks by
-- this shard never touch each other's count rows, so they never wait for one
-- another (measured before this change, with lanes not split by shard: 1,163
-- to 1,202 SendMessage/s, every group waiting on another's rows; one lane:
-- 8,016 to 8,439/s). Only the digest matters, not its strength. For a
-- database whose encoding is not UTF-8, ids outside ASCII may digest other
-- bytes than the writer's: their writes then only wait more, and the counts
-- stay right (readers sum every shard of a key).
LOCK TABLE tasks IN SHARE ROW EXCLUSIVE MODE;

CREATE OR REPLACE FUNCTION a2a_count_shard(task TEXT) RETURNS SMALLINT
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT CAST(get_byte(decode(md5(task), 'hex'), 0) % 32 AS SMALLINT)
$$;

-- The counts again, by the new shards (the tasks are locked).
DELETE FROM task_counts;
INSERT INTO task_counts (owner_tenant, owner_user, state, shard, n)
SELECT owner_tenant, owner_user, state, a2a_count_shard(task_id), COUNT(*) FROM tasks
GROUP BY owner_tenant, owner_user, state, a2a_count_shard(task_id);
