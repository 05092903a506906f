-- the caller checks have one home again: guestpass.require_caller(p_user_id, p_must_exist)
-- 0025 copied require_caller's two claim checks (a user in the claims; p_user_id null or the caller) into
-- public.consume_quota, so that a consume would not read the caller's users row twice. require_caller now takes
-- p_must_exist (default true, the old behaviour): with false it makes only the claim checks, and consume_quota calls
-- it so, leaving the existence check to guestpass.consume_at's row lock (which answers 42501 'unknown user' for a
-- user not in the claims' app). Every answer is unchanged. Its other callers (get_quota, set_timezone) keep calling
-- it with one argument.

drop function guestpass.require_caller(uuid);

create function guestpass.require_caller(p_user_id uuid, p_must_exist boolean default true)
    returns uuid
    language plpgsql
    stable
    as $$
declare
    v_user uuid := auth.uid();
begin
    if v_user is null then
        raise exception 'no user in the request claims' using errcode = '42501';
    end if;
    if p_user_id is not null and p_user_id <> v_user then
        raise exception 'p_user_id must be the caller' using errcode = '42501';
    end if;
    if p_must_exist and not exists (
        select 1 from public.users as u where u.id = v_user and u.app_id = auth.app_id()
    ) then
        raise exception 'unknown user' using errcode = '42501';
    end if;
    return v_user;
end
$$;

revoke all on function guestpass.require_caller(uuid, boolean) from public;

comment on function guestpass.require_caller(uuid, boolean) is
    'GuestPass internal: the caller''s user id (claim sub) when p_user_id is null or equal to it and, unless '
    'p_must_exist is false, the user exists in the claims'' app; else raises 42501. public.consume_quota passes false '
    'and lets guestpass.consume_at''s row lock check the user. Runs with its caller''s rights (only SECURITY DEFINER '
    'functions of the owner call it).';

create or replace function public.consume_quota(p_user_id uuid default null, p_request_id text default null)
    returns jsonb
    language plpgsql
    security definer
    set search_path = ''
    as $$
begin
    return guestpass.consume_at(guestpass.require_caller(p_user_id, false), p_request_id, guestpass.clock(), auth.app_id());
end
$$;
