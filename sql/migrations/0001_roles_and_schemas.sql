-- roles and schemas: the request roles (anon, authenticated, service_role), the login role guestpass_authenticator,
-- their statement timeouts, and the three schemas auth, guestpass and guestpass_server
-- Versioned: applied once, never edited after a release. Functions, policies and grants live in repeatable/.
--
-- The server connects as guestpass_authenticator, which owns nothing, bypasses nothing and inherits nothing:
-- its only power is `set_config('role', …, true)` to one of the three request roles, inside each request's
-- transaction. Forgetting the switch therefore yields 42501, never full access.
-- Roles are cluster-wide and every database in the cluster runs this file, so creation tolerates an existing
-- role; an existing role with more power than listed here is refused rather than silently trusted or changed.
-- The login role's password is set by the operator (`alter role … password`), never in a migration.

do $$
declare
    v_create text;
begin
    foreach v_create in array array[
        'create role anon nologin noinherit nobypassrls',
        'create role authenticated nologin noinherit nobypassrls',
        'create role service_role nologin noinherit nobypassrls',
        'create role guestpass_authenticator login noinherit nosuperuser nocreatedb nocreaterole noreplication nobypassrls'
    ] loop
        begin
            execute v_create;
        exception when duplicate_object or unique_violation then null;  -- unique_violation: another database created it concurrently
        end;
    end loop;
end
$$;

grant anon, authenticated, service_role to guestpass_authenticator;

-- Refuse roles that already existed with attributes or memberships this service does not allow.
do $$
declare
    offending text;
begin
    select string_agg(r.rolname, ', ' order by r.rolname)
    into offending
    from pg_catalog.pg_roles as r
    where (r.rolname in ('anon', 'authenticated', 'service_role')
           and (r.rolsuper or r.rolbypassrls or r.rolcanlogin or r.rolinherit
                or r.rolcreaterole or r.rolcreatedb or r.rolreplication))
       or (r.rolname = 'guestpass_authenticator'
           and (r.rolsuper or r.rolbypassrls or not r.rolcanlogin or r.rolinherit
                or r.rolcreaterole or r.rolcreatedb or r.rolreplication));
    if offending is not null then
        raise exception 'roles with disallowed attributes: %', offending
            using hint = 'GuestPass needs anon, authenticated and service_role NOLOGIN NOINHERIT NOBYPASSRLS, and '
                         'guestpass_authenticator LOGIN NOINHERIT without superuser, createrole, createdb, '
                         'replication or bypassrls. Fix the roles or use a separate cluster.';
    end if;

    -- SET ROLE follows memberships transitively, so look at every role the login role can become.
    select string_agg(r.rolname, ', ' order by r.rolname)
    into offending
    from pg_catalog.pg_roles as r
    where r.rolname not in ('guestpass_authenticator', 'anon', 'authenticated', 'service_role')
      and pg_catalog.pg_has_role('guestpass_authenticator', r.oid, 'MEMBER');
    if offending is not null then
        raise exception 'guestpass_authenticator can also become: %', offending
            using hint = 'It may only switch to anon, authenticated and service_role.';
    end if;
end
$$;

comment on role anon is
    'GuestPass: request role for callers holding only an app''s publishable key.';
comment on role authenticated is
    'GuestPass: request role for callers holding a verified access token; rows are scoped by row-level security.';
comment on role service_role is
    'GuestPass: request role for callers holding an app''s secret key; no BYPASSRLS, works through functions.';
comment on role guestpass_authenticator is
    'GuestPass: the server''s login role. Owns nothing; can only switch to anon, authenticated or service_role.';

-- Statement timeouts per request role, Supabase's defaults: anon 3 s, authenticated 8 s; service_role (the app's own
-- backend, with its batch jobs) keeps the server's default. They are stored as the roles' own settings
-- (ALTER ROLE … SET, pg_db_role_setting) and take effect only where the server applies them: PostgreSQL applies a
-- role's settings at login, never on SET ROLE, and the request roles never log in. The server reads them and sets
-- statement_timeout per request (as PostgREST does); a session that switches roles by hand (psql, pgTAP) gets none.
-- Roles are cluster-wide and every database of the cluster runs this file, so a role that already has a
-- cluster-wide statement_timeout (an earlier database's migration, or the operator's own choice) is left as it is:
-- running the file again changes nothing, and an operator's value is kept. Two databases migrating at once may race
-- to the same catalog row; the loser's ALTER fails (unique violation, or "tuple concurrently updated") after the
-- winner commits, and then finds the setting present.

do $$
declare
    v_role text;
    v_timeout text;
begin
    for v_role, v_timeout in values ('anon', '3s'), ('authenticated', '8s') loop
        for v_attempt in 1 .. 2 loop
            exit when exists (
                select 1
                from pg_catalog.pg_db_role_setting as s
                join pg_catalog.pg_roles as r on r.oid = s.setrole
                where r.rolname = v_role and s.setdatabase = 0
                  and exists (select 1 from unnest(s.setconfig) as c where c like 'statement\_timeout=%')
            );
            begin
                execute format('alter role %I set statement_timeout = %L', v_role, v_timeout);
            exception when unique_violation or internal_error then
                -- Another database's migration set it concurrently and committed: look again.
                if v_attempt = 2 then
                    raise;
                end if;
            end;
        end loop;
    end loop;
end
$$;

-- auth: the Supabase-compatible claim helpers (repeatable/01_auth.sql), readable by every request role.
create schema if not exists auth;

comment on schema auth is
    'GuestPass: helpers that expose the verified caller (JWT claims) to SQL and row-level security policies.';

-- guestpass: never exposed to clients. App-facing roles get no usage on it and no grants on its tables; row-level
-- security is enabled and forced on each of its tables at birth, with no policies, so even a future grant by mistake
-- reads nothing.
create schema if not exists guestpass;

comment on schema guestpass is
    'GuestPass internals: apps (tenants), API keys and server-side functions. Never exposed to clients.';

-- guestpass_server: the server's own entry points. public holds the documents' RPCs (exposed, like all of public);
-- calling a function needs USAGE on its schema, and schema guestpass stays closed to every app-facing role
-- (01_structure checks it). guestpass_server holds only functions, each granted to exactly one request role (and
-- refuse_table_result to all three), and must never be listed among the RPC endpoint's exposed schemas. Shared
-- internals stay in guestpass, callable only by the owner, i.e. from the SECURITY DEFINER entry points.
create schema if not exists guestpass_server;

comment on schema guestpass_server is
    'GuestPass: entry points the server calls on a caller''s behalf (sign-up, refresh, profile, sign-out, API-key '
    'lookup). Functions only, each granted to one request role. Never exposed over the RPC endpoint.';
