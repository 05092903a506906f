-- add per-app quota and DeviceCheck settings to guestpass.apps, and the server's read of its app's DeviceCheck setup
-- Quotas (0011) read daily_free_allowance, the welcome grant (0012) reads welcome_grant_credits; the DeviceCheck
-- client needs the team id, key id, the path of the .p8 key (the key itself never enters the database) and where to
-- send requests: Apple's development or production host, or devicecheck_base_url, which overrides both (the local
-- stand-in). Settable with `guestpass apps` (the CLI runs as the owner). The server reads them through
-- guestpass_server.app_devicecheck_settings(), for the app of the verified claims only.

alter table guestpass.apps
    add column if not exists daily_free_allowance integer not null default 3
        constraint apps_daily_free_allowance_check check (daily_free_allowance >= 0),
    add column if not exists welcome_grant_credits integer not null default 10
        constraint apps_welcome_grant_credits_check check (welcome_grant_credits >= 0),
    add column if not exists devicecheck_team_id text
        constraint apps_devicecheck_team_id_check check (devicecheck_team_id <> ''),
    add column if not exists devicecheck_key_id text
        constraint apps_devicecheck_key_id_check check (devicecheck_key_id <> ''),
    add column if not exists devicecheck_key_path text
        constraint apps_devicecheck_key_path_check check (devicecheck_key_path <> ''),
    add column if not exists devicecheck_environment text
        constraint apps_devicecheck_environment_check
            check (devicecheck_environment in ('development', 'production')),
    add column if not exists devicecheck_base_url text
        constraint apps_devicecheck_base_url_check check (devicecheck_base_url ~ '^https?://[^/?#]+');

comment on column guestpass.apps.daily_free_allowance is
    'GuestPass: free consumes per user per day (the day of the user''s timezone); 0 = none. Default 3.';
comment on column guestpass.apps.welcome_grant_credits is
    'GuestPass: credits granted once per physical device through DeviceCheck (the welcome grant). Default 10.';
comment on column guestpass.apps.devicecheck_team_id is 'GuestPass: Apple developer team id (iss of the DeviceCheck JWT).';
comment on column guestpass.apps.devicecheck_key_id is 'GuestPass: id of the DeviceCheck .p8 key (kid of the JWT).';
comment on column guestpass.apps.devicecheck_key_path is
    'GuestPass: filesystem path of the DeviceCheck .p8 private key on the server (the key is never stored here).';
comment on column guestpass.apps.devicecheck_environment is
    'GuestPass: development or production: which Apple DeviceCheck host to call; null = not configured.';
comment on column guestpass.apps.devicecheck_base_url is
    'GuestPass: base URL (http or https) that overrides the environment''s Apple host, e.g. the local stand-in.';

create or replace function guestpass_server.app_devicecheck_settings()
returns table (
    team_id text,
    key_id text,
    key_path text,
    environment text,
    base_url text,
    welcome_grant_credits integer
)
language sql
stable
security definer
set search_path = ''
as $$
    select a.devicecheck_team_id, a.devicecheck_key_id, a.devicecheck_key_path, a.devicecheck_environment,
           a.devicecheck_base_url, a.welcome_grant_credits
    from guestpass.apps as a
    where a.id = auth.app_id()
$$;

comment on function guestpass_server.app_devicecheck_settings() is
    'GuestPass server: the DeviceCheck settings of the caller''s app (claim app_id): team id, key id, .p8 key path, '
    'environment, base URL override and the welcome grant in credits; no row without a known app. Columns are null '
    'when not configured.';

revoke execute on function guestpass_server.app_devicecheck_settings() from public;
grant execute on function guestpass_server.app_devicecheck_settings() to authenticated;
