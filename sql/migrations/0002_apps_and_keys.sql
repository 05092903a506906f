-- apps and their API keys: the tenants, their settings, and the keys that name them
-- Versioned: applied once, never edited after a release. Functions, policies and grants live in repeatable/.
--
-- Row-level security is enabled and forced on each table at birth, with no policies, so even a future grant by
-- mistake reads nothing. Keys are stored only as a hex SHA-256; the key itself is shown once and forgotten.
-- Every app setting is a column with a default and a check, set by `guestpass apps configure`: the free quota and
-- the welcome grant, DeviceCheck, Sign in with Apple, the role set at account set-up, share codes and partners,
-- and how long an idle guest is kept.

create table guestpass.apps (
    id uuid not null default gen_random_uuid(),
    name text not null,
    settings jsonb not null default '{}',
    created_at timestamptz not null default now(),
    -- Quotas and the welcome grant.
    daily_free_allowance integer not null default 3
        constraint apps_daily_free_allowance_check check (daily_free_allowance >= 0),
    welcome_grant_credits integer not null default 10
        constraint apps_welcome_grant_credits_check check (welcome_grant_credits >= 0),
    -- DeviceCheck.
    devicecheck_team_id text
        constraint apps_devicecheck_team_id_check check (devicecheck_team_id <> ''),
    devicecheck_key_id text
        constraint apps_devicecheck_key_id_check check (devicecheck_key_id <> ''),
    devicecheck_key_path text
        constraint apps_devicecheck_key_path_check check (devicecheck_key_path <> ''),
    devicecheck_environment text
        constraint apps_devicecheck_environment_check
            check (devicecheck_environment in ('development', 'production')),
    devicecheck_base_url text
        constraint apps_devicecheck_base_url_check check (devicecheck_base_url ~ '^https?://[^/?#]+'),
    -- Sign in with Apple: the token's audiences and Apple's endpoints.
    apple_audiences text[] not null default '{}',
    apple_base_url text,
    -- The role public.complete_account_setup assigns.
    default_role text,
    -- Sign in with Apple: the key that signs client secrets (code exchange, revocation).
    apple_team_id text,
    apple_key_id text,
    apple_key_path text,
    -- Share codes and partners.
    share_code_length integer not null default 6,
    share_code_digits_only boolean not null default false,
    partner_limit integer not null default 1,
    -- Pruning idle guests.
    guest_idle_days integer not null default 90,
    constraint apps_pkey primary key (id),
    constraint apps_name_check check (name <> ''),
    constraint apps_settings_check check (jsonb_typeof(settings) = 'object'),
    constraint apps_apple_audiences_check check (
        cardinality(apple_audiences) <= 20
        and array_position(apple_audiences, null) is null
        and array_to_string(apple_audiences, '') !~ '\s'
    ),
    constraint apps_apple_base_url_check check (apple_base_url ~ '^https?://[^\s/]+(:[0-9]+)?(/[^\s]*)?$'),
    constraint apps_default_role_check check (default_role ~ '^[a-z][a-z0-9_]{0,39}$'),
    constraint apps_apple_team_id_check check (apple_team_id ~ '^[A-Z0-9]{10}$'),
    constraint apps_apple_key_id_check check (apple_key_id ~ '^[A-Z0-9]{10}$'),
    constraint apps_share_code_length_check check (share_code_length between 4 and 12),
    constraint apps_partner_limit_check check (partner_limit between 1 and 100),
    constraint apps_guest_idle_days_check check (guest_idle_days between 1 and 3650)
);

comment on table guestpass.apps is
    'GuestPass: one row per app (tenant). Each app has its own API keys, settings, users and devices.';

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

comment on column guestpass.apps.apple_audiences is
    'Sign in with Apple: the audiences (app bundle ids, Services ids) an identity token may name; empty = off.';

comment on column guestpass.apps.apple_base_url is
    'Sign in with Apple: the base URL of Apple''s endpoints (/auth/keys), e.g. a local stand-in; null = '
    'https://appleid.apple.com.';

comment on column guestpass.apps.default_role is
    'The role public.complete_account_setup assigns once (e.g. client); null = none.';

comment on column guestpass.apps.apple_team_id is 'Sign in with Apple: the Apple team id (the client secret''s iss).';

comment on column guestpass.apps.apple_key_id is 'Sign in with Apple: the key id of the .p8 key (the client secret''s kid).';

comment on column guestpass.apps.apple_key_path is
    'Sign in with Apple: the path of the .p8 key, readable by the server, that signs client secrets for the code '
    'exchange and revocation; null = no exchange, no revocation.';

comment on column guestpass.apps.share_code_length is 'Share codes: characters per code (4 to 12, default 6).';

comment on column guestpass.apps.share_code_digits_only is 'Share codes: digits only (a keypad), else the look-alike-free alphabet.';

comment on column guestpass.apps.partner_limit is 'Partners a user may have at once (default 1).';

comment on column guestpass.apps.guest_idle_days is
    'Days without a sign-in, refresh or request after which a guest that holds nothing is pruned (default 90).';

-- A lowercase hex SHA-256 is checked as octet_length(x) = 64 and x !~ '[^0-9a-f]' (here and in every hash column):
-- the same strings as x ~ '^[0-9a-f]{64}$' at about a twentieth of its cost (0.35 against 6–10 µs a check).
create table guestpass.api_keys (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null,
    kind text not null,
    key_hash text not null,
    key_prefix text not null,
    created_at timestamptz not null default now(),
    revoked_at timestamptz,
    constraint api_keys_pkey primary key (id),
    constraint api_keys_app_id_fkey foreign key (app_id) references guestpass.apps (id) on delete cascade,
    constraint api_keys_kind_check check (kind in ('publishable', 'secret')),
    constraint api_keys_key_hash_key unique (key_hash),
    constraint api_keys_key_hash_check check (octet_length(key_hash) = 64 and key_hash !~ '[^0-9a-f]')
);

comment on table guestpass.api_keys is
    'GuestPass: API keys per app. publishable = anon role, secret = service_role. key_hash is the lowercase hex '
    'SHA-256 of the key (the key is never stored); key_prefix is its first characters, for display. '
    'A key with revoked_at set is refused.';

create index api_keys_app_id_idx on guestpass.api_keys (app_id);

