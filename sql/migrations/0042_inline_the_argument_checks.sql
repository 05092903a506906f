-- the argument checks of sign-up, refresh and the rate limits become inlinable SQL: no PL/pgSQL call when they pass
-- A sign-up made seven PL/pgSQL calls only to check its arguments: guestpass.require_app, require_hex_sha256 three
-- times (twice in sign_up_guest, once in ensure_guest_device), check_rate_limit_arguments twice and
-- client_address_key once; a refresh made two (require_app, require_hex_sha256). Each call of a PL/pgSQL function
-- with a SET clause costs a GUC save and restore and a function set-up, for one or two comparisons. 0028 did the same
-- for the consume's claim checks (guestpass.caller_id). Here each check becomes a SQL function of one CASE or
-- COALESCE expression, which the planner inlines into its caller's statement, and which calls a refuser (a PL/pgSQL
-- function that raises) only on the branch that refuses:
--   * guestpass.require_app(): coalesce(auth.app_id(), guestpass.refuse_caller('no app in the request claims'));
--   * guestpass.require_hex_sha256 and guestpass.check_rate_limit_arguments: void CASE expressions whose refusing
--     branches call guestpass.refuse_argument (new: 22023 with the message given);
--   * guestpass.client_address_key: the dotted quad and the blank address (the cases a request has) in one CASE; any
--     other text goes to guestpass.client_address_key_parsed (new, the former body's inet parsing, unchanged).
-- Names, arguments, answers, error codes and messages are unchanged (pgTAP 08, 25, 26; every caller keeps its call).
-- require_app, require_hex_sha256 and check_rate_limit_arguments are now VOLATILE, as guestpass.caller_id is: an
-- inlined function may not be more volatile than it says, the refusers are VOLATILE, and a refusal must never be folded
-- into a constant at plan time. They have no SET clause (a SET clause stops inlining); every name in them is
-- schema-qualified, and they run inside SECURITY DEFINER functions that pin search_path. Measured per call, over
-- 100,000 rows on this VM, before and after: require_app 14.8 and 8.2 µs, require_hex_sha256 1.7 and 0.5,
-- check_rate_limit_arguments 1.3 and 0.1, client_address_key 3.6 and 1.6 (with the claims below: auth.uid() 15.1 and
-- 8.1, caller_id(null) 24.4 and 8.0). Whole transactions, paired pgbench rounds on copies of one seeded database (8
-- connections, fsync on): 0.99x the sign-ups and 1.03x the consumes a second of 0041, inside this VM's +-10 % a round.

create function guestpass.refuse_argument(p_message text)
    returns void
    language plpgsql
    volatile
    as $$
begin
    raise exception '%', p_message using errcode = '22023';
end
$$;

revoke all on function guestpass.refuse_argument(text) from public;

comment on function guestpass.refuse_argument(text) is
    'GuestPass internal: raises 22023 (invalid_parameter_value) with message p_message: the refusing branch of the '
    'inlinable argument checks guestpass.require_hex_sha256 and guestpass.check_rate_limit_arguments.';

comment on function guestpass.refuse_caller(text) is
    'GuestPass internal: raises 42501 with message p_message (the refusing branch of guestpass.caller_id and '
    'guestpass.require_app). Returns uuid only so that it can stand in a CASE or COALESCE of a uuid.';

create or replace function guestpass.require_app()
    returns uuid
    language sql
    volatile
    as $$
    select coalesce(auth.app_id(), guestpass.refuse_caller('no app in the request claims'))
$$;

comment on function guestpass.require_app() is
    'GuestPass internal: the app of the request (claim app_id, auth.app_id()); raises 42501 ''no app in the request '
    'claims'' when there is none or it is not a uuid. Inlinable: one expression, no SET clause (0042); VOLATILE '
    'because its refuser (guestpass.refuse_caller) is.';

create or replace function guestpass.require_hex_sha256(p_value text, p_name text)
    returns void
    language sql
    volatile
    as $$
    select case
        when pg_catalog.octet_length(p_value) = 64 and p_value !~ '[^0-9a-f]' then null::void
        else guestpass.refuse_argument(pg_catalog.format('%s must be a lowercase hex SHA-256', p_name))
    end
$$;

comment on function guestpass.require_hex_sha256(text, text) is
    'GuestPass internal: raises 22023 ''<p_name> must be a lowercase hex SHA-256'' unless p_value is 64 lowercase hex '
    'digits (null included: a caller whose argument is optional checks for null first). Tested as octet_length = 64 '
    'and no character outside [0-9a-f], the cheap form of ^[0-9a-f]{64}$ (0041). Inlinable: one CASE expression, no '
    'SET clause; VOLATILE because its refuser (guestpass.refuse_argument) is (0042).';

create or replace function guestpass.check_rate_limit_arguments(
    p_bucket text, p_capacity integer, p_refill_per_second double precision
)
    returns void
    language sql
    volatile
    as $$
    select case
        when p_bucket is null or p_bucket = '' then
            guestpass.refuse_argument('rate limit bucket must be a non-empty name')
        when p_capacity is null or p_capacity < 1 then
            guestpass.refuse_argument('rate limit capacity must be at least 1')
        -- (PostgreSQL sorts NaN above every number, Infinity included, so this also refuses NaN.)
        when p_refill_per_second is null
             or not (p_refill_per_second > 0 and p_refill_per_second < 'Infinity'::double precision) then
            guestpass.refuse_argument('rate limit refill rate must be a positive finite number')
        else null::void
    end
$$;

comment on function guestpass.check_rate_limit_arguments(text, integer, double precision) is
    'GuestPass internal: raises 22023 unless the rate limit arguments are valid: a non-empty bucket name, a capacity of '
    'at least 1 and a positive, finite refill rate per second. Shared by take_rate_limit, peek_rate_limit, '
    'sharded_rate_limit and take_signup_tokens. Inlinable: one CASE expression, no SET clause; VOLATILE because its '
    'refuser (guestpass.refuse_argument) is (0042).';

create function guestpass.client_address_key_parsed(p_address text)
    returns text
    language plpgsql
    immutable
    set search_path = ''
    as $$
declare
    v_address inet;
begin
    begin
        v_address := btrim(p_address)::inet;
    exception when invalid_text_representation then
        return left(p_address, 255);
    end;
    if family(v_address) = 6 then
        -- An IPv4-mapped address (::ffff:a.b.c.d) is that IPv4 client.
        if v_address << '::ffff:0:0/96'::inet then
            return host(('0.0.0.0'::inet + (v_address - '::ffff:0:0'::inet)));
        end if;
        return network(set_masklen(v_address, 64))::text;
    end if;
    return host(v_address);
end
$$;

revoke all on function guestpass.client_address_key_parsed(text) from public;

comment on function guestpass.client_address_key_parsed(text) is
    'GuestPass internal: guestpass.client_address_key of an address that is not blank and not a canonical dotted quad: '
    'parsed as inet, an IPv6 address is its /64 network, an IPv4-mapped IPv6 address its IPv4 address, another IPv4 '
    'spelling its canonical form (host(inet)), and text that is no address itself (at most 255 characters).';

create or replace function guestpass.client_address_key(p_address text)
    returns text
    language sql
    immutable
    as $$
    select case
        when p_address is null or pg_catalog.btrim(p_address) = '' then 'unknown'
        -- A dotted quad without leading zeros is its own canonical form (host(inet) gives it back unchanged).
        when pg_catalog.btrim(p_address) ~
             '^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$'
            then pg_catalog.btrim(p_address)
        else guestpass.client_address_key_parsed(p_address)
    end
$$;

comment on function guestpass.client_address_key(text) is
    'GuestPass internal: the rate-limit identity of a client address: an IPv4 address as itself, an IPv6 address as '
    'its /64 network (one customer''s LAN), an IPv4-mapped IPv6 address as its IPv4 address, a blank one as '
    '''unknown'', and text that is no address as itself (at most 255 characters). Inlinable: the blank address and the '
    'canonical dotted quad are one CASE expression; anything else is guestpass.client_address_key_parsed (0042).';

-- The claims, read for less. Every read of a uuid claim (auth.uid(), auth.app_id(), auth.device_id()) parses the
-- request's claims twice (the test, then the cast: an inlined expression has no common subexpressions); as json rather
-- than jsonb each parse costs about half (2.3 against 4.6 µs on this VM for the server's claims; a claim's value is the
-- same either way, the last of duplicate keys included, and a non-object still gives null). And guestpass.caller_id
-- read auth.uid() three times for a caller who names no user (the consume's case); it now reads it once, and twice
-- when p_user_id is given. Its answers and refusals are unchanged (pgTAP 02, 20, 26).

create or replace function auth.claim_uuid(claim text)
    returns uuid
    language sql
    stable
    as $$
    select case
        when (nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::json ->> claim)
            ~ '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$'
        then (nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::json ->> claim)::uuid
    end
$$;

comment on function auth.claim_uuid(text) is
    'One claim of the request claims (request.jwt.claims) as a uuid; null when absent, empty, not a canonical uuid, or '
    'when the claims are not a JSON object (never raises on it). Inlinable: one expression, no SET clause, so '
    'auth.uid(), auth.app_id() and auth.device_id() inline to it. Parses the claims as json, not jsonb: the same '
    'value at about half the cost of a parse (0042).';

create or replace function guestpass.caller_id(p_user_id uuid)
    returns uuid
    language sql
    volatile
    as $$
    select case
        when p_user_id is null then coalesce(auth.uid(), guestpass.refuse_caller('no user in the request claims'))
        when auth.uid() is null then guestpass.refuse_caller('no user in the request claims')
        when p_user_id <> auth.uid() then guestpass.refuse_caller('p_user_id must be the caller')
        else p_user_id
    end
$$;

comment on function guestpass.caller_id(uuid) is
    'GuestPass internal: the caller''s user id (claim sub) when p_user_id is null or equal to it; else raises 42501 '
    '(guestpass.refuse_caller): ''no user in the request claims'' first, then ''p_user_id must be the caller''. Does '
    'not check that the user exists (guestpass.require_caller does). Inlinable: one expression, no SET clause; reads '
    'the claims once when p_user_id is null (0042).';
