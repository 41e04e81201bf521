-- Cluster mode: every committed task event is announced to the nodes on
-- channel a2a_events, by the transaction that writes it (NOTIFY is delivered
-- at commit, in commit order, and never for a write that rolled back).
--
-- The payload is a JSON header {schema, task, version}, then a newline and
-- the event's JSON when the whole fits NOTIFY's limit (under 8,000 bytes);
-- a larger event is announced by its header alone and read from task_events
-- by whoever wants it. The schema tells apart the stores of several agents
-- that share one database (each in its own schema).
--
-- Only connections opened for cluster mode (setting a2a.cluster = on) announce:
-- a single server on PostgreSQL pays one function call per event and no NOTIFY,
-- whose commit-time queue lock serializes committing transactions.
CREATE FUNCTION a2a_announce_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    header TEXT;
BEGIN
    IF current_setting('a2a.cluster', true) IS DISTINCT FROM 'on' THEN
        RETURN NULL;
    END IF;
    SELECT json_build_object('schema', current_schema(), 'task', t.task_id, 'version', NEW.version)::text
      INTO header FROM tasks t WHERE t.seq = NEW.task_seq;
    IF octet_length(header) + octet_length(NEW.event) < 7900 THEN
        PERFORM pg_notify('a2a_events', header || E'\n' || NEW.event);
    ELSE
        PERFORM pg_notify('a2a_events', header);
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER task_events_announce AFTER INSERT ON task_events
    FOR EACH ROW EXECUTE FUNCTION a2a_announce_event();
