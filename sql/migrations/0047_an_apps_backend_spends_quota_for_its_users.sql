-- an app's backend reads and spends its users' quota: get_quota and consume_quota with the secret key and p_user_id
-- The quota document's server-side function receives a user id and calls rpc('get_quota', {p_user_id}) before the
-- paid work, then rpc('consume_quota', {p_user_id, p_request_id}). With the app's secret key (role service_role, no
-- user in the claims) both answered 403 'permission denied for function get_quota' (issue 26). A backend holding the
-- secret key is already trusted for its app (grant_credits and set_premium take any user of it), so:
--
-- * both functions are executable by service_role;
-- * guestpass.caller_id, their one home for "who is the user", takes its refusing branches (no user in the claims) to
--   guestpass.backend_user (new): for service_role that is p_user_id when it is a user of the claims' app, else
--   PT404 'unknown user' (HTTP 404) — the same answer, byte for byte, for an id no one has and for another app's
--   user, so a backend learns nothing about other apps — and 22023 'p_user_id is required with the secret key' when
--   it names no user; for every other role the same 42501 'no user in the request claims' as before;
-- * nothing else changes: a signed-in user still may pass only itself (42501 'p_user_id must be the caller'), and the
--   backend's consume is the user's own consume (guestpass.consume_at: the same row lock, order, idempotency by
--   p_request_id or Idempotency-Key in the user's namespace, PT429 with Retry-After, ledger rows).
-- The user's path is unchanged and costs nothing more: the new function runs only on branches that used to refuse.

create function guestpass.backend_user(p_user_id uuid)
    returns uuid
    language plpgsql
    stable
    set search_path = ''
    as $$
begin
    if auth.role() is distinct from 'service_role' then
        return guestpass.refuse_caller('no user in the request claims');
    end if;
    if p_user_id is null then
        raise exception 'p_user_id is required with the secret key' using errcode = '22023';
    end if;
    -- Unknown anywhere and a user of another app are one answer: nothing to tell them apart.
    if not exists (select 1 from public.users as u where u.id = p_user_id and u.app_id = guestpass.require_app()) then
        raise exception 'unknown user' using errcode = 'PT404';
    end if;
    return p_user_id;
end
$$;

revoke all on function guestpass.backend_user(uuid) from public;

comment on function guestpass.backend_user(uuid) is
    'GuestPass internal: the user an app''s backend (role service_role, no user in the claims) acts for: p_user_id when '
    'it is a user of the claims'' app; else PT404 ''unknown user'' (the same for an unknown id and another app''s user); '
    '22023 ''p_user_id is required with the secret key'' when null. For any other role raises 42501 ''no user in the '
    'request claims'' (guestpass.refuse_caller). Called only from guestpass.caller_id''s branches without a user claim.';

create or replace function guestpass.caller_id(p_user_id uuid)
    returns uuid
    language sql
    volatile
    as $$
    select case
        when p_user_id is null then coalesce(auth.uid(), guestpass.backend_user(null))
        when auth.uid() is null then guestpass.backend_user(p_user_id)
        when p_user_id <> auth.uid() then guestpass.refuse_caller('p_user_id must be the caller')
        else p_user_id
    end
$$;

comment on function guestpass.caller_id(uuid) is
    'GuestPass internal: the user a quota call acts for. With a user in the claims (sub): that user when p_user_id is '
    'null or equal to it, else 42501 ''p_user_id must be the caller'' (guestpass.refuse_caller). Without one: '
    'guestpass.backend_user(p_user_id) — for service_role (an app''s backend) a user of the claims'' app (else PT404 '
    '''unknown user'', 22023 when null), for any other role 42501 ''no user in the request claims''. Does not check '
    'that a signed-in caller exists (guestpass.require_caller does). Inlinable: one expression, no SET clause; reads '
    'the claims once when p_user_id is null (0042, 0047).';

grant execute on function public.get_quota(uuid) to service_role;
grant execute on function public.consume_quota(uuid, text) to service_role;

comment on function public.get_quota(uuid) is
    'GuestPass: the caller''s quota: {quota_remaining (free uses left today, in the user''s timezone), daily_limit, '
    'credits_remaining, is_premium, resets_at (ISO-8601 UTC, next local midnight)}. A signed-in user may pass only '
    'itself as p_user_id (or null; else 42501). An app''s backend (service_role) passes a user of its app (else PT404 '
    '''unknown user'', for an unknown id and another app''s user alike; null is 22023).';

comment on function public.consume_quota(uuid, text) is
    'GuestPass: consumes one unit for the caller: premium (unmetered), else today''s free allowance, else one credit. '
    'Returns get_quota''s object after the consume plus charged (premium, free or credit). A p_request_id (or the '
    'Idempotency-Key header) used before for this user returns the first answer without charging again. When nothing '
    'is left raises PT429 ''quota exceeded'' (HTTP 429) with detail = seconds until the reset (Retry-After) and hint '
    'resets_at=<ISO-8601 UTC>. A signed-in user may pass only itself as p_user_id (or null; else 42501); an app''s '
    'backend (service_role) passes a user of its app (else PT404 ''unknown user'', the same for an unknown id and '
    'another app''s user; null is 22023), with the same idempotency, 429 and ledger as the user''s own call. A bad '
    'request id is 22023.';
