-- Measurement plans made by observe(): the request and the planned tasks, as the planner wrote
-- them. Provenance: argusdb.observe.planner (written before the runner executes the plan); the tasks'
-- costs and statuses are in task (task.plan_id).
CREATE TABLE IF NOT EXISTS plan (
    -- Plan identity ('p-' + 10 hex chars); task ids of the plan start with it.
    plan_id VARCHAR PRIMARY KEY,
    -- Kernel source file name of the request (no directory).
    source_name VARCHAR NOT NULL,
    -- Region the request observes, '<program>/<kernel>[/<name>]'.
    region_id VARCHAR NOT NULL,
    -- Requested signals, as a JSON list of names.
    signals JSON NOT NULL,
    -- Requested scope, as a JSON object coordinate → value ('all', 'each', index, range).
    scope JSON NOT NULL,
    -- The whole plan as JSON (tasks with depends_on, run groups, reasons, reuse, estimates).
    plan JSON NOT NULL,
    -- Number of tasks the plan has, and how many of them reuse stored runs.
    n_tasks INTEGER NOT NULL,
    -- Number of collect tasks answered by runs already in the store (not collected again).
    n_reused INTEGER NOT NULL,
    -- When the plan was made (UTC).
    created_at TIMESTAMP NOT NULL
);
