-- Tasks, their event logs, push configs and jobs.
-- Times are integers: task status timestamps in milliseconds, job times in
-- microseconds since the epoch (always given by the server, never the database clock).
-- Ids sort bytewise (COLLATE "C"), as they do in the other stores.

CREATE TABLE a2a_meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE tasks (
    seq              BIGSERIAL PRIMARY KEY,
    task_id          TEXT COLLATE "C" NOT NULL UNIQUE,
    owner_tenant     TEXT COLLATE "C" NOT NULL,
    owner_user       TEXT COLLATE "C" NOT NULL,
    context_id       TEXT COLLATE "C" NOT NULL,
    state            INTEGER NOT NULL,
    status_ms        BIGINT NOT NULL,
    version          BIGINT NOT NULL,
    task             TEXT NOT NULL,
    checkpoint_turn  BIGINT,
    checkpoint_state BYTEA
);

-- A ListTasks page is an index range scan from the cursor, whatever the filter.
CREATE INDEX tasks_by_owner ON tasks (owner_tenant, owner_user, status_ms DESC, seq);
CREATE INDEX tasks_by_owner_context ON tasks (owner_tenant, owner_user, context_id, status_ms DESC, seq);
CREATE INDEX tasks_by_owner_state ON tasks (owner_tenant, owner_user, state, status_ms DESC, seq);

CREATE TABLE task_events (
    task_seq BIGINT NOT NULL REFERENCES tasks (seq) ON DELETE CASCADE,
    version  BIGINT NOT NULL,
    event    TEXT NOT NULL,
    PRIMARY KEY (task_seq, version)
);

CREATE TABLE push_configs (
    seq          BIGSERIAL PRIMARY KEY,
    owner_tenant TEXT COLLATE "C" NOT NULL,
    owner_user   TEXT COLLATE "C" NOT NULL,
    task_id      TEXT COLLATE "C" NOT NULL,
    config_id    TEXT COLLATE "C" NOT NULL,
    config       TEXT NOT NULL,
    UNIQUE (owner_tenant, owner_user, task_id, config_id)
);

CREATE TABLE jobs (
    task_id      TEXT COLLATE "C" PRIMARY KEY,
    owner_tenant TEXT NOT NULL,
    owner_user   TEXT NOT NULL,
    state        TEXT NOT NULL,
    node         TEXT NOT NULL,
    heartbeat_us BIGINT NOT NULL,
    attempts     BIGINT NOT NULL,
    request      TEXT NOT NULL,
    reason       TEXT,
    created_us   BIGINT NOT NULL,
    updated_us   BIGINT NOT NULL
);

CREATE INDEX jobs_by_state_node ON jobs (state, node);
CREATE INDEX jobs_by_state_updated ON jobs (state, updated_us, task_id);
CREATE INDEX jobs_by_updated ON jobs (updated_us, task_id);
