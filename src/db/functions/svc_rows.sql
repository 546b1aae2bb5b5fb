-- The rows of a batch's input array, as unnest gives them, counted by the planner at 10 whatever the array holds.
-- unnest tells the planner the length of an array it is given as a value, so for a named statement PostgreSQL
-- compared the plan for each run's actual batch (one element, for a lone request) with its generic plan (ten, as it
-- assumes of an array it cannot see) and found the first cheaper every time: it planned every run anew, most of what
-- a request's statements cost it. Counted alike both ways, the generic plan is kept after five runs: the plan for ten
-- rows, lookups along primary keys. STRICT keeps the function from being inlined into the statement (and so seen
-- through); a NULL array has no rows, as with unnest.
--
-- This file is the function's one definition: the migrator applies it (src/db/migrate.ts) whenever its text changes.
CREATE OR REPLACE FUNCTION svc_rows(anyarray) RETURNS SETOF anyelement
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE ROWS 10
AS 'SELECT unnest($1)';
