-- identities and accounts: Sign in with Apple, merging a guest, the profile and account set-up, roles, deletion
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.
--
-- Notes carried from the change log before the re-baseline (NNNN names one of its files, in git history):
--
-- Sign in with Apple: per-app audiences, the users' linked identities, sign-in with an Apple id, linking it to a guest
-- A guest could never become an account. The server now verifies an Apple identity token (RS256 against Apple's keys,
-- issuer, the app's audiences, expiry, nonce) and calls one function here with what the token proved: the provider
-- and its subject (Apple's stable user id), and the email Apple shared.
--
-- * guestpass.apps gains apple_audiences (the bundle ids / Services ids whose tokens the app accepts; none = Sign in
--   with Apple is off) and apple_base_url (Apple's host, or the local stand-in; null = https://appleid.apple.com).
-- * guestpass.identities: one row per (app, provider, subject), tied to one user of that app. Internal like the
--   sessions: row-level security forced with no policies, no grants; only SECURITY DEFINER functions touch it.
-- * guestpass_server.sign_in_with_identity signs in the app's user with that identity, creating the user on first
--   sign-in; with p_link it links the identity to the signed-in caller (a guest keeps its id and every row, and
--   stops being anonymous), ends the caller's session and opens a new one. An identity already linked to another user
--   of the app is refused ('identity_already_exists') and nothing changes.
-- * guestpass.user_identities renders a user's identities as GoTrue's identity objects; current_user_profile returns
--   them, so GET /auth/v1/user lists them.
--
-- merge a guest into an account: the case GoTrue leaves to every app, after linking Apple answered identity_already_exists
-- A guest who signs in with an Apple id that already has an account (made on another phone, or before a reinstall)
-- cannot link it: the app signs in to that account and asks for the guest to be merged into it, proving possession of
-- the guest with the guest's refresh token. guestpass_server.merge_guest does it in one transaction:
--
-- * every row of the exposed schemas (and public, where the devices live) whose foreign key references the guest's
--   public.users.id is moved to the account, found from the catalog, so app tables need no code;
-- * the guest's credits move through the ledger (a merge_out row for the guest, a merge_in row for the account, so
--   the account's balance equals its ledger sum); each day's usage adds up; the welcome-grant mark is kept if either
--   had it;
-- * an app may define public.guestpass_on_merge(p_from uuid, p_to uuid) for what the generic move cannot do; it runs
--   after the move;
-- * the guest is deleted, and with it its sessions and refresh tokens (its devices, moved, now sign in to the
--   account). A unique-key conflict anywhere rolls everything back (the server answers 409).
--
-- Both users are locked in id order before anything moves, so concurrent merges of one guest run one at a time and
-- every one after the first finds the guest gone.
--
-- the name asked once, the profile through PUT /auth/v1/user, account setup, and roles (the Apple sign-in app's document)
-- Apple gives an app the user's name on the first sign-in only; the app sends it right after, as supabase clients do
-- with updateUser(data:). A name must never be lost to a later empty one, and an account without a real name (hidden
-- by the user, whitespace, the placeholder "User") must be asked for one once: needs_account_setup. Setup assigns the
-- app's default role once, however often or concurrently it runs. Both are server-owned, in app_metadata (so in the
-- access token's claims, where policies read them through auth.has_role).
--
-- * guestpass.account_name(text): the name as stored (trimmed), or null for empty, whitespace-only or "User".
-- * users_mark_account_setup (BEFORE INSERT OR UPDATE, only for accounts, not guests): app_metadata.needs_account_setup
--   = no stored name. One home for the flag: sign-in, linking, the profile and setup all just write the user.
-- * guestpass_server.update_user(p_data): PUT /auth/v1/user's data: the name (full_name, or given_name + family_name),
--   timezone (validated by the users trigger; quota days follow it from the next local day), language,
--   onboarding_completed, notification_enabled, avatar_url; every other key merged into user_metadata as GoTrue does.
-- * guestpass.user_roles + apps.default_role; public.complete_account_setup(p_full_name); auth.has_role(text).
--
-- account deletion (App Store guideline 5.1.1(v)) and keeping what revoking Sign in with Apple needs
-- An app that offers Sign in with Apple must let the user delete the account in the app and must revoke the user's
-- Apple tokens then. Revoking needs Apple's refresh token, which the server gets by exchanging the authorization code
-- the app sends at sign-in, with a client secret signed by the app's Sign in with Apple key.
--
-- * guestpass.apps gains apple_team_id, apple_key_id, apple_key_path (the .p8 key, read by the server), for the code
--   exchange and the revocation; app_apple_settings returns them.
-- * guestpass.identities gains apple_client_id (the audience the user signed in with: the client_id Apple expects)
--   and apple_refresh_token, Apple's refresh token sealed by the server (AES-256-GCM under a key derived from its
--   signing key, bound to the app and subject): the database alone never holds it in the clear.
-- * guestpass_server.store_apple_refresh_token keeps one after a sign-in.
-- * guestpass_server.delete_account deletes the caller: the rows of public and the exposed schemas that reference the
--   user without ON DELETE CASCADE first (found from the catalog), then the user, with everything that cascades
--   (sessions, refresh tokens, devices, identities, ledger, usage, roles). It returns the sealed Apple tokens so that
--   the server revokes them after the commit. Deleted means gone: the same Apple id or device later is a new user.
--
-- one home for "which rows reference a user": guestpass.user_references, used by the merge and the deletion
-- merge_guest (0031) and delete_account (0033) each found the columns that reference public.users(id) with the same
-- catalog query. It is now one function, which the stale-guest prune will use too, and both call it. Their behaviour
-- is unchanged.
--
-- the needs_account_setup trigger fires only when what it reads changed, not on every update of an account
-- 0032's users_mark_account_setup ran its PL/pgSQL function on every insert or update of a non-anonymous user: a
-- credit consume, a welcome grant, a premium or time-zone change each paid for a call that found nothing to do. As in
-- 0024, the check is now two triggers whose WHEN clause (evaluated without calling the function) lets it run only for
-- a new account, an account that was a guest until now, or a change of user_metadata (the name) or app_metadata (the
-- flag itself, were it replaced wholesale). What the flag says is unchanged.
--
-- account deletion needs a live session: an access token whose session ended (logout, a revoked device) cannot delete
-- An access token outlives its session by up to its lifetime (an hour by default): after a logout or a device
-- revocation it still verifies. Every other signed-in call that changes the account (transfer and recovery codes,
-- the profile, the welcome grant) already checks the claims' session in the database; delete_account did not, so a
-- token copied before a logout could still erase the account. It now raises 42501 'the session has ended' unless the
-- claims' session_id is a live session of the caller, as guestpass_server.create_account_code does (0036). A deletion
-- retried after it succeeded meets the same answer: the session went with the user. Body otherwise as in 0034.

create or replace function guestpass.user_identities(p_user uuid)
    returns jsonb
    language plpgsql stable as $$
begin
    return (
    select coalesce(
        jsonb_agg(
            jsonb_build_object(
                'identity_id', i.id, 'id', i.subject, 'user_id', i.user_id, 'provider', i.provider,
                'email', coalesce(i.email, ''),
                'identity_data', jsonb_build_object(
                    'sub', i.subject, 'email', i.email, 'is_private_email', i.is_private_email, 'provider_id', i.subject,
                    'email_verified', case when i.provider = 'email' then exists (
                        select 1 from guestpass.email_credentials as c
                        where c.user_id = i.user_id and c.email_confirmed_at is not null
                    ) else i.email is not null end,
                    'phone_verified', false
                ),
                'created_at', guestpass.iso_utc_micro(i.created_at),
                'updated_at', guestpass.iso_utc_micro(i.updated_at),
                'last_sign_in_at', guestpass.iso_utc_micro(i.last_sign_in_at)
            )
            order by i.created_at, i.id
        ),
        '[]'::jsonb
    )
    from guestpass.identities as i
    where i.user_id = p_user
    );
end
$$;

comment on function guestpass.user_identities(uuid) is
    'GuestPass internal: the identities of user p_user as a JSON array of GoTrue identity objects (identity_id, id = '
    'the provider''s subject, user_id, provider, email, identity_data, created_at, updated_at, last_sign_in_at: UTC with '
    'T and Z to the microsecond, as supabase-swift reads them), oldest first; [] for none. plpgsql, so its plan is '
    'kept per connection (a SQL function with a FROM clause is never inlined and was parsed and planned on every '
    'call), with no SET clause: an internal run from SECURITY DEFINER callers that pin search_path.';

create or replace function guestpass_server.app_apple_settings()
    returns table (audiences text[], base_url text, team_id text, key_id text, key_path text)
    language sql stable security definer set search_path = '' as $$
    select a.apple_audiences, a.apple_base_url, a.apple_team_id, a.apple_key_id, a.apple_key_path
    from guestpass.apps as a
    where a.id = auth.app_id()
$$;

comment on function guestpass_server.app_apple_settings() is
    'GuestPass server: the Sign in with Apple settings of the caller''s app (claim app_id): accepted audiences, Apple''s '
    'base URL (null = Apple''s own), team id, key id and .p8 key path (null = no code exchange or revocation); no row '
    'without a known app.';

create or replace function guestpass.with_provider(p_app_metadata jsonb, p_provider text)
    returns jsonb
    language sql immutable as $$
    select p_app_metadata || pg_catalog.jsonb_build_object(
        'provider', coalesce(p_app_metadata ->> 'provider', p_provider),
        'providers', (
            select coalesce(pg_catalog.jsonb_agg(distinct p.value order by p.value), '[]'::jsonb)
            from pg_catalog.jsonb_array_elements_text(
                case when pg_catalog.jsonb_typeof(p_app_metadata -> 'providers') = 'array' then p_app_metadata -> 'providers'
                     else '[]'::jsonb end || pg_catalog.to_jsonb(p_provider)
            ) as p (value)
        )
    )
$$;

comment on function guestpass.with_provider(jsonb, text) is
    'GuestPass internal: app_metadata with p_provider added as GoTrue shows providers: provider (the first one) and '
    'providers (every one, sorted, once each).';

-- 3. Sign-in and linking.
create or replace function guestpass_server.sign_in_with_identity(
    p_provider text, p_subject text, p_email text, p_is_private_email boolean, p_link boolean, p_user_agent text,
    p_client_ip text, p_session_id uuid, p_refresh_token_hash text
) returns table (
    status text, user_id uuid, device_id uuid, is_anonymous boolean, email text, user_metadata jsonb,
    app_metadata jsonb, created_at timestamptz, updated_at timestamptz, last_sign_in_at timestamptz,
    identities jsonb
)
    language plpgsql security definer set search_path = '' as $$
declare
    v_app uuid := guestpass.require_app();
    v_now timestamptz := guestpass.clock();
    v_user uuid;
    v_owner uuid;
    v_device uuid;
    v_session uuid;
    v_status text;
begin
    if p_provider is null or p_provider <> 'apple' then
        raise exception using errcode = '22023', message = 'the provider must be apple';
    end if;
    if p_subject is null or char_length(p_subject) not between 1 and 255 then
        raise exception using errcode = '22023', message = 'the subject must be 1 to 255 characters';
    end if;
    if char_length(p_email) > 320 then
        raise exception using errcode = '22023', message = 'the email is longer than 320 characters';
    end if;
    if p_session_id is null then
        raise exception using errcode = '22023', message = 'a session id is required';
    end if;
    perform guestpass.require_hex_sha256(p_refresh_token_hash, 'the refresh token hash');
    if not exists (select 1 from guestpass.apps as a where a.id = v_app) then
        raise exception using errcode = '42501', message = 'unknown app';
    end if;

    -- One identity at a time: a concurrent first sign-in or link of the same Apple id waits here, then finds it.
    perform pg_advisory_xact_lock(hashtextextended('guestpass.identity:' || v_app::text || ':' || p_provider || ':' || p_subject, 0));
    select i.user_id into v_owner
    from guestpass.identities as i
    where i.app_id = v_app and i.provider = p_provider and i.subject = p_subject;

    if p_link then
        -- The caller: a signed-in user of this app whose session is live.
        select s.user_id, s.device_id, s.id into v_user, v_device, v_session
        from guestpass.sessions as s
        where s.id = auth.claim_uuid('session_id') and s.user_id = auth.uid() and s.app_id = v_app and s.revoked_at is null
        for update;
        if not found then
            return query select 'session_not_found'::text, null::uuid, null::uuid, null::boolean, null::text, null::jsonb,
                null::jsonb, null::timestamptz, null::timestamptz, null::timestamptz, null::jsonb;
            return;
        end if;
        if v_owner is not null and v_owner <> v_user then
            return query select 'identity_already_exists'::text, null::uuid, null::uuid, null::boolean, null::text,
                null::jsonb, null::jsonb, null::timestamptz, null::timestamptz, null::timestamptz, null::jsonb;
            return;
        end if;
        -- The old session ends with its refresh tokens; the new one keeps its device.
        update guestpass.sessions as s set revoked_at = v_now where s.id = v_session;
        update guestpass.refresh_tokens as t set revoked_at = v_now where t.session_id = v_session and t.revoked_at is null;
        v_status := 'linked';
    elsif v_owner is not null then
        v_user := v_owner;
        v_status := 'signed_in';
    elsif p_email is not null and (select a.email_link_apple from guestpass.apps as a where a.id = v_app) and exists (
        select 1
        from public.users as o
        join guestpass.email_credentials as c on c.user_id = o.id and c.email_confirmed_at is not null
        where o.app_id = v_app and lower(o.email) = lower(p_email)
    ) then
        -- The app links a first Apple sign-in to the account whose confirmed address Apple's verified email is
        -- (apps.email_link_apple, off by default; an unconfirmed address never links).
        select o.id into v_user
        from public.users as o
        where o.app_id = v_app and lower(o.email) = lower(p_email);
        v_status := 'signed_in';
    else
        insert into public.users (app_id, is_anonymous) values (v_app, false) returning id into v_user;
        v_status := 'created';
    end if;

    insert into guestpass.identities as i (app_id, user_id, provider, subject, email, is_private_email, last_sign_in_at)
    values (v_app, v_user, p_provider, p_subject, p_email, coalesce(p_is_private_email, false), v_now)
    on conflict (app_id, provider, subject) do update
        set email = coalesce(excluded.email, i.email),
            is_private_email = case when excluded.email is null then i.is_private_email else excluded.is_private_email end,
            updated_at = v_now,
            last_sign_in_at = v_now;

    -- The user: no longer anonymous; the provider in app_metadata (as GoTrue shows it); the email when the user has
    -- none and no other user of the app has it.
    update public.users as u
    set is_anonymous = false,
        app_metadata = guestpass.with_provider(u.app_metadata, p_provider),
        email = case
            when u.email is null and p_email is not null and not exists (
                select 1 from public.users as o where o.app_id = v_app and lower(o.email) = lower(p_email) and o.id <> u.id
            ) then p_email
            else u.email
        end
    where u.id = v_user and u.app_id = v_app;

    insert into guestpass.sessions (id, app_id, user_id, device_id, user_agent, ip)
    values (p_session_id, v_app, v_user, v_device, left(p_user_agent, 1024), left(p_client_ip, 255));
    insert into guestpass.refresh_tokens (session_id, counter, token_hash) values (p_session_id, 0, p_refresh_token_hash);

    return query
    select v_status, u.id, v_device, u.is_anonymous, u.email, u.user_metadata, u.app_metadata, u.created_at,
           u.updated_at, v_now, guestpass.user_identities(u.id)
    from public.users as u
    where u.id = v_user;
end
$$;

comment on function guestpass_server.sign_in_with_identity(text, text, text, boolean, boolean, text, text, uuid, text) is
    'GuestPass server: sign-in with a verified identity (provider apple, subject = the token''s sub, the email it '
    'shared) in the caller''s app (claim app_id); the server has checked the token. Without p_link: the identity''s '
    'user (status signed_in), or with the app''s email_link_apple the account whose confirmed address is that email '
    '(signed_in), or a new non-anonymous user with it (created). With p_link, for a signed-in caller '
    '(claims sub and session_id, the session live): links the identity to the caller (status linked; already linked '
    'to the caller is fine), ends the caller''s session and its refresh tokens, and the new session keeps its device; '
    'status identity_already_exists when another user has it, session_not_found when the caller''s session is gone, '
    'and nothing changes. Either way the user is no longer anonymous, app_metadata gets provider / providers, the '
    'email is stored when the user has none and no other user of the app has it, and session p_session_id opens with '
    'refresh token counter 0 (hash p_refresh_token_hash). Concurrent calls for one identity run one at a time. '
    'Raises 22023 on invalid arguments, 42501 without a known app.';

create or replace function guestpass_server.store_apple_refresh_token(p_subject text, p_client_id text, p_sealed bytea)
    returns boolean
    language sql security definer set search_path = '' as $$
    update guestpass.identities as i
    set apple_client_id = p_client_id, apple_refresh_token = p_sealed, updated_at = guestpass.clock()
    where i.app_id = auth.app_id() and i.provider = 'apple' and i.subject = p_subject
    returning true
$$;

comment on function guestpass_server.store_apple_refresh_token(text, text, bytea) is
    'GuestPass server: keeps Apple''s refresh token (sealed by the server) and the client id for the Apple identity '
    'p_subject of the caller''s app (claim app_id), after a sign-in in the same transaction. Returns true, or no row when '
    'there is no such identity.';

create or replace function auth.has_role(p_role text)
    returns boolean
    language sql stable as $$
    select coalesce((auth.jwt() -> 'app_metadata' -> 'roles') ? p_role, false)
$$;

comment on function auth.has_role(text) is
    'Whether the request''s access token lists p_role in app_metadata.roles (public.complete_account_setup assigns '
    'them). Reads the claims only: inlinable into policies.';

-- 1. The name rule and the flag.
create or replace function guestpass.account_name(p_name text)
    returns text
    language sql immutable as $$
    select case when btrim(p_name) = '' or lower(btrim(p_name)) = 'user' then null else btrim(p_name) end
$$;

comment on function guestpass.account_name(text) is
    'GuestPass internal: p_name trimmed of spaces, or null when that is empty or the placeholder User (any case). A '
    'partial name (Alex) is a name.';

create or replace function guestpass.mark_account_setup()
    returns trigger
    language plpgsql set search_path = '' as $$
begin
    new.app_metadata := new.app_metadata || jsonb_build_object(
        'needs_account_setup', guestpass.account_name(new.user_metadata ->> 'full_name') is null
    );
    return new;
end
$$;

comment on function guestpass.mark_account_setup() is
    'GuestPass: trigger function of users_mark_new_account_setup (a new account) and users_mark_account_setup (an '
    'account whose user_metadata or app_metadata changed, or a guest becoming an account): sets '
    'app_metadata.needs_account_setup to whether the account has no name (guestpass.account_name of '
    'user_metadata.full_name is null).';

create or replace trigger users_mark_new_account_setup
    before insert on public.users
    for each row
    when (not new.is_anonymous)
    execute function guestpass.mark_account_setup();

create or replace trigger users_mark_account_setup
    before update on public.users
    for each row
    when (
        not new.is_anonymous
        and (old.is_anonymous
             or new.user_metadata is distinct from old.user_metadata
             or new.app_metadata is distinct from old.app_metadata)
    )
    execute function guestpass.mark_account_setup();

create or replace function guestpass_server.current_user_profile()
    returns table (
        user_id uuid, email text, is_anonymous boolean, user_metadata jsonb, app_metadata jsonb,
        created_at timestamptz, updated_at timestamptz, session_active boolean, identities jsonb
    )
    language plpgsql stable security definer set search_path = '' as $$
begin
    return query
    select u.id, u.email, u.is_anonymous, u.user_metadata, u.app_metadata, u.created_at, u.updated_at,
           guestpass.session_is_live(u.id),
           guestpass.user_identities(u.id)
    from public.users as u
    where u.id = auth.uid() and u.app_id = auth.app_id();
end
$$;

comment on function guestpass_server.current_user_profile() is
    'GuestPass server: the caller''s user row (claims sub and app_id), or no row, with session_active = whether the '
    'claims'' session_id is a session of that user that is not revoked, and identities (guestpass.user_identities). '
    'plpgsql, so its plan is kept per connection: a SECURITY DEFINER SQL function is never inlined, and its body was '
    'parsed and planned on every call (GET /auth/v1/user).';

create or replace function guestpass_server.update_user(p_data jsonb)
    returns table (
        user_id uuid, email text, is_anonymous boolean, user_metadata jsonb, app_metadata jsonb,
        created_at timestamptz, updated_at timestamptz, session_active boolean, identities jsonb
    )
    language plpgsql security definer set search_path = '' as $$
declare
    v_user uuid;
    v_app uuid;
    v_key text;
    v_name text;
    v_given text;
    v_family text;
    v_metadata jsonb;
    v_columns constant text[] := array['timezone', 'language', 'onboarding_completed', 'notification_enabled'];
    v_name_keys constant text[] := array['full_name', 'given_name', 'family_name'];
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    -- A signed-out session changes nothing (no row: the server answers session_not_found).
    if not guestpass.session_is_live(v_user) then
        return;
    end if;
    if p_data is null or jsonb_typeof(p_data) <> 'object' then
        raise exception using errcode = '22023', message = 'data must be a JSON object';
    end if;
    if octet_length(p_data::text) > 16384 then
        raise exception using errcode = '22023', message = 'data is larger than 16 KiB';
    end if;
    foreach v_key in array v_name_keys || array['timezone', 'language', 'avatar_url'] loop
        if jsonb_typeof(p_data -> v_key) not in ('string', 'null') then
            raise exception using errcode = '22023', message = format('%s must be a string', v_key);
        end if;
    end loop;
    foreach v_key in array v_name_keys loop
        if char_length(btrim(p_data ->> v_key)) > 200 then
            raise exception using errcode = '22023', message = format('%s is longer than 200 characters', v_key);
        end if;
        if p_data ->> v_key ~ '[[:cntrl:]]' then
            raise exception using errcode = '22023', message = format('%s must not contain control characters', v_key);
        end if;
    end loop;
    foreach v_key in array array['onboarding_completed', 'notification_enabled'] loop
        if jsonb_typeof(p_data -> v_key) not in ('boolean', 'null') then
            raise exception using errcode = '22023', message = format('%s must be a boolean', v_key);
        end if;
    end loop;
    if char_length(p_data ->> 'language') > 35 or p_data ->> 'language' !~ '^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$' then
        raise exception using errcode = '22023', message = 'language must be a language tag such as en or pt-BR';
    end if;
    if char_length(p_data ->> 'avatar_url') > 2048 or p_data ->> 'avatar_url' !~ '^https://[^[:space:]]+$' then
        raise exception using errcode = '22023', message = 'avatar_url must be an https URL of at most 2048 characters';
    end if;

    -- The name: full_name, else given_name + family_name. An empty or placeholder name never replaces a stored one.
    v_given := guestpass.account_name(p_data ->> 'given_name');
    v_family := guestpass.account_name(p_data ->> 'family_name');
    v_name := coalesce(guestpass.account_name(p_data ->> 'full_name'), guestpass.account_name(concat_ws(' ', v_given, v_family)));
    v_metadata := p_data - v_name_keys - v_columns;
    if v_name is not null then
        v_metadata := v_metadata || jsonb_strip_nulls(jsonb_build_object(
            'full_name', v_name, 'given_name', v_given, 'family_name', v_family
        ));
    end if;
    -- The columns' keys are echoed in user_metadata, which is what the user object shows.
    v_metadata := v_metadata || jsonb_strip_nulls(jsonb_build_object(
        'timezone', p_data -> 'timezone', 'language', p_data -> 'language',
        'onboarding_completed', p_data -> 'onboarding_completed', 'notification_enabled', p_data -> 'notification_enabled'
    ));

    update public.users as u
    set user_metadata = u.user_metadata || v_metadata,
        timezone = coalesce(p_data ->> 'timezone', u.timezone),
        language = coalesce(p_data ->> 'language', u.language),
        onboarding_completed = coalesce((p_data ->> 'onboarding_completed')::boolean, u.onboarding_completed),
        notification_enabled = coalesce((p_data ->> 'notification_enabled')::boolean, u.notification_enabled)
    where u.id = v_user and u.app_id = v_app;
    if octet_length((select u.user_metadata::text from public.users as u where u.id = v_user)) > 16384 then
        raise exception using errcode = '22023', message = 'user metadata would be larger than 16 KiB';
    end if;

    return query select * from guestpass_server.current_user_profile();
end
$$;

comment on function guestpass_server.update_user(jsonb) is
    'GuestPass server: PUT /auth/v1/user''s data for the caller (claims sub and app_id). The name: full_name, else '
    'given_name + family_name, trimmed (guestpass.account_name); empty, whitespace-only or User never replaces a stored '
    'name; at most 200 characters, no control characters. timezone (IANA, checked by the users trigger), language (a '
    'language tag), onboarding_completed and notification_enabled (booleans) set their columns and are echoed in '
    'user_metadata; avatar_url (https) and every other key are merged into user_metadata (at most 16 KiB). Returns '
    'guestpass_server.current_user_profile(), or no row (and no change) when the claims'' session is not live. Raises 22023 on invalid values, 42501 without a user.';

create or replace function public.complete_account_setup(p_full_name text)
    returns jsonb
    language plpgsql security definer set search_path = '' as $$
declare
    v_user uuid;
    v_app uuid;
    v_name text := guestpass.account_name(p_full_name);
    v_role text;
    v_roles jsonb;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    if v_name is null then
        raise exception using errcode = '22023', message = 'a full name is required (not empty, not User)';
    end if;
    if char_length(v_name) > 200 or v_name ~ '[[:cntrl:]]' then
        raise exception using errcode = '22023', message = 'the full name must be at most 200 characters, without control characters';
    end if;
    -- The user's lock: concurrent setups run one at a time.
    perform 1 from public.users as u where u.id = v_user and u.app_id = v_app for no key update;

    select a.default_role into v_role from guestpass.apps as a where a.id = v_app;
    if v_role is not null then
        insert into guestpass.user_roles (user_id, app_id, role) values (v_user, v_app, v_role) on conflict do nothing;
    end if;
    select coalesce(jsonb_agg(r.role order by r.role), '[]'::jsonb) into v_roles
    from guestpass.user_roles as r where r.user_id = v_user;

    update public.users as u
    set user_metadata = u.user_metadata || jsonb_build_object('full_name', v_name),
        app_metadata = u.app_metadata || jsonb_build_object('roles', v_roles)
    where u.id = v_user;

    return jsonb_build_object('full_name', v_name, 'roles', v_roles, 'needs_account_setup', false);
end
$$;

comment on function public.complete_account_setup(text) is
    'Account setup for the caller: stores p_full_name (trimmed; 22023 when empty, whitespace or User, longer than 200 '
    'characters or with control characters), which clears needs_account_setup, and assigns the app''s default role '
    'once (guestpass.apps.default_role; running it twice or concurrently leaves one role row). Returns {full_name, '
    'roles, needs_account_setup}. The access token carries the new app_metadata from the next refresh.';

create or replace function guestpass.user_references(p_schemas text[])
    returns table (schema_name name, table_name name, column_name name, on_delete "char")
    language sql stable as $$
    select n.nspname, c.relname, a.attname, k.confdeltype
    from pg_catalog.pg_constraint as k
    join pg_catalog.pg_class as c on c.oid = k.conrelid
    join pg_catalog.pg_namespace as n on n.oid = c.relnamespace
    cross join lateral unnest(k.conkey, k.confkey) as m (local_attnum, referenced_attnum)
    join pg_catalog.pg_attribute as a on a.attrelid = k.conrelid and a.attnum = m.local_attnum
    join pg_catalog.pg_attribute as r on r.attrelid = k.confrelid and r.attnum = m.referenced_attnum
    where k.contype = 'f'
      and k.confrelid = 'public.users'::regclass
      and r.attname = 'id'
      and n.nspname = any (coalesce(p_schemas, '{}') || array['public', 'storage']::name[])
      and n.nspname not in ('guestpass', 'guestpass_server', 'auth')
    order by n.nspname, c.relname, a.attname
$$;

comment on function guestpass.user_references(text[]) is
    'GuestPass internal: every column of public, storage and the schemas p_schemas (never guestpass, guestpass_server or auth) '
    'whose foreign key references public.users(id), with the key''s ON DELETE action (pg_constraint.confdeltype: c '
    'cascade, n set null, d set default, a no action, r restrict); the rows an account''s merge moves and its deletion '
    'removes.';

-- 4. A merge ends the guest's sessions before it moves the guest's devices.
create or replace function guestpass_server.merge_guest(p_session_id uuid, p_token_hash text, p_schemas text[])
    returns table (status text, guest_id uuid, credits_moved integer, credits_balance integer, rows_moved jsonb)
    language plpgsql security definer set search_path = '' as $$
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

comment on function guestpass_server.merge_guest(uuid, text, text[]) is
    'GuestPass server: merges a guest into the caller''s account (claims sub and app_id). The guest is proven by its '
    'refresh token: p_token_hash (lowercase hex SHA-256) of a live token of live session p_session_id in the caller''s '
    'app. Moves every row referencing the guest''s public.users.id in public and p_schemas (from the catalog) to the '
    'caller, the credits through the ledger (merge_out / merge_in, idempotency key merge:<guest>), each day''s usage '
    '(added), the welcome-grant mark; runs public.guestpass_on_merge(p_from, p_to) when the app defines it; deletes the '
    'guest with its sessions. Returns status merged with the guest id, the credits moved, the account''s balance and '
    'the rows moved per table; or refresh_token_not_found (unknown, revoked, another app''s, or already merged), '
    'same_user, not_a_guest (the token''s user is not anonymous), changing nothing. A unique-key conflict raises 23505 '
    'and rolls everything back. Both users are locked in id order first: concurrent merges of one guest run one at a time.';

create or replace function guestpass.delete_user_rows(p_user uuid, p_schemas text[])
    returns table (apple_subject text, apple_client_id text, apple_refresh_token bytea)
    language plpgsql volatile set search_path = '' as $$
declare
    v_fk record;
begin
    return query
    select i.subject, i.apple_client_id, i.apple_refresh_token
    from guestpass.identities as i
    where i.user_id = p_user and i.provider = 'apple' and i.apple_refresh_token is not null;

    -- Rows that would block the delete (a foreign key without ON DELETE CASCADE / SET NULL) go first.
    for v_fk in
        select r.schema_name, r.table_name, r.column_name
        from guestpass.user_references(p_schemas) as r
        where r.on_delete not in ('c', 'n', 'd')
    loop
        execute format('delete from %I.%I where %I = $1', v_fk.schema_name, v_fk.table_name, v_fk.column_name)
            using p_user;
    end loop;

    delete from public.users as u where u.id = p_user;
end
$$;

comment on function guestpass.delete_user_rows(uuid, text[]) is
    'GuestPass internal: deletes user p_user (locked by the caller) and every row that references it: rows of public '
    'and p_schemas whose foreign key to public.users does not cascade first (from the catalog), then the user with '
    'everything that cascades. Returns the user''s sealed Apple refresh tokens with their client ids. The one deletion '
    'path of an account: the user''s own (guestpass_server.delete_account) and an operator''s '
    '(guestpass_console.delete_user).';

create or replace function guestpass_server.delete_account(p_schemas text[])
    returns table (apple_subject text, apple_client_id text, apple_refresh_token bytea)
    language plpgsql security definer set search_path = '' as $$
declare
    v_user uuid;
    v_app uuid;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    perform 1 from public.users as u where u.id = v_user and u.app_id = v_app for update;
    if not found or not guestpass.session_is_live(v_user) then
        raise exception using errcode = '42501', message = 'the session has ended';
    end if;
    return query select * from guestpass.delete_user_rows(v_user, p_schemas);
end
$$;

comment on function guestpass_server.delete_account(text[]) is
    'GuestPass server: deletes the caller (claims sub and app_id) and every row that references it: rows of public and '
    'p_schemas whose foreign key to public.users does not cascade are deleted first (from the catalog), then the user '
    'with everything that cascades (sessions, refresh tokens, devices, identities, ledger, usage, roles). Returns the '
    'user''s sealed Apple refresh tokens with their client ids, for the server to revoke after the commit. Raises 42501 '
    'unless the claims'' session_id is a live session of the caller (a logged-out or revoked token, or a user already '
    'deleted).';

-- Row-level security, on and forced for the tables of this area (0008_identities_and_accounts.sql): a role, the
-- tables' owner included, sees only the rows a policy gives it; a table with no policy for a role shows it none.
alter table guestpass.identities enable row level security, force row level security;
alter table guestpass.user_roles enable row level security, force row level security;

-- Grants: no function of this file is PUBLIC's; the roles below are the only callers of each.
revoke all on function guestpass.user_identities(uuid), guestpass.with_provider(jsonb, text), guestpass_server.app_apple_settings(),
    guestpass_server.sign_in_with_identity(text, text, text, boolean, boolean, text, text, uuid, text),
    guestpass_server.store_apple_refresh_token(text, text, bytea), auth.has_role(text), guestpass.account_name(text),
    guestpass.mark_account_setup(), guestpass_server.current_user_profile(), guestpass_server.update_user(jsonb),
    public.complete_account_setup(text), guestpass.user_references(text[]),
    guestpass_server.merge_guest(uuid, text, text[]), guestpass_server.delete_account(text[]),
    guestpass.delete_user_rows(uuid, text[]) from public;
grant execute on function guestpass_server.app_apple_settings() to anon;
grant execute on function
    guestpass_server.sign_in_with_identity(text, text, text, boolean, boolean, text, text, uuid, text),
    guestpass_server.store_apple_refresh_token(text, text, bytea) to anon, authenticated;
grant execute on function auth.has_role(text) to anon, authenticated, service_role;
grant execute on function guestpass_server.current_user_profile(), guestpass_server.update_user(jsonb),
    public.complete_account_setup(text), guestpass_server.merge_guest(uuid, text, text[]),
    guestpass_server.delete_account(text[]) to authenticated;
