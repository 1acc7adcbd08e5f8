-- 0003: the generation log of plugin slots (server.GenerationLog): every
-- install, refused candidate and rollback, from the admin API, the plugin
-- directory at start and its watcher, of every instance sharing the
-- database. Rows are only added; id is their order.
CREATE TABLE plugin_generations (
    id          INTEGER PRIMARY KEY,
    slot        TEXT NOT NULL,
    -- installed, refused or rolled_back.
    event       TEXT NOT NULL,
    -- the generation the event made serve; 0 for a refusal.
    generation  BIGINT NOT NULL,
    ref         TEXT NOT NULL,
    digest      TEXT NOT NULL,
    reason      TEXT NOT NULL,
    origin      TEXT NOT NULL,
    file        TEXT NOT NULL,
    instance    TEXT NOT NULL,
    -- UTC, fixed width (2026-01-02T03:04:05.000000000Z): sorts as it reads.
    recorded_at TEXT NOT NULL
);
CREATE INDEX plugin_generations_slot ON plugin_generations (slot, id);
