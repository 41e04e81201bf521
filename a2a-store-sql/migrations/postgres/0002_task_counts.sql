-- ListTasks' totalSize from counts instead of COUNT(*) over every matching
-- row, so that a page costs what it holds, not all of the caller's tasks:
-- per owner (tenant and user) by state, and per owner and context by state.
-- A trigger keeps them, so every write that adds, moves or removes a task
-- (through any statement, in that statement's transaction) moves its counts
-- too. Rows that reach zero go, so contexts whose tasks are all gone leave
-- nothing behind.
--
-- A count row is locked by the transaction that moves it until it commits:
-- writers of one owner's tasks queue there briefly. Each task write takes
-- its count rows in key order (the old and new keys of a move sorted), so two
-- writers moving tasks in opposite directions cannot deadlock; every task
-- write is one row (a statement writing many tasks at once would lock them in
-- row order, and should sort its rows). Such a statement would also move an
-- owner's count rows once per task, each time past every version it left
-- earlier in its transaction: 50,000 tasks of one owner in one INSERT took
-- 39 s here, against 1 s without the counts. One task per statement, as the
-- store writes, costs about 0.1 ms more.

-- No task write may fall between counting the stored tasks and the trigger.
LOCK TABLE tasks IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE task_counts (
    owner_tenant TEXT COLLATE "C" NOT NULL,
    owner_user   TEXT COLLATE "C" NOT NULL,
    state        INTEGER NOT NULL,
    n            BIGINT NOT NULL,
    PRIMARY KEY (owner_tenant, owner_user, state)
);

CREATE TABLE task_context_counts (
    owner_tenant TEXT COLLATE "C" NOT NULL,
    owner_user   TEXT COLLATE "C" NOT NULL,
    context_id   TEXT COLLATE "C" NOT NULL,
    state        INTEGER NOT NULL,
    n            BIGINT NOT NULL,
    PRIMARY KEY (owner_tenant, owner_user, context_id, state)
);

INSERT INTO task_counts (owner_tenant, owner_user, state, n)
SELECT owner_tenant, owner_user, state, COUNT(*) FROM tasks
GROUP BY owner_tenant, owner_user, state;

INSERT INTO task_context_counts (owner_tenant, owner_user, context_id, state, n)
SELECT owner_tenant, owner_user, context_id, state, COUNT(*) FROM tasks
GROUP BY owner_tenant, owner_user, context_id, state;

-- Adds `delta` to one owner's count of a state; a row that reaches zero goes.
CREATE FUNCTION a2a_count_state(tenant TEXT, usr TEXT, st INTEGER, delta BIGINT)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_counts AS c (owner_tenant, owner_user, state, n)
    VALUES (tenant, usr, st, delta)
    ON CONFLICT (owner_tenant, owner_user, state) DO UPDATE SET n = c.n + excluded.n;
    IF delta < 0 THEN
        DELETE FROM task_counts
        WHERE owner_tenant = tenant AND owner_user = usr AND state = st AND n = 0;
    END IF;
END $$;

-- Adds `delta` to one owner's count of a state in a context; a row that reaches zero goes.
CREATE FUNCTION a2a_count_context(tenant TEXT, usr TEXT, ctx TEXT, st INTEGER, delta BIGINT)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_context_counts AS c (owner_tenant, owner_user, context_id, state, n)
    VALUES (tenant, usr, ctx, st, delta)
    ON CONFLICT (owner_tenant, owner_user, context_id, state) DO UPDATE SET n = c.n + excluded.n;
    IF delta < 0 THEN
        DELETE FROM task_context_counts
        WHERE owner_tenant = tenant AND owner_user = usr AND context_id = ctx AND state = st
          AND n = 0;
    END IF;
END $$;

CREATE FUNCTION a2a_tasks_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM a2a_count_state(NEW.owner_tenant, NEW.owner_user, NEW.state, 1);
        PERFORM a2a_count_context(NEW.owner_tenant, NEW.owner_user, NEW.context_id, NEW.state, 1);
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM a2a_count_state(OLD.owner_tenant, OLD.owner_user, OLD.state, -1);
        PERFORM a2a_count_context(OLD.owner_tenant, OLD.owner_user, OLD.context_id, OLD.state, -1);
    ELSE
        -- A move: both keys of each table, in key order.
        IF ROW(OLD.owner_tenant, OLD.owner_user, OLD.state)
            < ROW(NEW.owner_tenant, NEW.owner_user, NEW.state) THEN
            PERFORM a2a_count_state(OLD.owner_tenant, OLD.owner_user, OLD.state, -1);
            PERFORM a2a_count_state(NEW.owner_tenant, NEW.owner_user, NEW.state, 1);
        ELSIF ROW(OLD.owner_tenant, OLD.owner_user, OLD.state)
            > ROW(NEW.owner_tenant, NEW.owner_user, NEW.state) THEN
            PERFORM a2a_count_state(NEW.owner_tenant, NEW.owner_user, NEW.state, 1);
            PERFORM a2a_count_state(OLD.owner_tenant, OLD.owner_user, OLD.state, -1);
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

CREATE TRIGGER tasks_counted_created AFTER INSERT ON tasks
FOR EACH ROW EXECUTE FUNCTION a2a_tasks_counted();

CREATE TRIGGER tasks_counted_deleted AFTER DELETE ON tasks
FOR EACH ROW EXECUTE FUNCTION a2a_tasks_counted();

-- Most updates keep the task's state (an artifact, a message): the WHEN
-- clause spares them the counts.
CREATE TRIGGER tasks_counted_moved
AFTER UPDATE OF owner_tenant, owner_user, context_id, state ON tasks
FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
    OR OLD.context_id IS DISTINCT FROM NEW.context_id
    OR OLD.owner_tenant IS DISTINCT FROM NEW.owner_tenant
    OR OLD.owner_user IS DISTINCT FROM NEW.owner_user)
EXECUTE FUNCTION a2a_tasks_counted();
