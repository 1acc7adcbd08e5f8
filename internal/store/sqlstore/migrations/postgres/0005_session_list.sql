-- 0005: a tenant's sessions, newest first (store.Directory.Sessions).
-- created_at is written with a fixed number of digits, so that it sorts
-- as it reads.
CREATE INDEX api_sessions_tenant ON api_sessions (tenant, created_at, id);
