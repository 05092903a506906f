-- create public.device_logs, the example app's per-device log, keyed on the device the server put in the claims
-- The documents' log table trusted a device id sent by the client. Here device_id defaults to auth.device_id(), the
-- device of the verified token, and every policy requires it: two devices of the same user (A1, A2) never see or
-- change each other's logs, and a client cannot name another device. service_role (the app's backend) may read its
-- app's logs, nothing else; anon gets nothing.

create table if not exists public.device_logs (
    id bigint generated always as identity,
    app_id uuid not null default auth.app_id(),
    user_id uuid not null default auth.uid(),
    device_id uuid not null default auth.device_id(),
    level text not null default 'info',
    message text not null,
    created_at timestamptz not null default now(),
    constraint device_logs_pkey primary key (id),
    -- Composite, so a log and its user can never sit in different apps.
    constraint device_logs_user_id_fkey foreign key (user_id, app_id)
        references public.users (id, app_id) on delete cascade,
    constraint device_logs_device_id_fkey foreign key (device_id) references public.devices (id) on delete cascade,
    constraint device_logs_level_check check (level in ('debug', 'info', 'warning', 'error')),
    constraint device_logs_message_check check (char_length(message) <= 2000)
);

comment on table public.device_logs is
    'Example app: log lines of one device (level debug, info, warning or error; message up to 2000 characters). '
    'app_id, user_id and device_id default to the caller''s claims; a device sees and changes only its own lines, '
    'its app''s backend (service_role) may read those of its app.';

-- The owner columns the policies filter on (device first: the device's newest lines), and the foreign keys' columns.
create index if not exists device_logs_device_id_created_at_idx on public.device_logs (device_id, created_at desc);
create index if not exists device_logs_user_id_idx on public.device_logs (user_id);
create index if not exists device_logs_app_id_idx on public.device_logs (app_id);

alter table public.device_logs enable row level security;
alter table public.device_logs force row level security;

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
