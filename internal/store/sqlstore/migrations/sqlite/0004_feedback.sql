-- 0004: feedback records of tool calls (TOOL_USE_RELIABILITY §4), one row
-- per call that ran, written by warden serve's feedback.Recorder and read
-- by warden report tools --store. No foreign key to sessions: a record
-- outlives its session's state, and may name a session this database does
-- not keep.
CREATE TABLE feedback (
    id           INTEGER PRIMARY KEY,
    -- UTC, fixed width (2026-01-02T03:04:05.000000000Z): sorts as it reads.
    recorded_at  TEXT NOT NULL,
    tenant       TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    task_id      TEXT NOT NULL,
    node_id      TEXT NOT NULL,
    step         BIGINT NOT NULL,
    tool         TEXT NOT NULL,
    args_digest  TEXT NOT NULL,
    model_output TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    message      TEXT NOT NULL,
    code         TEXT NOT NULL,
    code_name    TEXT NOT NULL,
    category     TEXT NOT NULL,
    recoverable  BOOLEAN NOT NULL,
    next_action  TEXT NOT NULL,
    status       TEXT NOT NULL,
    stalls       BIGINT NOT NULL,
    stalls_added BIGINT NOT NULL,
    result       TEXT NOT NULL,
    weight       REAL NOT NULL
);
-- The per-tool summaries of warden report tools: one tenant (and tool),
-- one tool across tenants, or everything since a time.
CREATE INDEX feedback_tenant_tool ON feedback (tenant, tool, recorded_at);
CREATE INDEX feedback_tool ON feedback (tool, recorded_at);
CREATE INDEX feedback_time ON feedback (recorded_at);
