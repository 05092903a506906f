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

-- 0. Only sign-in (as anon) reads the Apple settings (0030 granted them to authenticated too).

revoke execute on function guestpass_server.app_apple_settings() from authenticated;

-- 1. The name rule and the flag.

create function guestpass.account_name(p_name text)
    returns text
    language sql
    immutable
    as $$
    select case when btrim(p_name) = '' or lower(btrim(p_name)) = 'user' then null else btrim(p_name) end
$$;

comment on function guestpass.account_name(text) is
    'GuestPass internal: p_name trimmed of spaces, or null when that is empty or the placeholder User (any case). A '
    'partial name (Alex) is a name.';

create function guestpass.mark_account_setup()
    returns trigger
    language plpgsql
    set search_path = ''
    as $$
begin
    new.app_metadata := new.app_metadata || jsonb_build_object(
        'needs_account_setup', guestpass.account_name(new.user_metadata ->> 'full_name') is null
    );
    return new;
end
$$;

comment on function guestpass.mark_account_setup() is
    'GuestPass: trigger function of users_mark_account_setup: sets app_metadata.needs_account_setup to whether the '
    'account has no name (guestpass.account_name of user_metadata.full_name is null).';

create trigger users_mark_account_setup
    before insert or update on public.users
    for each row
    when (not new.is_anonymous)
    execute function guestpass.mark_account_setup();

update public.users set app_metadata = app_metadata where not is_anonymous;

-- 2. The profile.

create function guestpass_server.update_user(p_data jsonb)
    returns table (
        user_id uuid, email text, is_anonymous boolean, user_metadata jsonb, app_metadata jsonb,
        created_at timestamptz, updated_at timestamptz, session_active boolean, identities jsonb
    )
    language plpgsql
    security definer
    set search_path = ''
    as $$
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
    if not exists (
        select 1 from guestpass.sessions as s
        where s.id = auth.claim_uuid('session_id') and s.user_id = v_user and s.app_id = v_app and s.revoked_at is null
    ) then
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

revoke all on function guestpass_server.update_user(jsonb) from public;
grant execute on function guestpass_server.update_user(jsonb) to authenticated;

comment on function guestpass_server.update_user(jsonb) is
    'GuestPass server: PUT /auth/v1/user''s data for the caller (claims sub and app_id). The name: full_name, else '
    'given_name + family_name, trimmed (guestpass.account_name); empty, whitespace-only or User never replaces a stored '
    'name; at most 200 characters, no control characters. timezone (IANA, checked by the users trigger), language (a '
    'language tag), onboarding_completed and notification_enabled (booleans) set their columns and are echoed in '
    'user_metadata; avatar_url (https) and every other key are merged into user_metadata (at most 16 KiB). Returns '
    'guestpass_server.current_user_profile(), or no row (and no change) when the claims'' session is not live. Raises 22023 on invalid values, 42501 without a user.';

-- 3. Roles and account setup.

alter table guestpass.apps
    add column default_role text,
    add constraint apps_default_role_check check (default_role ~ '^[a-z][a-z0-9_]{0,39}$');

comment on column guestpass.apps.default_role is
    'The role public.complete_account_setup assigns once (e.g. client); null = none.';

create table guestpass.user_roles (
    user_id uuid not null,
    app_id uuid not null,
    role text not null,
    created_at timestamptz not null default now(),
    constraint user_roles_pkey primary key (user_id, role),
    constraint user_roles_user_id_fkey foreign key (user_id, app_id) references public.users (id, app_id) on delete cascade,
    constraint user_roles_role_check check (role ~ '^[a-z][a-z0-9_]{0,39}$')
);

comment on table guestpass.user_roles is
    'GuestPass: the roles of a user (one row per role), mirrored into users.app_metadata.roles so that access tokens '
    'carry them (auth.has_role).';

alter table guestpass.user_roles enable row level security;
alter table guestpass.user_roles force row level security;
revoke all on table guestpass.user_roles from public;

create function public.complete_account_setup(p_full_name text)
    returns jsonb
    language plpgsql
    security definer
    set search_path = ''
    as $$
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

revoke all on function public.complete_account_setup(text) from public;
grant execute on function public.complete_account_setup(text) to authenticated;

comment on function public.complete_account_setup(text) is
    'Account setup for the caller: stores p_full_name (trimmed; 22023 when empty, whitespace or User, longer than 200 '
    'characters or with control characters), which clears needs_account_setup, and assigns the app''s default role '
    'once (guestpass.apps.default_role; running it twice or concurrently leaves one role row). Returns {full_name, '
    'roles, needs_account_setup}. The access token carries the new app_metadata from the next refresh.';

create function auth.has_role(p_role text)
    returns boolean
    language sql
    stable
    as $$
    select coalesce((auth.jwt() -> 'app_metadata' -> 'roles') ? p_role, false)
$$;

grant execute on function auth.has_role(text) to anon, authenticated, service_role;

comment on function auth.has_role(text) is
    'Whether the request''s access token lists p_role in app_metadata.roles (public.complete_account_setup assigns '
    'them). Reads the claims only: inlinable into policies.';
