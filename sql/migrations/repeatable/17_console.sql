-- the operator console: sessions, the operator's scope, every page's read and every action with its audit row
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.
--
-- Role guestpass_console (0013_console.sql) executes the functions of schema guestpass_console and nothing else. Each
-- takes the SHA-256 of the operator's session cookie (p_session) and resolves the operator through
-- guestpass.console_operator: no live session → SQLSTATE GPC01 ('not signed in'); an app or user outside the
-- operator's apps → 42501; an unknown user → P0002. Actions write one guestpass.operator_audit row in their own
-- transaction. No function returns a key, a password or token hash, a TOTP secret (but to the sign-in, which needs it)
-- or any key material of an app. guestpass.create_operator is the owner's (the CLI), not the console's.

-- ---- sessions and scope

create or replace function guestpass.console_operator(p_session text, p_second_factor boolean default true)
    returns guestpass.operators
    language plpgsql volatile set search_path = '' as $$
declare
    v_operator guestpass.operators;
    v_session guestpass.operator_sessions;
    v_now timestamptz := guestpass.clock();
begin
    select s.* into v_session
    from guestpass.operator_sessions as s
    where s.token_hash = p_session and s.ended_at is null
      and s.last_seen_at > v_now - interval '30 minutes' and s.created_at > v_now - interval '12 hours'
    for no key update;
    if not found or (p_second_factor and not v_session.second_factor_done) then
        raise exception using errcode = 'GPC01', message = 'not signed in';
    end if;
    select o.* into v_operator from guestpass.operators as o where o.id = v_session.operator_id and o.disabled_at is null;
    if not found then
        raise exception using errcode = 'GPC01', message = 'not signed in';
    end if;
    update guestpass.operator_sessions as s set last_seen_at = v_now where s.id = v_session.id;
    return v_operator;
end
$$;

comment on function guestpass.console_operator(text, boolean) is
    'GuestPass internal (console): the operator of the live session whose token hash is p_session, its last use '
    'moved to now. A session ends when signed out, 30 minutes after its last use or 12 hours after it began; with '
    'p_second_factor (the default) one still waiting for its TOTP code does not count. Raises GPC01 otherwise.';

create or replace function guestpass.console_may_see(p_operator guestpass.operators, p_app uuid)
    returns boolean
    language sql stable set search_path = '' as $$
    select p_operator.all_apps or exists (
        select 1 from guestpass.operator_apps as a where a.operator_id = p_operator.id and a.app_id = p_app)
$$;

comment on function guestpass.console_may_see(guestpass.operators, uuid) is
    'GuestPass internal (console): whether the operator may see app p_app (all apps, or one of its operator_apps).';

create or replace function guestpass.console_apps(p_operator guestpass.operators)
    returns setof uuid
    language sql stable set search_path = '' as $$
    select a.id from guestpass.apps as a where p_operator.all_apps
    union all
    select oa.app_id from guestpass.operator_apps as oa where not p_operator.all_apps and oa.operator_id = p_operator.id
$$;

comment on function guestpass.console_apps(guestpass.operators) is
    'GuestPass internal (console): the ids of the apps the operator may see.';

create or replace function guestpass.console_require_app(p_operator guestpass.operators, p_app uuid)
    returns void
    language plpgsql stable set search_path = '' as $$
begin
    if not exists (select 1 from guestpass.apps as a where a.id = p_app) then
        raise exception using errcode = 'P0002', message = 'no such app';
    end if;
    if not guestpass.console_may_see(p_operator, p_app) then
        raise exception using errcode = '42501', message = 'not an app of this operator';
    end if;
end
$$;

comment on function guestpass.console_require_app(guestpass.operators, uuid) is
    'GuestPass internal (console): P0002 for an unknown app, 42501 for one the operator may not see.';

create or replace function guestpass.console_require_user(p_operator guestpass.operators, p_user uuid)
    returns uuid
    language plpgsql stable set search_path = '' as $$
declare
    v_app uuid;
begin
    select u.app_id into v_app from public.users as u where u.id = p_user;
    if not found then
        raise exception using errcode = 'P0002', message = 'no such user';
    end if;
    if not guestpass.console_may_see(p_operator, v_app) then
        raise exception using errcode = '42501', message = 'not a user of this operator''s apps';
    end if;
    return v_app;
end
$$;

comment on function guestpass.console_require_user(guestpass.operators, uuid) is
    'GuestPass internal (console): the app of user p_user; P0002 for an unknown user, 42501 for one of an app the '
    'operator may not see.';

create or replace function guestpass.console_audit(
    p_operator guestpass.operators, p_app uuid, p_user uuid, p_action text, p_detail jsonb,
    p_before jsonb default null, p_after jsonb default null
)
    returns void
    language sql volatile set search_path = '' as $$
    insert into guestpass.operator_audit (operator_id, operator_email, app_id, user_id, action, detail, before, after, at)
    values (p_operator.id, p_operator.email, p_app, p_user, p_action, coalesce(p_detail, '{}'), p_before, p_after,
            guestpass.clock())
$$;

comment on function guestpass.console_audit(guestpass.operators, uuid, uuid, text, jsonb, jsonb, jsonb) is
    'GuestPass internal (console): writes one audit row of an operator action.';

create or replace function guestpass.refuse_audit_change()
    returns trigger
    language plpgsql set search_path = '' as $$
begin
    raise exception using errcode = '42501', message = 'the operator audit cannot be changed';
end
$$;

comment on function guestpass.refuse_audit_change() is
    'GuestPass internal: refuses every UPDATE and DELETE of guestpass.operator_audit (trigger operator_audit_append_only).';

create or replace trigger operator_audit_append_only
    before update or delete on guestpass.operator_audit
    for each row execute function guestpass.refuse_audit_change();

create or replace trigger operator_audit_no_truncate
    before truncate on guestpass.operator_audit
    for each statement execute function guestpass.refuse_audit_change();

-- ---- operators (the owner's)

create or replace function guestpass.create_operator(
    p_email text, p_password_hash text, p_totp_secret bytea, p_totp_required boolean, p_all_apps boolean, p_apps uuid[]
)
    returns uuid
    language plpgsql volatile set search_path = '' as $$
declare
    v_id uuid;
begin
    if p_email is null or p_email !~ '^[^\s@]+@[^\s@]+$' or char_length(p_email) > 320 then
        raise exception using errcode = '22023', message = 'an operator needs an email address';
    end if;
    if not coalesce(p_all_apps, false) and coalesce(cardinality(p_apps), 0) = 0 then
        raise exception using errcode = '22023', message = 'name the operator''s apps, or all apps';
    end if;
    if exists (select 1 from unnest(p_apps) as a (id) where not exists (select 1 from guestpass.apps as x where x.id = a.id)) then
        raise exception using errcode = '22023', message = 'unknown app';
    end if;
    insert into guestpass.operators (email, password_hash, totp_secret, totp_required, all_apps)
    values (lower(p_email), p_password_hash, p_totp_secret, coalesce(p_totp_required, false), coalesce(p_all_apps, false))
    returning id into v_id;
    insert into guestpass.operator_apps (operator_id, app_id)
    select v_id, a.id from unnest(coalesce(p_apps, '{}')) as a (id) on conflict do nothing;
    return v_id;
end
$$;

comment on function guestpass.create_operator(text, text, bytea, boolean, boolean, uuid[]) is
    'GuestPass, for the guestpass CLI (the owner): a new console operator (email lower-cased, unique) with its '
    'password hash, TOTP secret and apps (p_all_apps, or the apps of p_apps). 22023 on a bad email, no apps or an '
    'unknown app; 23505 when the email is taken.';

-- ---- sign-in

create or replace function guestpass_console.sign_in_lookup(p_email text, p_address text)
    returns jsonb
    language plpgsql stable security definer set search_path = '' as $$
declare
    v_operator guestpass.operators;
    v_since timestamptz := guestpass.clock() - interval '15 minutes';
begin
    if (select count(*) from guestpass.operator_sign_in_failures as f where f.email = lower(p_email) and f.failed_at > v_since) >= 5
       or (select count(*) from guestpass.operator_sign_in_failures as f where f.address = p_address and f.failed_at > v_since) >= 20
    then
        return jsonb_build_object('limited', true);
    end if;
    select o.* into v_operator from guestpass.operators as o where o.email = lower(p_email) and o.disabled_at is null;
    if not found then
        return jsonb_build_object('limited', false);
    end if;
    return jsonb_build_object(
        'limited', false, 'operator_id', v_operator.id, 'password_hash', v_operator.password_hash,
        'totp_secret', encode(v_operator.totp_secret, 'base64'), 'totp_required', v_operator.totp_required);
end
$$;

comment on function guestpass_console.sign_in_lookup(text, text) is
    'GuestPass console: what a sign-in checks for email p_email from client address p_address: {limited} alone when 5 '
    'failures of that email or 20 of that address happened in the last 15 minutes, or when no enabled operator has '
    'that email; else also operator_id, password_hash, totp_secret (base64) and totp_required.';

create or replace function guestpass_console.sign_in_failed(p_email text, p_address text)
    returns void
    language sql volatile security definer set search_path = '' as $$
    delete from guestpass.operator_sign_in_failures as f where f.failed_at < guestpass.clock() - interval '1 day';
    insert into guestpass.operator_sign_in_failures (email, address, failed_at)
    values (lower(left(p_email, 320)), left(p_address, 100), guestpass.clock());
$$;

comment on function guestpass_console.sign_in_failed(text, text) is
    'GuestPass console: records a failed password or code of email p_email from p_address (failures older than a day '
    'are dropped on the way).';

create or replace function guestpass_console.sign_in_succeeded(
    p_operator uuid, p_token_hash text, p_second_factor_done boolean
)
    returns void
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators;
begin
    select o.* into v_operator from guestpass.operators as o where o.id = p_operator and o.disabled_at is null;
    if not found then
        raise exception using errcode = 'GPC01', message = 'not signed in';
    end if;
    if v_operator.totp_secret is not null and p_second_factor_done then
        raise exception using errcode = '22023', message = 'this operator signs in with a code';
    end if;
    insert into guestpass.operator_sessions (operator_id, token_hash, second_factor_done, created_at, last_seen_at)
    values (p_operator, p_token_hash, p_second_factor_done, guestpass.clock(), guestpass.clock());
    if p_second_factor_done then
        perform guestpass.console_audit(v_operator, null, null, 'sign_in', '{}');
    end if;
end
$$;

comment on function guestpass_console.sign_in_succeeded(uuid, text, boolean) is
    'GuestPass console: a session for operator p_operator after its password matched (the token''s hash; its CSRF '
    'token is derived from the token by the server, so nothing of it is stored); '
    'p_second_factor_done only for an operator without a TOTP secret (22023 otherwise). Audited as sign_in once complete.';

create or replace function guestpass_console.second_factor_done(p_session text, p_step bigint)
    returns boolean
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators := guestpass.console_operator(p_session, false);
begin
    update guestpass.operators as o set totp_last_step = p_step
    where o.id = v_operator.id and (o.totp_last_step is null or o.totp_last_step < p_step);
    if not found then
        return false;
    end if;
    update guestpass.operator_sessions as s set second_factor_done = true where s.token_hash = p_session;
    perform guestpass.console_audit(v_operator, null, null, 'sign_in', '{"second_factor": "totp"}');
    return true;
end
$$;

comment on function guestpass_console.second_factor_done(text, bigint) is
    'GuestPass console: the session''s TOTP code was right for step p_step (checked by the server): the session is '
    'complete (audited) and true; false, and nothing changed, when a code of that step or a later one was accepted '
    'before (a replayed code).';

create or replace function guestpass_console.sign_out(p_session text)
    returns void
    language sql volatile security definer set search_path = '' as $$
    update guestpass.operator_sessions as s set ended_at = guestpass.clock() where s.token_hash = p_session and s.ended_at is null
$$;

comment on function guestpass_console.sign_out(text) is 'GuestPass console: ends the session.';

create or replace function guestpass_console.session(p_session text)
    returns jsonb
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators := guestpass.console_operator(p_session, false);
begin
    return (
        select jsonb_build_object(
            'operator_id', v_operator.id, 'email', v_operator.email, 'all_apps', v_operator.all_apps,
            'second_factor_done', s.second_factor_done)
        from guestpass.operator_sessions as s where s.token_hash = p_session);
end
$$;

comment on function guestpass_console.session(text) is
    'GuestPass console: {operator_id, email, all_apps, second_factor_done} of a live session (one waiting for its code '
    'included); GPC01 otherwise.';

-- ---- apps

create or replace function guestpass.console_app_counts(p_app uuid)
    returns jsonb
    language sql stable set search_path = '' as $$
    select jsonb_build_object(
        'users', (select count(*) from public.users as u where u.app_id = p_app),
        'guests', (select count(*) from public.users as u where u.app_id = p_app and u.is_anonymous),
        'active_today', (select count(*) from public.devices as d
                         where d.app_id = p_app and d.last_seen_at > guestpass.clock() - interval '1 day'))
$$;

comment on function guestpass.console_app_counts(uuid) is
    'GuestPass internal (console): an app''s users, guests, and devices seen in the last 24 hours (active_today).';

create or replace function guestpass_console.apps(p_session text)
    returns jsonb
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators := guestpass.console_operator(p_session);
begin
    return coalesce((
        select jsonb_agg(jsonb_build_object('id', a.id, 'name', a.name) || guestpass.console_app_counts(a.id) order by a.name, a.id)
        from guestpass.apps as a where a.id in (select guestpass.console_apps(v_operator))), '[]');
end
$$;

comment on function guestpass_console.apps(text) is
    'GuestPass console: the operator''s apps, by name: [{id, name, users, guests, active_today}].';

create or replace function guestpass_console.app(p_session text, p_app uuid)
    returns jsonb
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators := guestpass.console_operator(p_session);
begin
    perform guestpass.console_require_app(v_operator, p_app);
    return (
        select jsonb_build_object(
            'id', a.id, 'name', a.name, 'created_at', a.created_at,
            'settings', jsonb_build_object(
                'daily_free_allowance', a.daily_free_allowance, 'welcome_grant_credits', a.welcome_grant_credits,
                'devicecheck', a.devicecheck_team_id is not null, 'devicecheck_team_id', a.devicecheck_team_id,
                'devicecheck_key_id', a.devicecheck_key_id, 'devicecheck_environment', a.devicecheck_environment,
                'apple_audiences', a.apple_audiences, 'email_enabled', a.email_enabled,
                'email_autoconfirm', a.email_autoconfirm, 'smtp_host', a.smtp_host, 'share_code_length', a.share_code_length,
                'partner_limit', a.partner_limit, 'guest_idle_days', a.guest_idle_days,
                'storage_upload_bytes_limit', a.storage_upload_bytes_limit,
                'storage_user_bytes_limit', a.storage_user_bytes_limit,
                'storage_user_objects_limit', a.storage_user_objects_limit),
            'keys', coalesce((
                select jsonb_agg(jsonb_build_object(
                    'id', k.id, 'kind', k.kind, 'prefix', k.key_prefix, 'created_at', k.created_at, 'revoked_at', k.revoked_at)
                    order by k.created_at desc, k.id)
                from guestpass.api_keys as k where k.app_id = a.id), '[]')
        ) || guestpass.console_app_counts(a.id)
        from guestpass.apps as a where a.id = p_app);
end
$$;

comment on function guestpass_console.app(text, uuid) is
    'GuestPass console: one app''s page: {id, name, created_at, settings (no key material, paths or SMTP password), '
    'keys [{id, kind, prefix, created_at, revoked_at}] (the prefix shown for recognition, never a key or its hash), users, '
    'guests, active_today}.';

create or replace function guestpass_console.set_app_quota(
    p_session text, p_app uuid, p_daily_free_allowance integer, p_welcome_grant_credits integer
)
    returns void
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators := guestpass.console_operator(p_session);
    v_before jsonb;
begin
    perform guestpass.console_require_app(v_operator, p_app);
    if p_daily_free_allowance is null or p_daily_free_allowance < 0 or p_welcome_grant_credits is null or p_welcome_grant_credits < 0 then
        raise exception using errcode = '22023', message = 'the quota and the welcome grant must be 0 or more';
    end if;
    select jsonb_build_object('daily_free_allowance', a.daily_free_allowance, 'welcome_grant_credits', a.welcome_grant_credits)
    into v_before from guestpass.apps as a where a.id = p_app for no key update;
    update guestpass.apps as a
    set daily_free_allowance = p_daily_free_allowance, welcome_grant_credits = p_welcome_grant_credits
    where a.id = p_app;
    perform guestpass.console_audit(v_operator, p_app, null, 'app_quota', '{}', v_before,
        jsonb_build_object('daily_free_allowance', p_daily_free_allowance, 'welcome_grant_credits', p_welcome_grant_credits));
end
$$;

comment on function guestpass_console.set_app_quota(text, uuid, integer, integer) is
    'GuestPass console: sets an app''s free readings per day and welcome grant (each ≥ 0, else 22023). Audited.';

create or replace function guestpass_console.add_key(p_session text, p_app uuid, p_kind text, p_key_hash text, p_key_prefix text)
    returns uuid
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators := guestpass.console_operator(p_session);
    v_id uuid;
begin
    perform guestpass.console_require_app(v_operator, p_app);
    if p_kind not in ('publishable', 'secret') or p_key_hash !~ '^[0-9a-f]{64}$' then
        raise exception using errcode = '22023', message = 'a key is publishable or secret, with its SHA-256';
    end if;
    insert into guestpass.api_keys (app_id, kind, key_hash, key_prefix) values (p_app, p_kind, p_key_hash, p_key_prefix)
    returning id into v_id;
    perform guestpass.console_audit(v_operator, p_app, null, 'key_created', jsonb_build_object('key_id', v_id, 'kind', p_kind));
    return v_id;
end
$$;

comment on function guestpass_console.add_key(text, uuid, text, text, text) is
    'GuestPass console: records a new API key the server generated (only its hash and prefix). Audited.';

create or replace function guestpass_console.revoke_key(p_session text, p_app uuid, p_key uuid)
    returns void
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators := guestpass.console_operator(p_session);
    v_kind text;
begin
    perform guestpass.console_require_app(v_operator, p_app);
    update guestpass.api_keys as k set revoked_at = guestpass.clock()
    where k.id = p_key and k.app_id = p_app and k.revoked_at is null
    returning k.kind into v_kind;
    if not found then
        raise exception using errcode = 'P0002', message = 'no such live key';
    end if;
    perform guestpass.console_audit(v_operator, p_app, null, 'key_revoked', jsonb_build_object('key_id', p_key, 'kind', v_kind));
end
$$;

comment on function guestpass_console.revoke_key(text, uuid, uuid) is
    'GuestPass console: revokes a live API key of the app (P0002 when there is none). Audited.';

-- ---- users

create or replace function guestpass_console.find_users(p_session text, p_kind text, p_value text)
    returns jsonb
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators := guestpass.console_operator(p_session);
    v_id uuid;
    v_users uuid[];
begin
    if p_kind in ('user_id', 'device_id') then
        begin
            v_id := p_value::uuid;
        exception when invalid_text_representation then
            return '[]';
        end;
    end if;
    v_users := case p_kind
        when 'user_id' then array(select u.id from public.users as u where u.id = v_id)
        when 'device_id' then array(select d.user_id from public.devices as d where d.id = v_id)
        when 'email' then array(
            select u.id from guestpass.console_apps(v_operator) as a (id)
            join public.users as u on u.app_id = a.id and lower(u.email) = lower(p_value) and u.email is not null)
        when 'share_code' then array(
            select c.user_id from guestpass.console_apps(v_operator) as a (id)
            join guestpass.share_codes as c on c.app_id = a.id and c.code = upper(p_value))
        when 'apple_subject' then array(
            select i.user_id from guestpass.console_apps(v_operator) as a (id)
            join guestpass.identities as i on i.app_id = a.id and i.provider = 'apple' and i.subject = p_value)
    end;
    if v_users is null then
        raise exception using errcode = '22023', message = 'find users by user_id, device_id, email, share_code or apple_subject';
    end if;
    return coalesce((
        select jsonb_agg(jsonb_build_object(
            'user_id', u.id, 'app_id', u.app_id, 'app_name', a.name, 'email', u.email, 'is_anonymous', u.is_anonymous,
            'created_at', u.created_at) order by u.created_at, u.id)
        from public.users as u join guestpass.apps as a on a.id = u.app_id
        where u.id = any (v_users) and guestpass.console_may_see(v_operator, u.app_id)), '[]');
end
$$;

comment on function guestpass_console.find_users(text, text, text) is
    'GuestPass console: the users of the operator''s apps found by one exact, indexed look-up: p_kind user_id, '
    'device_id, email (case-insensitive), share_code or apple_subject (22023 for another kind; a malformed id finds '
    'none). [{user_id, app_id, app_name, email, is_anonymous, created_at}].';

create or replace function guestpass_console.user_page(p_session text, p_user uuid)
    returns jsonb
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators := guestpass.console_operator(p_session);
    v_app uuid := guestpass.console_require_user(v_operator, p_user);
begin
    return (
        select jsonb_build_object(
            'user', jsonb_build_object(
                'id', u.id, 'app_id', u.app_id, 'email', u.email, 'is_anonymous', u.is_anonymous, 'timezone', u.timezone,
                'language', u.language, 'created_at', u.created_at, 'credits_balance', u.credits_balance,
                'is_premium', u.is_premium, 'initial_grant_claimed', u.initial_grant_claimed),
            'app_name', (select a.name from guestpass.apps as a where a.id = v_app),
            'quota', guestpass.quota_state(u.id, guestpass.clock()),
            'welcome', jsonb_build_object(
                'claimed', u.initial_grant_claimed,
                'claims', coalesce((
                    select jsonb_agg(jsonb_build_object('state', c.state, 'at', c.updated_at) order by c.created_at)
                    from guestpass.devicecheck_claims as c where c.user_id = u.id), '[]')),
            'identities', coalesce((
                select jsonb_agg(jsonb_build_object('provider', i.provider, 'email', i.email, 'created_at', i.created_at)
                                 order by i.created_at)
                from guestpass.identities as i where i.user_id = u.id), '[]'),
            'devices', coalesce((
                select jsonb_agg(jsonb_build_object(
                    'id', d.id, 'model', d.model, 'os_version', d.os_version, 'app_version', d.app_version,
                    'created_at', d.created_at, 'last_seen_at', d.last_seen_at, 'revoked', d.revoked_at is not null)
                    order by d.created_at, d.id)
                from public.devices as d where d.user_id = u.id), '[]'),
            'sessions', coalesce((
                select jsonb_agg(jsonb_build_object(
                    'id', s.id, 'device_id', s.device_id, 'created_at', s.created_at, 'refreshed_at', s.refreshed_at,
                    'ended', s.revoked_at is not null) order by s.created_at desc, s.id)
                from (select * from guestpass.sessions as s where s.user_id = u.id order by s.created_at desc limit 50) as s), '[]'),
            'ledger', coalesce((
                select jsonb_agg(jsonb_build_object(
                    'id', l.id, 'delta', l.change, 'reason', l.reason, 'balance_after', l.balance_after, 'created_at', l.created_at)
                    order by l.id desc)
                from (select * from guestpass.credit_ledger as l where l.user_id = u.id order by l.id desc limit 100) as l), '[]'),
            'partners', coalesce((
                select jsonb_agg(jsonb_build_object('partner_id', p.partner_id, 'created_at', p.created_at) order by p.created_at)
                from public.partners as p where p.user_id = u.id), '[]'),
            'pending_codes', coalesce((
                select jsonb_agg(jsonb_build_object('kind', c.kind, 'expires_at', c.expires_at) order by c.created_at)
                from guestpass.account_codes as c
                where c.user_id = u.id and c.used_at is null and (c.expires_at is null or c.expires_at > guestpass.clock())), '[]'),
            'audit', coalesce((
                select jsonb_agg(to_jsonb(r) order by r.id desc)
                from (select o.id, o.operator_email, o.action, o.user_id, o.detail, o.before, o.after, o.at
                      from guestpass.operator_audit as o where o.user_id = u.id order by o.id desc limit 50) as r), '[]'))
        from public.users as u where u.id = p_user);
end
$$;

comment on function guestpass_console.user_page(text, uuid) is
    'GuestPass console: a user''s page: user, app_name, quota (get_quota''s object), welcome (claimed, DeviceCheck '
    'claims), identities, devices, sessions (last 50), ledger (last 100, newest first), partners, pending_codes '
    '(kind and expiry, never a code), audit (last 50). P0002 unknown user; 42501 another app''s.';

create or replace function guestpass_console.change_credits(p_session text, p_user uuid, p_delta integer, p_reason text)
    returns integer
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators := guestpass.console_operator(p_session);
    v_app uuid := guestpass.console_require_user(v_operator, p_user);
    v_before integer;
    v_after integer;
begin
    if p_reason is null or char_length(btrim(p_reason)) not between 1 and 190 then
        raise exception using errcode = '22023', message = 'a credit change needs a reason of 1 to 190 characters';
    end if;
    select u.credits_balance into v_before from public.users as u where u.id = p_user for no key update;
    if p_delta < 0 and v_before + p_delta < 0 then
        raise exception using errcode = '22023', message = format('the user has %s credits; %s cannot be taken', v_before, -p_delta);
    end if;
    v_after := guestpass.apply_credit_change(p_user, p_delta, 'operator: ' || p_reason, null);
    perform guestpass.console_audit(v_operator, v_app, p_user, 'credits', jsonb_build_object('delta', p_delta, 'reason', p_reason),
        jsonb_build_object('credits_balance', v_before), jsonb_build_object('credits_balance', v_after));
    return v_after;
end
$$;

comment on function guestpass_console.change_credits(text, uuid, integer, text) is
    'GuestPass console: grants (p_delta > 0) or takes (< 0) credits with a reason of 1 to 190 characters, through '
    'guestpass.apply_credit_change (ledger reason ''operator: <reason>''); taking more than the balance is 22023. '
    'Returns the new balance. Audited with the balance before and after.';

create or replace function guestpass_console.set_premium(p_session text, p_user uuid, p_premium boolean)
    returns void
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators := guestpass.console_operator(p_session);
    v_app uuid := guestpass.console_require_user(v_operator, p_user);
    v_before boolean;
begin
    select u.is_premium into v_before from public.users as u where u.id = p_user for no key update;
    update public.users as u set is_premium = coalesce(p_premium, false) where u.id = p_user;
    perform guestpass.console_audit(v_operator, v_app, p_user, 'premium', '{}',
        jsonb_build_object('is_premium', v_before), jsonb_build_object('is_premium', coalesce(p_premium, false)));
end
$$;

comment on function guestpass_console.set_premium(text, uuid, boolean) is
    'GuestPass console: turns premium on or off for the user. Audited.';

create or replace function guestpass_console.revoke_device(p_session text, p_user uuid, p_device uuid)
    returns void
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators := guestpass.console_operator(p_session);
    v_app uuid := guestpass.console_require_user(v_operator, p_user);
    v_now timestamptz := guestpass.clock();
begin
    perform 1 from public.users as u where u.id = p_user for no key update;
    if not exists (select 1 from public.devices as d where d.id = p_device and d.user_id = p_user and d.revoked_at is null) then
        raise exception using errcode = 'P0002', message = 'no such live device of this user';
    end if;
    perform guestpass.end_device(p_device, v_now);
    perform guestpass.console_audit(v_operator, v_app, p_user, 'device_revoked', jsonb_build_object('device_id', p_device));
end
$$;

comment on function guestpass_console.revoke_device(text, uuid, uuid) is
    'GuestPass console: revokes a live device of the user as public.revoke_device does (its sessions and refresh '
    'tokens end, its secret signs in no more), the account''s last way in included. Audited.';

create or replace function guestpass_console.end_session(p_session text, p_user uuid, p_session_id uuid)
    returns void
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators := guestpass.console_operator(p_session);
    v_app uuid := guestpass.console_require_user(v_operator, p_user);
    v_now timestamptz := guestpass.clock();
begin
    update guestpass.sessions as s set revoked_at = v_now where s.id = p_session_id and s.user_id = p_user and s.revoked_at is null;
    if not found then
        raise exception using errcode = 'P0002', message = 'no such live session of this user';
    end if;
    update guestpass.refresh_tokens as t set revoked_at = v_now where t.session_id = p_session_id and t.revoked_at is null;
    perform guestpass.console_audit(v_operator, v_app, p_user, 'session_ended', jsonb_build_object('session_id', p_session_id));
end
$$;

comment on function guestpass_console.end_session(text, uuid, uuid) is
    'GuestPass console: ends a live session of the user (its refresh tokens too; its access tokens are refused where '
    'sessions are checked). Audited.';

create or replace function guestpass_console.delete_user(p_session text, p_user uuid, p_schemas text[])
    returns jsonb
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators := guestpass.console_operator(p_session);
    v_app uuid := guestpass.console_require_user(v_operator, p_user);
    v_before jsonb;
    v_tokens jsonb;
begin
    select jsonb_build_object('email', u.email, 'is_anonymous', u.is_anonymous, 'credits_balance', u.credits_balance,
                              'is_premium', u.is_premium, 'created_at', u.created_at)
    into v_before from public.users as u where u.id = p_user for update;
    select coalesce(jsonb_agg(jsonb_build_object(
               'subject', d.apple_subject, 'client_id', d.apple_client_id, 'sealed', encode(d.apple_refresh_token, 'base64'))), '[]')
    into v_tokens from guestpass.delete_user_rows(p_user, p_schemas) as d;
    perform guestpass.console_audit(v_operator, v_app, p_user, 'account_deleted', '{}', v_before, null);
    return jsonb_build_object('app_id', v_app, 'apple_tokens', v_tokens);
end
$$;

comment on function guestpass_console.delete_user(text, uuid, text[]) is
    'GuestPass console: deletes the user as their own deletion does (guestpass.delete_user_rows, app tables of '
    'p_schemas included); {app_id, apple_tokens [{subject, client_id, sealed}]} for the server to revoke at Apple after '
    'the commit. Audited with the user as it was.';

create or replace function guestpass_console.audit(p_session text, p_app uuid, p_before bigint)
    returns jsonb
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_operator guestpass.operators := guestpass.console_operator(p_session);
begin
    if p_app is not null then
        perform guestpass.console_require_app(v_operator, p_app);
    end if;
    return coalesce((
        select jsonb_agg(to_jsonb(r) order by r.id desc)
        from (
            select o.id, o.operator_email, o.app_id, o.user_id, o.action, o.detail, o.before, o.after, o.at
            from guestpass.operator_audit as o
            where (p_before is null or o.id < p_before)
              and (case when p_app is not null then o.app_id = p_app
                        else o.app_id in (select guestpass.console_apps(v_operator))
                             or (o.app_id is null and o.operator_id = v_operator.id) end)
            order by o.id desc limit 50) as r), '[]');
end
$$;

comment on function guestpass_console.audit(text, uuid, bigint) is
    'GuestPass console: 50 audit rows, newest first, older than p_before when given: of app p_app, or of every app of '
    'the operator (with the operator''s own sign-ins).';

-- Row-level security, on and forced for the tables of this area (0013_console.sql): no role has a policy, so only the
-- SECURITY DEFINER functions above (their owner, who bypasses nothing else) reach them.
alter table guestpass.operators enable row level security, force row level security;
alter table guestpass.operator_apps enable row level security, force row level security;
alter table guestpass.operator_sessions enable row level security, force row level security;
alter table guestpass.operator_sign_in_failures enable row level security, force row level security;
alter table guestpass.operator_audit enable row level security, force row level security;

-- Grants: no function of this file is PUBLIC's; guestpass_console executes those of its schema, nothing else.
revoke all on all functions in schema guestpass_console from public;
revoke all on function guestpass.console_operator(text, boolean), guestpass.console_may_see(guestpass.operators, uuid),
    guestpass.console_apps(guestpass.operators), guestpass.console_require_app(guestpass.operators, uuid),
    guestpass.console_require_user(guestpass.operators, uuid),
    guestpass.console_audit(guestpass.operators, uuid, uuid, text, jsonb, jsonb, jsonb), guestpass.refuse_audit_change(),
    guestpass.create_operator(text, text, bytea, boolean, boolean, uuid[]), guestpass.console_app_counts(uuid) from public;
grant usage on schema guestpass_console to guestpass_console;
grant execute on all functions in schema guestpass_console to guestpass_console;
