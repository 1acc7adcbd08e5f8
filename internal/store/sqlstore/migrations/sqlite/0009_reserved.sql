-- 0009: reserved for another change; it changes nothing.
SELECT 1;
