-- The writer now appends a task's event and applies its job change with
-- statements of its own, in the same transaction as the task write (see
-- src/writer.rs), so the triggers that did it from pending_event and
-- pending_job are gone. The two columns stay, always NULL: dropping them would
-- rewrite the whole tasks table on upgrade.

DROP TRIGGER tasks_log_created;
DROP TRIGGER tasks_log_updated;
DROP TRIGGER tasks_job_created;
DROP TRIGGER tasks_job_updated;
