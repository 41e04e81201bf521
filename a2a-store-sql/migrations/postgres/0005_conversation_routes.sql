-- The conversation index of a server on PostgreSQL: one row per pair of
-- agents in a workspace (route = 'WORKSPACE::a|b', the names sorted), the
-- A2A conversation they keep (context_id), its latest task, the last event
-- and when (microseconds since the epoch, as the other tables keep times). The server holds every row in memory and writes the changed
-- ones back; a row is only replaced by a newer one.
CREATE TABLE conversation_routes (
    route TEXT PRIMARY KEY,
    context_id TEXT NOT NULL,
    task_id TEXT,
    last_event TEXT NOT NULL,
    updated_us BIGINT NOT NULL
);
