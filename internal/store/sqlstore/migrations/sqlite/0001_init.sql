-- 0001: one session's runtime state (loop/state.Store). JSON values are
-- kept as text so that they read back byte for byte.
CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    created_at TEXT NOT NULL
);
CREATE TABLE user_messages (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    seq        BIGINT NOT NULL,
    text       TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE session_values (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    PRIMARY KEY (session_id, key)
);
CREATE TABLE entities (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    type       TEXT NOT NULL,
    id         TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    doc        TEXT NOT NULL,
    PRIMARY KEY (session_id, type, id)
);
CREATE TABLE tasks (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    id         TEXT NOT NULL,
    objective  TEXT NOT NULL,
    status     TEXT NOT NULL,
    PRIMARY KEY (session_id, id)
);
CREATE TABLE task_shared (
    session_id TEXT NOT NULL,
    task_id    TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    PRIMARY KEY (session_id, task_id, key),
    FOREIGN KEY (session_id, task_id) REFERENCES tasks (session_id, id)
);
CREATE TABLE followups (
    session_id TEXT NOT NULL,
    task_id    TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    doc        TEXT NOT NULL,
    PRIMARY KEY (session_id, task_id, seq),
    FOREIGN KEY (session_id, task_id) REFERENCES tasks (session_id, id)
);
CREATE TABLE write_calls (
    session_id TEXT NOT NULL,
    task_id    TEXT NOT NULL,
    call_id    TEXT NOT NULL,
    args       TEXT NOT NULL,
    PRIMARY KEY (session_id, task_id, call_id),
    FOREIGN KEY (session_id, task_id) REFERENCES tasks (session_id, id)
);
-- ledger is the write ledger: a row is written (STARTED) before the write
-- tool is called, so that a crash leaves it for RecoverWrites.
CREATE TABLE ledger (
    session_id TEXT NOT NULL,
    task_id    TEXT NOT NULL,
    tool       TEXT NOT NULL,
    key        TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    state      TEXT NOT NULL,
    doc        TEXT NOT NULL,
    PRIMARY KEY (session_id, task_id, tool, key),
    FOREIGN KEY (session_id, task_id) REFERENCES tasks (session_id, id)
);
CREATE INDEX ledger_state ON ledger (session_id, state);
CREATE TABLE nodes (
    session_id TEXT NOT NULL,
    id         TEXT NOT NULL,
    task_id    TEXT NOT NULL,
    parent_id  TEXT NOT NULL,
    status     TEXT NOT NULL,
    contract   TEXT NOT NULL,
    doc        TEXT NOT NULL,
    PRIMARY KEY (session_id, id),
    FOREIGN KEY (session_id, task_id) REFERENCES tasks (session_id, id)
);
-- approvals hold the write the WriteGate deferred, server side, and the
-- user's CONFIRM of exactly its argument digest.
CREATE TABLE approvals (
    session_id  TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    tool        TEXT NOT NULL,
    call_id     TEXT NOT NULL,
    args        TEXT NOT NULL,
    args_digest TEXT NOT NULL,
    gated_at    TEXT NOT NULL,
    approved_at TEXT,
    PRIMARY KEY (session_id, node_id),
    FOREIGN KEY (session_id, node_id) REFERENCES nodes (session_id, id)
);
CREATE TABLE messages (
    session_id TEXT NOT NULL,
    node_id    TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    doc        TEXT NOT NULL,
    PRIMARY KEY (session_id, node_id, seq),
    FOREIGN KEY (session_id, node_id) REFERENCES nodes (session_id, id)
);
CREATE TABLE evidence (
    session_id TEXT NOT NULL REFERENCES sessions (id),
    id         TEXT NOT NULL,
    node_id    TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    doc        TEXT NOT NULL,
    PRIMARY KEY (session_id, id)
);
CREATE INDEX evidence_node ON evidence (session_id, node_id, seq);
CREATE TABLE fingerprints (
    session_id TEXT NOT NULL,
    node_id    TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    doc        TEXT NOT NULL,
    PRIMARY KEY (session_id, node_id, seq),
    FOREIGN KEY (session_id, node_id) REFERENCES nodes (session_id, id)
);
