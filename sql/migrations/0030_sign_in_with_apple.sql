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

-- 1. The app's settings.

alter table guestpass.apps
    add column apple_audiences text[] not null default '{}',
    add column apple_base_url text,
    add constraint apps_apple_audiences_check check (
        cardinality(apple_audiences) <= 20
        and array_position(apple_audiences, null) is null
        and array_to_string(apple_audiences, '') !~ '\s'
    ),
    add constraint apps_apple_base_url_check check (apple_base_url ~ '^https?://[^\s/]+(:[0-9]+)?(/[^\s]*)?$');

comment on column guestpass.apps.apple_audiences is
    'Sign in with Apple: the audiences (app bundle ids, Services ids) an identity token may name; empty = off.';
comment on column guestpass.apps.apple_base_url is
    'Sign in with Apple: the base URL of Apple''s endpoints (/auth/keys), e.g. a local stand-in; null = '
    'https://appleid.apple.com.';

create function guestpass_server.app_apple_settings()
    returns table (audiences text[], base_url text)
    language sql
    stable
    security definer
    set search_path = ''
    as $$
    select a.apple_audiences, a.apple_base_url from guestpass.apps as a where a.id = auth.app_id()
$$;

revoke all on function guestpass_server.app_apple_settings() from public;
grant execute on function guestpass_server.app_apple_settings() to anon, authenticated;

comment on function guestpass_server.app_apple_settings() is
    'GuestPass server: the Sign in with Apple settings of the caller''s app (claim app_id): accepted audiences and '
    'Apple''s base URL (null = Apple''s own); no row without a known app.';

-- 2. The identities.

create table guestpass.identities (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null,
    user_id uuid not null,
    provider text not null,
    subject text not null,
    email text,
    is_private_email boolean not null default false,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    last_sign_in_at timestamptz not null default now(),
    constraint identities_pkey primary key (id),
    constraint identities_app_provider_subject_key unique (app_id, provider, subject),
    constraint identities_user_id_fkey foreign key (user_id, app_id)
        references public.users (id, app_id) on delete cascade,
    constraint identities_provider_check check (provider in ('apple')),
    constraint identities_subject_check check (char_length(subject) between 1 and 255),
    constraint identities_email_check check (char_length(email) <= 320)
);

comment on table guestpass.identities is
    'GuestPass: a sign-in identity of a user (provider apple: subject = Apple''s user id, the token''s sub), unique '
    'per app, provider and subject. email and is_private_email are what the provider last shared (an Apple relay '
    'address is private). Deleting the user deletes its identities, so a later sign-in with the same Apple id is a '
    'new user.';

create index identities_user_id_idx on guestpass.identities (user_id);

alter table guestpass.identities enable row level security;
alter table guestpass.identities force row level security;
revoke all on table guestpass.identities from public;

create function guestpass.user_identities(p_user uuid)
    returns jsonb
    language sql
    stable
    as $$
    select coalesce(
        jsonb_agg(
            jsonb_build_object(
                'identity_id', i.id, 'id', i.subject, 'user_id', i.user_id, 'provider', i.provider,
                'email', coalesce(i.email, ''),
                'identity_data', jsonb_build_object(
                    'sub', i.subject, 'email', i.email, 'is_private_email', i.is_private_email, 'provider_id', i.subject
                ),
                'created_at', i.created_at, 'updated_at', i.updated_at, 'last_sign_in_at', i.last_sign_in_at
            )
            order by i.created_at, i.id
        ),
        '[]'::jsonb
    )
    from guestpass.identities as i
    where i.user_id = p_user
$$;

revoke all on function guestpass.user_identities(uuid) from public;

comment on function guestpass.user_identities(uuid) is
    'GuestPass internal: the identities of user p_user as a JSON array of GoTrue identity objects (identity_id, id = '
    'the provider''s subject, user_id, provider, email, identity_data, created_at, updated_at, last_sign_in_at), '
    'oldest first; [] for none.';

-- 3. Sign-in and linking.

create function guestpass_server.sign_in_with_identity(
    p_provider text, p_subject text, p_email text, p_is_private_email boolean, p_link boolean, p_user_agent text,
    p_client_ip text, p_session_id uuid, p_refresh_token_hash text
) returns table (
    status text, user_id uuid, device_id uuid, is_anonymous boolean, email text, user_metadata jsonb,
    app_metadata jsonb, created_at timestamptz, updated_at timestamptz, last_sign_in_at timestamptz,
    identities jsonb
)
    language plpgsql
    security definer
    set search_path = ''
    as $$
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
        app_metadata = u.app_metadata || jsonb_build_object(
            'provider', coalesce(u.app_metadata ->> 'provider', p_provider),
            'providers', (
                select coalesce(jsonb_agg(distinct p.value order by p.value), '[]'::jsonb)
                from jsonb_array_elements_text(
                    case when jsonb_typeof(u.app_metadata -> 'providers') = 'array' then u.app_metadata -> 'providers'
                         else '[]'::jsonb end || to_jsonb(p_provider)
                ) as p (value)
            )
        ),
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

revoke all on function guestpass_server.sign_in_with_identity(
    text, text, text, boolean, boolean, text, text, uuid, text
) from public;
grant execute on function guestpass_server.sign_in_with_identity(
    text, text, text, boolean, boolean, text, text, uuid, text
) to anon, authenticated;

comment on function guestpass_server.sign_in_with_identity(text, text, text, boolean, boolean, text, text, uuid, text) is
    'GuestPass server: sign-in with a verified identity (provider apple, subject = the token''s sub, the email it '
    'shared) in the caller''s app (claim app_id); the server has checked the token. Without p_link: the identity''s '
    'user (status signed_in), or a new non-anonymous user with it (created). With p_link, for a signed-in caller '
    '(claims sub and session_id, the session live): links the identity to the caller (status linked; already linked '
    'to the caller is fine), ends the caller''s session and its refresh tokens, and the new session keeps its device; '
    'status identity_already_exists when another user has it, session_not_found when the caller''s session is gone, '
    'and nothing changes. Either way the user is no longer anonymous, app_metadata gets provider / providers, the '
    'email is stored when the user has none and no other user of the app has it, and session p_session_id opens with '
    'refresh token counter 0 (hash p_refresh_token_hash). Concurrent calls for one identity run one at a time. '
    'Raises 22023 on invalid arguments, 42501 without a known app.';

-- 4. The profile lists the identities.

drop function guestpass_server.current_user_profile();

create function guestpass_server.current_user_profile()
    returns table (
        user_id uuid, email text, is_anonymous boolean, user_metadata jsonb, app_metadata jsonb,
        created_at timestamptz, updated_at timestamptz, session_active boolean, identities jsonb
    )
    language sql
    stable
    security definer
    set search_path = ''
    as $$
    select u.id, u.email, u.is_anonymous, u.user_metadata, u.app_metadata, u.created_at, u.updated_at,
           exists (
               select 1
               from guestpass.sessions as s
               where s.id = auth.claim_uuid('session_id')
                 and s.user_id = u.id
                 and s.app_id = u.app_id
                 and s.revoked_at is null
           ),
           guestpass.user_identities(u.id)
    from public.users as u
    where u.id = auth.uid() and u.app_id = auth.app_id()
$$;

revoke all on function guestpass_server.current_user_profile() from public;
grant execute on function guestpass_server.current_user_profile() to authenticated;

comment on function guestpass_server.current_user_profile() is
    'GuestPass server: the caller''s user row (claims sub and app_id), or no row, with session_active = whether the '
    'claims'' session_id is a session of that user that is not revoked, and identities (guestpass.user_identities).';
