-- Spread each owner's count of a state over 32 rows (a shard per task, from
-- its id), so that writers of one owner's tasks no longer queue on one row.
--
-- Before, every task write of an owner moved that owner's one count row of
-- the task's state, and held its lock until commit: concurrent SendMessages
-- of one caller ran one commit at a time (measured: 643 SendMessage/s against
-- 14,800/s in memory, each INSERT waiting 21.7 ms on average; 1,622/s and
-- 1.0 ms with the shards). A task's shard never changes (its id does not),
-- so a move takes both of its rows in the same shard, in key order as
-- before, and two writers meet only when their tasks share a shard. Readers
-- already sum the rows of a key: a sum is right whichever shard each change
-- went to, so were hashtext to change in a PostgreSQL upgrade, a shard could
-- go negative and another stay high, and no total would be wrong.
LOCK TABLE tasks IN SHARE ROW EXCLUSIVE MODE;

DROP FUNCTION a2a_count_state(TEXT, TEXT, INTEGER, BIGINT);

-- The shard of a task: 0 to 31.
CREATE FUNCTION a2a_count_shard(task TEXT) RETURNS SMALLINT
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT CAST(hashtext(task) & 31 AS SMALLINT) $$;

-- The counts again, each owner's by state and shard (the tasks are locked).
DELETE FROM task_counts;
ALTER TABLE task_counts ADD COLUMN shard SMALLINT NOT NULL;
ALTER TABLE task_counts DROP CONSTRAINT task_counts_pkey;
ALTER TABLE task_counts ADD PRIMARY KEY (owner_tenant, owner_user, state, shard);
INSERT INTO task_counts (owner_tenant, owner_user, state, shard, n)
SELECT owner_tenant, owner_user, state, a2a_count_shard(task_id), COUNT(*) FROM tasks
GROUP BY owner_tenant, owner_user, state, a2a_count_shard(task_id);

-- Adds `delta` to one owner's count of a state in a shard; a row that reaches zero goes.
CREATE FUNCTION a2a_count_state(tenant TEXT, usr TEXT, st INTEGER, sh SMALLINT, delta BIGINT)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_counts AS c (owner_tenant, owner_user, state, shard, n)
    VALUES (tenant, usr, st, sh, delta)
    ON CONFLICT (owner_tenant, owner_user, state, shard) DO UPDATE SET n = c.n + excluded.n;
    IF delta < 0 THEN
        DELETE FROM task_counts
        WHERE owner_tenant = tenant AND owner_user = usr AND state = st AND shard = sh AND n = 0;
    END IF;
END $$;

CREATE OR REPLACE FUNCTION a2a_tasks_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sh SMALLINT;
BEGIN
    IF TG_OP = 'INSERT' THEN
        sh := a2a_count_shard(NEW.task_id);
        PERFORM a2a_count_state(NEW.owner_tenant, NEW.owner_user, NEW.state, sh, 1);
        PERFORM a2a_count_context(NEW.owner_tenant, NEW.owner_user, NEW.context_id, NEW.state, 1);
    ELSIF TG_OP = 'DELETE' THEN
        sh := a2a_count_shard(OLD.task_id);
        PERFORM a2a_count_state(OLD.owner_tenant, OLD.owner_user, OLD.state, sh, -1);
        PERFORM a2a_count_context(OLD.owner_tenant, OLD.owner_user, OLD.context_id, OLD.state, -1);
    ELSE
        -- A move: both keys of each table, in key order (one shard: the task's).
        sh := a2a_count_shard(NEW.task_id);
        IF ROW(OLD.owner_tenant, OLD.owner_user, OLD.state)
            < ROW(NEW.owner_tenant, NEW.owner_user, NEW.state) THEN
            PERFORM a2a_count_state(OLD.owner_tenant, OLD.owner_user, OLD.state, sh, -1);
            PERFORM a2a_count_state(NEW.owner_tenant, NEW.owner_user, NEW.state, sh, 1);
        ELSIF ROW(OLD.owner_tenant, OLD.owner_user, OLD.state)
            > ROW(NEW.owner_tenant, NEW.owner_user, NEW.state) THEN
            PERFORM a2a_count_state(NEW.owner_tenant, NEW.owner_user, NEW.state, sh, 1);
            PERFORM a2a_count_state(OLD.owner_tenant, OLD.owner_user, OLD.state, sh, -1);
        END IF;
        IF ROW(OLD.owner_tenant, OLD.owner_user, OLD.context_id, OLD.state)
            < ROW(NEW.owner_tenant, NEW.owner_user, NEW.context_id, NEW.state) THEN
            PERFORM a2a_count_context(OLD.owner_tenant, OLD.owner_user, OLD.context_id, OLD.state, -1);
            PERFORM a2a_count_context(NEW.owner_tenant, NEW.owner_user, NEW.context_id, NEW.state, 1);
        ELSE
            PERFORM a2a_count_context(NEW.owner_tenant, NEW.owner_user, NEW.context_id, NEW.state, 1);
            PERFORM a2a_count_context(OLD.owner_tenant, OLD.owner_user, OLD.context_id, OLD.state, -1);
        END IF;
    END IF;
    RETURN NULL;
END $$;
