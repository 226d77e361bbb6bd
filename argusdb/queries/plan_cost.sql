-- Measurement cost per task of a plan: the cost the runner recorded, with the planner's action.
-- Provenance: task (written by argusdb.observe.runner; config is the plan's task, so config.action is
-- the planner's action) joined to plan (written by the planner). Manual ingests (no plan) are
-- left out: they measured nothing.
CREATE OR REPLACE VIEW plan_cost_task AS
SELECT
    -- Plan the task belongs to.
    t.plan_id,
    -- Task identity.
    t.task_id,
    -- 'control', 'transform', 'collect' or 'synthesize'.
    t.kind,
    -- Planner action (find_launch, cupti_timing, ncu_source, ...); the kind when not recorded.
    coalesce(t.config ->> 'action', t.kind) AS action,
    -- 'done', 'failed', 'reused' (answered by a stored run, not run) or 'skipped' (a task it
    -- depends on failed), as the runner records it.
    t.status,
    -- Wall-clock cost of the task, seconds.
    t.wall_s,
    -- GPU time the task held a device, seconds; NULL when it used none.
    t.gpu_s,
    -- When the task finished (UTC).
    t.finished_at,
    -- Ranks the task launched (a torchrun launch: its world size); NULL for other tasks.
    TRY_CAST(t.config -> 'params' ->> 'world_size' AS INTEGER) AS world_size,
    -- True when the task ran on replays of a launch captured from the program (the replay
    -- worker), not by running the program.
    coalesce(TRY_CAST(t.config -> 'params' ->> 'replay' AS BOOLEAN), false) AS replayed,
    -- True when the task read what the control run of the program recorded (no run of its own).
    coalesce(TRY_CAST(t.config -> 'params' ->> 'from_control' AS BOOLEAN), false)
        AS from_control
FROM task AS t
WHERE t.plan_id IS NOT NULL;

-- Measurement cost per plan and action: how the budget of a plan was spent.
-- Provenance: plan_cost_task.
CREATE OR REPLACE VIEW plan_cost_action AS
SELECT
    -- Plan.
    c.plan_id,
    -- Planner action.
    c.action,
    -- Number of tasks of this action in the plan.
    count(*) AS tasks,
    -- Tasks answered by runs already in the store (not run again).
    count(*) FILTER (WHERE c.status = 'reused') AS reused,
    -- Tasks not run because a task they depend on failed.
    count(*) FILTER (WHERE c.status = 'skipped') AS skipped,
    -- Tasks of this action that failed.
    count(*) FILTER (WHERE c.status = 'failed') AS failed,
    -- Total wall-clock seconds of these tasks.
    coalesce(sum(c.wall_s), 0) AS wall_s,
    -- Total GPU seconds of these tasks.
    coalesce(sum(c.gpu_s), 0) AS gpu_s
FROM plan_cost_task AS c
GROUP BY c.plan_id, c.action;

-- Measurement cost per plan, with its request: compare strategies by what they cost (the sums
-- of plan_cost_action over the plan's actions).
-- Provenance: plan_cost_action, plan (region and signals are NULL for plans not in the plan table).
CREATE OR REPLACE VIEW plan_cost AS
SELECT
    -- Plan.
    a.plan_id,
    -- Region the plan observed.
    any_value(p.region_id) AS region_id,
    -- Requested signals (JSON list).
    any_value(p.signals) AS signals,
    -- Number of tasks the runner recorded for the plan.
    sum(a.tasks)::BIGINT AS tasks,
    -- Tasks answered by runs already in the store (not run again).
    sum(a.reused)::BIGINT AS reused,
    -- Tasks not run because a task they depend on failed.
    sum(a.skipped)::BIGINT AS skipped,
    -- Tasks that failed.
    sum(a.failed)::BIGINT AS failed,
    -- Total wall-clock seconds of the plan's tasks.
    sum(a.wall_s) AS wall_s,
    -- Total GPU seconds of the plan's tasks.
    sum(a.gpu_s) AS gpu_s
FROM plan_cost_action AS a
LEFT JOIN plan AS p ON p.plan_id = a.plan_id
GROUP BY a.plan_id;
