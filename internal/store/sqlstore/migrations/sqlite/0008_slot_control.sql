-- 0008: the control plane of plugin slots (store.SlotControl). An install
-- writes a slot's generation once; every instance sharing the database
-- loads the newest (the desired one) and reports what it serves.
-- The modules of kept generations, by digest.
CREATE TABLE slot_modules (
    digest TEXT PRIMARY KEY,
    module BLOB NOT NULL
);
-- A slot's generations, the newest KeptSlotGenerations of each.
CREATE TABLE slot_generations (
    slot        TEXT NOT NULL,
    number      BIGINT NOT NULL,
    digest      TEXT NOT NULL,
    -- the plugin's configuration (JSON), '' for none.
    config      TEXT NOT NULL,
    ref         TEXT NOT NULL,
    -- admin, start, watch or rollback.
    origin      TEXT NOT NULL,
    file        TEXT NOT NULL,
    instance    TEXT NOT NULL,
    -- a rollback's source generation; 0 otherwise.
    rolled_from BIGINT NOT NULL,
    -- UTC, fixed width (2026-01-02T03:04:05.000000000Z).
    created_at  TEXT NOT NULL,
    PRIMARY KEY (slot, number)
);
-- What each instance last reported of a slot.
CREATE TABLE slot_status (
    slot       TEXT NOT NULL,
    instance   TEXT NOT NULL,
    serving    BIGINT NOT NULL,
    digest     TEXT NOT NULL,
    since      TEXT NOT NULL,
    refused    BIGINT NOT NULL,
    reason     TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (slot, instance)
);
