-- limit guest creation over RPC like sign-up: create_guest_user took neither the per-IP nor the per-app bucket
-- public.create_guest_user is the documents' RPC and stays callable with the publishable key, but an unlimited
-- get-or-create let anyone with that key mint guests without end. Now a call that would create a guest takes the same
-- two buckets as POST /auth/v1/signup (signup:ip:<client>, signup:app:<app>) before any write; a call for a device
-- that exists takes nothing (it creates nothing), and service_role (the app's backend) is not limited. The client
-- address comes from the request framing (the server sets the transaction-local request.client_ip next to the role
-- and claims); the limits come from the session settings guestpass.signup_* that the server sets when it connects
-- (from GUESTPASS_SIGNUP_* and GUESTPASS_APP_SIGNUP_*), with the documented defaults when they are unset (psql,
-- pgbench). Only version 4 (random) uuids are accepted as device ids, as on sign-up.
--
-- Buckets per client: an IPv6 client owns a whole /64 (one customer's network), so the per-IP bucket of an IPv6
-- address is its /64 (guestpass.client_address_key); sign_up_guest is redefined to use it, and to raise through the
-- one helper, guestpass.raise_rate_limited. Its behaviour is otherwise unchanged.

create or replace function guestpass.raise_rate_limited(p_wait_seconds double precision)
returns void
language plpgsql
stable
set search_path = ''
as $$
begin
    if p_wait_seconds > 0 then
        raise exception using errcode = 'PT429', message = 'rate limit exceeded',
            detail = least(ceil(p_wait_seconds), 2147483647)::bigint::text;
    end if;
end
$$;

comment on function guestpass.raise_rate_limited(double precision) is
    'GuestPass internal: raises PT429 ''rate limit exceeded'' with the whole seconds to wait (rounded up) as detail '
    'when p_wait_seconds > 0, as take_rate_limit and peek_rate_limit answer; does nothing otherwise. The server '
    'turns it into HTTP 429 with Retry-After.';

create or replace function guestpass.enforce_rate_limit(
    p_bucket text,
    p_capacity integer,
    p_refill_per_second double precision
)
returns void
language sql
volatile
set search_path = ''
as $$
    select guestpass.raise_rate_limited(guestpass.take_rate_limit(p_bucket, p_capacity, p_refill_per_second))
$$;

comment on function guestpass.enforce_rate_limit(text, integer, double precision) is
    'GuestPass internal: takes one token from p_bucket (take_rate_limit) or raises PT429 with the seconds to wait '
    '(raise_rate_limited) and takes nothing.';

create or replace function guestpass.client_address_key(p_address text)
returns text
language plpgsql
immutable
set search_path = ''
as $$
declare
    v_address inet;
begin
    if p_address is null or btrim(p_address) = '' then
        return 'unknown';
    end if;
    begin
        v_address := btrim(p_address)::inet;
    exception when invalid_text_representation then
        return left(p_address, 255);
    end;
    if family(v_address) = 6 then
        -- An IPv4-mapped address (::ffff:a.b.c.d) is that IPv4 client.
        if v_address << '::ffff:0:0/96'::inet then
            return host(('0.0.0.0'::inet + (v_address - '::ffff:0:0'::inet)));
        end if;
        return network(set_masklen(v_address, 64))::text;
    end if;
    return host(v_address);
end
$$;

comment on function guestpass.client_address_key(text) is
    'GuestPass internal: the rate-limit identity of a client address: an IPv4 address as itself, an IPv6 address as '
    'its /64 network (one customer''s LAN), an IPv4-mapped IPv6 address as its IPv4 address, a blank one as '
    '''unknown'', and text that is no address as itself (at most 255 characters).';

create or replace function guestpass.take_signup_limits(p_app uuid, p_client_address text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
    v_ip_burst integer := coalesce(nullif(current_setting('guestpass.signup_ip_burst', true), '')::integer, 30);
    v_ip_per_hour double precision :=
        coalesce(nullif(current_setting('guestpass.signup_ip_rate_per_hour', true), '')::double precision, 30);
    v_app_burst integer := coalesce(nullif(current_setting('guestpass.signup_app_burst', true), '')::integer, 1000);
    v_app_per_hour double precision :=
        coalesce(nullif(current_setting('guestpass.signup_app_rate_per_hour', true), '')::double precision, 10000);
begin
    perform guestpass.enforce_rate_limit(
        'signup:ip:' || guestpass.client_address_key(p_client_address), v_ip_burst, v_ip_per_hour / 3600
    );
    perform guestpass.enforce_rate_limit('signup:app:' || p_app::text, v_app_burst, v_app_per_hour / 3600);
end
$$;

comment on function guestpass.take_signup_limits(uuid, text) is
    'GuestPass internal: takes one token from the sign-up buckets of client p_client_address (signup:ip:<'
    'client_address_key>) and of app p_app (signup:app:<app>), or raises PT429 with the seconds to wait. Capacity '
    'and hourly rate come from the session settings guestpass.signup_ip_burst, guestpass.signup_ip_rate_per_hour, '
    'guestpass.signup_app_burst and guestpass.signup_app_rate_per_hour (the server sets them at connect time from its '
    'configuration), defaulting to 30, 30, 1000 and 10000.';

create or replace function public.create_guest_user(p_device_id uuid)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_app uuid := auth.app_id();
    v_hash text;
    v_user uuid;
begin
    if v_app is null then
        raise exception using errcode = '42501', message = 'no app in the request claims';
    end if;
    if p_device_id is null then
        raise exception using errcode = '22023', message = 'p_device_id is required';
    end if;
    -- uuid text is lowercase 8-4-4-4-12: the version is character 15, the variant character 20.
    if substr(p_device_id::text, 15, 1) <> '4' or substr(p_device_id::text, 20, 1) not in ('8', '9', 'a', 'b') then
        raise exception using errcode = '22023', message = 'p_device_id must be a random (version 4) uuid';
    end if;
    v_hash := encode(sha256(convert_to(p_device_id::text, 'UTF8')), 'hex');

    -- A known device creates nothing: no token is taken.
    select d.user_id into v_user from public.devices as d where d.app_id = v_app and d.secret_hash = v_hash;
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
    '(encode(sha256(convert_to(lower(p_device_id::text), ''UTF8'')), ''hex'')). Returns only the user id. '
    'Raises 42501 without an app claim, 22023 without a device id or for one that is not version 4.';

create or replace function guestpass_server.sign_up_guest(
    p_secret_hash text,
    p_device jsonb,
    p_user_metadata jsonb,
    p_client_ip text,
    p_ip_capacity integer,
    p_ip_refill_per_second double precision,
    p_app_capacity integer,
    p_app_refill_per_second double precision,
    p_user_agent text,
    p_session_id uuid,
    p_refresh_token_hash text
)
returns table (
    user_id uuid,
    device_id uuid,
    session_id uuid,
    is_anonymous boolean,
    email text,
    user_metadata jsonb,
    app_metadata jsonb,
    created_at timestamptz,
    updated_at timestamptz,
    last_sign_in_at timestamptz,
    created boolean
)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_app uuid := auth.app_id();
    v_key text;
    v_user uuid;
    v_device uuid;
    v_created boolean;
begin
    if v_app is null then
        raise exception using errcode = '42501', message = 'no app in the request claims';
    end if;
    if not exists (select 1 from guestpass.apps as a where a.id = v_app) then
        raise exception using errcode = '42501', message = 'unknown app';
    end if;

    -- Arguments (all checked before any token is taken).
    if p_session_id is null then
        raise exception using errcode = '22023', message = 'a session id is required';
    end if;
    if p_refresh_token_hash is null or p_refresh_token_hash !~ '^[0-9a-f]{64}$' then
        raise exception using errcode = '22023', message = 'the refresh token hash must be a lowercase hex SHA-256';
    end if;
    if p_secret_hash is not null and p_secret_hash !~ '^[0-9a-f]{64}$' then
        raise exception using errcode = '22023', message = 'the device secret hash must be a lowercase hex SHA-256';
    end if;
    if p_user_metadata is not null and jsonb_typeof(p_user_metadata) <> 'object' then
        raise exception using errcode = '22023', message = 'user metadata must be a JSON object';
    end if;
    if p_device is not null and jsonb_typeof(p_device) <> 'object' then
        raise exception using errcode = '22023', message = 'device facts must be a JSON object';
    end if;
    foreach v_key in array array['model', 'os_version', 'app_version', 'build_number'] loop
        if jsonb_typeof(p_device -> v_key) not in ('string', 'null') then
            raise exception using errcode = '22023', message = format('device.%s must be a string', v_key);
        end if;
        if char_length(p_device ->> v_key) > 255 then
            raise exception using errcode = '22023', message = format('device.%s is longer than 255 characters', v_key);
        end if;
    end loop;
    if jsonb_typeof(p_device -> 'is_simulator') not in ('boolean', 'null') then
        raise exception using errcode = '22023', message = 'device.is_simulator must be a boolean';
    end if;
    if p_ip_capacity is not null and (p_client_ip is null or p_client_ip = '') then
        raise exception using errcode = '22023', message = 'a client IP is required for the per-IP limit';
    end if;
    if char_length(p_client_ip) > 255 then
        raise exception using errcode = '22023', message = 'the client IP is longer than 255 characters';
    end if;

    -- Rate limits, before any write. The per-IP bucket is taken now. The per-app bucket, shared by every sign-up
    -- of the app, is only peeked at now (an empty bucket refuses before any write) and taken at the very end, so
    -- its row stays locked for the commit only instead of the whole sign-up. A null capacity turns a limit off.
    if p_ip_capacity is not null then
        perform guestpass.enforce_rate_limit(
            'signup:ip:' || guestpass.client_address_key(p_client_ip), p_ip_capacity, p_ip_refill_per_second
        );
    end if;
    if p_app_capacity is not null then
        perform guestpass.raise_rate_limited(
            guestpass.peek_rate_limit('signup:app:' || v_app::text, p_app_capacity, p_app_refill_per_second)
        );
    end if;

    -- The user, with or without a device.
    if p_secret_hash is null then
        insert into public.users (app_id, is_anonymous, user_metadata)
        values (v_app, true, coalesce(p_user_metadata, '{}'::jsonb))
        returning id into v_user;
        v_created := true;
    else
        select e.user_id, e.device_id, e.created
        into v_user, v_device, v_created
        from guestpass.ensure_guest_device(v_app, p_secret_hash, p_user_metadata) as e;

        -- Device facts: only the keys given with a non-null value.
        if p_device ?| array['model', 'os_version', 'app_version', 'build_number', 'is_simulator'] then
            update public.devices as d
            set model = coalesce(p_device ->> 'model', d.model),
                os_version = coalesce(p_device ->> 'os_version', d.os_version),
                app_version = coalesce(p_device ->> 'app_version', d.app_version),
                build_number = coalesce(p_device ->> 'build_number', d.build_number),
                is_simulator = coalesce((p_device ->> 'is_simulator')::boolean, d.is_simulator),
                last_seen_at = now()
            where d.id = v_device;
        end if;
    end if;

    insert into guestpass.sessions (id, app_id, user_id, device_id, user_agent, ip)
    values (p_session_id, v_app, v_user, v_device, left(p_user_agent, 1024), p_client_ip);
    insert into guestpass.refresh_tokens (session_id, counter, token_hash)
    values (p_session_id, 0, p_refresh_token_hash);

    if p_app_capacity is not null then
        perform guestpass.enforce_rate_limit('signup:app:' || v_app::text, p_app_capacity, p_app_refill_per_second);
    end if;

    return query
    select u.id, v_device, p_session_id, u.is_anonymous, u.email, u.user_metadata, u.app_metadata,
           u.created_at, u.updated_at, now(), v_created
    from public.users as u
    where u.id = v_user;
end
$$;

comment on function guestpass_server.sign_up_guest(
    text, jsonb, jsonb, text, integer, double precision, integer, double precision, text, uuid, text
) is
    'GuestPass server: anonymous sign-up in the caller''s app (claim app_id), in one call. Rate limits before any '
    'write: buckets signup:ip:<guestpass.client_address_key(p_client_ip)> and signup:app:<app> (a null capacity '
    'turns one off; the app bucket is checked first and taken last, to keep its row locked briefly); when one is empty raises PT429 ''rate limit '
    'exceeded'' with the seconds to wait (integer, rounded up) as detail, and nothing is written or taken. Without '
    'p_secret_hash creates a new anonymous user (user_metadata = p_user_metadata); with it (the lowercase hex SHA-256 '
    'of the device secret, see public.create_guest_user) returns the device''s user, creating user and device if new '
    '(an existing user''s metadata is kept). Records the device facts present in p_device (model, os_version, '
    'app_version, build_number: strings; is_simulator: boolean; JSON null = not given; ignored without a device). '
    'Creates session p_session_id (chosen by the server) and its refresh token counter 0 with hash '
    'p_refresh_token_hash. Returns the user, the public device id (null without a device), the session, '
    'last_sign_in_at = now() and created (a new user). Raises 42501 without a known app, 22023 on invalid arguments.';

revoke execute on function
    guestpass.raise_rate_limited(double precision),
    guestpass.enforce_rate_limit(text, integer, double precision),
    guestpass.client_address_key(text),
    guestpass.take_signup_limits(uuid, text)
    from public;
