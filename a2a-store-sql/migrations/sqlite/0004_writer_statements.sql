-- The writer now appends a task's event and applies its job change with
-- statements of its own, in the same transaction as the task write (see
-- src/writer.rs), so the triggers that did it from pending_event and
-- pending_job are gone. The two columns stay, always NULL: dropping them would
-- rewrite the whole tasks table on upgrade.

DROP TRIGGER tasks_log_created;
DROP TRIGGER tasks_log_updated;
DROP TRIGGER tasks_job_created;
DROP TRIGGER tasks_job_updated;

-- Most jobs are written once, already finished (an execution that ends its
-- turn before its first write). Indexes keyed by state made every such job
-- cost two index entries it never needs; partial indexes hold only the few
-- unfinished jobs that heartbeats and recovery look for, and listing by time
-- (and retention) uses jobs_by_updated.
DROP INDEX jobs_by_state_node;
DROP INDEX jobs_by_state_updated;
CREATE INDEX jobs_running ON jobs (node) WHERE state = 'RUNNING';
CREATE INDEX jobs_pending ON jobs (updated_us, task_id) WHERE state = 'PENDING';
