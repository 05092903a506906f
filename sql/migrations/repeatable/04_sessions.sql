-- sessions and refresh tokens: the live-session check, rotation with its reuse window, sign-out
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.
--
-- Notes carried from the change log before the re-baseline (NNNN names one of its files, in git history):
--
-- one home for "is the caller's session live": guestpass.session_is_live, used by every call that needs one
-- Four signed-in calls refuse (or answer nothing) once the request's session has ended, so that an access token that
-- outlives its session (up to its lifetime after a logout or a device revocation) changes nothing: creating a
-- transfer or recovery code, deleting the account (0039), updating the profile, and the profile's session_active.
-- Each spelled the same check itself, two with an extra app condition that a session's user already implies (a
-- session's (user_id, app_id) references its user's). guestpass.session_is_live is that check, once; the four
-- functions below are restated from 0036, 0030, 0039 and 0032 with only the check replaced by a call of it.
-- guestpass_server.sign_in_with_identity (linking an identity) keeps its own query: it locks the session row and
-- reads it. Answers and errors are unchanged (pgTAP 07 and the e2e account, profile and code tests cover each caller).

create or replace function guestpass.session_is_live(p_user uuid)
    returns boolean
    language plpgsql stable as $$
begin
    return exists (
        select 1
        from guestpass.sessions as s
        where s.id = auth.claim_uuid('session_id') and s.user_id = p_user and s.revoked_at is null
    );
end
$$;

comment on function guestpass.session_is_live(uuid) is
    'GuestPass internal: whether the request''s session (claim session_id) is a session of p_user that has not ended '
    '(signed out, or its device revoked). The one check behind every signed-in call that must refuse an access token '
    'outliving its session: create_account_code, delete_account, update_user, current_user_profile (session_active). '
    'plpgsql, so its plan is kept per connection (a SQL function with EXISTS is never inlined and was parsed and '
    'planned on every call), with no SET clause: an internal run from SECURITY DEFINER callers that pin search_path.';

create or replace function guestpass_server.refresh_session(
    p_session_id uuid,
    p_counter integer,
    p_token_hash text,
    p_next_token_hash text,
    p_reuse_window_seconds double precision
)
    returns table (
        status text,
        user_id uuid,
        device_id uuid,
        session_id uuid,
        active_counter integer,
        is_anonymous boolean,
        email text,
        user_metadata jsonb,
        app_metadata jsonb,
        created_at timestamptz,
        updated_at timestamptz
    )
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_app uuid := guestpass.require_app();
    v_now timestamptz;
    v_session guestpass.sessions%rowtype;
    v_token guestpass.refresh_tokens%rowtype;
    v_active integer;
    v_status text;
begin
    perform guestpass.require_hex_sha256(p_next_token_hash, 'the next refresh token hash');
    if p_reuse_window_seconds is not null and not (p_reuse_window_seconds >= 0
       and p_reuse_window_seconds < 'Infinity'::double precision) then
        raise exception using errcode = '22023', message = 'the reuse window must be a non-negative number of seconds';
    end if;
    v_now := guestpass.clock();

    <<decide>>
    begin
        -- The row lock serialises concurrent refreshes of one session (one token family).
        select s.* into v_session
        from guestpass.sessions as s
        where s.id = p_session_id and s.app_id = v_app
        for update;
        if not found then
            v_status := 'session_not_found';
            exit decide;
        end if;

        select t.* into v_token
        from guestpass.refresh_tokens as t
        where t.token_hash = p_token_hash;
        if not found or v_token.session_id <> v_session.id or v_token.counter is distinct from p_counter then
            v_status := 'refresh_token_not_found';
            exit decide;
        end if;

        if v_session.revoked_at is not null then
            v_status := 'session_not_found';
            exit decide;
        end if;

        select max(t.counter) into v_active
        from guestpass.refresh_tokens as t
        where t.session_id = v_session.id;

        if v_token.revoked_at is null and v_token.counter = v_active then
            -- The active token: rotate.
            update guestpass.refresh_tokens as t set revoked_at = v_now where t.id = v_token.id;
            insert into guestpass.refresh_tokens (session_id, counter, token_hash)
            values (v_session.id, v_active + 1, p_next_token_hash);
            update guestpass.sessions as s set refreshed_at = v_now where s.id = v_session.id;
            v_active := v_active + 1;
            v_status := 'rotated';
        elsif v_token.counter = v_active - 1 then
            -- The parent of the active token: a client that lost the answer gets the active token back.
            v_status := 'reused';
        elsif v_token.revoked_at + make_interval(secs => coalesce(p_reuse_window_seconds, 0)) >= v_now then
            v_status := 'reused';
        else
            -- An old token replayed outside the window: assume theft and revoke the whole family.
            update guestpass.sessions as s set revoked_at = v_now where s.id = v_session.id;
            update guestpass.refresh_tokens as t
            set revoked_at = v_now
            where t.session_id = v_session.id and t.revoked_at is null;
            v_status := 'refresh_token_already_used';
        end if;
    end;

    if v_status in ('rotated', 'reused') then
        update public.devices as d set last_seen_at = v_now where d.id = v_session.device_id;
        return query
        select v_status, u.id, v_session.device_id, v_session.id, v_active, u.is_anonymous, u.email,
               u.user_metadata, u.app_metadata, u.created_at, u.updated_at
        from public.users as u
        where u.id = v_session.user_id;
    else
        return query
        select v_status, null::uuid, null::uuid, null::uuid, null::integer, null::boolean, null::text,
               null::jsonb, null::jsonb, null::timestamptz, null::timestamptz;
    end if;
end
$$;

comment on function guestpass_server.refresh_session(uuid, integer, text, text, double precision) is
    'GuestPass server: refresh-token rotation with GoTrue''s rules, in the caller''s app (claim app_id). The server passes the session id and counter it read from the token, the token''s hash, and the hash of the token for counter + 1. Always returns one row; status is: rotated (the active token: revoked, counter + 1 issued, active_counter = the new counter); reused (the parent of the active token, at any age, or an older token revoked at most p_reuse_window_seconds ago: nothing changes, the server re-derives the token of active_counter); refresh_token_already_used (an older token outside the window: the session and all its tokens are revoked, and committed); refresh_token_not_found (unknown hash, or not that session and counter); session_not_found (no such session in the app, or revoked). The user columns are set only for rotated and reused. Concurrent refreshes of one session are serialised by a row lock. Time is guestpass.clock(): it stamps revoked_at, refreshed_at and the device''s last_seen_at, and the reuse window is revoked_at + p_reuse_window_seconds >= guestpass.clock(). Raises 42501 without an app claim, 22023 on an invalid next hash or window.';

create or replace function guestpass_server.sign_out(p_scope text)
    returns integer
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_user uuid;
    v_app uuid;
    v_session uuid := auth.claim_uuid('session_id');
    v_now timestamptz;
    v_count integer;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    if p_scope is null or p_scope not in ('local', 'global', 'others') then
        raise exception using errcode = '22023', message = 'scope must be local, global or others';
    end if;
    v_now := guestpass.clock();

    with revoked as (
        update guestpass.sessions as s
        set revoked_at = v_now
        where s.user_id = v_user
          and s.app_id = v_app
          and s.revoked_at is null
          and case p_scope
                  when 'local' then s.id = v_session
                  when 'others' then s.id is distinct from v_session
                  else true
              end
        returning s.id
    ),
    revoked_tokens as (
        update guestpass.refresh_tokens as t
        set revoked_at = v_now
        where t.session_id in (select r.id from revoked as r) and t.revoked_at is null
    )
    select count(*)::integer into v_count from revoked;

    return v_count;
end
$$;

comment on function guestpass_server.sign_out(text) is
    'GuestPass server: signs the caller (claims sub and app_id) out. p_scope local revokes the claims'' session_id, '
    'global every session of the user, others every session but the claims'' one; each revoked session''s refresh '
    'tokens are revoked with it (revoked_at = guestpass.clock()). Returns the number of sessions revoked (0 when '
    'already signed out). Raises 42501 without a user or app claim, 22023 on another scope.';

-- Row-level security, on and forced for the tables of this area (0004_sessions_and_refresh_tokens.sql): a role, the
-- tables' owner included, sees only the rows a policy gives it; a table with no policy for a role shows it none.
alter table guestpass.sessions enable row level security, force row level security;
alter table guestpass.refresh_tokens enable row level security, force row level security;

-- Grants: no function of this file is PUBLIC's; the roles below are the only callers of each.
revoke all on function guestpass.session_is_live(uuid),
    guestpass_server.refresh_session(uuid, integer, text, text, double precision), guestpass_server.sign_out(text)
    from public;
grant execute on function guestpass_server.refresh_session(uuid, integer, text, text, double precision) to anon;
grant execute on function guestpass_server.sign_out(text) to authenticated;
