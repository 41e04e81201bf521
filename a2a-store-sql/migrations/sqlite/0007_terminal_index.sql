-- The partial index of terminal tasks says its states without a list.
--
-- SQLite tests `state IN (3, 4, 5, 7)`, a list of more than two constants,
-- through a temporary b-tree it builds each time a statement runs, and a
-- partial index's predicate runs on every write of a task row: every task
-- write paid for one or two such b-trees (a page allocated and zeroed each).
-- Comparisons it tests in place. Task retention's query on SQLite repeats
-- this predicate word for word (src/common.rs, `sqlite_terminal_tasks!`):
-- SQLite uses a partial index only then.
DROP INDEX tasks_terminal_by_status;
CREATE INDEX tasks_terminal_by_status ON tasks (status_ms, seq) WHERE state BETWEEN 3 AND 7 AND state <> 6;
