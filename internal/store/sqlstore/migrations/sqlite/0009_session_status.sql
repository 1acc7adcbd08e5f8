-- 0009: a session's latest task (its id, seq and status) and the time of
-- its last trace event, on the session's row, kept by the writes of its
-- tasks and events: a listing filtered by status reads an index instead of
-- every task's document. Existing sessions are filled in from their tasks
-- and events.
ALTER TABLE api_sessions ADD COLUMN latest_seq INTEGER NOT NULL DEFAULT -1;
ALTER TABLE api_sessions ADD COLUMN latest_task TEXT NOT NULL DEFAULT '';
ALTER TABLE api_sessions ADD COLUMN status TEXT NOT NULL DEFAULT '';
ALTER TABLE api_sessions ADD COLUMN last_at TEXT NOT NULL DEFAULT '';
UPDATE api_sessions SET
    latest_seq = COALESCE((SELECT MAX(t.seq) FROM api_tasks t WHERE t.session_id = api_sessions.id), -1),
    latest_task = COALESCE((SELECT t.id FROM api_tasks t WHERE t.session_id = api_sessions.id ORDER BY t.seq DESC LIMIT 1), ''),
    status = COALESCE((SELECT json_extract(t.doc, '$.status') FROM api_tasks t WHERE t.session_id = api_sessions.id ORDER BY t.seq DESC LIMIT 1), ''),
    last_at = COALESCE((SELECT json_extract(e.doc, '$.time') FROM api_events e WHERE e.session_id = api_sessions.id ORDER BY e.seq DESC LIMIT 1), '');
CREATE INDEX api_sessions_status ON api_sessions (tenant, status, created_at, id);
CREATE INDEX api_sessions_status_all ON api_sessions (status, created_at, id);
