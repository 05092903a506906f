-- Functions the test suites call through the RPC endpoint: fail_with raises the error shapes the endpoint must map
-- (custom PT402, plain P0001, unique 23505); echo_bigint and echo_numeric return their argument unchanged: the RPC
-- endpoint passes a JSON number to PostgreSQL as the text it was written with, so integers beyond 2^53 and decimals
-- beyond a double's 17 significant digits arrive and come back digit for digit.
-- SECURITY INVOKER with search_path = '' like every example function; echo_* are IMMUTABLE, so GET may call them too.

create or replace function public.fail_with(p_kind text)
    returns void
    language plpgsql volatile set search_path = '' as $$
begin
    case p_kind
        when 'custom' then
            raise exception 'custom failure' using errcode = 'PT402', detail = 'd', hint = 'h';
        when 'plain' then
            raise exception 'plain failure';
        when 'unique' then
            raise unique_violation using message = 'unique failure';
        else
            raise exception 'unknown kind: %', p_kind using errcode = '22023';
    end case;
end
$$;

comment on function public.fail_with(text) is
    'Example app, for error-shape tests: always raises. custom: PT402 ''custom failure'' with detail d and hint h; '
    'plain: P0001 ''plain failure''; unique: 23505 ''unique failure''; anything else: 22023.';

create or replace function public.echo_bigint(p bigint)
    returns bigint
    language sql immutable set search_path = '' as $$
    select p
$$;

comment on function public.echo_bigint(bigint) is
    'Example app, for number tests: returns p unchanged (9007199254740993 stays 9007199254740993).';

create or replace function public.echo_numeric(p numeric)
    returns numeric
    language sql immutable set search_path = '' as $$
    select p
$$;

comment on function public.echo_numeric(numeric) is
    'Example app, for number tests: returns p unchanged, with all its digits and its scale (1.50 stays 1.50).';

revoke execute on function public.fail_with(text), public.echo_bigint(bigint), public.echo_numeric(numeric) from public;
grant execute on function public.fail_with(text) to anon, authenticated;
grant execute on function public.echo_bigint(bigint), public.echo_numeric(numeric) to authenticated, service_role;
