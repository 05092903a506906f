-- email accounts: a guest adds an address and stays the same user; sign-up, password and one-time-code sign-in,
-- recovery, resend, reauthentication and email change, as Supabase Auth (GoTrue) serves them
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.
--
-- The server does what needs its keys or its CPU: it draws each one-time code (the app's length of digits) and the
-- link token mailed with it, hashes them (the code as HMAC-SHA256 under a server key over app, address and code, so
-- a stolen table cannot be brute-forced offline; the link token as SHA-256), seals both into the mail's payload, and
-- hashes passwords (scrypt) on a bounded pool. Everything else is decided here, in the request's one transaction, so
-- a mail is queued (guestpass.mail_outbox, repeatable/15_mail_outbox.sql) exactly when the code it carries is stored,
-- and a request that rolls back sends nothing.
--
-- * One live code per user and purpose (guestpass.email_codes): a new send replaces the old. A code is single use,
--   expires after the app's email_otp_lifetime_seconds (default an hour) and dies after 5 wrong tries: every wrong
--   guess at an address counts against each live code of that address the guess could have matched. GoTrue has no
--   such cap. The digests are compared with guestpass.digests_equal, whose time does not depend on where they
--   differ.
-- * Which type verifies which purpose (guestpass.email_code_purposes), as GoTrue: signup and invite the sign-up
--   code; magiclink and recovery either of those two; email all three; email_change the change codes.
-- * Mail limits, in PostgreSQL so that every replica shares them: one mail per address per
--   email_send_interval_seconds (default 60; under an advisory lock per address, so concurrent requests cannot both
--   pass), the app's hourly cap (a token bucket, email:app:<app>), and per-client-address buckets for sending
--   (email_send), verifying (email_verify) and password sign-in (password), sized by the server's configuration.
-- * No account enumeration: a sign-up for a confirmed address answers status exists (the server invents a user, as
--   GoTrue), /recover and /resend answer the same for unknown addresses and for throttled ones, and the password
--   lookup is followed by a hash of a dummy when nothing is found (the server's side).
-- * An email is unique per app (public.users_app_email_key), never across apps. Taking an address already held in
--   the app — confirmed or not — is email_exists, and nothing changes: the way on is signing in to that account and
--   merging the guest into it (guestpass_server.merge_guest).
-- * A guest that adds an address keeps its id and every row: confirming the change sets users.email, stops it being
--   anonymous, adds an email identity (subject = the user id, as GoTrue) and email to app_metadata.providers. The
--   session the confirmation opens keeps the device of the session that asked for the change.

-- 1. Small helpers.
create or replace function guestpass.digests_equal(p_a text, p_b text)
    returns boolean
    language plpgsql immutable set search_path = '' as $$
declare
    v_a bytea;
    v_b bytea;
    v_diff integer := 0;
begin
    if p_a is null or p_b is null or octet_length(p_a) <> 64 or octet_length(p_b) <> 64 then
        return false;
    end if;
    v_a := decode(p_a, 'hex');
    v_b := decode(p_b, 'hex');
    for i in 0 .. 31 loop
        v_diff := v_diff | (get_byte(v_a, i) # get_byte(v_b, i));
    end loop;
    return v_diff = 0;
end
$$;

comment on function guestpass.digests_equal(text, text) is
    'GuestPass internal: whether two lowercase hex SHA-256 / HMAC-SHA256 digests are equal, comparing every byte '
    'whatever the first difference (no early exit); false for null or malformed input.';

create or replace function guestpass.email_address(p_email text)
    returns text
    language plpgsql immutable set search_path = '' as $$
declare
    v_address text := lower(btrim(p_email));
begin
    if v_address is null or char_length(v_address) > 255
        or v_address !~ '^[^[:space:][:cntrl:]@<>()\[\],;:"\\]+@[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$' then
        raise exception using errcode = '22023', message = 'the email address is not valid';
    end if;
    return v_address;
end
$$;

comment on function guestpass.email_address(text) is
    'GuestPass internal: p_email trimmed and lower-cased, or 22023 when it is not a plain address of at most 255 '
    'characters (the server checks first and answers validation_failed; this is the last word).';

create or replace function guestpass.email_code_purposes(p_type text)
    returns text[]
    language sql immutable as $$
    select case p_type
        when 'signup' then array['signup']
        when 'invite' then array['signup']
        when 'magiclink' then array['magiclink', 'recovery']
        when 'recovery' then array['recovery', 'magiclink']
        when 'email' then array['signup', 'magiclink', 'recovery']
        when 'email_change' then array['email_change_new', 'email_change_current']
    end
$$;

comment on function guestpass.email_code_purposes(text) is
    'GuestPass internal: the code purposes a /verify type accepts, as GoTrue: signup and invite the sign-up code; '
    'magiclink and recovery either; email all three; email_change the two change codes; null for another type.';

create or replace function guestpass.user_email_state(p_user uuid)
    returns jsonb
    language plpgsql stable as $$
begin
    return coalesce((
        select jsonb_strip_nulls(jsonb_build_object(
            'email_confirmed_at', guestpass.iso_utc_micro(c.email_confirmed_at),
            'confirmed_at', guestpass.iso_utc_micro(c.email_confirmed_at),
            'new_email', c.new_email,
            'confirmation_sent_at', guestpass.iso_utc_micro(c.confirmation_sent_at),
            'recovery_sent_at', guestpass.iso_utc_micro(c.recovery_sent_at),
            'email_change_sent_at', guestpass.iso_utc_micro(c.email_change_sent_at),
            'reauthentication_sent_at', guestpass.iso_utc_micro(c.reauthentication_sent_at)
        ))
        from guestpass.email_credentials as c
        where c.user_id = p_user
    ), '{}'::jsonb);
end
$$;

comment on function guestpass.user_email_state(uuid) is
    'GuestPass internal: the GoTrue user fields of p_user''s email account, as a JSON object of UTC timestamps to the '
    'microsecond, as the server writes every other (absent '
    'when null): email_confirmed_at (= confirmed_at), new_email, confirmation_sent_at, recovery_sent_at, '
    'email_change_sent_at, reauthentication_sent_at. {} for a user without one. plpgsql, so its plan is kept per '
    'connection (a SQL function with a FROM clause is never inlined and was parsed and planned on every call), with '
    'no SET clause: an internal run from SECURITY DEFINER callers that pin search_path.';

create or replace function guestpass_server.user_email_state()
    returns jsonb
    language plpgsql stable security definer set search_path = '' as $$
begin
    return (
        select guestpass.user_email_state(u.id)
        from public.users as u
        where u.id = auth.uid() and u.app_id = auth.app_id()
    );
end
$$;

comment on function guestpass_server.user_email_state() is
    'GuestPass server: guestpass.user_email_state of the caller (claims sub and app_id), pipelined beside '
    'current_user_profile and update_user. plpgsql, so its plan is kept per connection (a SECURITY DEFINER SQL '
    'function is never inlined, and its body was parsed and planned on every call).';

-- Every email function answers this one shape (a row even without a user: its columns are then null).
create or replace function guestpass.email_answer(
    p_status text, p_user uuid, p_device uuid default null, p_wait double precision default null, p_amr text default null,
    p_last_sign_in timestamptz default null, p_redirect_to text default null
)
    returns setof guestpass.email_result
    language sql stable set search_path = '' as $$
    select p_status, p_wait, p_redirect_to, u.id, p_device, u.is_anonymous, u.email, u.user_metadata, u.app_metadata,
           u.created_at, u.updated_at, p_last_sign_in,
           case when u.id is null then null else guestpass.user_identities(u.id) end,
           case when u.id is null then null else guestpass.user_email_state(u.id) end,
           p_amr
    from (select 1) as one
    left join public.users as u on u.id = p_user
$$;

comment on function guestpass.email_answer(text, uuid, uuid, double precision, text, timestamptz, text) is
    'GuestPass internal: the one answer of the email functions: a status, the seconds to wait (rate limits), where a '
    'link leads, and the user as the server shows it (columns null without one), its identities and email state, the '
    'session''s device and authentication method (amr) when one opened.';

create or replace function guestpass.email_redirect(p_app uuid, p_url text)
    returns text
    language sql stable set search_path = '' as $$
    select case
        when p_url is not null and char_length(p_url) <= 2048 and p_url !~ '[[:space:][:cntrl:]]' and exists (
            select 1
            from guestpass.apps as a
            cross join lateral unnest(a.redirect_urls || array[a.site_url]) as r (allowed)
            where a.id = p_app and r.allowed is not null
              and (p_url = r.allowed
                   or (r.allowed like '%*' and left(p_url, char_length(r.allowed) - 1) = left(r.allowed, -1)
                       -- An http(s) prefix must reach into the path: http://localhost:* would let
                       -- http://localhost:@evil.example through (a user name, then another host).
                       and (left(r.allowed, -1) ~* '^https?://[^/]+/' or left(r.allowed, -1) !~* '^https?:')))
        ) then p_url
        else (select a.site_url from guestpass.apps as a where a.id = p_app)
    end
$$;

comment on function guestpass.email_redirect(uuid, text) is
    'GuestPass internal: p_url when the app allows it as a redirect (its site_url, or an entry of redirect_urls: the '
    'same URL, or a prefix ending in *, which for http and https must include the path''s first /, as in '
    'https://app.example/*; a custom scheme such as myapp://* may end anywhere), else the app''s site_url (null when '
    'it has none).';

create or replace function guestpass.email_limit_client(p_kind text, p_burst integer, p_per_second double precision)
    returns void
    language sql volatile set search_path = '' as $$
    select guestpass.enforce_rate_limit(
        p_kind || ':ip:' || guestpass.client_address_key(pg_catalog.current_setting('request.client_ip', true)),
        p_burst, p_per_second
    )
$$;

comment on function guestpass.email_limit_client(text, integer, double precision) is
    'GuestPass internal: takes a token from the client address''s bucket p_kind (email_send, email_verify, password) '
    'of p_burst tokens refilled at p_per_second, or raises PT429 with the seconds to wait (429 over_request_rate_limit).';

create or replace function guestpass.lock_email_address(p_app uuid, p_address text)
    returns void
    language sql volatile set search_path = '' as $$
    select pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('guestpass.email:' || p_app::text || ':' || p_address, 0))
$$;

comment on function guestpass.lock_email_address(uuid, text) is
    'GuestPass internal: the transaction lock of one address of one app: concurrent sign-ups, sends and changes to it '
    'run one at a time (so the one-mail-per-interval rule and the per-app uniqueness are decided on settled rows).';

create or replace function guestpass.mail_wait(p_app uuid, p_address text)
    returns double precision
    language sql stable set search_path = '' as $$
    select greatest(
        coalesce((
            select extract(epoch from max(o.created_at) + make_interval(secs => a.email_send_interval_seconds) - guestpass.clock())
            from guestpass.mail_outbox as o
            where o.app_id = p_app and o.recipient = p_address
              and o.created_at > guestpass.clock() - make_interval(secs => a.email_send_interval_seconds)
        ), 0),
        case when a.email_hourly_limit = 0 then 3600
             else guestpass.peek_rate_limit('email:app:' || p_app::text, a.email_hourly_limit, a.email_hourly_limit / 3600.0)
        end,
        0
    )::double precision
    from guestpass.apps as a
    where a.id = p_app
$$;

comment on function guestpass.mail_wait(uuid, text) is
    'GuestPass internal: 0 when a mail to p_address may be queued now, else the seconds until it may: the app''s '
    'interval since the last mail to that address, and its hourly cap (0 = no mail at all).';

create or replace function guestpass.queue_mail(
    p_app uuid, p_kind text, p_recipient text, p_email text, p_new_email text, p_verify_type text, p_redirect_to text,
    p_payload bytea
)
    returns void
    language plpgsql volatile set search_path = '' as $$
declare
    v_limit integer;
begin
    select a.email_hourly_limit into strict v_limit from guestpass.apps as a where a.id = p_app;
    if v_limit = 0 then
        perform guestpass.raise_rate_limited(3600);
    end if;
    perform guestpass.enforce_rate_limit('email:app:' || p_app::text, v_limit, v_limit / 3600.0);
    if p_payload is null or octet_length(p_payload) not between 29 and 4096 then
        raise exception using errcode = '22023', message = 'a sealed mail payload is required';
    end if;
    insert into guestpass.mail_outbox (app_id, kind, recipient, email, new_email, verify_type, redirect_to, payload, next_attempt_at)
    values (p_app, p_kind, p_recipient, p_email, p_new_email, p_verify_type, left(p_redirect_to, 2048), p_payload, guestpass.clock());
    perform pg_catalog.pg_notify('guestpass_mail', '');
end
$$;

comment on function guestpass.queue_mail(uuid, text, text, text, text, text, text, bytea) is
    'GuestPass internal: queues one mail (kind, recipient, the account''s address and the new one, the /verify type '
    'and redirect of its link, the sealed code and link token) in the caller''s transaction, taking a token from the '
    'app''s hourly bucket (PT429 when empty); notifies guestpass_mail so a sender wakes at once.';

create or replace function guestpass.store_email_code(
    p_app uuid, p_user uuid, p_purpose text, p_address text, p_code_hash text, p_link_hash text, p_challenge text,
    p_method text, p_redirect_to text, p_device uuid, p_password_hash text default null
)
    returns void
    language plpgsql volatile set search_path = '' as $$
declare
    v_now timestamptz := guestpass.clock();
begin
    perform guestpass.require_hex_sha256(p_code_hash, 'the code hash');
    perform guestpass.require_hex_sha256(p_link_hash, 'the link hash');
    insert into guestpass.email_codes as c (
        app_id, user_id, purpose, address, code_hash, link_hash, code_challenge, code_challenge_method, redirect_to,
        device_id, password_hash, created_at, expires_at
    )
    select p_app, p_user, p_purpose, p_address, p_code_hash, p_link_hash, p_challenge, lower(p_method), p_redirect_to,
           p_device, p_password_hash, v_now, v_now + make_interval(secs => a.email_otp_lifetime_seconds)
    from guestpass.apps as a
    where a.id = p_app
    on conflict (user_id, purpose) do update
        set id = gen_random_uuid(), address = excluded.address, code_hash = excluded.code_hash,
            link_hash = excluded.link_hash, code_challenge = excluded.code_challenge,
            code_challenge_method = excluded.code_challenge_method, redirect_to = excluded.redirect_to,
            device_id = excluded.device_id, password_hash = excluded.password_hash, created_at = excluded.created_at,
            expires_at = excluded.expires_at, failed_attempts = 0, used_at = null;
end
$$;

comment on function guestpass.store_email_code(uuid, uuid, text, text, text, text, text, text, text, uuid, text) is
    'GuestPass internal: the live code of p_user for p_purpose, replacing any earlier one (which stops working), '
    'expiring after the app''s email_otp_lifetime_seconds; with a PKCE challenge its link answers an authorization code; '
    'p_password_hash: the password a sign-up came with, the account''s once this code confirms it.';

create or replace function guestpass.add_email_identity(p_app uuid, p_user uuid, p_address text)
    returns void
    language sql volatile set search_path = '' as $$
    insert into guestpass.identities as i (app_id, user_id, provider, subject, email, last_sign_in_at)
    values (p_app, p_user, 'email', p_user::text, p_address, guestpass.clock())
    on conflict (app_id, provider, subject) do update set email = excluded.email, updated_at = guestpass.clock();
    update public.users as u set app_metadata = guestpass.with_provider(u.app_metadata, 'email') where u.id = p_user;
$$;

comment on function guestpass.add_email_identity(uuid, uuid, text) is
    'GuestPass internal: p_user''s email identity (subject = the user id, as GoTrue) carries p_address, and email is '
    'among its providers. A sign-up has it before its address is confirmed, as in GoTrue (identity_data.email_verified '
    'tells).';

create or replace function guestpass.confirm_email(p_app uuid, p_user uuid, p_address text)
    returns void
    language plpgsql volatile set search_path = '' as $$
declare
    v_now timestamptz := guestpass.clock();
begin
    update public.users as u
    set email = p_address,
        is_anonymous = false,
        user_metadata = u.user_metadata || '{"email_verified": true}'::jsonb
    where u.id = p_user and u.app_id = p_app;
    insert into guestpass.email_credentials as c (user_id, app_id, email_confirmed_at)
    values (p_user, p_app, v_now)
    on conflict on constraint email_credentials_pkey do update
        set email_confirmed_at = coalesce(c.email_confirmed_at, v_now), new_email = null;
    perform guestpass.add_email_identity(p_app, p_user, p_address);
end
$$;

comment on function guestpass.confirm_email(uuid, uuid, text) is
    'GuestPass internal: p_address is p_user''s confirmed address: users.email, not anonymous, email among the '
    'providers, user_metadata.email_verified, email_confirmed_at (kept when already set), no pending change, and an '
    'email identity (subject = the user id) carrying the address.';

create or replace function guestpass.open_email_session(
    p_app uuid, p_user uuid, p_device uuid, p_session_id uuid, p_refresh_token_hash text, p_user_agent text
)
    returns void
    language plpgsql volatile set search_path = '' as $$
begin
    if p_session_id is null then
        raise exception using errcode = '22023', message = 'a session id is required';
    end if;
    perform guestpass.require_hex_sha256(p_refresh_token_hash, 'the refresh token hash');
    insert into guestpass.sessions (id, app_id, user_id, device_id, user_agent, ip)
    values (
        p_session_id, p_app, p_user,
        (select d.id from public.devices as d where d.id = p_device and d.user_id = p_user and d.revoked_at is null),
        left(p_user_agent, 1024), left(pg_catalog.current_setting('request.client_ip', true), 255)
    );
    insert into guestpass.refresh_tokens (session_id, counter, token_hash) values (p_session_id, 0, p_refresh_token_hash);
    update guestpass.identities as i set last_sign_in_at = guestpass.clock()
    where i.user_id = p_user and i.provider = 'email';
end
$$;

comment on function guestpass.open_email_session(uuid, uuid, uuid, uuid, text, text) is
    'GuestPass internal: opens session p_session_id of p_user with refresh token 0 (hash p_refresh_token_hash), on '
    'device p_device when it is still a live device of the user, and stamps the email identity''s last sign-in.';

-- 2. The app's settings the server needs before it calls (code length, password rules).
create or replace function guestpass_server.app_email_settings()
    returns table (
        enabled boolean, autoconfirm boolean, otp_length integer, password_min_length integer,
        password_required_characters text[]
    )
    language sql stable security definer set search_path = '' as $$
    select a.email_enabled, a.email_autoconfirm, a.email_otp_length, a.password_min_length, a.password_required_characters
    from guestpass.apps as a
    where a.id = auth.app_id()
$$;

comment on function guestpass_server.app_email_settings() is
    'GuestPass server: the email settings of the caller''s app the server needs before its call (whether email is '
    'offered, autoconfirm, digits per code, password rules); no row without a known app.';

-- 3. Sign-up with an address and a password (POST /auth/v1/signup {email, password}).
create or replace function guestpass_server.email_sign_up(
    p_email text, p_password_hash text, p_data jsonb, p_code_hash text, p_link_hash text, p_payload bytea,
    p_challenge text, p_method text, p_redirect_to text, p_session_id uuid, p_refresh_token_hash text, p_user_agent text,
    p_ip_burst integer, p_ip_per_second double precision
)
    returns setof guestpass.email_result
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_app uuid := guestpass.require_app();
    v_settings guestpass.apps;
    v_address text;
    v_user uuid;
    v_confirmed boolean;
    v_wait double precision;
    v_redirect text;
    v_now timestamptz := guestpass.clock();
begin
    select * into v_settings from guestpass.apps as a where a.id = v_app;
    if not found then
        raise exception using errcode = '42501', message = 'unknown app';
    end if;
    if not v_settings.email_enabled then
        return query select * from guestpass.email_answer('email_provider_disabled', null);
        return;
    end if;
    perform guestpass.email_limit_client('email_send', p_ip_burst, p_ip_per_second);
    v_address := guestpass.email_address(p_email);
    if p_data is null or jsonb_typeof(p_data) <> 'object' or octet_length(p_data::text) > 16384 then
        raise exception using errcode = '22023', message = 'data must be a JSON object of at most 16 KiB';
    end if;
    if p_password_hash is null then
        raise exception using errcode = '22023', message = 'a password hash is required';
    end if;
    v_redirect := guestpass.email_redirect(v_app, p_redirect_to);
    perform guestpass.lock_email_address(v_app, v_address);

    select u.id, (c.email_confirmed_at is not null or c.user_id is null) into v_user, v_confirmed
    from public.users as u
    left join guestpass.email_credentials as c on c.user_id = u.id
    where u.app_id = v_app and lower(u.email) = v_address;
    if found then
        if v_confirmed then
            -- GoTrue: 422 with autoconfirm; otherwise a made-up user and no mail (no enumeration).
            return query select * from guestpass.email_answer(
                case when v_settings.email_autoconfirm then 'user_already_exists' else 'exists' end, null);
            return;
        end if;
        -- Unconfirmed: the confirmation goes again (throttled silently), carrying no password. Two sign-ups of one
        -- address cannot tell whose password is whose (a squatter's first, or a squatter's after the owner's), so the
        -- address confirms without either; the session the confirmation opens sets one. GoTrue keeps the first.
        if guestpass.mail_wait(v_app, v_address) = 0 then
            perform guestpass.store_email_code(v_app, v_user, 'signup', v_address, p_code_hash, p_link_hash, p_challenge,
                p_method, v_redirect, null, null);
            perform guestpass.queue_mail(v_app, 'confirmation', v_address, v_address, null, 'signup', v_redirect, p_payload);
            update guestpass.email_credentials as c set confirmation_sent_at = v_now where c.user_id = v_user;
        end if;
        return query select * from guestpass.email_answer('pending', v_user);
        return;
    end if;

    if v_settings.email_autoconfirm then
        insert into public.users (app_id, email, is_anonymous, user_metadata) values (v_app, v_address, false, p_data)
        returning id into v_user;
        insert into guestpass.email_credentials (user_id, app_id, password_hash, password_changed_at)
        values (v_user, v_app, p_password_hash, v_now);
        perform guestpass.confirm_email(v_app, v_user, v_address);
        perform guestpass.open_email_session(v_app, v_user, null, p_session_id, p_refresh_token_hash, p_user_agent);
        return query select * from guestpass.email_answer('signed_in', v_user, null, null, 'password', v_now);
        return;
    end if;

    v_wait := guestpass.mail_wait(v_app, v_address);
    if v_wait > 0 then
        return query select * from guestpass.email_answer('over_email_send_rate_limit', null, null, v_wait);
        return;
    end if;
    insert into public.users (app_id, email, is_anonymous, user_metadata) values (v_app, v_address, false, p_data)
    returning id into v_user;
    -- The password waits in the code: it becomes the account's when the code confirms the address.
    insert into guestpass.email_credentials (user_id, app_id, confirmation_sent_at) values (v_user, v_app, v_now);
    perform guestpass.add_email_identity(v_app, v_user, v_address);
    perform guestpass.store_email_code(v_app, v_user, 'signup', v_address, p_code_hash, p_link_hash, p_challenge, p_method,
        v_redirect, null, p_password_hash);
    perform guestpass.queue_mail(v_app, 'confirmation', v_address, v_address, null, 'signup', v_redirect, p_payload);
    return query select * from guestpass.email_answer('pending', v_user);
end
$$;

comment on function guestpass_server.email_sign_up(text, text, jsonb, text, text, bytea, text, text, text, uuid, text, text, integer, double precision) is
    'GuestPass server: sign-up with an address and a password (its scrypt string) in the caller''s app. New address: '
    'with autoconfirm a confirmed user and session p_session_id (status signed_in), else an unconfirmed user, its '
    'sign-up code and a confirmation mail (pending; over_email_send_rate_limit with wait_seconds when mail to the '
    'address is throttled). An unconfirmed address: the confirmation again, its password unchanged (pending). A '
    'confirmed one: exists (the server answers a made-up user, as GoTrue), or user_already_exists with autoconfirm. '
    'email_provider_disabled when the app offers no email. Takes the client''s email_send token (PT429).';

-- 4. Codes by mail: /otp, /recover, /resend.
create or replace function guestpass_server.email_send_code(
    p_request text, p_email text, p_create_user boolean, p_data jsonb, p_code_hash text, p_link_hash text, p_payload bytea,
    p_challenge text, p_method text, p_redirect_to text, p_ip_burst integer, p_ip_per_second double precision
)
    returns setof guestpass.email_result
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_app uuid := guestpass.require_app();
    v_enabled boolean;
    v_address text;
    v_user uuid;
    v_confirmed boolean;
    v_current text;
    v_wait double precision;
    v_redirect text;
    v_purpose text;
    v_kind text;
    v_now timestamptz := guestpass.clock();
    v_secure boolean;
begin
    if p_request not in ('otp', 'recover', 'resend_signup', 'resend_email_change') then
        raise exception using errcode = '22023', message = 'unknown code request';
    end if;
    select a.email_enabled, a.email_secure_change into v_enabled, v_secure from guestpass.apps as a where a.id = v_app;
    if not found then
        raise exception using errcode = '42501', message = 'unknown app';
    end if;
    if not v_enabled then
        return query select * from guestpass.email_answer('email_provider_disabled', null);
        return;
    end if;
    perform guestpass.email_limit_client('email_send', p_ip_burst, p_ip_per_second);
    v_address := guestpass.email_address(p_email);
    v_redirect := guestpass.email_redirect(v_app, p_redirect_to);
    perform guestpass.lock_email_address(v_app, v_address);

    if p_request = 'resend_email_change' then
        -- The user whose pending change is to this address (a guest included: GoTrue looks up the current address,
        -- which a guest does not have, and sends nothing).
        select c.user_id, u.email into v_user, v_current
        from guestpass.email_credentials as c
        join public.users as u on u.id = c.user_id
        where c.app_id = v_app and c.new_email = v_address
        order by c.email_change_sent_at desc nulls last
        limit 1;
        if not found then
            return query select * from guestpass.email_answer('silent', null);
            return;
        end if;
        v_wait := guestpass.mail_wait(v_app, v_address);
        if v_wait > 0 then
            return query select * from guestpass.email_answer('over_email_send_rate_limit', null, null, v_wait);
            return;
        end if;
        perform guestpass.store_email_code(v_app, v_user, 'email_change_new', v_address, p_code_hash, p_link_hash,
            p_challenge, p_method, v_redirect,
            (select c.device_id from guestpass.email_codes as c where c.user_id = v_user and c.purpose = 'email_change_new'));
        perform guestpass.queue_mail(v_app, 'email_change', v_address, v_current, v_address, 'email_change', v_redirect, p_payload);
        update guestpass.email_credentials as c set email_change_sent_at = v_now where c.user_id = v_user;
        return query select * from guestpass.email_answer('sent', null);
        return;
    end if;

    select u.id, (c.email_confirmed_at is not null or c.user_id is null) into v_user, v_confirmed
    from public.users as u
    left join guestpass.email_credentials as c on c.user_id = u.id
    where u.app_id = v_app and lower(u.email) = v_address;

    if p_request = 'otp' then
        if v_user is null then
            if not coalesce(p_create_user, true) then
                return query select * from guestpass.email_answer('otp_disabled', null);
                return;
            end if;
            if p_data is not null and (jsonb_typeof(p_data) <> 'object' or octet_length(p_data::text) > 16384) then
                raise exception using errcode = '22023', message = 'data must be a JSON object of at most 16 KiB';
            end if;
        end if;
        v_wait := guestpass.mail_wait(v_app, v_address);
        if v_wait > 0 then
            return query select * from guestpass.email_answer('over_email_send_rate_limit', null, null, v_wait);
            return;
        end if;
        if v_user is null then
            insert into public.users (app_id, email, is_anonymous, user_metadata)
            values (v_app, v_address, false, coalesce(p_data, '{}'::jsonb))
            returning id into v_user;
            insert into guestpass.email_credentials (user_id, app_id) values (v_user, v_app);
            perform guestpass.add_email_identity(v_app, v_user, v_address);
            v_confirmed := false;
        end if;
        -- GoTrue: a new or unconfirmed address gets the sign-up confirmation, a confirmed one the magic link.
        v_purpose := case when v_confirmed then 'magiclink' else 'signup' end;
        v_kind := case when v_confirmed then 'magic_link' else 'confirmation' end;
    elsif p_request = 'recover' then
        if v_user is null or guestpass.mail_wait(v_app, v_address) > 0 then
            -- Unknown and throttled answer alike (GoTrue answers 429 for a known address only).
            return query select * from guestpass.email_answer('silent', null);
            return;
        end if;
        v_purpose := 'recovery';
        v_kind := 'recovery';
    else
        if v_user is null or v_confirmed then
            return query select * from guestpass.email_answer('silent', null);
            return;
        end if;
        v_wait := guestpass.mail_wait(v_app, v_address);
        if v_wait > 0 then
            return query select * from guestpass.email_answer('over_email_send_rate_limit', null, null, v_wait);
            return;
        end if;
        v_purpose := 'signup';
        v_kind := 'confirmation';
    end if;

    -- A resent confirmation keeps the password its sign-up came with; a code asked by /otp (which anyone can ask for an
    -- unconfirmed address) confirms without one.
    perform guestpass.store_email_code(v_app, v_user, v_purpose, v_address, p_code_hash, p_link_hash, p_challenge, p_method,
        v_redirect, null, case when p_request = 'resend_signup' then (
            select e.password_hash from guestpass.email_codes as e where e.user_id = v_user and e.purpose = 'signup'
        ) end);
    perform guestpass.queue_mail(v_app, v_kind, v_address, v_address, null,
        case v_purpose when 'magiclink' then 'magiclink' when 'recovery' then 'recovery' else 'signup' end, v_redirect, p_payload);
    insert into guestpass.email_credentials as c (user_id, app_id) values (v_user, v_app) on conflict on constraint email_credentials_pkey do nothing;
    update guestpass.email_credentials as c
    set confirmation_sent_at = case when v_purpose = 'signup' then v_now else c.confirmation_sent_at end,
        recovery_sent_at = case when v_purpose in ('magiclink', 'recovery') then v_now else c.recovery_sent_at end
    where c.user_id = v_user;
    return query select * from guestpass.email_answer('sent', null);
end
$$;

comment on function guestpass_server.email_send_code(text, text, boolean, jsonb, text, text, bytea, text, text, text, integer, double precision) is
    'GuestPass server: mails a code for p_request: otp (a confirmed address gets a magic link, a new or unconfirmed one '
    'the sign-up confirmation; a new address makes an unconfirmed user unless p_create_user is false: otp_disabled), '
    'recover (a recovery code; unknown or throttled: silent, as a sent one), resend_signup (the confirmation again for '
    'an unconfirmed address, else silent), resend_email_change (the change code again to the address a user is '
    'changing to, a guest''s included, else silent). Status sent, silent, otp_disabled, email_provider_disabled or '
    'over_email_send_rate_limit (wait_seconds). Nothing tells the caller whether an address has an account beyond '
    'what GoTrue tells.';

-- 5. A signed-in user (a guest, most often) asks for a new address: PUT /auth/v1/user {email}.
create or replace function guestpass_server.email_change_request(
    p_email text, p_password_hash text, p_code_hash text, p_link_hash text, p_payload bytea, p_current_code_hash text,
    p_current_link_hash text, p_current_payload bytea, p_challenge text, p_method text, p_redirect_to text,
    p_ip_burst integer, p_ip_per_second double precision
)
    returns setof guestpass.email_result
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_user uuid;
    v_app uuid;
    v_settings guestpass.apps;
    v_address text;
    v_current text;
    v_anonymous boolean;
    v_current_confirmed boolean;
    v_wait double precision;
    v_redirect text;
    v_now timestamptz := guestpass.clock();
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    if not guestpass.session_is_live(v_user) then
        return query select * from guestpass.email_answer('session_not_found', null);
        return;
    end if;
    select * into strict v_settings from guestpass.apps as a where a.id = v_app;
    if not v_settings.email_enabled then
        return query select * from guestpass.email_answer('email_provider_disabled', null);
        return;
    end if;
    perform guestpass.email_limit_client('email_send', p_ip_burst, p_ip_per_second);
    v_address := guestpass.email_address(p_email);
    v_redirect := guestpass.email_redirect(v_app, p_redirect_to);
    select lower(u.email), u.is_anonymous, coalesce(c.email_confirmed_at is not null, u.email is not null)
    into v_current, v_anonymous, v_current_confirmed
    from public.users as u
    left join guestpass.email_credentials as c on c.user_id = u.id
    where u.id = v_user
    for update of u;
    if v_current = v_address then
        return query select * from guestpass.email_answer('unchanged', v_user);
        return;
    end if;
    perform guestpass.lock_email_address(v_app, v_address);
    if exists (select 1 from public.users as o where o.app_id = v_app and lower(o.email) = v_address and o.id <> v_user) then
        return query select * from guestpass.email_answer('email_exists', null);
        return;
    end if;
    -- A guest may set a password together with the address (GoTrue since auth#1739); it works once the address is
    -- confirmed, since a password sign-in looks the account up by its confirmed address.
    if p_password_hash is not null then
        if not v_anonymous then
            raise exception using errcode = '22023', message = 'a password goes with an address for a guest only';
        end if;
        insert into guestpass.email_credentials as c (user_id, app_id, password_hash, password_changed_at)
        values (v_user, v_app, p_password_hash, v_now)
        on conflict on constraint email_credentials_pkey do update set password_hash = excluded.password_hash, password_changed_at = v_now;
    end if;

    if v_anonymous and v_settings.email_autoconfirm then
        perform guestpass.confirm_email(v_app, v_user, v_address);
        return query select * from guestpass.email_answer('confirmed', v_user);
        return;
    end if;

    v_wait := guestpass.mail_wait(v_app, v_address);
    if v_wait = 0 and v_current is not null and v_settings.email_secure_change and v_current_confirmed then
        v_wait := guestpass.mail_wait(v_app, v_current);
    end if;
    if v_wait > 0 then
        return query select * from guestpass.email_answer('over_email_send_rate_limit', null, null, v_wait);
        return;
    end if;
    insert into guestpass.email_credentials as c (user_id, app_id, new_email, email_change_secure, email_change_sent_at)
    values (v_user, v_app, v_address, v_current is not null and v_settings.email_secure_change and v_current_confirmed, v_now)
    on conflict on constraint email_credentials_pkey do update
        set new_email = excluded.new_email, email_change_secure = excluded.email_change_secure, email_change_sent_at = v_now;
    perform guestpass.store_email_code(v_app, v_user, 'email_change_new', v_address, p_code_hash, p_link_hash, p_challenge,
        p_method, v_redirect, auth.device_id());
    perform guestpass.queue_mail(v_app, 'email_change', v_address, v_current, v_address, 'email_change', v_redirect, p_payload);
    delete from guestpass.email_codes as c where c.user_id = v_user and c.purpose = 'email_change_current';
    if v_current is not null and v_settings.email_secure_change and v_current_confirmed then
        if p_current_payload is null then
            raise exception using errcode = '22023', message = 'a secure email change needs a code for the current address';
        end if;
        perform guestpass.store_email_code(v_app, v_user, 'email_change_current', v_current, p_current_code_hash,
            p_current_link_hash, p_challenge, p_method, v_redirect, auth.device_id());
        perform guestpass.queue_mail(v_app, 'email_change', v_current, v_current, v_address, 'email_change', v_redirect,
            p_current_payload);
    end if;
    return query select * from guestpass.email_answer('pending', v_user);
end
$$;

comment on function guestpass_server.email_change_request(text, text, text, text, bytea, text, text, bytea, text, text, text, integer, double precision) is
    'GuestPass server: the caller (a live session) asks to change its address to p_email: status pending (a code to '
    'the new address, and with the app''s secure change also to a confirmed current one), confirmed (a guest with '
    'autoconfirm: done at once, no mail), unchanged (its own address), email_exists (another user of the app holds it: '
    'nothing changes), over_email_send_rate_limit, session_not_found or email_provider_disabled. A guest may set a '
    'password with it (p_password_hash). The codes remember the caller''s device for the session they open.';

-- 6. Verifying a code (POST /verify {email, token, type} or {token_hash, type}) or a link (GET /verify).
create or replace function guestpass_server.email_verify(
    p_type text, p_email text, p_code_hash text, p_link_hash text, p_link boolean, p_redirect_to text, p_session_id uuid,
    p_refresh_token_hash text, p_user_agent text, p_auth_code_hash text, p_ip_burst integer, p_ip_per_second double precision
)
    returns setof guestpass.email_result
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_app uuid := guestpass.require_app();
    v_now timestamptz := guestpass.clock();
    v_purposes text[] := guestpass.email_code_purposes(p_type);
    v_code guestpass.email_codes;
    v_candidate guestpass.email_codes;
    v_address text;
    v_new text;
    v_secure boolean;
    v_redirect text;
    v_amr text;
begin
    if v_purposes is null then
        raise exception using errcode = '22023', message = 'type must be signup, invite, magiclink, recovery, email_change or email';
    end if;
    perform guestpass.email_limit_client('email_verify', p_ip_burst, p_ip_per_second);
    v_redirect := guestpass.email_redirect(v_app, p_redirect_to);

    if p_link_hash is not null then
        perform guestpass.require_hex_sha256(p_link_hash, 'the link hash');
        select * into v_code from guestpass.email_codes as c
        where c.link_hash = p_link_hash and c.app_id = v_app and c.purpose = any (v_purposes)
        for update;
        if not found or v_code.used_at is not null or v_code.expires_at <= v_now or v_code.failed_attempts >= 5 then
            return query select * from guestpass.email_answer('otp_expired', null, null, null, null, null, v_redirect);
            return;
        end if;
    else
        v_address := guestpass.email_address(p_email);
        perform guestpass.require_hex_sha256(p_code_hash, 'the code hash');
        for v_candidate in
            select * from guestpass.email_codes as c
            where c.app_id = v_app and c.address = v_address and c.purpose = any (v_purposes)
              and c.used_at is null and c.expires_at > v_now and c.failed_attempts < 5
            order by c.created_at desc
            for update
        loop
            if v_code.id is null and guestpass.digests_equal(v_candidate.code_hash, p_code_hash) then
                v_code := v_candidate;
            end if;
        end loop;
        if v_code.id is null then
            -- A wrong guess counts against every live code it could have matched; the fifth kills them.
            update guestpass.email_codes as c set failed_attempts = c.failed_attempts + 1
            where c.app_id = v_app and c.address = v_address and c.purpose = any (v_purposes)
              and c.used_at is null and c.expires_at > v_now and c.failed_attempts < 5;
            return query select * from guestpass.email_answer('otp_expired', null);
            return;
        end if;
    end if;

    update guestpass.email_codes as c set used_at = v_now where c.id = v_code.id;
    v_amr := case when not p_link then 'otp' when v_code.purpose like 'email_change%' then 'email_change'
                  when v_code.purpose = 'signup' then 'email/signup' else v_code.purpose end;

    if v_code.purpose in ('email_change_new', 'email_change_current') then
        select c.new_email, c.email_change_secure into v_new, v_secure
        from guestpass.email_credentials as c where c.user_id = v_code.user_id for update;
        if v_new is null or (v_code.purpose = 'email_change_new' and v_new <> v_code.address) then
            return query select * from guestpass.email_answer('otp_expired', null);
            return;
        end if;
        -- A secure change applies once both addresses have used their code; until then the user sees its change
        -- pending. A code that is gone (dead after 5 tries, expired, dropped by a password change) never counts as
        -- used: the change waits for a new request, whatever the other address does.
        if v_secure and (
            select count(*) from guestpass.email_codes as c
            where c.user_id = v_code.user_id and c.purpose in ('email_change_new', 'email_change_current')
              and c.used_at is not null
        ) < 2 then
            return query select * from guestpass.email_answer('partial', v_code.user_id, null, null, null, null, v_redirect);
            return;
        end if;
        perform guestpass.lock_email_address(v_app, v_new);
        if exists (select 1 from public.users as o where o.app_id = v_app and lower(o.email) = v_new and o.id <> v_code.user_id) then
            return query select * from guestpass.email_answer('email_exists', null);
            return;
        end if;
        perform guestpass.confirm_email(v_app, v_code.user_id, v_new);
        update guestpass.email_credentials as c set email_confirmed_at = v_now, email_change_secure = false
        where c.user_id = v_code.user_id;
    else
        -- Sign-up, magic link and recovery codes all prove the address (GoTrue confirms on each). A first confirmation
        -- keeps only the password its own sign-up came with: any other an unconfirmed account held goes.
        if not exists (
            select 1 from guestpass.email_credentials as c where c.user_id = v_code.user_id and c.email_confirmed_at is not null
        ) then
            update guestpass.email_credentials as c
            set password_hash = v_code.password_hash,
                password_changed_at = case when v_code.password_hash is null then c.password_changed_at else v_now end
            where c.user_id = v_code.user_id;
        end if;
        perform guestpass.confirm_email(v_app, v_code.user_id, v_code.address);
    end if;
    -- Single use, and every other code of the user goes with it (GoTrue clears them all).
    delete from guestpass.email_codes as c where c.user_id = v_code.user_id and c.purpose <> 'reauthentication';

    if p_link and v_code.code_challenge is not null then
        perform guestpass.require_hex_sha256(p_auth_code_hash, 'the authorization code hash');
        insert into guestpass.auth_codes (
            code_hash, app_id, user_id, device_id, code_challenge, code_challenge_method, authentication_method, expires_at
        ) values (
            p_auth_code_hash, v_app, v_code.user_id, v_code.device_id, v_code.code_challenge, v_code.code_challenge_method,
            v_amr, v_now + interval '5 minutes'
        );
        return query select * from guestpass.email_answer('pkce', v_code.user_id, null, null, v_amr, null,
            coalesce(v_code.redirect_to, v_redirect));
        return;
    end if;
    perform guestpass.open_email_session(v_app, v_code.user_id, v_code.device_id, p_session_id, p_refresh_token_hash,
        p_user_agent);
    return query select * from guestpass.email_answer('verified', v_code.user_id, v_code.device_id, null, v_amr, v_now,
        case when p_link then coalesce(v_code.redirect_to, v_redirect) else null end);
end
$$;

comment on function guestpass_server.email_verify(text, text, text, text, boolean, text, uuid, text, text, text, integer, double precision) is
    'GuestPass server: verifies a code (p_email and the HMAC of the code) or a link token (its SHA-256, p_link for the '
    'GET link form) of a /verify type. Success uses the code, drops the user''s other codes, confirms the address (an '
    'email change sets it, a guest''s included: same user, no longer anonymous) and opens session p_session_id '
    '(status verified, amr otp, or the link''s kind), or under PKCE records authorization code p_auth_code_hash '
    '(status pkce). A secure change with the other address still to confirm answers partial. Wrong, used, expired or '
    'dead (5 wrong tries) codes answer otp_expired, and a wrong code counts as a try against each live code of the '
    'address; email_exists when the new address was taken meanwhile. redirect_to: where a link leads (allowed by the '
    'app, else its site_url). Takes the client''s email_verify token (PT429).';

-- 7. Password sign-in (POST /token?grant_type=password): the hash for the server to check, then the session.
create or replace function guestpass_server.email_password_lookup(p_email text, p_ip_burst integer, p_ip_per_second double precision)
    returns table (user_id uuid, password_hash text, confirmed boolean, enabled boolean)
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_app uuid := guestpass.require_app();
begin
    perform guestpass.email_limit_client('password', p_ip_burst, p_ip_per_second);
    -- An unconfirmed account's password waits in its sign-up code: checked, it answers email_not_confirmed (GoTrue's
    -- answer once the password is right), and it never signs in.
    return query
    select u.id,
           coalesce(c.password_hash, (
               select e.password_hash from guestpass.email_codes as e
               where e.user_id = u.id and e.purpose = 'signup' and c.email_confirmed_at is null
           )),
           c.email_confirmed_at is not null, a.email_enabled
    from guestpass.apps as a
    left join public.users as u on u.app_id = a.id and lower(u.email) = guestpass.email_address(p_email)
    left join guestpass.email_credentials as c on c.user_id = u.id
    where a.id = v_app;
end
$$;

comment on function guestpass_server.email_password_lookup(text, integer, double precision) is
    'GuestPass server: for a password sign-in in the caller''s app: the user holding p_email, its password hash and '
    'whether the address is confirmed (nulls when there is none; the server then hashes a dummy, so both take the '
    'same time), and whether the app offers email. Takes the client''s password token (PT429).';

create or replace function guestpass_server.email_password_sign_in(
    p_user uuid, p_checked_hash text, p_rehash text, p_session_id uuid, p_refresh_token_hash text, p_user_agent text
)
    returns setof guestpass.email_result
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_app uuid := guestpass.require_app();
    v_now timestamptz := guestpass.clock();
begin
    -- The hash the server checked must still be the user's (a password changed meanwhile refuses the old one).
    perform 1 from guestpass.email_credentials as c
    where c.user_id = p_user and c.app_id = v_app and c.password_hash = p_checked_hash and c.email_confirmed_at is not null
    for update;
    if not found then
        return query select * from guestpass.email_answer('invalid_credentials', null);
        return;
    end if;
    if p_rehash is not null then
        update guestpass.email_credentials as c set password_hash = p_rehash where c.user_id = p_user;
    end if;
    perform guestpass.open_email_session(v_app, p_user, null, p_session_id, p_refresh_token_hash, p_user_agent);
    return query select * from guestpass.email_answer('signed_in', p_user, null, null, 'password', v_now);
end
$$;

comment on function guestpass_server.email_password_sign_in(uuid, text, text, uuid, text, text) is
    'GuestPass server: opens session p_session_id for p_user after the server checked its password against '
    'p_checked_hash, provided that is still the user''s hash and its address is confirmed (else invalid_credentials); '
    'p_rehash replaces a hash made with older parameters or imported from bcrypt. Status signed_in, amr password.';

-- 8. Password change (PUT /user {password, nonce?}) and reauthentication (GET /reauthenticate).
create or replace function guestpass_server.email_password_state()
    returns table (session_active boolean, has_address boolean, is_anonymous boolean, password_hash text)
    language sql stable security definer set search_path = '' as $$
    select guestpass.session_is_live(u.id), u.email is not null, u.is_anonymous, c.password_hash
    from public.users as u
    left join guestpass.email_credentials as c on c.user_id = u.id
    where u.id = auth.uid() and u.app_id = auth.app_id()
$$;

comment on function guestpass_server.email_password_state() is
    'GuestPass server: what a password change of the caller depends on: a live session, an address, a guest or not, '
    'and the current hash (for same_password).';

create or replace function guestpass_server.email_set_password(p_password_hash text, p_nonce_hash text)
    returns setof guestpass.email_result
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_user uuid;
    v_app uuid;
    v_session uuid := auth.claim_uuid('session_id');
    v_now timestamptz := guestpass.clock();
    v_session_created timestamptz;
    v_required boolean;
    v_address text;
    v_nonce guestpass.email_codes;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    select s.created_at into v_session_created from guestpass.sessions as s
    where s.id = v_session and s.user_id = v_user and s.revoked_at is null;
    if not found then
        return query select * from guestpass.email_answer('session_not_found', null);
        return;
    end if;
    select lower(u.email) into v_address from public.users as u where u.id = v_user for update;
    if v_address is null then
        return query select * from guestpass.email_answer('no_address', null);
        return;
    end if;
    if p_password_hash is null then
        raise exception using errcode = '22023', message = 'a password hash is required';
    end if;
    select a.email_reauthenticate_password into v_required from guestpass.apps as a where a.id = v_app;
    if p_nonce_hash is not null or (v_required and v_session_created < v_now - interval '24 hours') then
        if p_nonce_hash is null then
            return query select * from guestpass.email_answer('reauthentication_needed', null);
            return;
        end if;
        select * into v_nonce from guestpass.email_codes as c
        where c.user_id = v_user and c.purpose = 'reauthentication' and c.used_at is null and c.expires_at > v_now
          and c.failed_attempts < 5
        for update;
        if not found or not guestpass.digests_equal(v_nonce.code_hash, p_nonce_hash) then
            update guestpass.email_codes as c set failed_attempts = c.failed_attempts + 1
            where c.user_id = v_user and c.purpose = 'reauthentication';
            return query select * from guestpass.email_answer('reauthentication_not_valid', null);
            return;
        end if;
    end if;
    insert into guestpass.email_credentials as c (user_id, app_id, password_hash, password_changed_at)
    values (v_user, v_app, p_password_hash, v_now)
    on conflict on constraint email_credentials_pkey do update set password_hash = excluded.password_hash, password_changed_at = v_now;
    -- Every pending code goes, and every other session ends (GoTrue).
    delete from guestpass.email_codes as c where c.user_id = v_user;
    with ended as (
        update guestpass.sessions as s set revoked_at = v_now
        where s.user_id = v_user and s.id <> v_session and s.revoked_at is null
        returning s.id
    )
    update guestpass.refresh_tokens as t set revoked_at = v_now
    where t.session_id in (select e.id from ended as e) and t.revoked_at is null;
    return query select * from guestpass.email_answer('updated', v_user);
end
$$;

comment on function guestpass_server.email_set_password(text, text) is
    'GuestPass server: sets the caller''s password (its scrypt string): status updated (every pending code dropped, '
    'every other session of the user ended), no_address (a guest without an address: 422), session_not_found, '
    'reauthentication_needed (the app asks for a nonce and the session is over 24 hours old) or '
    'reauthentication_not_valid (a nonce was given that is not the live reauthentication code).';

create or replace function guestpass_server.email_reauthenticate(
    p_code_hash text, p_link_hash text, p_payload bytea, p_ip_burst integer, p_ip_per_second double precision
)
    returns setof guestpass.email_result
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_user uuid;
    v_app uuid;
    v_address text;
    v_confirmed boolean;
    v_wait double precision;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    if not guestpass.session_is_live(v_user) then
        return query select * from guestpass.email_answer('session_not_found', null);
        return;
    end if;
    perform guestpass.email_limit_client('email_send', p_ip_burst, p_ip_per_second);
    select lower(u.email), c.email_confirmed_at is not null into v_address, v_confirmed
    from public.users as u
    left join guestpass.email_credentials as c on c.user_id = u.id
    where u.id = v_user;
    if v_address is null then
        return query select * from guestpass.email_answer('no_address', null);
        return;
    end if;
    if not v_confirmed then
        return query select * from guestpass.email_answer('email_not_confirmed', null);
        return;
    end if;
    perform guestpass.lock_email_address(v_app, v_address);
    v_wait := guestpass.mail_wait(v_app, v_address);
    if v_wait > 0 then
        return query select * from guestpass.email_answer('over_email_send_rate_limit', null, null, v_wait);
        return;
    end if;
    perform guestpass.store_email_code(v_app, v_user, 'reauthentication', v_address, p_code_hash, p_link_hash, null, null,
        null, null);
    perform guestpass.queue_mail(v_app, 'reauthentication', v_address, v_address, null, null, null, p_payload);
    update guestpass.email_credentials as c set reauthentication_sent_at = guestpass.clock() where c.user_id = v_user;
    return query select * from guestpass.email_answer('sent', null);
end
$$;

comment on function guestpass_server.email_reauthenticate(text, text, bytea, integer, double precision) is
    'GuestPass server: mails the caller a reauthentication code (the nonce of a password change) to its confirmed '
    'address: status sent, no_address, email_not_confirmed, session_not_found or over_email_send_rate_limit.';

-- 9. PKCE: POST /token?grant_type=pkce {auth_code, code_verifier}.
create or replace function guestpass_server.exchange_auth_code(
    p_code_hash text, p_verifier text, p_verifier_s256 text, p_session_id uuid, p_refresh_token_hash text, p_user_agent text
)
    returns setof guestpass.email_result
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_app uuid := guestpass.require_app();
    v_now timestamptz := guestpass.clock();
    v_code guestpass.auth_codes;
    v_matches boolean;
begin
    perform guestpass.require_hex_sha256(p_code_hash, 'the authorization code hash');
    select * into v_code from guestpass.auth_codes as c where c.code_hash = p_code_hash and c.app_id = v_app for update;
    if not found or v_code.used_at is not null or v_code.expires_at <= v_now then
        return query select * from guestpass.email_answer('flow_state_not_found', null);
        return;
    end if;
    update guestpass.auth_codes as c set used_at = v_now where c.code_hash = p_code_hash;
    v_matches := (v_code.code_challenge_method = 's256' and v_code.code_challenge = p_verifier_s256)
        or (v_code.code_challenge_method = 'plain' and v_code.code_challenge = p_verifier);
    if not coalesce(v_matches, false) then
        return query select * from guestpass.email_answer('bad_code_verifier', null);
        return;
    end if;
    perform guestpass.open_email_session(v_app, v_code.user_id, v_code.device_id, p_session_id, p_refresh_token_hash,
        p_user_agent);
    return query select * from guestpass.email_answer('signed_in', v_code.user_id, v_code.device_id, null,
        v_code.authentication_method, v_now);
end
$$;

comment on function guestpass_server.exchange_auth_code(text, text, text, uuid, text, text) is
    'GuestPass server: trades a PKCE authorization code (its SHA-256) and the verifier (as sent, and its base64url '
    'SHA-256) for session p_session_id: status signed_in, flow_state_not_found (unknown, used or over five minutes '
    'old) or bad_code_verifier (the code is spent either way: one try).';

-- Row-level security, on and forced for the tables of this area (0011_email.sql): a role, the tables' owner
-- included, sees only the rows a policy gives it; a table with no policy for a role shows it none.
alter table guestpass.email_credentials enable row level security, force row level security;
alter table guestpass.email_codes enable row level security, force row level security;
alter table guestpass.auth_codes enable row level security, force row level security;

-- Grants: no function of this file is PUBLIC's; the roles below are the only callers of each.
revoke all on function guestpass.digests_equal(text, text), guestpass.email_address(text),
    guestpass.email_code_purposes(text), guestpass.user_email_state(uuid),
    guestpass_server.user_email_state(),
    guestpass.email_answer(text, uuid, uuid, double precision, text, timestamptz, text), guestpass.email_redirect(uuid, text),
    guestpass.email_limit_client(text, integer, double precision), guestpass.lock_email_address(uuid, text),
    guestpass.mail_wait(uuid, text), guestpass.queue_mail(uuid, text, text, text, text, text, text, bytea),
    guestpass.store_email_code(uuid, uuid, text, text, text, text, text, text, text, uuid, text),
    guestpass.add_email_identity(uuid, uuid, text), guestpass.confirm_email(uuid, uuid, text), guestpass.open_email_session(uuid, uuid, uuid, uuid, text, text),
    guestpass_server.app_email_settings(),
    guestpass_server.email_sign_up(text, text, jsonb, text, text, bytea, text, text, text, uuid, text, text, integer, double precision),
    guestpass_server.email_send_code(text, text, boolean, jsonb, text, text, bytea, text, text, text, integer, double precision),
    guestpass_server.email_change_request(text, text, text, text, bytea, text, text, bytea, text, text, text, integer, double precision),
    guestpass_server.email_verify(text, text, text, text, boolean, text, uuid, text, text, text, integer, double precision),
    guestpass_server.email_password_lookup(text, integer, double precision),
    guestpass_server.email_password_sign_in(uuid, text, text, uuid, text, text),
    guestpass_server.email_password_state(), guestpass_server.email_set_password(text, text),
    guestpass_server.email_reauthenticate(text, text, bytea, integer, double precision),
    guestpass_server.exchange_auth_code(text, text, text, uuid, text, text)
    from public;
grant execute on function guestpass_server.app_email_settings(),
    guestpass_server.email_sign_up(text, text, jsonb, text, text, bytea, text, text, text, uuid, text, text, integer, double precision),
    guestpass_server.email_send_code(text, text, boolean, jsonb, text, text, bytea, text, text, text, integer, double precision),
    guestpass_server.email_verify(text, text, text, text, boolean, text, uuid, text, text, text, integer, double precision),
    guestpass_server.email_password_lookup(text, integer, double precision),
    guestpass_server.email_password_sign_in(uuid, text, text, uuid, text, text),
    guestpass_server.exchange_auth_code(text, text, text, uuid, text, text)
    to anon;
grant execute on function guestpass_server.user_email_state(),
    guestpass_server.email_change_request(text, text, text, text, bytea, text, text, bytea, text, text, text, integer, double precision),
    guestpass_server.email_password_state(), guestpass_server.email_set_password(text, text),
    guestpass_server.email_reauthenticate(text, text, bytea, integer, double precision)
    to authenticated;
