-- 0006: each tenant's plugin modules and skills (store.Registry), so that
-- every instance sharing the database serves the same ones. A plugin
-- version names one module for good: (tenant, name, version) is unique,
-- and rows are added or deleted, never changed. id is the install order.
CREATE TABLE tenant_plugins (
    id           INTEGER PRIMARY KEY,
    tenant       TEXT NOT NULL,
    name         TEXT NOT NULL,
    version      TEXT NOT NULL,
    -- hex sha256 of module.
    digest       TEXT NOT NULL,
    role         TEXT NOT NULL,
    -- the manifest as the host read it (JSON).
    manifest     TEXT NOT NULL,
    -- the capabilities granted, as a JSON array.
    grants       TEXT NOT NULL,
    module       BLOB NOT NULL,
    -- tenant or admin.
    installed_by TEXT NOT NULL,
    -- UTC, fixed width (2026-01-02T03:04:05.000000000Z).
    installed_at TEXT NOT NULL,
    UNIQUE (tenant, name, version)
);
CREATE INDEX tenant_plugins_digest ON tenant_plugins (tenant, digest);

-- A tenant's skills as uploaded: the service's JSON document, kept as given.
CREATE TABLE tenant_skills (
    tenant     TEXT NOT NULL,
    skill_key  TEXT NOT NULL,
    doc        TEXT NOT NULL,
    updated_by TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (tenant, skill_key)
);
