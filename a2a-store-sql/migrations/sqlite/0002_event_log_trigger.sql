-- A task write and its event become one statement: the writer puts the event
-- in pending_event, and these triggers move it to the log in the same
-- statement (atomic on its own, one trip to the connection).

ALTER TABLE tasks ADD COLUMN pending_event TEXT;

CREATE TRIGGER tasks_log_created AFTER INSERT ON tasks
WHEN NEW.pending_event IS NOT NULL
BEGIN
    INSERT INTO task_events (task_seq, version, event) VALUES (NEW.seq, NEW.version, NEW.pending_event);
    UPDATE tasks SET pending_event = NULL WHERE seq = NEW.seq;
END;

CREATE TRIGGER tasks_log_updated AFTER UPDATE OF version ON tasks
WHEN NEW.pending_event IS NOT NULL
BEGIN
    INSERT INTO task_events (task_seq, version, event) VALUES (NEW.seq, NEW.version, NEW.pending_event);
    UPDATE tasks SET pending_event = NULL WHERE seq = NEW.seq;
END;
