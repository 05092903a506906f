-- the caller: the auth.* claim helpers, the one clock, and the argument and caller checks every entry point shares
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.
--
-- Notes carried from the change log before the re-baseline (NNNN names one of its files, in git history):
--
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
--
-- every rule reads one clock, guestpass.clock(), so tests can move time for all; one home for claim and hash checks
-- Quotas and DeviceCheck claims read guestpass.clock() (0011): now(), or the transaction's guestpass.clock_override,
-- so tests move time instead of waiting or aging rows. The rate limits, refresh-token rotation, its reuse window,
-- sign-out and the last_seen_at / last_sign_in_at writes still read now() or clock_timestamp() directly, so their
-- rules could only be tested by rewriting timestamps. Every function body now reads guestpass.clock() (once, into a
-- variable, in plpgsql): take_rate_limit, peek_rate_limit, prune_batch, ensure_guest_device, sign_up_guest,
-- refresh_session and sign_out are redefined for it. Each keeps its signature, volatility, SECURITY DEFINER, empty
-- search_path, grants and behaviour; without an override the time read is the transaction's start, as now() was.
--
-- Rate limits. 0008 read clock_timestamp() after the row lock and 0013 before it, so that a transaction that waited
-- for a bucket's lock would not refill from its older start time. Since 0013 the update never moves updated_at
-- backwards (greatest(now, updated_at), kept here) and guestpass.bucket_tokens refills nothing for time running
-- backwards, so an older time can only make the refill smaller: with the transaction's start time a bucket refills a
-- little later than it could, never sooner, and it can never hand out more tokens than the elapsed time allows. The
-- answer stays conservative. prune_batch likewise deletes a bucket a little later, never sooner (a missing
-- row is a full bucket).
--
-- What stays on now(). Column defaults (created_at, last_seen_at, updated_at, seen_at: DEFAULT now()) and the
-- updated_at touch trigger (guestpass.set_updated_at on public.users) are bookkeeping timestamps that no rule reads.
-- They run with the rights of whoever writes the row, often a request role (authenticated updates its own user row;
-- an app's own tables take inserts from the request roles), and the request roles have no EXECUTE on
-- guestpass.clock() (nor USAGE on schema guestpass), so they keep now(). A row created by a function therefore gets
-- now() in its defaulted columns, and guestpass.clock() where the function writes the time itself.
--
-- Argument checks. Four functions checked the app claim (raise 42501 without it) and four the user and app claims;
-- five checks of a lowercase hex SHA-256 argument were written out in four functions. They move into helpers:
-- guestpass.require_app() (the app claim, or 42501 'no app in the request claims'), guestpass.require_user_and_app()
-- (both claims, or 42501 'no user or app in the request claims'), and guestpass.require_hex_sha256(value, name) (22023
-- '<name> must be a lowercase hex SHA-256'). require_app_user, create_guest_user, sign_up_guest and refresh_session
-- call the first; sign_out, devicecheck_begin, devicecheck_finish and devicecheck_take_lease the second;
-- ensure_guest_device, sign_up_guest, refresh_session and devicecheck_begin the third. Every SQLSTATE and message is
-- the one its caller raised before (the server and the tests match on them), and the checks run in the same order.
-- The helpers read only their arguments and the request claims: plain (SECURITY INVOKER) plpgsql with an empty
-- search_path, executable by nobody but the owner, i.e. from the SECURITY DEFINER functions that call them.
-- require_caller ('no user in the request claims') is a different check and is left as it is.
--
-- the caller checks have one home again: guestpass.require_caller(p_user_id, p_must_exist)
-- 0025 copied require_caller's two claim checks (a user in the claims; p_user_id null or the caller) into
-- public.consume_quota, so that a consume would not read the caller's users row twice. require_caller now takes
-- p_must_exist (default true, the old behaviour): with false it makes only the claim checks, and consume_quota calls
-- it so, leaving the existence check to guestpass.consume_at's row lock (which answers 42501 'unknown user' for a
-- user not in the claims' app). Every answer is unchanged. Its other callers (get_quota, set_timezone) keep calling
-- it with one argument.
--
-- the caller's claim checks become an inlinable SQL expression: consume_quota makes no PL/pgSQL call for them
-- Measured on one connection, guestpass.require_caller cost about 35 µs per call, a tenth of a whole consume's time in
-- PostgreSQL, for two comparisons: most of it the PL/pgSQL call itself. guestpass.caller_id(p_user_id) is now the one
-- home of those two checks (a user in the claims; p_user_id null or the caller): a SQL function of one CASE
-- expression, which the planner inlines into its caller's expression. Its refusals come from guestpass.refuse_caller,
-- called only on the branch that refuses. It is VOLATILE because refuse_caller is: a STABLE function may not contain a
-- volatile call and be inlined, and a refusal must never be folded into a constant at plan time.
-- guestpass.require_caller (get_quota, set_timezone) keeps its answers and now calls caller_id; public.consume_quota
-- calls caller_id and leaves the user's existence to guestpass.consume_at's row lock, as since 0025.
--
-- the argument checks of sign-up, refresh and the rate limits become inlinable SQL: no PL/pgSQL call when they pass
-- A sign-up made seven PL/pgSQL calls only to check its arguments: guestpass.require_app, require_hex_sha256 three
-- times (twice in sign_up_guest, once in ensure_guest_device), check_rate_limit_arguments twice and
-- client_address_key once; a refresh made two (require_app, require_hex_sha256). Each call of a PL/pgSQL function
-- with a SET clause costs a GUC save and restore and a function set-up, for one or two comparisons. 0028 did the same
-- for the consume's claim checks (guestpass.caller_id). Here each check becomes a SQL function of one CASE or
-- COALESCE expression, which the planner inlines into its caller's statement, and which calls a refuser (a PL/pgSQL
-- function that raises) only on the branch that refuses:
--   * guestpass.require_app(): coalesce(auth.app_id(), guestpass.refuse_caller('no app in the request claims'));
--   * guestpass.require_hex_sha256 and guestpass.check_rate_limit_arguments: void CASE expressions whose refusing
--     branches call guestpass.refuse_argument (new: 22023 with the message given);
--   * guestpass.client_address_key: the dotted quad and the blank address (the cases a request has) in one CASE; any
--     other text goes to guestpass.client_address_key_parsed (new, the former body's inet parsing, unchanged).
-- Names, arguments, answers, error codes and messages are unchanged (pgTAP 08, 25, 26; every caller keeps its call).
-- require_app, require_hex_sha256 and check_rate_limit_arguments are now VOLATILE, as guestpass.caller_id is: an
-- inlined function may not be more volatile than it says, the refusers are VOLATILE, and a refusal must never be folded
-- into a constant at plan time. They have no SET clause (a SET clause stops inlining); every name in them is
-- schema-qualified, and they run inside SECURITY DEFINER functions that pin search_path. Measured per call, over
-- 100,000 rows on this VM, before and after: require_app 14.8 and 8.2 µs, require_hex_sha256 1.7 and 0.5,
-- check_rate_limit_arguments 1.3 and 0.1, client_address_key 3.6 and 1.6 (with the claims below: auth.uid() 15.1 and
-- 8.1, caller_id(null) 24.4 and 8.0). Whole transactions, paired pgbench rounds on copies of one seeded database (8
-- connections, fsync on): 0.99x the sign-ups and 1.03x the consumes a second of 0041, inside this VM's +-10 % a round.

-- Schema usage. Nobody creates objects in public except the migration owner (already the PostgreSQL 15 default).
revoke create on schema public from public;
grant usage on schema public to anon, authenticated, service_role;
grant usage on schema auth to anon, authenticated, service_role;
-- guestpass_server: anon and authenticated call their entry points; service_role calls refuse_table_result; the login
-- role guestpass_authenticator calls the Realtime functions itself, outside request transactions (13_realtime.sql).
grant usage on schema guestpass_server to anon, authenticated, service_role, guestpass_authenticator;

create or replace function auth.jwt()
    returns jsonb
    language sql stable as $$
    select case
        when pg_catalog.jsonb_typeof(nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb) = 'object'
        then nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb
    end
$$;

comment on function auth.jwt() is
    'The verified caller''s JWT claims (transaction-local request.jwt.claims) as a JSON object; null when unset or not '
    'an object. Raises 22P02 if the setting is not JSON. Inlinable: one expression, no SET clause.';

-- The claims, read for less. Every read of a uuid claim (auth.uid(), auth.app_id(), auth.device_id()) parses the
-- request's claims twice (the test, then the cast: an inlined expression has no common subexpressions); as json rather
-- than jsonb each parse costs about half (2.3 against 4.6 µs on this VM for the server's claims; a claim's value is the
-- same either way, the last of duplicate keys included, and a non-object still gives null). And guestpass.caller_id
-- read auth.uid() three times for a caller who names no user (the consume's case); it now reads it once, and twice
-- when p_user_id is given. Its answers and refusals are unchanged (pgTAP 02, 20, 26).
create or replace function auth.claim_uuid(claim text)
    returns uuid
    language sql stable as $$
    select case
        when (nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::json ->> claim)
            ~ '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$'
        then (nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::json ->> claim)::uuid
    end
$$;

comment on function auth.claim_uuid(text) is
    'One claim of the request claims (request.jwt.claims) as a uuid; null when absent, empty, not a canonical uuid, or '
    'when the claims are not a JSON object (never raises on it). Inlinable: one expression, no SET clause, so '
    'auth.uid(), auth.app_id() and auth.device_id() inline to it. Parses the claims as json, not jsonb: the same '
    'value at about half the cost of a parse (0042).';

create or replace function auth.uid()
    returns uuid
    language sql stable as $$ select auth.claim_uuid('sub') $$;

comment on function auth.uid() is
    'The caller''s user id (claim sub), or null. Policies should call it as (select auth.uid()).';

create or replace function auth.role()
    returns text
    language sql stable as $$ select nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb ->> 'role' $$;

comment on function auth.role() is
    'The caller''s role claim (anon, authenticated, service_role), or null. Inlinable: one expression, no SET clause.';

create or replace function auth.device_id()
    returns uuid
    language sql stable as $$ select auth.claim_uuid('device_id') $$;

comment on function auth.device_id() is
    'The caller''s device: the public id of a public.devices row (claim device_id), or null.';

create or replace function auth.app_id()
    returns uuid
    language sql stable as $$ select auth.claim_uuid('app_id') $$;

comment on function auth.app_id() is 'The caller''s app, a guestpass.apps id (claim app_id), or null.';

create or replace function guestpass.clock()
    returns timestamptz
    language sql stable as $$
    select coalesce(
        nullif(pg_catalog.current_setting('guestpass.clock_override', true), '')::timestamptz,
        pg_catalog.now()
    )
$$;

comment on function guestpass.clock() is
    'GuestPass internal: the only clock GuestPass functions read (quotas, welcome-grant claims, rate limits, '
    'refresh-token rotation and reuse window, sign-out, last_seen_at): now(), or the transaction''s '
    'guestpass.clock_override setting when set (tests: set local guestpass.clock_override = ''…''). Column defaults '
    'and the updated_at trigger, which may run as a request role, keep now(). Inlinable: one expression, no SET clause.';

create or replace function guestpass.iso_utc(p_at timestamptz)
    returns text
    language sql stable as $$ select pg_catalog.to_char(pg_catalog.timezone('UTC', p_at), 'YYYY-MM-DD"T"HH24:MI:SS"Z"') $$;

comment on function guestpass.iso_utc(timestamptz) is
    'GuestPass internal: p_at as ISO-8601 in UTC to the second, e.g. 2025-01-31T10:00:00Z (independent of the '
    'session''s TimeZone). Inlinable: one expression, no SET clause.';

create or replace function guestpass.iso_utc_micro(p_at timestamptz)
    returns text
    language sql stable as $$ select pg_catalog.to_char(pg_catalog.timezone('UTC', p_at), 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') $$;

comment on function guestpass.iso_utc_micro(timestamptz) is
    'GuestPass internal: p_at as RFC 3339 in UTC to the microsecond, e.g. 2025-01-31T10:00:00.123456Z, as the server '
    'writes the timestamps of GoTrue''s user and identity objects (supabase-swift misreads offsets; T and Z it reads). '
    'Inlinable: one expression, no SET clause.';

create or replace function guestpass.refuse_argument(p_message text)
    returns void
    language plpgsql volatile as $$
begin
    raise exception '%', p_message using errcode = '22023';
end
$$;

comment on function guestpass.refuse_argument(text) is
    'GuestPass internal: raises 22023 (invalid_parameter_value) with message p_message: the refusing branch of the '
    'inlinable argument checks guestpass.require_hex_sha256 and guestpass.check_rate_limit_arguments.';

create or replace function guestpass.refuse_caller(p_message text)
    returns uuid
    language plpgsql volatile as $$
begin
    raise exception '%', p_message using errcode = '42501';
end
$$;

comment on function guestpass.refuse_caller(text) is
    'GuestPass internal: raises 42501 with message p_message (the refusing branch of guestpass.caller_id and '
    'guestpass.require_app). Returns uuid only so that it can stand in a CASE or COALESCE of a uuid.';

create or replace function guestpass.require_hex_sha256(p_value text, p_name text)
    returns void
    language sql volatile as $$
    select case
        when pg_catalog.octet_length(p_value) = 64 and p_value !~ '[^0-9a-f]' then null::void
        else guestpass.refuse_argument(pg_catalog.format('%s must be a lowercase hex SHA-256', p_name))
    end
$$;

comment on function guestpass.require_hex_sha256(text, text) is
    'GuestPass internal: raises 22023 ''<p_name> must be a lowercase hex SHA-256'' unless p_value is 64 lowercase hex '
    'digits (null included: a caller whose argument is optional checks for null first). Tested as octet_length = 64 '
    'and no character outside [0-9a-f], the cheap form of ^[0-9a-f]{64}$ (0041). Inlinable: one CASE expression, no '
    'SET clause; VOLATILE because its refuser (guestpass.refuse_argument) is (0042).';

create or replace function guestpass.require_app()
    returns uuid
    language sql volatile as $$
    select coalesce(auth.app_id(), guestpass.refuse_caller('no app in the request claims'))
$$;

comment on function guestpass.require_app() is
    'GuestPass internal: the app of the request (claim app_id, auth.app_id()); raises 42501 ''no app in the request '
    'claims'' when there is none or it is not a uuid. Inlinable: one expression, no SET clause (0042); VOLATILE '
    'because its refuser (guestpass.refuse_caller) is.';

create or replace function guestpass.require_user_and_app(out user_id uuid, out app_id uuid)
    returns record
    language plpgsql stable set search_path = '' as $$
begin
    user_id := auth.uid();
    app_id := auth.app_id();
    if user_id is null or app_id is null then
        raise exception using errcode = '42501', message = 'no user or app in the request claims';
    end if;
end
$$;

comment on function guestpass.require_user_and_app() is
    'GuestPass internal: the caller''s user (claim sub, auth.uid()) and app (claim app_id, auth.app_id()); raises '
    '42501 ''no user or app in the request claims'' unless both are present. Does not check that they exist.';

create or replace function guestpass.require_app_user(p_user_id uuid)
    returns uuid
    language plpgsql stable security definer set search_path = '' as $$
declare
    v_app uuid := guestpass.require_app();
begin
    if p_user_id is null
       or not exists (select 1 from public.users as u where u.id = p_user_id and u.app_id = v_app) then
        raise exception 'the user is not a user of this app' using errcode = '42501';
    end if;
    return p_user_id;
end
$$;

comment on function guestpass.require_app_user(uuid) is
    'GuestPass internal: p_user_id when it is a user of the claims'' app; else raises 42501.';

-- An app's backend reads and spends its users' quota: the quota document's server-side function calls
-- rpc('get_quota', {p_user_id}) and rpc('consume_quota', {p_user_id, p_request_id}) with the app's secret key (role
-- service_role, no user in the claims). A backend holding the secret key is trusted for its app (grant_credits and
-- set_premium take any user of it), so caller_id's refusing branches (no user in the claims) go to backend_user: for
-- service_role, p_user_id when it is a user of the claims' app, else PT404 'unknown user' — the same answer for an id
-- no one has and for another app's user, so a backend learns nothing about other apps. A signed-in user's path is
-- unchanged and costs nothing more: backend_user runs only on branches that used to refuse.
create or replace function guestpass.backend_user(p_user_id uuid)
    returns uuid
    language plpgsql stable set search_path = '' as $$
begin
    if auth.role() is distinct from 'service_role' then
        return guestpass.refuse_caller('no user in the request claims');
    end if;
    if p_user_id is null then
        raise exception 'p_user_id is required with the secret key' using errcode = '22023';
    end if;
    -- Unknown anywhere and a user of another app are one answer: nothing to tell them apart.
    if not exists (select 1 from public.users as u where u.id = p_user_id and u.app_id = guestpass.require_app()) then
        raise exception 'unknown user' using errcode = 'PT404';
    end if;
    return p_user_id;
end
$$;

comment on function guestpass.backend_user(uuid) is
    'GuestPass internal: the user an app''s backend (role service_role, no user in the claims) acts for: p_user_id when '
    'it is a user of the claims'' app; else PT404 ''unknown user'' (the same for an unknown id and another app''s user); '
    '22023 ''p_user_id is required with the secret key'' when null. For any other role raises 42501 ''no user in the '
    'request claims'' (guestpass.refuse_caller). Called only from guestpass.caller_id''s branches without a user claim.';

create or replace function guestpass.caller_id(p_user_id uuid)
    returns uuid
    language sql volatile as $$
    select case
        when p_user_id is null then coalesce(auth.uid(), guestpass.backend_user(null))
        when auth.uid() is null then guestpass.backend_user(p_user_id)
        when p_user_id <> auth.uid() then guestpass.refuse_caller('p_user_id must be the caller')
        else p_user_id
    end
$$;

comment on function guestpass.caller_id(uuid) is
    'GuestPass internal: the user a quota call acts for. With a user in the claims (sub): that user when p_user_id is '
    'null or equal to it, else 42501 ''p_user_id must be the caller'' (guestpass.refuse_caller). Without one: '
    'guestpass.backend_user(p_user_id) — for service_role (an app''s backend) a user of the claims'' app (else PT404 '
    '''unknown user'', 22023 when null), for any other role 42501 ''no user in the request claims''. Does not check '
    'that a signed-in caller exists (guestpass.require_caller does). Inlinable: one expression, no SET clause; reads '
    'the claims once when p_user_id is null (0042, 0047).';

create or replace function guestpass.require_caller(p_user_id uuid)
    returns uuid
    language plpgsql stable as $$
declare
    v_user uuid := guestpass.caller_id(p_user_id);
begin
    if not exists (select 1 from public.users as u where u.id = v_user and u.app_id = auth.app_id()) then
        raise exception 'unknown user' using errcode = '42501';
    end if;
    return v_user;
end
$$;

comment on function guestpass.require_caller(uuid) is
    'GuestPass internal: the caller''s user id (guestpass.caller_id) when the user exists in the claims'' app; else '
    'raises 42501. Runs with its caller''s rights (only SECURITY DEFINER functions of the owner call it).';

-- Grants: no function of this file is PUBLIC's; the roles below are the only callers of each.
revoke all on function auth.jwt(), auth.claim_uuid(text), auth.uid(), auth.role(), auth.device_id(), auth.app_id(),
    guestpass.clock(), guestpass.iso_utc(timestamptz), guestpass.iso_utc_micro(timestamptz), guestpass.refuse_argument(text), guestpass.refuse_caller(text),
    guestpass.require_hex_sha256(text, text), guestpass.require_app(), guestpass.require_user_and_app(),
    guestpass.require_app_user(uuid), guestpass.backend_user(uuid), guestpass.caller_id(uuid),
    guestpass.require_caller(uuid) from public;
grant execute on function auth.jwt(), auth.claim_uuid(text), auth.uid(), auth.role(), auth.device_id(), auth.app_id()
    to anon, authenticated, service_role;
