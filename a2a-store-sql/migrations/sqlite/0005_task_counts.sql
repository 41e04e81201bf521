-- ListTasks' totalSize from counts instead of COUNT(*) over every matching
-- row, so that a page costs what it holds, not all of the caller's tasks:
-- per owner (tenant and user) by state, and per owner and context by state.
-- Triggers keep them, so every write that adds, moves or removes a task
-- (through any statement, in the transaction of that statement) moves its
-- counts too. Rows that reach zero go, so contexts whose tasks are all gone
-- leave nothing behind.

CREATE TABLE task_counts (
    owner_tenant TEXT NOT NULL,
    owner_user   TEXT NOT NULL,
    state        INTEGER NOT NULL,
    n            INTEGER NOT NULL,
    PRIMARY KEY (owner_tenant, owner_user, state)
) WITHOUT ROWID;

CREATE TABLE task_context_counts (
    owner_tenant TEXT NOT NULL,
    owner_user   TEXT NOT NULL,
    context_id   TEXT NOT NULL,
    state        INTEGER NOT NULL,
    n            INTEGER NOT NULL,
    PRIMARY KEY (owner_tenant, owner_user, context_id, state)
) WITHOUT ROWID;

-- The tasks already stored (this migration runs in one transaction, and the
-- database has one writer, so no write falls between the count and the triggers).
INSERT INTO task_counts (owner_tenant, owner_user, state, n)
SELECT owner_tenant, owner_user, state, COUNT(*) FROM tasks
GROUP BY owner_tenant, owner_user, state;

INSERT INTO task_context_counts (owner_tenant, owner_user, context_id, state, n)
SELECT owner_tenant, owner_user, context_id, state, COUNT(*) FROM tasks
GROUP BY owner_tenant, owner_user, context_id, state;

CREATE TRIGGER tasks_counted_created AFTER INSERT ON tasks
BEGIN
    INSERT INTO task_counts (owner_tenant, owner_user, state, n)
    VALUES (NEW.owner_tenant, NEW.owner_user, NEW.state, 1)
    ON CONFLICT (owner_tenant, owner_user, state) DO UPDATE SET n = n + 1;
    INSERT INTO task_context_counts (owner_tenant, owner_user, context_id, state, n)
    VALUES (NEW.owner_tenant, NEW.owner_user, NEW.context_id, NEW.state, 1)
    ON CONFLICT (owner_tenant, owner_user, context_id, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER tasks_counted_deleted AFTER DELETE ON tasks
BEGIN
    DELETE FROM task_counts WHERE owner_tenant = OLD.owner_tenant
        AND owner_user = OLD.owner_user AND state = OLD.state AND n = 1;
    UPDATE task_counts SET n = n - 1 WHERE owner_tenant = OLD.owner_tenant
        AND owner_user = OLD.owner_user AND state = OLD.state;
    DELETE FROM task_context_counts WHERE owner_tenant = OLD.owner_tenant
        AND owner_user = OLD.owner_user AND context_id = OLD.context_id
        AND state = OLD.state AND n = 1;
    UPDATE task_context_counts SET n = n - 1 WHERE owner_tenant = OLD.owner_tenant
        AND owner_user = OLD.owner_user AND context_id = OLD.context_id AND state = OLD.state;
END;

-- Most updates keep the task's state (an artifact, a message): the WHEN
-- clause spares them the counts.
CREATE TRIGGER tasks_counted_moved
AFTER UPDATE OF owner_tenant, owner_user, context_id, state ON tasks
WHEN OLD.state IS NOT NEW.state OR OLD.context_id IS NOT NEW.context_id
    OR OLD.owner_tenant IS NOT NEW.owner_tenant OR OLD.owner_user IS NOT NEW.owner_user
BEGIN
    DELETE FROM task_counts WHERE owner_tenant = OLD.owner_tenant
        AND owner_user = OLD.owner_user AND state = OLD.state AND n = 1;
    UPDATE task_counts SET n = n - 1 WHERE owner_tenant = OLD.owner_tenant
        AND owner_user = OLD.owner_user AND state = OLD.state;
    DELETE FROM task_context_counts WHERE owner_tenant = OLD.owner_tenant
        AND owner_user = OLD.owner_user AND context_id = OLD.context_id
        AND state = OLD.state AND n = 1;
    UPDATE task_context_counts SET n = n - 1 WHERE owner_tenant = OLD.owner_tenant
        AND owner_user = OLD.owner_user AND context_id = OLD.context_id AND state = OLD.state;
    INSERT INTO task_counts (owner_tenant, owner_user, state, n)
    VALUES (NEW.owner_tenant, NEW.owner_user, NEW.state, 1)
    ON CONFLICT (owner_tenant, owner_user, state) DO UPDATE SET n = n + 1;
    INSERT INTO task_context_counts (owner_tenant, owner_user, context_id, state, n)
    VALUES (NEW.owner_tenant, NEW.owner_user, NEW.context_id, NEW.state, 1)
    ON CONFLICT (owner_tenant, owner_user, context_id, state) DO UPDATE SET n = n + 1;
END;
