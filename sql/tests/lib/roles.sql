-- pgTAP helpers, included with \ir lib/roles.sql (or through lib/at.sql): acting as a request role, the way the server
-- does it (transaction-local request.jwt.claims, then set local role). Call them as `select from pg_temp.…(…);` so
-- no result row clutters the TAP output; `reset role` goes back to the owner. Claims left null are left out of the JSON.
-- Safe to include more than once (create or replace).
--   pg_temp.set_claims(role, app [, user, device, session]): only sets the claims; the caller switches the role
--     (for the login role, or to change claims under the role already set).
--   pg_temp.as_role(role, app [, user, device, session]): set_claims, then set local role p_role.
--   pg_temp.as_user(user [, app, device, session]): claims of an authenticated user of app X (or p_app), on device
--     p_device and session p_session when given, then set local role authenticated.
--   pg_temp.as_anon([app]): claims of the publishable key of app X (or p_app), then set local role anon.
--   pg_temp.as_service_role([app]): claims of the secret key of app X (or p_app; null: no app claim), then set local
--     role service_role.
--   pg_temp.anon_refused(table, what, insert, update): four checks (`select * from pg_temp.anon_refused(…);`) that
--     anon of app X can neither select, insert (`insert into <table> <insert>`), update (`update <table> set
--     <update>`) nor delete rows of the table: each is 42501, the grant wall; 'anon cannot <command> <what>'. The role
--     is back to the caller's afterwards.
create or replace function pg_temp.set_claims(
    p_role text, p_app uuid, p_user uuid default null, p_device uuid default null, p_session uuid default null
)
returns void
language sql
as $$
    select set_config(
        'request.jwt.claims',
        jsonb_strip_nulls(jsonb_build_object(
            'sub', p_user, 'role', p_role, 'app_id', p_app, 'device_id', p_device, 'session_id', p_session
        ))::text,
        true
    )
$$;

create or replace function pg_temp.as_role(
    p_role text, p_app uuid, p_user uuid default null, p_device uuid default null, p_session uuid default null
)
returns void
language plpgsql
as $$
begin
    perform pg_temp.set_claims(p_role, p_app, p_user, p_device, p_session);
    execute format('set local role %I', p_role);
end
$$;

create or replace function pg_temp.as_user(
    p_user uuid, p_app uuid default '00000000-0000-4000-8000-0000000000f1', p_device uuid default null,
    p_session uuid default null
)
returns void
language sql
as $$ select pg_temp.as_role('authenticated', p_app, p_user, p_device, p_session) $$;

create or replace function pg_temp.as_anon(p_app uuid default '00000000-0000-4000-8000-0000000000f1')
returns void
language sql
as $$ select pg_temp.as_role('anon', p_app) $$;

create or replace function pg_temp.as_service_role(p_app uuid default '00000000-0000-4000-8000-0000000000f1')
returns void
language sql
as $$ select pg_temp.as_role('service_role', p_app) $$;

create or replace function pg_temp.anon_refused(p_table regclass, p_what text, p_insert text, p_update text)
returns setof text
language plpgsql
as $$
begin
    perform pg_temp.as_anon();
    return next throws_ok(format('select * from %s', p_table), '42501', null, 'anon cannot select ' || p_what);
    return next throws_ok(format('insert into %s %s', p_table, p_insert), '42501', null, 'anon cannot insert ' || p_what);
    return next throws_ok(format('update %s set %s', p_table, p_update), '42501', null, 'anon cannot update ' || p_what);
    return next throws_ok(format('delete from %s', p_table), '42501', null, 'anon cannot delete ' || p_what);
    reset role;
end
$$;
