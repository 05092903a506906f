-- pgTAP helpers for the DeviceCheck claim tests, included with \ir lib/devicecheck.sql: tokens are hashed as the
-- server hashes them, and claims are remembered by a name between statements. Run them as the request role that
-- makes the call (claim_ids is readable and writable by authenticated). Safe to include more than once.
--   claim_ids (name, id): the temporary table of remembered claims (dropped at commit).
--   pg_temp.h(token): the token hash of a test token (hex SHA-256 of its UTF-8).
--   pg_temp.begin_claim(name, token): devicecheck_begin with the token's hash as the current role; remembers the
--     claim it started, or the pending one it names, as p_name (a name already taken keeps its claim); answers the
--     status.
--   pg_temp.claim(name): the id of the claim remembered as p_name.
--   pg_temp.finish_claim(name, outcome): devicecheck_finish of the claim remembered as p_name, as the current role.
create temporary table if not exists claim_ids (name text primary key, id uuid) on commit drop;
grant select, insert on claim_ids to authenticated;

create or replace function pg_temp.h(p_token text)
returns text
language sql
immutable
as $$ select encode(sha256(convert_to(p_token, 'UTF8')), 'hex') $$;

create or replace function pg_temp.begin_claim(p_name text, p_token text)
returns text
language sql
as $$
    with b as (select * from guestpass_server.devicecheck_begin(pg_temp.h(p_token))),
    r as (
        insert into claim_ids select p_name, coalesce(b.claim_id, b.pending_claim_id) from b
        on conflict (name) do nothing
        returning 1
    )
    select b.status from b
$$;

create or replace function pg_temp.claim(p_name text)
returns uuid
language sql
as $$ select id from claim_ids where name = p_name $$;

create or replace function pg_temp.finish_claim(p_name text, p_outcome text)
returns table (granted boolean, credits_granted integer, credits_balance integer)
language sql
as $$ select * from guestpass_server.devicecheck_finish(pg_temp.claim(p_name), p_outcome) $$;
