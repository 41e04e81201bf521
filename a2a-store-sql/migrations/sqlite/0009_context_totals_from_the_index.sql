-- A context's ListTasks total is counted from the tasks' context index
-- instead of kept in `task_context_counts`.
--
-- Each new task wrote a row there (a conversation is usually one context per
-- exchange, so nearly every task opened one): one more b-tree insert and one
-- more upsert in the count trigger of every task write, about 7% of what a
-- SendMessage cost on SQLite. A context holds few tasks, and counting them
-- is a range of `tasks_by_owner_context`, the index its page is read from.
-- The owner's totals (`task_counts`, one row per owner and state) stay: an
-- owner may hold millions of tasks.
--
-- The triggers name the table, so they go first and come back without it;
-- a task moving to another context no longer changes any count.
DROP TRIGGER tasks_counted_created;
DROP TRIGGER tasks_counted_deleted;
DROP TRIGGER tasks_counted_moved;
DROP TABLE task_context_counts;

CREATE TRIGGER tasks_counted_created AFTER INSERT ON tasks
BEGIN
    INSERT INTO task_counts (owner_tenant, owner_user, state, n)
    VALUES (NEW.owner_tenant, NEW.owner_user, NEW.state, 1)
    ON CONFLICT (owner_tenant, owner_user, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER tasks_counted_deleted AFTER DELETE ON tasks
BEGIN
    DELETE FROM task_counts WHERE owner_tenant = OLD.owner_tenant
        AND owner_user = OLD.owner_user AND state = OLD.state AND n = 1;
    UPDATE task_counts SET n = n - 1 WHERE owner_tenant = OLD.owner_tenant
        AND owner_user = OLD.owner_user AND state = OLD.state;
END;

CREATE TRIGGER tasks_counted_moved
AFTER UPDATE OF owner_tenant, owner_user, state ON tasks
WHEN OLD.state IS NOT NEW.state
    OR OLD.owner_tenant IS NOT NEW.owner_tenant OR OLD.owner_user IS NOT NEW.owner_user
BEGIN
    DELETE FROM task_counts WHERE owner_tenant = OLD.owner_tenant
        AND owner_user = OLD.owner_user AND state = OLD.state AND n = 1;
    UPDATE task_counts SET n = n - 1 WHERE owner_tenant = OLD.owner_tenant
        AND owner_user = OLD.owner_user AND state = OLD.state;
    INSERT INTO task_counts (owner_tenant, owner_user, state, n)
    VALUES (NEW.owner_tenant, NEW.owner_user, NEW.state, 1)
    ON CONFLICT (owner_tenant, owner_user, state) DO UPDATE SET n = n + 1;
END;
