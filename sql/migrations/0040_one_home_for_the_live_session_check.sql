-- one home for "is the caller's session live": guestpass.session_is_live, used by every call that needs one
-- Four signed-in calls refuse (or answer nothing) once the request's session has ended, so that an access token that
-- outlives its session (up to its lifetime after a logout or a device revocation) changes nothing: creating a
-- transfer or recovery code, deleting the account (0039), updating the profile, and the profile's session_active.
-- Each spelled the same check itself, two with an extra app condition that a session's user already implies (a
-- session's (user_id, app_id) references its user's). guestpass.session_is_live is that check, once; the four
-- functions below are restated from 0036, 0030, 0039 and 0032 with only the check replaced by a call of it.
-- guestpass_server.sign_in_with_identity (linking an identity) keeps its own query: it locks the session row and
-- reads it. Answers and errors are unchanged (pgTAP 07 and the e2e account, profile and code tests cover each caller).

create function guestpass.session_is_live(p_user uuid)
returns boolean
language sql
stable
set search_path = ''
as $$
    select exists (
        select 1
        from guestpass.sessions as s
        where s.id = auth.claim_uuid('session_id') and s.user_id = p_user and s.revoked_at is null
    )
$$;

revoke all on function guestpass.session_is_live(uuid) from public;

comment on function guestpass.session_is_live(uuid) is
    'GuestPass internal: whether the request''s session (claim session_id) is a session of p_user that has not ended '
    '(signed out, or its device revoked). The one check behind every signed-in call that must refuse an access token '
    'outliving its session: create_account_code, delete_account, update_user, current_user_profile (session_active).';

create or replace function guestpass_server.create_account_code(p_kind text, p_code_hash text, p_ttl_seconds integer)
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

create or replace function guestpass_server.current_user_profile()
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
           guestpass.session_is_live(u.id),
           guestpass.user_identities(u.id)
    from public.users as u
    where u.id = auth.uid() and u.app_id = auth.app_id()
$$;

create or replace function guestpass_server.delete_account(p_schemas text[])
    returns table (apple_subject text, apple_client_id text, apple_refresh_token bytea)
    language plpgsql
    security definer
    set search_path = ''
    as $$
declare
    v_user uuid;
    v_app uuid;
    v_fk record;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    perform 1 from public.users as u where u.id = v_user and u.app_id = v_app for update;
    if not found or not guestpass.session_is_live(v_user) then
        raise exception using errcode = '42501', message = 'the session has ended';
    end if;

    return query
    select i.subject, i.apple_client_id, i.apple_refresh_token
    from guestpass.identities as i
    where i.user_id = v_user and i.provider = 'apple' and i.apple_refresh_token is not null;

    -- Rows that would block the delete (a foreign key without ON DELETE CASCADE / SET NULL) go first.
    for v_fk in
        select r.schema_name, r.table_name, r.column_name
        from guestpass.user_references(p_schemas) as r
        where r.on_delete not in ('c', 'n', 'd')
    loop
        execute format('delete from %I.%I where %I = $1', v_fk.schema_name, v_fk.table_name, v_fk.column_name)
            using v_user;
    end loop;

    delete from public.users as u where u.id = v_user;
end
$$;

create or replace function guestpass_server.update_user(p_data jsonb)
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
