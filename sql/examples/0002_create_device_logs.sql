-- create public.device_logs, the example app's per-device log, keyed on the device the server put in the claims
-- The documents' log table trusted a device id sent by the client. Here device_id defaults to auth.device_id(), the
-- device of the verified token, and every policy requires it: two devices of the same user (A1, A2) never see or
-- change each other's logs, and a client cannot name another device. service_role (the app's backend) may read its
-- app's logs, nothing else; anon gets nothing.
-- Its row-level security, grants, policies and functions are in repeatable/02_device_logs.sql.

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
