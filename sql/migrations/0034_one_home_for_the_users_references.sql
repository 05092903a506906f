-- one home for "which rows reference a user": guestpass.user_references, used by the merge and the deletion
-- merge_guest (0031) and delete_account (0033) each found the columns that reference public.users(id) with the same
-- catalog query. It is now one function, which the stale-guest prune will use too, and both call it. Their behaviour
-- is unchanged.

create function guestpass.user_references(p_schemas text[])
    returns table (schema_name name, table_name name, column_name name, on_delete "char")
    language sql
    stable
    as $$
    select n.nspname, c.relname, a.attname, k.confdeltype
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
$$;

revoke all on function guestpass.user_references(text[]) from public;

comment on function guestpass.user_references(text[]) is
    'GuestPass internal: every column of public and the schemas p_schemas (never guestpass, guestpass_server or auth) '
    'whose foreign key references public.users(id), with the key''s ON DELETE action (pg_constraint.confdeltype: c '
    'cascade, n set null, d set default, a no action, r restrict); the rows an account''s merge moves and its deletion '
    'removes.';

create or replace function guestpass_server.merge_guest(p_session_id uuid, p_token_hash text, p_schemas text[])
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
        select r.schema_name, r.table_name, r.column_name
        from guestpass.user_references(p_schemas) as r
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

create or replace function guestpass_server.delete_account(p_schemas text[])
    returns table (apple_subject text, apple_client_id text, apple_refresh_token bytea)
    language plpgsql
    security definer
    set search_path = ''
    as $$
declare
    v_user uuid;
    v_app uuid;
    v_fk record;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    perform 1 from public.users as u where u.id = v_user and u.app_id = v_app for update;
    if not found then
        return;
    end if;

    return query
    select i.subject, i.apple_client_id, i.apple_refresh_token
    from guestpass.identities as i
    where i.user_id = v_user and i.provider = 'apple' and i.apple_refresh_token is not null;

    -- Rows that would block the delete (a foreign key without ON DELETE CASCADE / SET NULL) go first.
    for v_fk in
        select r.schema_name, r.table_name, r.column_name
        from guestpass.user_references(p_schemas) as r
        where r.on_delete not in ('c', 'n', 'd')
    loop
        execute format('delete from %I.%I where %I = $1', v_fk.schema_name, v_fk.table_name, v_fk.column_name)
            using v_user;
    end loop;

    delete from public.users as u where u.id = v_user;
end
$$;
