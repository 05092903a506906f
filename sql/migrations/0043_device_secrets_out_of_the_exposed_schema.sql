-- device secret hashes move out of public.devices into guestpass.device_secrets, a table no request role can reach
-- The table API (GET /rest/v1/<table>) serves every table of an exposed schema to the roles that hold privileges on
-- it, and select=* expands to every column. authenticated holds SELECT on the whole of public.devices (its own rows,
-- by devices_select_own), and that row carried secret_hash, the SHA-256 of the client-held device secret: the one
-- thing that signs a device in. A hash of a 122-bit random secret cannot be reversed, but it is the key of the
-- sign-in (ensure_guest_device looks the device up by it) and nothing a client needs to read; PRODUCT.md section 4:
-- secrets are never readable through the table API. So:
--   * guestpass.device_secrets (new): device_id (primary key, → public.devices (id) on delete cascade), app_id and
--     secret_hash, with the same lowercase hex SHA-256 check and the unique key (app_id, secret_hash) that makes one
--     secret one device per app. Row-level security enabled and forced, no policy, no privilege for any request
--     role: only the SECURITY DEFINER functions (their owner) read and write it, as every guestpass table.
--   * The hashes move there; public.devices loses secret_hash, with devices_secret_hash_check and
--     devices_app_secret_key.
--   * guestpass.ensure_guest_device, guestpass_server.redeem_account_code and public.create_guest_user, the three
--     functions that read or wrote devices.secret_hash, find a device through device_secrets. Signatures, answers,
--     errors, grants and the advisory lock per (app, secret hash) are unchanged. ensure_guest_device was one
--     INSERT … ON CONFLICT (app_id, secret_hash) DO UPDATE of devices (the touch) that inserted the new guest in the
--     same statement; the key and the touched row now sit in two tables, so it is one statement of data-modifying
--     CTEs instead: the secret's device looked up by the unique key, touched when known (not revoked), else secret,
--     device and guest inserted together (the foreign keys are checked at the statement's end). Under the advisory
--     lock, which redeem_account_code takes too, the look-up sees every committed secret of that (app, hash), so one
--     guest is ever created per device; were the lock ever skipped, the unique key would refuse the second insert
--     (23505) rather than let a second guest in. A known device costs an index probe and the touch, as before.
-- Nothing else reads the hash: a merge moves devices (their ids, hence their secrets, stay), deleting an account or
-- pruning a guest deletes its devices, and their secrets with them (device_secrets_device_id_fkey cascades);
-- guestpass.user_references lists only references to public.users, so neither sees the new table. list_devices,
-- revoke_device, the sessions and the tokens use the public device id only.

create table guestpass.device_secrets (
    device_id uuid not null,
    app_id uuid not null,
    secret_hash text not null,
    constraint device_secrets_pkey primary key (device_id),
    constraint device_secrets_device_id_fkey foreign key (device_id) references public.devices (id) on delete cascade,
    -- One secret is one device per app: the key of every sign-in by device (ensure_guest_device, create_guest_user,
    -- redeem_account_code).
    constraint device_secrets_app_secret_key unique (app_id, secret_hash),
    constraint device_secrets_secret_hash_check check (octet_length(secret_hash) = 64 and secret_hash !~ '[^0-9a-f]')
);

comment on table guestpass.device_secrets is
    'GuestPass: the secret of each device, kept out of the exposed public.devices (0043). secret_hash is the '
    'lowercase hex SHA-256 of the client-held device secret (the secret is never stored), unique per app; app_id is '
    'the device''s app. No request role has any privilege on it: only the SECURITY DEFINER sign-in functions '
    '(ensure_guest_device, redeem_account_code, create_guest_user) read and write it. Deleting a device deletes its '
    'secret.';
comment on column guestpass.device_secrets.device_id is 'The device (public.devices.id, its public id).';
comment on column guestpass.device_secrets.app_id is
    'The device''s app (public.devices.app_id): the scope of the secret.';
comment on column guestpass.device_secrets.secret_hash is
    'Lowercase hex SHA-256 of the client-held device secret; one device per (app_id, secret_hash).';

alter table guestpass.device_secrets enable row level security;
alter table guestpass.device_secrets force row level security;
revoke all on table guestpass.device_secrets from public, anon, authenticated, service_role;

insert into guestpass.device_secrets (device_id, app_id, secret_hash)
select d.id, d.app_id, d.secret_hash
from public.devices as d;

alter table public.devices
    drop constraint devices_app_secret_key,
    drop constraint devices_secret_hash_check,
    drop column secret_hash;

comment on table public.devices is
    'GuestPass: a user''s devices. id is the public device id used as the device_id claim; the device''s secret (the '
    'SHA-256 of the client-held secret) is kept apart in guestpass.device_secrets, so nothing here is secret. Clients '
    'may only read their own devices; the server writes through SECURITY DEFINER functions.';

create or replace function guestpass.ensure_guest_device(p_app uuid, p_secret_hash text, p_user_metadata jsonb)
returns table (user_id uuid, device_id uuid, created boolean)
language plpgsql
security definer
set search_path = ''
as $$
declare
    v_new_user uuid := gen_random_uuid();
    v_new_device uuid := gen_random_uuid();
    v_user uuid;
    v_device uuid;
begin
    if p_app is null then
        raise exception using errcode = '22023', message = 'an app is required';
    end if;
    perform guestpass.require_hex_sha256(p_secret_hash, 'the device secret hash');
    if p_user_metadata is not null and jsonb_typeof(p_user_metadata) <> 'object' then
        raise exception using errcode = '22023', message = 'user metadata must be a JSON object';
    end if;

    -- One holder per (app, device) at a time, until commit, shared with redeem_account_code: the loser of a race
    -- waits here, then finds the secret.
    perform pg_advisory_xact_lock(hashtextextended('guestpass.device:' || p_app::text || ':' || p_secret_hash, 0));

    -- A known device is touched and keeps its user (a revoked one matches no row); an unknown secret gets a new
    -- device and a new guest, inserted in the same statement (the foreign keys are checked at its end).
    with known as (
        select s.device_id
        from guestpass.device_secrets as s
        where s.app_id = p_app and s.secret_hash = p_secret_hash
    ), touched as (
        update public.devices as d
        set last_seen_at = guestpass.clock()
        from known
        where d.id = known.device_id and d.revoked_at is null
        returning d.id, d.user_id
    ), secret as (
        insert into guestpass.device_secrets (device_id, app_id, secret_hash)
        select v_new_device, p_app, p_secret_hash
        where not exists (select from known)
        returning device_secrets.device_id
    ), device as (
        insert into public.devices as d (id, app_id, user_id)
        select secret.device_id, p_app, v_new_user
        from secret
        returning d.id, d.user_id
    ), new_user as (
        insert into public.users (id, app_id, is_anonymous, user_metadata)
        select v_new_user, p_app, true, coalesce(p_user_metadata, '{}'::jsonb)
        from secret
    )
    select t.user_id, t.id into v_user, v_device
    from (select touched.id, touched.user_id from touched union all select device.id, device.user_id from device) as t;

    if v_device is null then
        -- A revoked device's secret signs in no more (not even as a new guest).
        raise exception using errcode = 'PT401', message = 'device revoked';
    end if;
    return query select v_user, v_device, v_user = v_new_user;
end
$$;

comment on function guestpass.ensure_guest_device(uuid, text, jsonb) is
    'GuestPass internal: the guest of a device, race-free. For app p_app and device secret hash p_secret_hash '
    '(lowercase hex SHA-256) returns the device''s user and public device id with created = false and touches '
    'last_seen_at (guestpass.clock()); or creates a guest (user_metadata p_user_metadata), the device and its secret '
    '(guestpass.device_secrets), created = true, in one statement that looks the secret up by its unique key '
    '(app_id, secret_hash) first. A revoked device (devices.revoked_at) raises PT401 ''device revoked''. Concurrent '
    'calls for one device serialise on an advisory lock (shared with redeem_account_code), so one user is ever '
    'created per device.';

create or replace function guestpass_server.redeem_account_code(
    p_kind text, p_code_hash text, p_secret_hash text, p_device jsonb, p_client_ip text, p_user_agent text,
    p_session_id uuid, p_refresh_token_hash text
) returns table (
    status text, user_id uuid, device_id uuid, is_anonymous boolean, email text, user_metadata jsonb,
    app_metadata jsonb, created_at timestamptz, updated_at timestamptz, last_sign_in_at timestamptz
)
    language plpgsql
    security definer
    set search_path = ''
    as $$
declare
    v_app uuid := guestpass.require_app();
    v_now timestamptz := guestpass.clock();
    v_code guestpass.account_codes%rowtype;
    v_device uuid;
    v_owner uuid;
begin
    if p_kind is null or p_kind not in ('transfer', 'recovery') then
        raise exception using errcode = '22023', message = 'the kind must be transfer or recovery';
    end if;
    perform guestpass.require_hex_sha256(p_code_hash, 'the code hash');
    perform guestpass.require_hex_sha256(p_secret_hash, 'the device secret hash');
    perform guestpass.require_hex_sha256(p_refresh_token_hash, 'the refresh token hash');
    if p_session_id is null then
        raise exception using errcode = '22023', message = 'a session id is required';
    end if;
    -- Every try takes a token first (10 an hour per client address); a refusal below is an answer, so it stays taken.
    perform guestpass.enforce_rate_limit('redeem:ip:' || guestpass.client_address_key(p_client_ip), 10, 10.0 / 3600);

    select a.* into v_code
    from guestpass.account_codes as a
    where a.code_hash = p_code_hash and a.kind = p_kind and a.app_id = v_app and a.used_at is null
      and (a.expires_at is null or a.expires_at > v_now)
    for update;
    if not found then
        return query select 'invalid_code'::text, null::uuid, null::uuid, null::boolean, null::text, null::jsonb,
            null::jsonb, null::timestamptz, null::timestamptz, null::timestamptz;
        return;
    end if;

    -- The new phone's device: its own new secret. A secret already in use elsewhere is refused.
    perform pg_advisory_xact_lock(hashtextextended('guestpass.device:' || v_app::text || ':' || p_secret_hash, 0));
    select d.user_id, d.id into v_owner, v_device
    from guestpass.device_secrets as s
    join public.devices as d on d.id = s.device_id
    where s.app_id = v_app and s.secret_hash = p_secret_hash;
    if found and (v_owner <> v_code.user_id) then
        return query select 'device_in_use'::text, null::uuid, null::uuid, null::boolean, null::text, null::jsonb,
            null::jsonb, null::timestamptz, null::timestamptz, null::timestamptz;
        return;
    end if;
    update guestpass.account_codes as a set used_at = v_now where a.id = v_code.id;
    if v_device is null then
        -- The device and its secret in one statement (the secret's foreign key is checked at its end).
        with device as (
            insert into public.devices as d (
                app_id, user_id, model, os_version, app_version, build_number, is_simulator
            )
            values (v_app, v_code.user_id, p_device ->> 'model', p_device ->> 'os_version', p_device ->> 'app_version',
                    p_device ->> 'build_number', coalesce((p_device ->> 'is_simulator')::boolean, false))
            returning d.id
        ), secret as (
            insert into guestpass.device_secrets (device_id, app_id, secret_hash)
            select device.id, v_app, p_secret_hash
            from device
        )
        select device.id into v_device from device;
    else
        update public.devices as d set revoked_at = null, last_seen_at = v_now where d.id = v_device;
    end if;

    insert into guestpass.sessions (id, app_id, user_id, device_id, user_agent, ip)
    values (p_session_id, v_app, v_code.user_id, v_device, left(p_user_agent, 1024), left(p_client_ip, 255));
    insert into guestpass.refresh_tokens (session_id, counter, token_hash) values (p_session_id, 0, p_refresh_token_hash);

    return query
    select ('redeemed_' || p_kind)::text, u.id, v_device, u.is_anonymous, u.email, u.user_metadata, u.app_metadata,
           u.created_at, u.updated_at, v_now
    from public.users as u
    where u.id = v_code.user_id;
end
$$;

comment on function guestpass_server.redeem_account_code(text, text, text, jsonb, text, text, uuid, text) is
    'GuestPass server: signs a new phone in to the account of a transfer or recovery code (p_code_hash, its SHA-256) '
    'in the caller''s app (claim app_id), as a new device with secret hash p_secret_hash (kept in '
    'guestpass.device_secrets) and facts p_device, with session p_session_id and refresh token counter 0. Takes a '
    'token of the client address''s bucket (redeem:ip:<key>, 10, 10 an hour; empty → PT429) first. Status '
    'redeemed_transfer / redeemed_recovery with the user; or invalid_code (used, expired, wrong or another app''s '
    'alike) or device_in_use (that secret belongs to another user), changing nothing but the token. The code row is '
    'locked: concurrent redemptions of one code add one device.';

create or replace function public.create_guest_user(p_device_id uuid)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_app uuid := guestpass.require_app();
    v_hash text;
    v_user uuid;
begin
    if p_device_id is null then
        raise exception using errcode = '22023', message = 'p_device_id is required';
    end if;
    -- uuid text is lowercase 8-4-4-4-12: the version is character 15, the variant character 20.
    if substr(p_device_id::text, 15, 1) <> '4' or substr(p_device_id::text, 20, 1) not in ('8', '9', 'a', 'b') then
        raise exception using errcode = '22023', message = 'p_device_id must be a random (version 4) uuid';
    end if;
    v_hash := encode(sha256(convert_to(p_device_id::text, 'UTF8')), 'hex');

    -- A known device creates nothing: no token is taken.
    select d.user_id into v_user
    from guestpass.device_secrets as s
    join public.devices as d on d.id = s.device_id
    where s.app_id = v_app and s.secret_hash = v_hash;
    if found then
        return v_user;
    end if;
    if auth.role() is distinct from 'service_role' then
        perform guestpass.take_signup_limits(v_app, current_setting('request.client_ip', true));
    end if;

    select e.user_id into v_user from guestpass.ensure_guest_device(v_app, v_hash, null) as e;
    return v_user;
end
$$;

comment on function public.create_guest_user(uuid) is
    'GuestPass: the guest user of device p_device_id (a random, version 4 uuid) in the caller''s app (claim app_id), '
    'creating the anonymous user and the device on first use; race-free, so concurrent calls with one device id '
    'create one user. Creating a guest takes a token from the sign-up buckets of the client (request.client_ip) and '
    'of the app, as POST /auth/v1/signup does (guestpass.take_signup_limits; not for service_role), and raises PT429 '
    'with the seconds to wait as detail when one is empty; finding an existing guest takes nothing. p_device_id is a '
    'client-held secret, stored only as the lowercase hex SHA-256 of its lowercase canonical text '
    '(encode(sha256(convert_to(lower(p_device_id::text), ''UTF8'')), ''hex'')), in guestpass.device_secrets. Returns '
    'only the user id. Raises 42501 without an app claim, 22023 without a device id or for one that is not version 4.';
