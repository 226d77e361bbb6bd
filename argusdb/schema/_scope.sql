-- The scope coordinates below the rank, as every evidence table declares them (included by
-- '-- @include: _scope'; see argusdb/schema/catalog.py). A fragment, not a module.
    -- Scope: launch index (0-based among launches of this kernel in the run) or 'all'.
    -- @scope: launches
    launch VARCHAR NOT NULL,
    -- Scope: CTA index or 'all'.
    -- @scope: in_kernel
    cta VARCHAR NOT NULL,
    -- Scope: SM index or 'all'.
    -- @scope: in_kernel
    sm VARCHAR NOT NULL,
    -- Scope: warp index within the CTA or 'all'.
    -- @scope: in_kernel
    warp VARCHAR NOT NULL,
    -- Scope: warp role (e.g. 'producer') or 'all'.
    -- @scope: in_kernel
    warp_role VARCHAR NOT NULL,
    -- Scope: loop iteration or range, or 'all'.
    -- @scope: in_kernel
    loop_iter VARCHAR NOT NULL,
