-- merge a guest into an account: the case GoTrue leaves to every app, after linking Apple answered identity_already_exists
-- A guest who signs in with an Apple id that already has an account (made on another phone, or before a reinstall)
-- cannot link it: the app signs in to that account and asks for the guest to be merged into it, proving possession of
-- the guest with the guest's refresh token. guestpass_server.merge_guest does it in one transaction:
--
-- * every row of the exposed schemas (and public, where the devices live) whose foreign key references the guest's
--   public.users.id is moved to the account, found from the catalog, so app tables need no code;
-- * the guest's credits move through the ledger (a merge_out row for the guest, a merge_in row for the account, so
--   the account's balance equals its ledger sum); each day's usage adds up; the welcome-grant mark is kept if either
--   had it;
-- * an app may define public.guestpass_on_merge(p_from uuid, p_to uuid) for what the generic move cannot do; it runs
--   after the move;
-- * the guest is deleted, and with it its sessions and refresh tokens (its devices, moved, now sign in to the
--   account). A unique-key conflict anywhere rolls everything back (the server answers 409).
--
-- Both users are locked in id order before anything moves, so concurrent merges of one guest run one at a time and
-- every one after the first finds the guest gone.

create function guestpass_server.merge_guest(p_session_id uuid, p_token_hash text, p_schemas text[])
    returns table (status text, guest_id uuid, credits_moved integer, credits_balance integer, rows_moved jsonb)
    language plpgsql
    security definer
    set search_path = ''
    as $$
declare
    v_to uuid;
    v_app uuid;
    v_from uuid;
    v_locked integer;
    v_guest public.users%rowtype;
    v_balance integer;
    v_moved jsonb := '{}'::jsonb;
    v_count integer;
    v_fk record;
begin
    select c.user_id, c.app_id into v_to, v_app from guestpass.require_user_and_app() as c;
    perform guestpass.require_hex_sha256(p_token_hash, 'the refresh token hash');

    -- The guest: the user of a live session whose live refresh token this is, in the caller's app.
    select s.user_id into v_from
    from guestpass.refresh_tokens as t
    join guestpass.sessions as s on s.id = t.session_id
    where t.token_hash = p_token_hash and t.session_id = p_session_id and t.revoked_at is null
      and s.revoked_at is null and s.app_id = v_app;
    if not found then
        return query select 'refresh_token_not_found'::text, null::uuid, null::integer, null::integer, null::jsonb;
        return;
    end if;
    if v_from = v_to then
        return query select 'same_user'::text, v_from, null::integer, null::integer, null::jsonb;
        return;
    end if;

    -- Both users, in id order; a concurrent merge that got here first has deleted the guest when this one proceeds.
    select count(*) into v_locked
    from (select u.id from public.users as u where u.id in (v_from, v_to) and u.app_id = v_app order by u.id for update) as l;
    select u.* into v_guest from public.users as u where u.id = v_from;
    if v_locked <> 2 or not found or not exists (
        select 1 from guestpass.refresh_tokens as t where t.token_hash = p_token_hash and t.revoked_at is null
    ) then
        return query select 'refresh_token_not_found'::text, null::uuid, null::integer, null::integer, null::jsonb;
        return;
    end if;
    if not v_guest.is_anonymous then
        return query select 'not_a_guest'::text, v_from, null::integer, null::integer, null::jsonb;
        return;
    end if;

    -- Credits, through the ledger.
    if v_guest.credits_balance > 0 then
        perform guestpass.apply_credit_change(v_from, -v_guest.credits_balance, 'merge_out', 'merge:' || v_from::text);
        perform guestpass.apply_credit_change(v_to, v_guest.credits_balance, 'merge_in', 'merge:' || v_from::text);
    end if;

    -- Usage, day by day.
    insert into guestpass.daily_usage as d (user_id, app_id, day, free_used, premium_used, credit_used, resets_at)
    select v_to, g.app_id, g.day, g.free_used, g.premium_used, g.credit_used, g.resets_at
    from guestpass.daily_usage as g
    where g.user_id = v_from
    on conflict (user_id, day) do update
        set free_used = d.free_used + excluded.free_used,
            premium_used = d.premium_used + excluded.premium_used,
            credit_used = d.credit_used + excluded.credit_used;

    -- The welcome-grant mark.
    update public.users as u
    set initial_grant_claimed = true
    where u.id = v_to and v_guest.initial_grant_claimed and not u.initial_grant_claimed;

    -- Every row that references the guest, in public and the exposed schemas.
    for v_fk in
        select n.nspname as schema_name, c.relname as table_name, a.attname as column_name
        from pg_catalog.pg_constraint as k
        join pg_catalog.pg_class as c on c.oid = k.conrelid
        join pg_catalog.pg_namespace as n on n.oid = c.relnamespace
        cross join lateral unnest(k.conkey, k.confkey) as m (local_attnum, referenced_attnum)
        join pg_catalog.pg_attribute as a on a.attrelid = k.conrelid and a.attnum = m.local_attnum
        join pg_catalog.pg_attribute as r on r.attrelid = k.confrelid and r.attnum = m.referenced_attnum
        where k.contype = 'f'
          and k.confrelid = 'public.users'::regclass
          and r.attname = 'id'
          and n.nspname = any (array_append(coalesce(p_schemas, '{}'), 'public'))
          and n.nspname not in ('guestpass', 'guestpass_server', 'auth')
        order by n.nspname, c.relname, a.attname
    loop
        execute format('update %I.%I set %I = $1 where %I = $2', v_fk.schema_name, v_fk.table_name, v_fk.column_name,
                       v_fk.column_name)
            using v_to, v_from;
        get diagnostics v_count = row_count;
        if v_count > 0 then
            v_moved := v_moved || jsonb_build_object(v_fk.schema_name || '.' || v_fk.table_name, v_count);
        end if;
    end loop;

    if to_regprocedure('public.guestpass_on_merge(uuid,uuid)') is not null then
        execute 'select public.guestpass_on_merge($1, $2)' using v_from, v_to;
    end if;

    -- The guest goes, with its sessions, refresh tokens, ledger and usage rows.
    delete from public.users as u where u.id = v_from;

    select u.credits_balance into v_balance from public.users as u where u.id = v_to;
    return query select 'merged'::text, v_from, v_guest.credits_balance, v_balance, v_moved;
end
$$;

revoke all on function guestpass_server.merge_guest(uuid, text, text[]) from public;
grant execute on function guestpass_server.merge_guest(uuid, text, text[]) to authenticated;

comment on function guestpass_server.merge_guest(uuid, text, text[]) is
    'GuestPass server: merges a guest into the caller''s account (claims sub and app_id). The guest is proven by its '
    'refresh token: p_token_hash (lowercase hex SHA-256) of a live token of live session p_session_id in the caller''s '
    'app. Moves every row referencing the guest''s public.users.id in public and p_schemas (from the catalog) to the '
    'caller, the credits through the ledger (merge_out / merge_in, idempotency key merge:<guest>), each day''s usage '
    '(added), the welcome-grant mark; runs public.guestpass_on_merge(p_from, p_to) when the app defines it; deletes the '
    'guest with its sessions. Returns status merged with the guest id, the credits moved, the account''s balance and '
    'the rows moved per table; or refresh_token_not_found (unknown, revoked, another app''s, or already merged), '
    'same_user, not_a_guest (the token''s user is not anonymous), changing nothing. A unique-key conflict raises 23505 '
    'and rolls everything back. Both users are locked in id order first: concurrent merges of one guest run one at a time.';
