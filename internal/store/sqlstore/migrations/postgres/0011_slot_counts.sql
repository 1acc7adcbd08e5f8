-- 0011: the counters of each slot generation, per instance
-- (store.SlotCounters): the calls it served, by outcome, their latency and
-- the probes (load check, self-tests) counted apart. An instance writes
-- its generations' counters periodically, at a swap and at shutdown, so
-- a retired generation's calls stay visible after it, and after a
-- restart; the slot's history sums them over the instances.
CREATE TABLE slot_counts (
    slot       TEXT NOT NULL,
    number     BIGINT NOT NULL,
    digest     TEXT NOT NULL,
    instance   TEXT NOT NULL,
    calls      BIGINT NOT NULL,
    -- the calls' total latency in nanoseconds.
    latency_ns BIGINT NOT NULL,
    -- the calls per latency bound (JSON array of counts).
    latency    TEXT NOT NULL,
    -- the calls by outcome (JSON object).
    outcomes   TEXT NOT NULL,
    probes     BIGINT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (slot, number, digest, instance)
);
