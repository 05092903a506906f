-- the request roles execute only the functions granted to them, and each has a statement timeout
-- Before the table API opens (every table and function of the exposed schemas becomes reachable by the roles that
-- hold privileges on it), the last functions that PUBLIC could execute lose that default:
--   * auth.has_role(text), auth.is_partner(uuid), auth.partner_ids(): policy helpers. Their grants to the roles that
--     use them stay (has_role: anon, authenticated, service_role; is_partner and partner_ids: authenticated); only
--     PUBLIC's default EXECUTE goes, so a role added to the cluster later gets nothing by default.
--   * guestpass.account_name(text): called only by SECURITY DEFINER functions (update_user, complete_account_setup,
--     list_partners) and the trigger function mark_account_setup, i.e. as the owner.
--   * guestpass.set_updated_at() and guestpass.mark_account_setup(): trigger functions. PostgreSQL checks EXECUTE on
--     a trigger function when the trigger is created, not when it fires, so an authenticated caller's update of its
--     own public.users row still runs them (pgTAP 03, 32), as check_credits_balance and check_user_timezone already
--     do.
-- pgTAP 32 now fails on any function of auth, guestpass, guestpass_server or public (outside extensions) that PUBLIC
-- may execute.
--
-- Statement timeouts per request role, Supabase's defaults: anon 3 s, authenticated 8 s; service_role (the app's own
-- backend, with its batch jobs) keeps the server's default. They are stored as the roles' own settings
-- (ALTER ROLE … SET, pg_db_role_setting) and take effect only where the server applies them: PostgreSQL applies a
-- role's settings at login, never on SET ROLE, and the request roles never log in. The server reads them and sets
-- statement_timeout per request (as PostgREST does); a session that switches roles by hand (psql, pgTAP) gets none.
-- Roles are cluster-wide and every database of the cluster runs this file, so a role that already has a
-- cluster-wide statement_timeout (an earlier database's migration, or the operator's own choice) is left as it is:
-- running the file again changes nothing, and an operator's value is kept. Two databases migrating at once may race
-- to the same catalog row; the loser's ALTER fails (unique violation, or "tuple concurrently updated") after the
-- winner commits, and then finds the setting present.

revoke all on function auth.has_role(text) from public;
revoke all on function auth.is_partner(uuid) from public;
revoke all on function auth.partner_ids() from public;
revoke all on function guestpass.account_name(text) from public;
revoke all on function guestpass.set_updated_at() from public;
revoke all on function guestpass.mark_account_setup() from public;

do $$
declare
    v_role text;
    v_timeout text;
begin
    for v_role, v_timeout in values ('anon', '3s'), ('authenticated', '8s') loop
        for v_attempt in 1 .. 2 loop
            exit when exists (
                select 1
                from pg_catalog.pg_db_role_setting as s
                join pg_catalog.pg_roles as r on r.oid = s.setrole
                where r.rolname = v_role and s.setdatabase = 0
                  and exists (select 1 from unnest(s.setconfig) as c where c like 'statement\_timeout=%')
            );
            begin
                execute format('alter role %I set statement_timeout = %L', v_role, v_timeout);
            exception when unique_violation or internal_error then
                -- Another database's migration set it concurrently and committed: look again.
                if v_attempt = 2 then
                    raise;
                end if;
            end;
        end loop;
    end loop;
end
$$;
