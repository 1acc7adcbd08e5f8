-- 0007: the address (HOST:PORT) at which an instance's peers reach it,
-- beside its lease: a request for a session another live instance owns is
-- forwarded there. Empty until the instance advertises one.
ALTER TABLE instances ADD COLUMN addr TEXT NOT NULL DEFAULT '';
