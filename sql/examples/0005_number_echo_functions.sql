-- create echo_bigint and echo_numeric, which return their argument unchanged: the RPC endpoint passes a JSON number to
-- PostgreSQL as the text it was written with, so integers beyond 2^53 and decimals beyond a double's 17 significant
-- digits arrive and come back digit for digit.
-- SECURITY INVOKER with search_path = '' like every example function; IMMUTABLE, so GET may call them too. EXECUTE is
-- revoked from PUBLIC and granted to authenticated and service_role.

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

revoke execute on function public.echo_bigint(bigint), public.echo_numeric(numeric) from public;

grant execute on function public.echo_bigint(bigint), public.echo_numeric(numeric) to authenticated, service_role;
