-- the table API's refusals (from(...)): the functions the server calls to answer like PostgREST
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.
--
-- Notes carried from the change log before the re-baseline (NNNN names one of its files, in git history):
--
-- the table API's refusals that must roll a write back: a singular response with other than one row, max-affected
-- `/rest/v1/<table>` answers PostgREST's 406 PGRST116 when a request asks for one object
-- (`Accept: application/vnd.pgrst.object+json`) and the statement touched 0 or several rows, and 400 PGRST124 when a
-- PATCH or DELETE under `Prefer: handling=strict, max-affected=n` touched more than n. For a write, the rows must not
-- stay written: the statement itself raises, so the request transaction (one pipeline, one Sync) rolls back as a
-- whole. The error is PostgREST's own convention for SQL that answers with a PostgREST code: SQLSTATE 'PGRST', the
-- code as the message, the row count as the detail (`HTTP/APIError.swift` maps it). It lives with the other server
-- functions (SECURITY DEFINER like them, though it reads and writes nothing) and is the one of them service_role may
-- call: the app's backend writes tables too.

create or replace function guestpass_server.refuse_table_result(p_code text, p_rows bigint)
    returns text
    language plpgsql volatile security definer set search_path = '' as $$
begin
    raise exception '%', p_code using errcode = 'PGRST', detail = p_rows::text;
end
$$;

comment on function guestpass_server.refuse_table_result(text, bigint) is
    'GuestPass server: raises SQLSTATE PGRST with message p_code (PGRST116: not one row for a singular response; '
    'PGRST124: more rows than max-affected) and detail p_rows, so the table API''s statement and its transaction roll back.';

-- A filter's `fts` value (to_tsquery's syntax: `a & !b`, `c:*`) is the client's text, which PostgreSQL's parser may
-- refuse (42601, as if our statement were malformed). The table API calls to_tsquery through this function instead,
-- once per statement (a scalar subquery), which answers a refused query as PostgREST's parse error, PGRST100, with
-- PostgreSQL's message as the detail. (plainto_, phraseto_ and websearch_to_tsquery accept any text.) SECURITY
-- DEFINER as every server function is, though it reads nothing.
create or replace function guestpass_server.parse_tsquery(p_config regconfig, p_query text)
    returns tsquery
    language plpgsql stable security definer set search_path = '' as $$
begin
    return case when p_config is null then to_tsquery(p_query) else to_tsquery(p_config, p_query) end;
exception when syntax_error then
    raise exception 'PGRST100' using errcode = 'PGRST', detail = sqlerrm;
end
$$;

comment on function guestpass_server.parse_tsquery(regconfig, text) is
    'GuestPass server: to_tsquery(p_config, p_query) (the default configuration when p_config is null); a query it '
    'cannot parse raises SQLSTATE PGRST with message PGRST100 and PostgreSQL''s message as the detail.';

-- Grants: no function of this file is PUBLIC's; the roles below are the only callers of each.
revoke all on function guestpass_server.refuse_table_result(text, bigint) from public;
grant execute on function guestpass_server.refuse_table_result(text, bigint) to anon, authenticated, service_role;
revoke all on function guestpass_server.parse_tsquery(regconfig, text) from public;
grant execute on function guestpass_server.parse_tsquery(regconfig, text) to anon, authenticated, service_role;
