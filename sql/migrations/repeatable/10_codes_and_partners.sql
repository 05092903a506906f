-- share codes and partners; transfer and recovery codes
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.
--
-- Notes carried from the change log before the re-baseline (NNNN names one of its files, in git history):
--
-- share codes and partners: a public code to find a partner by, never a way to sign in (the Flowers app's document)
-- The Flowers app paired users by a 4-digit code that also restored an account: anyone who learnt or guessed a code
-- took the account, and 10,000 codes collide at 10,000 users. Here a share code only finds a partner:
--
-- * guestpass.share_codes: one code per user and app, unique per app, from an alphabet without look-alikes
--   (23456789ABCDEFGHJKMNPQRSTUVWXYZ: no 0/O, 1/I/L) or digits only for a keypad (per-app), of a per-app length
--   (default 6: 887 million codes), drawn from the CSPRNG (the random bytes of gen_random_uuid, rejection-sampled so that every
--   character is equally likely), created on first request with a bounded collision retry, rotatable.
-- * public.partners: a pairing, one row per direction, so that the caller's partners are one indexed lookup of its
--   own rows (row-level security: a user reads only rows where it is user_id): auth.partner_ids(), an inlinable
--   set-returning function for policies ("my partner's rows"), and auth.is_partner(uuid) for readability (not
--   inlinable: PostgreSQL never inlines a scalar SQL function whose body holds a subquery).
-- * public.pair_with_code(p_code): takes a token from the caller's and the client address's pairing buckets before
--   it looks the code up (so the limit says nothing about codes), answers a wrong and an unknown code alike
--   ({paired: false, reason: no_such_code}), refuses pairing with yourself, twice, or past the per-app partner limit
--   (default 1), with both users locked in id order so that concurrent pairings cannot pass the limit. Refusals are
--   answers, not errors: an error would roll the tokens back and leave a guesser unlimited.
--
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

grant select on table public.partners to authenticated;

drop policy if exists partners_select_own on public.partners;
create policy partners_select_own on public.partners for select to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy partners_select_own on public.partners is 'A user reads only its own pairings, in its own app.';

create or replace function guestpass.new_share_code(p_length integer, p_digits_only boolean)
    returns text
    language plpgsql volatile set search_path = '' as $$
declare
    v_alphabet constant text := case when p_digits_only then '0123456789' else '23456789ABCDEFGHJKMNPQRSTUVWXYZ' end;
    v_size constant integer := char_length(v_alphabet);
    -- The largest multiple of the alphabet's size below 256: bytes at or above it are drawn again (no bias).
    v_limit constant integer := 256 - 256 % v_size;
    v_code text := '';
    v_bytes bytea;
    v_index integer;
    v_byte integer;
begin
    while char_length(v_code) < p_length loop
        -- gen_random_uuid draws from the CSPRNG; bytes 0-5 and 10-15 of a v4 uuid are wholly random.
        v_bytes := uuid_send(gen_random_uuid());
        foreach v_index in array array[0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15] loop
            v_byte := get_byte(v_bytes, v_index);
            if v_byte < v_limit and char_length(v_code) < p_length then
                v_code := v_code || substr(v_alphabet, 1 + v_byte % v_size, 1);
            end if;
        end loop;
    end loop;
    return v_code;
end
$$;

comment on function guestpass.new_share_code(integer, boolean) is
    'GuestPass internal: a random share code of p_length characters from 0-9 (p_digits_only) or '
    '23456789ABCDEFGHJKMNPQRSTUVWXYZ (no 0/O, 1/I/L), each character uniform (CSPRNG bytes of gen_random_uuid, rejection-sampled).';

create or replace function guestpass.assign_share_code(p_user uuid, p_app uuid, p_rotate boolean)
    returns text
    language plpgsql volatile set search_path = '' as $$
declare
    v_length integer;
    v_digits boolean;
    v_code text;
begin
    if not p_rotate then
        select s.code into v_code from guestpass.share_codes as s where s.user_id = p_user;
        if found then
            return v_code;
        end if;
    end if;
    select a.share_code_length, a.share_code_digits_only into v_length, v_digits from guestpass.apps as a where a.id = p_app;
    for v_attempt in 1..10 loop
        v_code := guestpass.new_share_code(v_length, v_digits);
        begin
            insert into guestpass.share_codes as s (user_id, app_id, code) values (p_user, p_app, v_code)
            on conflict (user_id) do update set code = excluded.code, created_at = excluded.created_at
            where p_rotate or s.code is null;
            select s.code into v_code from guestpass.share_codes as s where s.user_id = p_user;
            return v_code;
        exception when unique_violation then
            -- Another user of the app holds that code: draw again.
            null;
        end;
    end loop;
    raise exception using errcode = 'PT503', message = 'no free share code found; try again',
        hint = 'the app''s codes are nearly exhausted: make them longer (guestpass apps configure --share-code-length)';
end
$$;

comment on function guestpass.assign_share_code(uuid, uuid, boolean) is
    'GuestPass internal: the share code of user p_user of app p_app, creating it if missing, or a new one with '
    'p_rotate. A drawn code another user holds is drawn again, at most 10 times, then PT503.';

create or replace function public.get_share_code()
    returns text
    language sql volatile security definer set search_path = '' as $$
    select guestpass.assign_share_code(c.user_id, c.app_id, false) from guestpass.require_user_and_app() as c
$$;

comment on function public.get_share_code() is
    'The caller''s share code (created on the first call): give it to a partner to pair with pair_with_code. It '
    'never signs anyone in.';

create or replace function public.rotate_share_code()
    returns text
    language sql volatile security definer set search_path = '' as $$
    select guestpass.assign_share_code(c.user_id, c.app_id, true) from guestpass.require_user_and_app() as c
$$;

comment on function public.rotate_share_code() is
    'A new share code for the caller; the old one pairs no more.';

create or replace function auth.partner_ids()
    returns setof uuid
    language sql stable as $$
    select p.partner_id from public.partners as p where p.user_id = auth.uid() and p.app_id = auth.app_id()
$$;

comment on function auth.partner_ids() is
    'The caller''s partners (public.partners, its own rows). A one-query SQL set-returning function: inlined where it '
    'stands in FROM, e.g. a policy "recipient_id in (select p from auth.partner_ids() as p)".';

create or replace function auth.is_partner(p_user uuid)
    returns boolean
    language sql stable as $$
    select p_user in (select p.partner_id from auth.partner_ids() as p (partner_id))
$$;

comment on function auth.is_partner(uuid) is
    'Whether p_user is a partner of the caller. Reads as a policy would want, but PostgreSQL never inlines a SQL '
    'function whose body holds a subquery: in hot policies prefer "col in (select p from auth.partner_ids() as p)", which is.';

create or replace function public.pair_with_code(p_code text)
    returns jsonb
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_user uuid;
    v_app uuid;
    v_partner uuid;
    v_limit integer;
    v_code text := upper(btrim(p_code));
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    -- No code is a malformed request, not a try: refused before any token is taken (it guesses nothing).
    if p_code is null then
        raise exception 'p_code is required' using errcode = '22023';
    end if;
    -- Every try takes a token first, found or not: the limit reveals nothing about codes.
    perform guestpass.enforce_rate_limit('pair:user:' || v_user::text, 10, 10.0 / 3600);
    perform guestpass.enforce_rate_limit(
        'pair:ip:' || guestpass.client_address_key(current_setting('request.client_ip', true)), 30, 30.0 / 3600
    );

    -- Refusals are answers, not errors: an error would roll back the tokens just taken, and a guesser would never
    -- run out of them.
    select s.user_id into v_partner from guestpass.share_codes as s where s.app_id = v_app and s.code = v_code;
    if not found then
        return jsonb_build_object('paired', false, 'reason', 'no_such_code');
    end if;
    if v_partner = v_user then
        return jsonb_build_object('paired', false, 'reason', 'own_code');
    end if;

    -- Both users, in id order: concurrent pairings of either run one at a time.
    perform 1 from public.users as u where u.id in (v_user, v_partner) order by u.id for no key update;
    if exists (select 1 from public.partners as p where p.user_id = v_user and p.partner_id = v_partner) then
        return jsonb_build_object('paired', false, 'reason', 'already_partners');
    end if;
    select a.partner_limit into v_limit from guestpass.apps as a where a.id = v_app;
    if (select count(*) from public.partners as p where p.user_id = v_user) >= v_limit
       or (select count(*) from public.partners as p where p.user_id = v_partner) >= v_limit then
        return jsonb_build_object('paired', false, 'reason', 'partner_limit');
    end if;

    insert into public.partners (app_id, user_id, partner_id)
    values (v_app, v_user, v_partner), (v_app, v_partner, v_user);
    return jsonb_build_object('paired', true, 'partner_id', v_partner);
end
$$;

comment on function public.pair_with_code(text) is
    'Pairs the caller with the owner of share code p_code (case and surrounding spaces ignored); both see it. p_code '
    'null is 22023 ''p_code is required'' (HTTP 400), before any token is taken. Takes a token from the caller''s '
    'pairing bucket (pair:user:<id>, 10, refilled 10 an hour) and the client address''s (pair:ip:<address>, 30, 30 an '
    'hour) first: empty → PT429 (with the seconds to wait). Returns {paired: true, partner_id}, or {paired: false, '
    'reason}: no_such_code (a wrong or unknown code alike), own_code, already_partners, partner_limit (either user at '
    'the app''s limit). Refusals are answers, not errors, so that the tokens they took stay taken.';

create or replace function public.unpair(p_partner_id uuid)
    returns boolean
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_user uuid;
    v_app uuid;
    v_count integer;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    delete from public.partners as p
    where p.app_id = v_app
      and ((p.user_id = v_user and p.partner_id = p_partner_id) or (p.user_id = p_partner_id and p.partner_id = v_user));
    get diagnostics v_count = row_count;
    return v_count > 0;
end
$$;

comment on function public.unpair(uuid) is
    'Ends the pairing of the caller and p_partner_id, for both; true when there was one.';

create or replace function public.list_partners()
    returns table (partner_id uuid, full_name text, paired_at timestamptz)
    language sql stable security definer set search_path = '' as $$
    select p.partner_id, guestpass.account_name(u.user_metadata ->> 'full_name'), p.created_at
    from public.partners as p
    join public.users as u on u.id = p.partner_id
    where p.user_id = auth.uid() and p.app_id = auth.app_id()
    order by p.created_at, p.partner_id
$$;

comment on function public.list_partners() is
    'The caller''s partners: id, name (when set) and when they paired, oldest first.';

create or replace function guestpass_server.create_account_code(p_kind text, p_code_hash text, p_ttl_seconds integer)
    returns timestamptz
    language plpgsql security definer set search_path = '' as $$
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
    if not guestpass.session_is_live(v_user) then
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

comment on function guestpass_server.create_account_code(text, text, integer) is
    'GuestPass server: stores a new code (its SHA-256, p_code_hash) of kind transfer (expires after p_ttl_seconds, 60 '
    'to 86400) or recovery (no expiry; deletes the user''s previous recovery code) for the caller (claims sub, app_id, '
    'a live session_id). Returns the expiry (null for recovery). 22023 on bad arguments, 42501 without a live session.';

create or replace function guestpass_server.redeem_account_code(
    p_kind text, p_code_hash text, p_secret_hash text, p_device jsonb, p_client_ip text, p_user_agent text,
    p_session_id uuid, p_refresh_token_hash text
) returns table (
    status text, user_id uuid, device_id uuid, is_anonymous boolean, email text, user_metadata jsonb,
    app_metadata jsonb, created_at timestamptz, updated_at timestamptz, last_sign_in_at timestamptz
)
    language plpgsql security definer set search_path = '' as $$
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

-- Row-level security, on and forced for the tables of this area (0009_codes_and_partners.sql): a role, the tables'
-- owner included, sees only the rows a policy gives it; a table with no policy for a role shows it none.
alter table guestpass.share_codes enable row level security, force row level security;
alter table public.partners enable row level security, force row level security;
alter table guestpass.account_codes enable row level security, force row level security;

-- Grants: no function of this file is PUBLIC's; the roles below are the only callers of each.
revoke all on function guestpass.new_share_code(integer, boolean), guestpass.assign_share_code(uuid, uuid, boolean),
    public.get_share_code(), public.rotate_share_code(), auth.partner_ids(), auth.is_partner(uuid),
    public.pair_with_code(text), public.unpair(uuid), public.list_partners(),
    guestpass_server.create_account_code(text, text, integer),
    guestpass_server.redeem_account_code(text, text, text, jsonb, text, text, uuid, text) from public;
grant execute on function public.get_share_code(), public.rotate_share_code(), auth.partner_ids(),
    auth.is_partner(uuid), public.pair_with_code(text), public.unpair(uuid), public.list_partners(),
    guestpass_server.create_account_code(text, text, integer) to authenticated;
grant execute on function guestpass_server.redeem_account_code(text, text, text, jsonb, text, text, uuid, text)
    to anon;
