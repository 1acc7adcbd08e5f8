-- 0002: what the HTTP service keeps so that a session outlives its
-- process: a task's graph, the service's view of sessions, tasks,
-- approvals and trace events, and the instances that own sessions.
ALTER TABLE tasks ADD COLUMN graph TEXT NOT NULL DEFAULT '';

-- api_sessions: a session as the API knows it. owner is the instance that
-- serves it; another instance may take it over once the owner's lease
-- (instances.lease_until) has run out.
CREATE TABLE api_sessions (
    id         TEXT PRIMARY KEY,
    tenant     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    owner      TEXT NOT NULL
);
CREATE INDEX api_sessions_owner ON api_sessions (owner);
CREATE TABLE api_tasks (
    session_id TEXT NOT NULL,
    id         TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    doc        TEXT NOT NULL,
    PRIMARY KEY (session_id, id)
);
-- api_approvals: server-held approvals; status moves from PENDING exactly
-- once (a conditional update), which makes an approval single-use across
-- instances.
CREATE TABLE api_approvals (
    id         TEXT PRIMARY KEY,
    tenant     TEXT NOT NULL,
    session_id TEXT NOT NULL,
    node_id    TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    status     TEXT NOT NULL,
    doc        TEXT NOT NULL
);
CREATE INDEX api_approvals_session ON api_approvals (session_id, seq);
CREATE TABLE api_events (
    session_id TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    doc        TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
-- instances: each warden serve process sharing the database renews its
-- lease (unix milliseconds) while it lives.
CREATE TABLE instances (
    id          TEXT PRIMARY KEY,
    started_at  TEXT NOT NULL,
    lease_until BIGINT NOT NULL
);
