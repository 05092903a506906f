-- moving to a new phone, recovery, and the user's devices: one-time codes, device revocation, devices bound to their user
-- The PoopyPals app moved an account by showing the device id (its only secret) as a QR code; the Flowers app
-- restored one by its public share code. Here a signed-in phone asks for a transfer code (one-time, 10 minutes by
-- default) and the new phone redeems it in the sign-up call it already makes, as a new device of the same user; a
-- recovery code, shown once and written down, does the same when the old phone is lost. Codes are stored as their
-- SHA-256 only. A user lists its devices and revokes one: its sessions and refresh tokens end at once and its secret
-- signs in no more.
--
-- * guestpass.account_codes: transfer and recovery codes (hash, expiry, use). Redemption
--   (guestpass_server.redeem_account_code) takes a token from the client address's bucket first and answers a used,
--   expired and wrong code alike (status invalid_code, not an error, so the token stays taken); the code row is locked,
--   so concurrent redemptions of one code add one device.
-- * public.devices gains revoked_at; guestpass.ensure_guest_device refuses a revoked device's secret (PT401).
-- * The hole noted earlier: a session could name a device of another user. devices gets unique (id, user_id) and the
--   sessions' device key becomes (device_id, user_id) → devices (id, user_id): a session's device is always its
--   user's. Moving a device (a merge) carries its sessions' user along, so merge_guest now deletes the guest's sessions
--   before it moves anything.
-- * public.list_devices, public.revoke_device (the last way into an account cannot be revoked).

-- 1. Devices: revocation and the binding to their user.

alter table public.devices add column revoked_at timestamptz;
comment on column public.devices.revoked_at is
    'When the user revoked this device (public.revoke_device): its sessions ended then and its secret signs in no more.';

alter table public.devices add constraint devices_id_user_id_key unique (id, user_id);
alter table guestpass.sessions drop constraint sessions_device_id_fkey;
alter table guestpass.sessions add constraint sessions_device_user_fkey foreign key (device_id, user_id)
    references public.devices (id, user_id) on update cascade on delete set null (device_id);

create or replace function guestpass.ensure_guest_device(p_app uuid, p_secret_hash text, p_user_metadata jsonb)
returns table (user_id uuid, device_id uuid, created boolean)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_now timestamptz;
    v_user uuid;
    v_device uuid;
    v_revoked boolean;
begin
    if p_app is null then
        raise exception using errcode = '22023', message = 'an app is required';
    end if;
    perform guestpass.require_hex_sha256(p_secret_hash, 'the device secret hash');
    if p_user_metadata is not null and jsonb_typeof(p_user_metadata) <> 'object' then
        raise exception using errcode = '22023', message = 'user metadata must be a JSON object';
    end if;
    v_now := guestpass.clock();

    -- One holder per (app, device) at a time, until commit: the loser of a race waits here, then finds the row.
    perform pg_advisory_xact_lock(hashtextextended('guestpass.device:' || p_app::text || ':' || p_secret_hash, 0));

    update public.devices as d
    set last_seen_at = v_now
    where d.app_id = p_app and d.secret_hash = p_secret_hash
    returning d.id, d.user_id, d.revoked_at is not null into v_device, v_user, v_revoked;

    if found then
        if v_revoked then
            -- A revoked device's secret signs in no more (not even as a new guest).
            raise exception using errcode = 'PT401', message = 'device revoked';
        end if;
        return query select v_user, v_device, false;
        return;
    end if;

    insert into public.users (app_id, is_anonymous, user_metadata)
    values (p_app, true, coalesce(p_user_metadata, '{}'::jsonb))
    returning id into v_user;

    insert into public.devices (app_id, user_id, secret_hash)
    values (p_app, v_user, p_secret_hash)
    returning id into v_device;

    return query select v_user, v_device, true;
end
$$;

comment on function guestpass.ensure_guest_device(uuid, text, jsonb) is
    'GuestPass internal: the guest of a device, race-free. For app p_app and device secret hash p_secret_hash '
    '(lowercase hex SHA-256) returns the device''s user and public device id with created = false and touches '
    'last_seen_at; or creates a guest (user_metadata p_user_metadata) and the device, created = true. A revoked device '
    '(devices.revoked_at) raises PT401 ''device revoked''. Concurrent calls for one device serialise on an advisory '
    'lock, so one user is ever created per device.';


-- 2. Transfer and recovery codes.

create table guestpass.account_codes (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null,
    user_id uuid not null,
    kind text not null,
    code_hash text not null,
    created_at timestamptz not null default now(),
    expires_at timestamptz,
    used_at timestamptz,
    constraint account_codes_pkey primary key (id),
    constraint account_codes_code_hash_key unique (code_hash),
    constraint account_codes_user_id_fkey foreign key (user_id, app_id) references public.users (id, app_id) on delete cascade,
    constraint account_codes_kind_check check (kind in ('transfer', 'recovery')),
    constraint account_codes_code_hash_check check (code_hash ~ '^[0-9a-f]{64}$')
);

comment on table guestpass.account_codes is
    'GuestPass: one-time codes that add a device to an account: transfer (from a signed-in phone, expires) and '
    'recovery (written down, one live per user). Only the SHA-256 of a code is stored; used_at is set when redeemed.';

create index account_codes_user_id_idx on guestpass.account_codes (user_id);

alter table guestpass.account_codes enable row level security;
alter table guestpass.account_codes force row level security;
revoke all on table guestpass.account_codes from public;

create function guestpass_server.create_account_code(p_kind text, p_code_hash text, p_ttl_seconds integer)
    returns timestamptz
    language plpgsql
    security definer
    set search_path = ''
    as $$
declare
    v_user uuid;
    v_app uuid;
    v_expires timestamptz;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    perform guestpass.require_hex_sha256(p_code_hash, 'the code hash');
    if p_kind is null or p_kind not in ('transfer', 'recovery') then
        raise exception using errcode = '22023', message = 'the kind must be transfer or recovery';
    end if;
    if p_kind = 'transfer' and (p_ttl_seconds is null or p_ttl_seconds not between 60 and 86400) then
        raise exception using errcode = '22023', message = 'a transfer code lives 60 to 86400 seconds';
    end if;
    if not exists (
        select 1 from guestpass.sessions as s
        where s.id = auth.claim_uuid('session_id') and s.user_id = v_user and s.revoked_at is null
    ) then
        raise exception using errcode = '42501', message = 'the session has ended';
    end if;
    if p_kind = 'recovery' then
        -- A new recovery code voids the old one.
        delete from guestpass.account_codes as a where a.user_id = v_user and a.kind = 'recovery';
    else
        v_expires := guestpass.clock() + make_interval(secs => p_ttl_seconds);
    end if;
    insert into guestpass.account_codes (app_id, user_id, kind, code_hash, expires_at)
    values (v_app, v_user, p_kind, p_code_hash, v_expires);
    return v_expires;
end
$$;

revoke all on function guestpass_server.create_account_code(text, text, integer) from public;
grant execute on function guestpass_server.create_account_code(text, text, integer) to authenticated;

comment on function guestpass_server.create_account_code(text, text, integer) is
    'GuestPass server: stores a new code (its SHA-256, p_code_hash) of kind transfer (expires after p_ttl_seconds, 60 '
    'to 86400) or recovery (no expiry; deletes the user''s previous recovery code) for the caller (claims sub, app_id, '
    'a live session_id). Returns the expiry (null for recovery). 22023 on bad arguments, 42501 without a live session.';

create function guestpass_server.redeem_account_code(
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
    from public.devices as d where d.app_id = v_app and d.secret_hash = p_secret_hash;
    if found and (v_owner <> v_code.user_id) then
        return query select 'device_in_use'::text, null::uuid, null::uuid, null::boolean, null::text, null::jsonb,
            null::jsonb, null::timestamptz, null::timestamptz, null::timestamptz;
        return;
    end if;
    update guestpass.account_codes as a set used_at = v_now where a.id = v_code.id;
    if v_device is null then
        insert into public.devices (app_id, user_id, secret_hash, model, os_version, app_version, build_number, is_simulator)
        values (v_app, v_code.user_id, p_secret_hash, p_device ->> 'model', p_device ->> 'os_version',
                p_device ->> 'app_version', p_device ->> 'build_number', coalesce((p_device ->> 'is_simulator')::boolean, false))
        returning id into v_device;
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

revoke all on function guestpass_server.redeem_account_code(text, text, text, jsonb, text, text, uuid, text) from public;
grant execute on function guestpass_server.redeem_account_code(text, text, text, jsonb, text, text, uuid, text) to anon;

comment on function guestpass_server.redeem_account_code(text, text, text, jsonb, text, text, uuid, text) is
    'GuestPass server: signs a new phone in to the account of a transfer or recovery code (p_code_hash, its SHA-256) '
    'in the caller''s app (claim app_id), as a new device with secret hash p_secret_hash and facts p_device, with '
    'session p_session_id and refresh token counter 0. Takes a token of the client address''s bucket (redeem:ip:<key>, '
    '10, 10 an hour; empty → PT429) first. Status redeemed_transfer / redeemed_recovery with the user; or '
    'invalid_code (used, expired, wrong or another app''s alike) or device_in_use (that secret belongs to another '
    'user), changing nothing but the token. The code row is locked: concurrent redemptions of one code add one device.';

-- 3. Devices of the caller.

create function public.list_devices()
    returns table (
        device_id uuid, model text, os_version text, app_version text, created_at timestamptz,
        last_seen_at timestamptz, is_current boolean
    )
    language sql
    stable
    security definer
    set search_path = ''
    as $$
    select d.id, d.model, d.os_version, d.app_version, d.created_at, d.last_seen_at, d.id = auth.device_id()
    from public.devices as d
    where d.user_id = auth.uid() and d.app_id = auth.app_id() and d.revoked_at is null
    order by d.created_at, d.id
$$;

create function public.revoke_device(p_device_id uuid)
    returns boolean
    language plpgsql
    volatile
    security definer
    set search_path = ''
    as $$
declare
    v_user uuid;
    v_app uuid;
    v_now timestamptz := guestpass.clock();
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    perform 1 from public.users as u where u.id = v_user for no key update;
    if not exists (
        select 1 from public.devices as d
        where d.id = p_device_id and d.user_id = v_user and d.app_id = v_app and d.revoked_at is null
    ) then
        return false;
    end if;
    -- The last way in stays: another live device, an Apple identity or a live recovery code.
    if not exists (
            select 1 from public.devices as d where d.user_id = v_user and d.id <> p_device_id and d.revoked_at is null)
       and not exists (select 1 from guestpass.identities as i where i.user_id = v_user)
       and not exists (
            select 1 from guestpass.account_codes as a where a.user_id = v_user and a.kind = 'recovery' and a.used_at is null)
    then
        raise exception using errcode = 'PT409', message = 'this is the account''s last way in',
            hint = 'link Sign in with Apple or make a recovery code first';
    end if;
    update public.devices as d set revoked_at = v_now where d.id = p_device_id;
    update guestpass.refresh_tokens as t set revoked_at = v_now
    where t.session_id in (select s.id from guestpass.sessions as s where s.device_id = p_device_id) and t.revoked_at is null;
    update guestpass.sessions as s set revoked_at = v_now where s.device_id = p_device_id and s.revoked_at is null;
    return true;
end
$$;

revoke all on function public.list_devices() from public;
revoke all on function public.revoke_device(uuid) from public;
grant execute on function public.list_devices() to authenticated;
grant execute on function public.revoke_device(uuid) to authenticated;

comment on function public.list_devices() is
    'The caller''s devices that are not revoked: public id, model, OS and app version, created, last seen, and whether '
    'it is the caller''s own (claim device_id), oldest first.';
comment on function public.revoke_device(uuid) is
    'Revokes one of the caller''s devices: its sessions and refresh tokens end at once and its secret signs in no more '
    '(PT401 device revoked). False when it is not a live device of the caller. The account''s last way in (no other '
    'device, no Apple identity, no recovery code) is refused: PT409.';

-- 4. A merge ends the guest's sessions before it moves the guest's devices.

create or replace function guestpass_server.merge_guest(p_session_id uuid, p_token_hash text, p_schemas text[])
    returns table (status text, guest_id uuid, credits_moved integer, credits_balance integer, rows_moved jsonb)
    language plpgsql
    security definer
    set search_path = ''
    as $$
declare
    v_to uuid;
    v_app uuid;
    v_from uuid;
    v_locked integer;
    v_guest public.users%rowtype;
    v_balance integer;
    v_moved jsonb := '{}'::jsonb;
    v_count integer;
    v_fk record;
begin
    select c.user_id, c.app_id into v_to, v_app from guestpass.require_user_and_app() as c;
    perform guestpass.require_hex_sha256(p_token_hash, 'the refresh token hash');

    -- The guest: the user of a live session whose live refresh token this is, in the caller's app.
    select s.user_id into v_from
    from guestpass.refresh_tokens as t
    join guestpass.sessions as s on s.id = t.session_id
    where t.token_hash = p_token_hash and t.session_id = p_session_id and t.revoked_at is null
      and s.revoked_at is null and s.app_id = v_app;
    if not found then
        return query select 'refresh_token_not_found'::text, null::uuid, null::integer, null::integer, null::jsonb;
        return;
    end if;
    if v_from = v_to then
        return query select 'same_user'::text, v_from, null::integer, null::integer, null::jsonb;
        return;
    end if;

    -- Both users, in id order; a concurrent merge that got here first has deleted the guest when this one proceeds.
    select count(*) into v_locked
    from (select u.id from public.users as u where u.id in (v_from, v_to) and u.app_id = v_app order by u.id for update) as l;
    select u.* into v_guest from public.users as u where u.id = v_from;
    if v_locked <> 2 or not found or not exists (
        select 1 from guestpass.refresh_tokens as t where t.token_hash = p_token_hash and t.revoked_at is null
    ) then
        return query select 'refresh_token_not_found'::text, null::uuid, null::integer, null::integer, null::jsonb;
        return;
    end if;
    if not v_guest.is_anonymous then
        return query select 'not_a_guest'::text, v_from, null::integer, null::integer, null::jsonb;
        return;
    end if;

    -- The guest's sessions go first (with their refresh tokens): its devices, moved below, would carry them along
    -- (sessions_device_user_fkey cascades the user), and a guest's session must never become the account's.
    delete from guestpass.sessions as s where s.user_id = v_from;

    -- Credits, through the ledger.
    if v_guest.credits_balance > 0 then
        perform guestpass.apply_credit_change(v_from, -v_guest.credits_balance, 'merge_out', 'merge:' || v_from::text);
        perform guestpass.apply_credit_change(v_to, v_guest.credits_balance, 'merge_in', 'merge:' || v_from::text);
    end if;

    -- Usage, day by day.
    insert into guestpass.daily_usage as d (user_id, app_id, day, free_used, premium_used, credit_used, resets_at)
    select v_to, g.app_id, g.day, g.free_used, g.premium_used, g.credit_used, g.resets_at
    from guestpass.daily_usage as g
    where g.user_id = v_from
    on conflict (user_id, day) do update
        set free_used = d.free_used + excluded.free_used,
            premium_used = d.premium_used + excluded.premium_used,
            credit_used = d.credit_used + excluded.credit_used;

    -- The welcome-grant mark.
    update public.users as u
    set initial_grant_claimed = true
    where u.id = v_to and v_guest.initial_grant_claimed and not u.initial_grant_claimed;

    -- Every row that references the guest, in public and the exposed schemas.
    for v_fk in
        select r.schema_name, r.table_name, r.column_name
        from guestpass.user_references(p_schemas) as r
    loop
        execute format('update %I.%I set %I = $1 where %I = $2', v_fk.schema_name, v_fk.table_name, v_fk.column_name,
                       v_fk.column_name)
            using v_to, v_from;
        get diagnostics v_count = row_count;
        if v_count > 0 then
            v_moved := v_moved || jsonb_build_object(v_fk.schema_name || '.' || v_fk.table_name, v_count);
        end if;
    end loop;

    if to_regprocedure('public.guestpass_on_merge(uuid,uuid)') is not null then
        execute 'select public.guestpass_on_merge($1, $2)' using v_from, v_to;
    end if;

    -- The guest goes, with its sessions, refresh tokens, ledger and usage rows.
    delete from public.users as u where u.id = v_from;

    select u.credits_balance into v_balance from public.users as u where u.id = v_to;
    return query select 'merged'::text, v_from, v_guest.credits_balance, v_balance, v_moved;
end
$$;
