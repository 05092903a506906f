-- create the request roles (anon, authenticated, service_role) and the login role guestpass_authenticator
-- The server connects as guestpass_authenticator, which owns nothing, bypasses nothing and inherits nothing:
-- its only power is `set_config('role', …, true)` to one of the three request roles, inside each request's
-- transaction. Forgetting the switch therefore yields 42501, never full access.
-- Roles are cluster-wide and every database in the cluster runs this file, so creation tolerates an existing
-- role; an existing role with more power than listed here is refused rather than silently trusted or changed.
-- The login role's password is set by the operator (`alter role … password`), never in a migration.

do $$
begin
    create role anon nologin noinherit nobypassrls;
exception when duplicate_object or unique_violation then null;  -- unique_violation: another database created it concurrently
end
$$;

do $$
begin
    create role authenticated nologin noinherit nobypassrls;
exception when duplicate_object or unique_violation then null;  -- unique_violation: another database created it concurrently
end
$$;

do $$
begin
    create role service_role nologin noinherit nobypassrls;
exception when duplicate_object or unique_violation then null;  -- unique_violation: another database created it concurrently
end
$$;

do $$
begin
    create role guestpass_authenticator login noinherit nosuperuser nocreatedb nocreaterole noreplication nobypassrls;
exception when duplicate_object or unique_violation then null;  -- unique_violation: another database created it concurrently
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

-- Nobody creates objects in public except the migration owner (already the PostgreSQL 15 default).
revoke create on schema public from public;
grant usage on schema public to anon, authenticated, service_role;
