-- pair_with_code refuses a missing code: p_code null is a bad request (400), not a guess
-- A JSON null for p_code (or no code at all, which PostgreSQL's strictness would otherwise hide behind upper(btrim(
-- null))) looked a code up as null and answered {paired: false, reason: no_such_code}, 200, with a token taken: the
-- OpenAPI document says p_code is a string, and schemathesis's negative tests expect a 4xx for null (issue 26).
-- A null carries no guess, so refusing it before the rate-limit tokens are taken reveals nothing about codes; it is
-- 22023 (invalid_parameter_value), HTTP 400, as every other argument check of the API. Every other string is still a
-- code (a wrong one answers no_such_code, with its token taken). Otherwise the body is 0035's, unchanged.

create or replace function public.pair_with_code(p_code text)
    returns jsonb
    language plpgsql
    volatile
    security definer
    set search_path = ''
    as $$
declare
    v_user uuid;
    v_app uuid;
    v_partner uuid;
    v_limit integer;
    v_code text := upper(btrim(p_code));
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    -- No code is a malformed request, not a try: refused before any token is taken (it guesses nothing).
    if p_code is null then
        raise exception 'p_code is required' using errcode = '22023';
    end if;
    -- Every try takes a token first, found or not: the limit reveals nothing about codes.
    perform guestpass.enforce_rate_limit('pair:user:' || v_user::text, 10, 10.0 / 3600);
    perform guestpass.enforce_rate_limit(
        'pair:ip:' || guestpass.client_address_key(current_setting('request.client_ip', true)), 30, 30.0 / 3600
    );

    -- Refusals are answers, not errors: an error would roll back the tokens just taken, and a guesser would never
    -- run out of them.
    select s.user_id into v_partner from guestpass.share_codes as s where s.app_id = v_app and s.code = v_code;
    if not found then
        return jsonb_build_object('paired', false, 'reason', 'no_such_code');
    end if;
    if v_partner = v_user then
        return jsonb_build_object('paired', false, 'reason', 'own_code');
    end if;

    -- Both users, in id order: concurrent pairings of either run one at a time.
    perform 1 from public.users as u where u.id in (v_user, v_partner) order by u.id for no key update;
    if exists (select 1 from public.partners as p where p.user_id = v_user and p.partner_id = v_partner) then
        return jsonb_build_object('paired', false, 'reason', 'already_partners');
    end if;
    select a.partner_limit into v_limit from guestpass.apps as a where a.id = v_app;
    if (select count(*) from public.partners as p where p.user_id = v_user) >= v_limit
       or (select count(*) from public.partners as p where p.user_id = v_partner) >= v_limit then
        return jsonb_build_object('paired', false, 'reason', 'partner_limit');
    end if;

    insert into public.partners (app_id, user_id, partner_id)
    values (v_app, v_user, v_partner), (v_app, v_partner, v_user);
    return jsonb_build_object('paired', true, 'partner_id', v_partner);
end
$$;

comment on function public.pair_with_code(text) is
    'Pairs the caller with the owner of share code p_code (case and surrounding spaces ignored); both see it. p_code '
    'null is 22023 ''p_code is required'' (HTTP 400), before any token is taken. Takes a token from the caller''s '
    'pairing bucket (pair:user:<id>, 10, refilled 10 an hour) and the client address''s (pair:ip:<address>, 30, 30 an '
    'hour) first: empty → PT429 (with the seconds to wait). Returns {paired: true, partner_id}, or {paired: false, '
    'reason}: no_such_code (a wrong or unknown code alike), own_code, already_partners, partner_limit (either user at '
    'the app''s limit). Refusals are answers, not errors, so that the tokens they took stay taken.';
