-- The hub's record in PostgreSQL: the tables of the SQLite record, in a
-- schema of the hub's own (the connection's search_path names it), shared
-- by every node of a gateway cluster. Times are RFC 3339 text in UTC with
-- microseconds, as in SQLite (they sort as text); lease heartbeats are the
-- database's own time, so nodes' clocks do not decide who holds a delivery.

CREATE TABLE threads (
    id TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    title TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_activity TEXT NOT NULL,
    messages BIGINT NOT NULL DEFAULT 0,
    -- RFC 3339 time, or 'person' (until a person resumes it).
    paused_until TEXT
);

CREATE TABLE participants (
    thread_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    seq BIGINT NOT NULL,
    PRIMARY KEY (thread_id, agent)
);

-- node: the node that posted it, so a node's listener skips its own posts
-- when it reads back what it missed.
CREATE TABLE messages (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    channel TEXT NOT NULL,
    thread_id TEXT,
    body TEXT NOT NULL,
    node TEXT NOT NULL DEFAULT ''
);
CREATE INDEX messages_by_place ON messages (channel, thread_id, seq);

CREATE TABLE routes (
    opener TEXT NOT NULL,
    target TEXT NOT NULL,
    channel TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (opener, target, channel)
);

CREATE TABLE observed (
    seq BIGSERIAL PRIMARY KEY,
    agent TEXT NOT NULL,
    body TEXT NOT NULL,
    t TEXT NOT NULL
);
CREATE INDEX observed_by_agent ON observed (agent, seq);

-- A delivery waiting for its agent's answer is its node's lease: the node
-- renews heartbeat while it follows the task; another takes it over once
-- the heartbeat is older than the lease timeout.
CREATE TABLE deliveries (
    message_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    task_id TEXT NOT NULL,
    node TEXT NOT NULL,
    heartbeat TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (message_id, agent)
);
CREATE INDEX deliveries_by_node ON deliveries (node);

-- ord keeps the order the deliveries of a message began in.
CREATE TABLE delivery_states (
    ord BIGSERIAL,
    message_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    body TEXT NOT NULL,
    log_line TEXT,
    PRIMARY KEY (message_id, agent)
);

CREATE TABLE guard_events (
    id BIGSERIAL PRIMARY KEY,
    guard TEXT NOT NULL,
    key TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX guard_events_by_key ON guard_events (guard, key, at);
CREATE INDEX guard_events_by_time ON guard_events (guard, at);

-- The operator token every node accepts (one row).
CREATE TABLE operator_token (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    token TEXT NOT NULL
);
