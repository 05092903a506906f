-- pgTAP helper, included with \ir lib/at.sql: pg_temp.at(user, time, sql [, app]) runs one statement as an authenticated user
-- of app X (or p_app) with guestpass.clock() at p_at (null: the clock as it is), and answers its text result, or the
-- SQLSTATE it raised; either way the role is back to the caller's. The user's claims and role come from
-- pg_temp.as_user (lib/roles.sql, included here). Safe to include more than once.
\ir roles.sql

create or replace function pg_temp.at(p_user uuid, p_at text, p_sql text, p_app uuid default '00000000-0000-4000-8000-0000000000f1')
returns text
language plpgsql
as $$
declare
    v text;
begin
    if p_at is not null then
        perform set_config('guestpass.clock_override', p_at, true);
    end if;
    perform pg_temp.as_user(p_user, p_app);
    execute p_sql into v;
    reset role;
    return v;
exception when others then
    reset role;
    return sqlstate;
end
$$;
