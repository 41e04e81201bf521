-- A task write can carry a change to its task's job: the writer puts it in
-- pending_job (JSON: op "record" with the job's columns, or op "finish"), and
-- these triggers apply it in the same statement, so recording or finishing a
-- job with its task costs no trip of its own. The task statement itself is
-- guarded by the job's state, so a change that cannot apply writes nothing.

ALTER TABLE tasks ADD COLUMN pending_job TEXT;

CREATE TRIGGER tasks_job_created AFTER INSERT ON tasks
WHEN NEW.pending_job IS NOT NULL
BEGIN
    INSERT INTO jobs (task_id, owner_tenant, owner_user, state, node, heartbeat_us, attempts,
                      request, reason, created_us, updated_us)
    SELECT j ->> '$.task_id', j ->> '$.owner_tenant', j ->> '$.owner_user', j ->> '$.state',
           j ->> '$.node', j ->> '$.at', 1, j ->> '$.request', j ->> '$.reason',
           j ->> '$.at', j ->> '$.at'
    FROM (SELECT NEW.pending_job AS j) WHERE j ->> '$.op' = 'record'
    ON CONFLICT (task_id) DO UPDATE SET owner_tenant = excluded.owner_tenant,
        owner_user = excluded.owner_user, state = excluded.state, node = excluded.node,
        heartbeat_us = excluded.heartbeat_us, attempts = 1, request = excluded.request,
        reason = excluded.reason, created_us = excluded.created_us, updated_us = excluded.updated_us
    WHERE jobs.state IN ('COMPLETED', 'FAILED', 'ABANDONED');
    UPDATE jobs SET state = NEW.pending_job ->> '$.state', reason = NEW.pending_job ->> '$.reason',
        updated_us = NEW.pending_job ->> '$.at'
    WHERE task_id = NEW.pending_job ->> '$.task_id' AND NEW.pending_job ->> '$.op' = 'finish';
    UPDATE tasks SET pending_job = NULL WHERE seq = NEW.seq;
END;

CREATE TRIGGER tasks_job_updated AFTER UPDATE OF version ON tasks
WHEN NEW.pending_job IS NOT NULL
BEGIN
    INSERT INTO jobs (task_id, owner_tenant, owner_user, state, node, heartbeat_us, attempts,
                      request, reason, created_us, updated_us)
    SELECT j ->> '$.task_id', j ->> '$.owner_tenant', j ->> '$.owner_user', j ->> '$.state',
           j ->> '$.node', j ->> '$.at', 1, j ->> '$.request', j ->> '$.reason',
           j ->> '$.at', j ->> '$.at'
    FROM (SELECT NEW.pending_job AS j) WHERE j ->> '$.op' = 'record'
    ON CONFLICT (task_id) DO UPDATE SET owner_tenant = excluded.owner_tenant,
        owner_user = excluded.owner_user, state = excluded.state, node = excluded.node,
        heartbeat_us = excluded.heartbeat_us, attempts = 1, request = excluded.request,
        reason = excluded.reason, created_us = excluded.created_us, updated_us = excluded.updated_us
    WHERE jobs.state IN ('COMPLETED', 'FAILED', 'ABANDONED');
    UPDATE jobs SET state = NEW.pending_job ->> '$.state', reason = NEW.pending_job ->> '$.reason',
        updated_us = NEW.pending_job ->> '$.at'
    WHERE task_id = NEW.pending_job ->> '$.task_id' AND NEW.pending_job ->> '$.op' = 'finish';
    UPDATE tasks SET pending_job = NULL WHERE seq = NEW.seq;
END;
