-- pgTAP helpers, included with \ir lib/errors.sql: run a statement (as whatever role is current; any request role may
-- call them) and answer what it raised, for the checks throws_ok cannot make (detail, hint). Safe to include more
-- than once.
--   pg_temp.error_fields(sql): {sqlstate, message, detail, hint} of the error p_sql raises, or null when it raises
--     none (detail and hint are '' when the error has none).
--   pg_temp.error_of(sql): '<sqlstate> <detail>' of the error p_sql raises, or null when it raises none.
create or replace function pg_temp.error_fields(p_sql text)
returns text[]
language plpgsql
as $$
declare
    v_state text;
    v_message text;
    v_detail text;
    v_hint text;
begin
    execute p_sql;
    return null;
exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text, v_detail = pg_exception_detail,
                            v_hint = pg_exception_hint;
    return array[v_state, v_message, v_detail, v_hint];
end
$$;

create or replace function pg_temp.error_of(p_sql text)
returns text
language sql
as $$ select e.f[1] || ' ' || coalesce(e.f[3], '') from pg_temp.error_fields(p_sql) as e (f) $$;
