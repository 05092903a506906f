-- create the auth schema and its Supabase-compatible claim helpers: jwt(), uid(), role(), device_id(), app_id()
-- They read ONLY the transaction-local `request.jwt.claims` JSON that the server sets with
-- set_config('request.jwt.claims', …, true) from a verified token. Supabase's helpers also read the legacy
-- per-claim settings (`request.jwt.claim.sub`, `request.jwt.claim`), and those win over the JSON; one of them
-- left at session level on a pooled connection would impersonate someone in every later request. Not here.
--
-- Bad input: a claim that is missing, empty, or not a canonical uuid gives null, never an error. Claims that
-- are valid JSON but not an object give null from every helper. Claims that are not JSON at all raise 22P02
-- (invalid_text_representation): PostgreSQL 15 has no non-raising JSON check (pg_input_is_valid and IS JSON
-- arrive in 16) and a `language sql` helper cannot trap errors, so the statement fails closed and reveals
-- nothing. Only the server writes the setting, always from a token it verified, so this never happens in use.

create schema if not exists auth;

comment on schema auth is
    'GuestPass: helpers that expose the verified caller (JWT claims) to SQL and row-level security policies.';

grant usage on schema auth to anon, authenticated, service_role;

create or replace function auth.jwt()
returns jsonb
language sql stable
as $$
    select case when jsonb_typeof(setting.claims) = 'object' then setting.claims end
    from (select nullif(current_setting('request.jwt.claims', true), '')::jsonb as claims) as setting
$$;

comment on function auth.jwt() is
    'The verified caller''s JWT claims (transaction-local request.jwt.claims) as a JSON object; null when unset '
    'or not an object. Raises 22P02 if the setting is not JSON.';

create or replace function auth.claim_uuid(claim text)
returns uuid
language sql stable
as $$
    select case
        when value ~ '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$' then value::uuid
    end
    from (select auth.jwt() ->> claim as value) as claimed
$$;

comment on function auth.claim_uuid(text) is
    'One claim of auth.jwt() as a uuid; null when absent, empty or not a canonical uuid (never raises on it).';

create or replace function auth.uid()
returns uuid
language sql stable
as $$ select auth.claim_uuid('sub') $$;

comment on function auth.uid() is
    'The caller''s user id (claim sub), or null. Policies should call it as (select auth.uid()).';

create or replace function auth.role()
returns text
language sql stable
as $$ select auth.jwt() ->> 'role' $$;

comment on function auth.role() is 'The caller''s role claim (anon, authenticated, service_role), or null.';

create or replace function auth.device_id()
returns uuid
language sql stable
as $$ select auth.claim_uuid('device_id') $$;

comment on function auth.device_id() is
    'The caller''s device: the public id of a public.devices row (claim device_id), or null.';

create or replace function auth.app_id()
returns uuid
language sql stable
as $$ select auth.claim_uuid('app_id') $$;

comment on function auth.app_id() is 'The caller''s app, a guestpass.apps id (claim app_id), or null.';

revoke execute on function
    auth.jwt(), auth.claim_uuid(text), auth.uid(), auth.role(), auth.device_id(), auth.app_id()
    from public;
grant execute on function
    auth.jwt(), auth.claim_uuid(text), auth.uid(), auth.role(), auth.device_id(), auth.app_id()
    to anon, authenticated, service_role;
