-- Jobs keep their truth, and tasks outlive their job records.
--
-- A job whose task was canceled now ends CANCELED (earlier versions recorded
-- it COMPLETED). The jobs of tasks canceled before are told apart here. A
-- program older than this migration cannot read the new state, and refuses
-- the database as newer than itself instead of misreading it.
UPDATE jobs SET state = 'CANCELED', reason = COALESCE(reason, 'the task was canceled')
WHERE state = 'COMPLETED' AND task_id IN (SELECT task_id FROM tasks WHERE state = 5);

-- Task retention deletes terminal tasks (completed, failed, canceled,
-- rejected: states 3, 4, 5, 7) by the time of their last status, apart from
-- the (shorter) retention of job records. Its query reads this index from
-- the oldest on; the index holds terminal tasks only, so a task costs one
-- entry when it ends, none while it works. The query repeats the predicate
-- word for word (src/common.rs, `terminal_tasks!`), as the SQLite schema
-- needs; the same text here keeps the two alike. Building it locks task
-- writes for the time of one pass over the tasks.
CREATE INDEX tasks_terminal_by_status ON tasks (status_ms, seq) WHERE state IN (3, 4, 5, 7);
