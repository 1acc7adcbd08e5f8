-- 0010: two-phase installs (store.SlotControl's candidates). An install
-- records a candidate; every live instance prepares it and reports ready
-- (slot_status.prepared) or refused; it becomes the desired generation
-- only once every live instance has it ready.
CREATE TABLE slot_candidates (
    slot        TEXT NOT NULL,
    number      BIGINT NOT NULL,
    digest      TEXT NOT NULL,
    -- the plugin's configuration (JSON), '' for none.
    config      TEXT NOT NULL,
    -- name@version, set when it becomes desired.
    ref         TEXT NOT NULL,
    origin      TEXT NOT NULL,
    file        TEXT NOT NULL,
    instance    TEXT NOT NULL,
    rolled_from BIGINT NOT NULL,
    -- UTC, fixed width (2026-01-02T03:04:05.000000000Z).
    created_at  TEXT NOT NULL,
    -- preparing, desired, refused or superseded.
    state       TEXT NOT NULL,
    deadline    TEXT NOT NULL,
    -- who refused it, the API error code and why; '' otherwise.
    refused_by  TEXT NOT NULL,
    code        TEXT NOT NULL,
    reason      TEXT NOT NULL,
    -- '' while preparing.
    decided_at  TEXT NOT NULL,
    PRIMARY KEY (slot, number)
);
CREATE INDEX slot_candidates_state ON slot_candidates (state, slot);
-- The last candidate each instance holds ready, 0 for none.
ALTER TABLE slot_status ADD COLUMN prepared BIGINT NOT NULL DEFAULT 0;
