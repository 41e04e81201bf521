-- Cluster mode: the push outbox. A task event that has webhooks to go to is
-- recorded here by the transaction that writes it (this trigger runs inside
-- that transaction), so a delivery can outlive the node that owed it: the
-- node that runs the task sends the event and deletes its row; a node that
-- takes the task over sends what is left. The event itself stays in
-- task_events; a row only says "(task, version) is still owed to the
-- task's webhooks".
--
-- As the announcement, the outbox is kept by cluster connections only
-- (setting a2a.cluster = on): a single server's writes pay nothing more.
CREATE TABLE push_outbox (
    task_seq BIGINT NOT NULL REFERENCES tasks (seq) ON DELETE CASCADE,
    version  BIGINT NOT NULL,
    PRIMARY KEY (task_seq, version)
);

CREATE OR REPLACE FUNCTION a2a_announce_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    header TEXT;
    owner_tenant_ TEXT;
    owner_user_ TEXT;
    task_id_ TEXT;
BEGIN
    IF current_setting('a2a.cluster', true) IS DISTINCT FROM 'on' THEN
        RETURN NULL;
    END IF;
    SELECT t.task_id, t.owner_tenant, t.owner_user INTO task_id_, owner_tenant_, owner_user_
      FROM tasks t WHERE t.seq = NEW.task_seq;
    IF EXISTS (SELECT 1 FROM push_configs p WHERE p.owner_tenant = owner_tenant_
               AND p.owner_user = owner_user_ AND p.task_id = task_id_) THEN
        INSERT INTO push_outbox (task_seq, version) VALUES (NEW.task_seq, NEW.version)
            ON CONFLICT DO NOTHING;
    END IF;
    header := json_build_object('schema', current_schema(), 'task', task_id_, 'version', NEW.version)::text;
    IF octet_length(header) + octet_length(NEW.event) < 7900 THEN
        PERFORM pg_notify('a2a_events', header || E'\n' || NEW.event);
    ELSE
        PERFORM pg_notify('a2a_events', header);
    END IF;
    RETURN NULL;
END;
$$;
