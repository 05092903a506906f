-- the caller's claim checks become an inlinable SQL expression: consume_quota makes no PL/pgSQL call for them
-- Measured on one connection, guestpass.require_caller cost about 35 µs per call, a tenth of a whole consume's time in
-- PostgreSQL, for two comparisons: most of it the PL/pgSQL call itself. guestpass.caller_id(p_user_id) is now the one
-- home of those two checks (a user in the claims; p_user_id null or the caller): a SQL function of one CASE
-- expression, which the planner inlines into its caller's expression. Its refusals come from guestpass.refuse_caller,
-- called only on the branch that refuses. It is VOLATILE because refuse_caller is: a STABLE function may not contain a
-- volatile call and be inlined, and a refusal must never be folded into a constant at plan time.
-- guestpass.require_caller (get_quota, set_timezone) keeps its answers and now calls caller_id; public.consume_quota
-- calls caller_id and leaves the user's existence to guestpass.consume_at's row lock, as since 0025.

create function guestpass.refuse_caller(p_message text)
    returns uuid
    language plpgsql
    volatile
    as $$
begin
    raise exception '%', p_message using errcode = '42501';
end
$$;

revoke all on function guestpass.refuse_caller(text) from public;

comment on function guestpass.refuse_caller(text) is
    'GuestPass internal: raises 42501 with message p_message (the refusing branch of guestpass.caller_id). Returns '
    'uuid only so that it can stand in a CASE branch of a uuid.';

create function guestpass.caller_id(p_user_id uuid)
    returns uuid
    language sql
    volatile
    as $$
    select case
        when auth.uid() is null then guestpass.refuse_caller('no user in the request claims')
        when p_user_id is not null and p_user_id <> auth.uid() then guestpass.refuse_caller('p_user_id must be the caller')
        else auth.uid()
    end
$$;

revoke all on function guestpass.caller_id(uuid) from public;

comment on function guestpass.caller_id(uuid) is
    'GuestPass internal: the caller''s user id (claim sub) when p_user_id is null or equal to it; else raises 42501 '
    '(guestpass.refuse_caller). Does not check that the user exists (guestpass.require_caller does). Inlinable: one '
    'expression, no SET clause.';

drop function guestpass.require_caller(uuid, boolean);

create function guestpass.require_caller(p_user_id uuid)
    returns uuid
    language plpgsql
    stable
    as $$
declare
    v_user uuid := guestpass.caller_id(p_user_id);
begin
    if not exists (select 1 from public.users as u where u.id = v_user and u.app_id = auth.app_id()) then
        raise exception 'unknown user' using errcode = '42501';
    end if;
    return v_user;
end
$$;

revoke all on function guestpass.require_caller(uuid) from public;

comment on function guestpass.require_caller(uuid) is
    'GuestPass internal: the caller''s user id (guestpass.caller_id) when the user exists in the claims'' app; else '
    'raises 42501. Runs with its caller''s rights (only SECURITY DEFINER functions of the owner call it).';

create or replace function public.consume_quota(p_user_id uuid default null, p_request_id text default null)
    returns jsonb
    language plpgsql
    security definer
    set search_path = ''
    as $$
begin
    -- The user's existence in the claims' app is checked by consume_at's row lock (42501 'unknown user').
    return guestpass.consume_at(guestpass.caller_id(p_user_id), p_request_id, guestpass.clock(), auth.app_id());
end
$$;
