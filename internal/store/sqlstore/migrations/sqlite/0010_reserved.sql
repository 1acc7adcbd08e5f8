-- 0010: reserved for the two-phase rollout of slot generations; this
-- migration changes nothing.
SELECT 1;
