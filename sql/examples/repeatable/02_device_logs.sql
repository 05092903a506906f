-- public.device_logs: row-level security, grants, policies keyed on the claims' device, and the log's RPC functions
-- (SECURITY INVOKER, as in 01_readings.sql).

alter table public.device_logs enable row level security, force row level security;

-- Grants: the first wall. Clients may change only level and message; never the owner columns.

grant select, insert, delete on table public.device_logs to authenticated;
grant update (level, message) on table public.device_logs to authenticated;
grant select on table public.device_logs to service_role;

-- Policies: the second wall, per command and role.

drop policy if exists device_logs_select_own on public.device_logs;
create policy device_logs_select_own on public.device_logs for select to authenticated
    using (device_id = (select auth.device_id()) and user_id = (select auth.uid())
           and app_id = (select auth.app_id()));

comment on policy device_logs_select_own on public.device_logs is
    'A device reads only its own log lines (the claims'' device, user and app).';

drop policy if exists device_logs_insert_own on public.device_logs;
create policy device_logs_insert_own on public.device_logs for insert to authenticated
    with check (device_id = (select auth.device_id()) and user_id = (select auth.uid())
                and app_id = (select auth.app_id()));

comment on policy device_logs_insert_own on public.device_logs is
    'A device adds log lines only as itself (anything else is 42501).';

drop policy if exists device_logs_update_own on public.device_logs;
create policy device_logs_update_own on public.device_logs for update to authenticated
    using (device_id = (select auth.device_id()) and user_id = (select auth.uid())
           and app_id = (select auth.app_id()))
    with check (device_id = (select auth.device_id()) and user_id = (select auth.uid())
                and app_id = (select auth.app_id()));

comment on policy device_logs_update_own on public.device_logs is 'A device changes only its own log lines.';

drop policy if exists device_logs_delete_own on public.device_logs;
create policy device_logs_delete_own on public.device_logs for delete to authenticated
    using (device_id = (select auth.device_id()) and user_id = (select auth.uid())
           and app_id = (select auth.app_id()));

comment on policy device_logs_delete_own on public.device_logs is 'A device deletes only its own log lines.';

drop policy if exists device_logs_select_app on public.device_logs;
create policy device_logs_select_app on public.device_logs for select to service_role
    using (app_id = (select auth.app_id()));

comment on policy device_logs_select_app on public.device_logs is
    'An app''s backend reads every log line of its app only.';

-- Functions.

create or replace function public.add_device_log(p_message text, p_level text default 'info')
    returns bigint
    language sql volatile set search_path = '' as $$
    insert into public.device_logs (level, message)
    values (coalesce(p_level, 'info'), p_message)
    returning id
$$;

comment on function public.add_device_log(text, text) is
    'Example app: adds a log line for the caller''s device (claims device_id, sub and app_id) and returns its id. '
    'p_level is debug, info (default), warning or error and p_message at most 2000 characters (else 23514); '
    'without a device in the claims raises 42501.';

create or replace function public.list_device_logs()
    returns table (id bigint, level text, message text, created_at timestamptz)
    language sql stable set search_path = '' as $$
    select l.id, l.level, l.message, l.created_at
    from public.device_logs as l
    order by l.created_at desc, l.id desc
$$;

comment on function public.list_device_logs() is
    'Example app: the log lines of the caller''s device, newest first. Other devices of the same user are not seen.';

revoke execute on function public.add_device_log(text, text), public.list_device_logs() from public;
grant execute on function public.add_device_log(text, text), public.list_device_logs() to authenticated;
