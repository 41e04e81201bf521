-- Tasks, their event logs, push configs and jobs.
-- Times are integers: task status timestamps in milliseconds, job times in
-- microseconds since the epoch (always given by the server, never the database clock).

CREATE TABLE a2a_meta (
    name  TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE tasks (
    -- Creation order; AUTOINCREMENT so a deleted task's number is never reused
    -- (page tokens name it).
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id          TEXT NOT NULL UNIQUE,
    owner_tenant     TEXT NOT NULL,
    owner_user       TEXT NOT NULL,
    context_id       TEXT NOT NULL,
    state            INTEGER NOT NULL,
    status_ms        INTEGER NOT NULL,
    version          INTEGER NOT NULL,
    task             TEXT NOT NULL,
    checkpoint_turn  INTEGER,
    checkpoint_state BLOB
);

-- A ListTasks page is an index range scan from the cursor, whatever the filter.
CREATE INDEX tasks_by_owner ON tasks (owner_tenant, owner_user, status_ms DESC, seq);
CREATE INDEX tasks_by_owner_context ON tasks (owner_tenant, owner_user, context_id, status_ms DESC, seq);
CREATE INDEX tasks_by_owner_state ON tasks (owner_tenant, owner_user, state, status_ms DESC, seq);

CREATE TABLE task_events (
    task_seq INTEGER NOT NULL REFERENCES tasks (seq) ON DELETE CASCADE,
    version  INTEGER NOT NULL,
    event    TEXT NOT NULL,
    PRIMARY KEY (task_seq, version)
) WITHOUT ROWID;

CREATE TABLE push_configs (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_tenant TEXT NOT NULL,
    owner_user   TEXT NOT NULL,
    task_id      TEXT NOT NULL,
    config_id    TEXT NOT NULL,
    config       TEXT NOT NULL,
    UNIQUE (owner_tenant, owner_user, task_id, config_id)
);

CREATE TABLE jobs (
    task_id      TEXT PRIMARY KEY NOT NULL,
    owner_tenant TEXT NOT NULL,
    owner_user   TEXT NOT NULL,
    state        TEXT NOT NULL,
    node         TEXT NOT NULL,
    heartbeat_us INTEGER NOT NULL,
    attempts     INTEGER NOT NULL,
    request      TEXT NOT NULL,
    reason       TEXT,
    created_us   INTEGER NOT NULL,
    updated_us   INTEGER NOT NULL
);

CREATE INDEX jobs_by_state_node ON jobs (state, node);
CREATE INDEX jobs_by_state_updated ON jobs (state, updated_us, task_id);
CREATE INDEX jobs_by_updated ON jobs (updated_us, task_id);
