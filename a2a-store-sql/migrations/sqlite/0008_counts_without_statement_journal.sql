-- The count tables without NOT NULL on `n`, so that a task write needs no
-- statement journal.
--
-- A statement that writes several rows (a task row and, through the count
-- triggers, its counts) and may stop half-way with an ABORT error runs with
-- a statement journal: SQLite copies each page it is about to change, to be
-- able to undo that statement alone. The writer never keeps part of a
-- transaction (any error rolls it all back), so its task statements say
-- `OR FAIL`, which the trigger statements follow. But an upsert's DO UPDATE
-- checks the columns it sets with ABORT whatever the statement says, and
-- `n` was NOT NULL: that check alone made every task write copy its pages
-- (about a seventh of what SQLite did per SendMessage). `n` is never NULL
-- (the triggers set it from 1 and move it by one); nothing needs the check.
--
-- The triggers name these tables, so they go first and come back as they were.
DROP TRIGGER tasks_counted_created;
DROP TRIGGER tasks_counted_deleted;
DROP TRIGGER tasks_counted_moved;

CREATE TABLE task_counts_rebuilt (
    owner_tenant TEXT NOT NULL,
    owner_user   TEXT NOT NULL,
    state        INTEGER NOT NULL,
    n            INTEGER,
    PRIMARY KEY (owner_tenant, owner_user, state)
) WITHOUT ROWID;
INSERT INTO task_counts_rebuilt (owner_tenant, owner_user, state, n)
SELECT owner_tenant, owner_user, state, n FROM task_counts;
DROP TABLE task_counts;
ALTER TABLE task_counts_rebuilt RENAME TO task_counts;

CREATE TABLE task_context_counts_rebuilt (
    owner_tenant TEXT NOT NULL,
    owner_user   TEXT NOT NULL,
    context_id   TEXT NOT NULL,
    state        INTEGER NOT NULL,
    n            INTEGER,
    PRIMARY KEY (owner_tenant, owner_user, context_id, state)
) WITHOUT ROWID;
INSERT INTO task_context_counts_rebuilt (owner_tenant, owner_user, context_id, state, n)
SELECT owner_tenant, owner_user, context_id, state, n FROM task_context_counts;
DROP TABLE task_context_counts;
ALTER TABLE task_context_counts_rebuilt RENAME TO task_context_counts;

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
