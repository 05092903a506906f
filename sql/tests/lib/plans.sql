-- pgTAP helper, included with \ir lib/plans.sql: pg_temp.plan_of(sql), the plan of p_sql as EXPLAIN (VERBOSE, COSTS
-- OFF) prints it, one line a row, for checks that a function is inlined (a helper that was not shows in the plan as a
-- call, schema.name(…)). Safe to include more than once.
create or replace function pg_temp.plan_of(p_sql text)
returns text
language plpgsql
as $$
declare
    v_line text;
    v_plan text := '';
begin
    for v_line in execute 'explain (verbose, costs off) ' || p_sql loop
        v_plan := v_plan || v_line || E'\n';
    end loop;
    return v_plan;
end
$$;
