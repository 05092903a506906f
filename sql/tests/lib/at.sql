-- pgTAP helper, included with \ir: pg_temp.at(user, time, sql [, app]) runs one statement as an authenticated user
-- of app X (or p_app) with guestpass.clock() at p_at, and answers its text result, or the SQLSTATE it raised.
create function pg_temp.at(p_user uuid, p_at text, p_sql text, p_app uuid default '00000000-0000-4000-8000-0000000000f1')
returns text
language plpgsql
as $$
declare
    v text;
begin
    perform set_config('guestpass.clock_override', p_at, true);
    perform set_config(
        'request.jwt.claims',
        jsonb_build_object('sub', p_user, 'role', 'authenticated', 'app_id', p_app)::text,
        true
    );
    set local role authenticated;
    execute p_sql into v;
    reset role;
    return v;
exception when others then
    reset role;
    return sqlstate;
end
$$;
