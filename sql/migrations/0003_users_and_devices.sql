-- users and devices: public.users (guests first), public.devices, and the devices' secrets in guestpass.device_secrets
-- Versioned: applied once, never edited after a release. Functions, policies and grants live in repeatable/.
--
-- Email is optional (guests have none) and unique per app only: a global unique key would tell one tenant that an
-- address exists in another. A device is found by a hash of a client-held secret: the client keeps a random device
-- secret in its Keychain; only its hex SHA-256 is stored, unique per app, so the same app + secret always finds the
-- same device (and guest). `id` is the public device id that goes into tokens as the device_id claim.
--
-- The secrets sit in guestpass.device_secrets, not in public.devices: the table API (GET /rest/v1/<table>) serves
-- every table of an exposed schema to the roles that hold privileges on it, and select=* expands to every column.
-- The hash of a 122-bit random secret cannot be reversed, but it is the key of the sign-in and nothing a client
-- needs to read (PRODUCT.md section 4: secrets are never readable through the table API). No request role has any
-- privilege on device_secrets: only the SECURITY DEFINER sign-in functions (ensure_guest_device, redeem_account_code,
-- create_guest_user) read and write it, under the advisory lock per (app, secret hash) that makes one guest per
-- device; were the lock ever skipped, the unique key would refuse the second insert (23505). A merge moves devices
-- (their ids, hence their secrets, stay); deleting an account or pruning a guest deletes its devices, and their
-- secrets with them (device_secrets_device_id_fkey cascades).
--
-- Devices and sessions reach their app only through their user, by the composite foreign keys (user_id, app_id) →
-- public.users (id, app_id): a direct key to guestpass.apps took a share lock on the app's one row for every new
-- device and session, and deleting an app still removes them (through its users).

create table public.users (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null,
    email text,
    is_anonymous boolean not null default true,
    onboarding_completed boolean not null default false,
    timezone text not null default 'UTC',
    language text,
    notification_enabled boolean not null default false,
    user_metadata jsonb not null default '{}',
    app_metadata jsonb not null default '{}',
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    credits_balance integer not null default 0
        constraint users_credits_balance_check check (credits_balance >= 0),
    is_premium boolean not null default false,
    initial_grant_claimed boolean not null default false,
    constraint users_pkey primary key (id),
    -- Lets public.devices reference (user_id, app_id), so a device always belongs to its user's app.
    constraint users_id_app_id_key unique (id, app_id),
    constraint users_app_id_fkey foreign key (app_id) references guestpass.apps (id) on delete cascade,
    constraint users_user_metadata_check check (jsonb_typeof(user_metadata) = 'object'),
    constraint users_app_metadata_check check (jsonb_typeof(app_metadata) = 'object')
);

comment on table public.users is
    'GuestPass: users of an app, anonymous guests first (is_anonymous). Clients read their own row and may change '
    'only onboarding_completed, language and notification_enabled; the timezone (it meters the quota day) changes '
    'through public.set_timezone. user_metadata is client-editable data; authorization data belongs in app_metadata.';

comment on column public.users.credits_balance is
    'GuestPass: credits left; always the balance_after of the user''s newest guestpass.credit_ledger row (0 without '
    'one). Changed only by the server''s functions.';

comment on column public.users.is_premium is
    'GuestPass: premium users are not metered (set by the app''s backend with public.set_premium).';

comment on column public.users.initial_grant_claimed is
    'GuestPass: mirrors Apple''s DeviceCheck bit0 for this user: the welcome grant was given or refused. Server only.';

create unique index users_app_email_key on public.users (app_id, lower(email)) where email is not null;

create index users_app_id_idx on public.users (app_id);

create table public.devices (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null,
    user_id uuid not null,
    model text,
    os_version text,
    app_version text,
    build_number text,
    is_simulator boolean not null default false,
    created_at timestamptz not null default now(),
    last_seen_at timestamptz not null default now(),
    revoked_at timestamptz,
    constraint devices_pkey primary key (id),
    -- Composite, so a device and its user can never sit in different apps.
    constraint devices_user_id_fkey foreign key (user_id, app_id)
        references public.users (id, app_id) on delete cascade,
    -- Lets guestpass.sessions reference (device_id, user_id): a session's device is its user's.
    constraint devices_id_user_id_key unique (id, user_id)
);

comment on table public.devices is
    'GuestPass: a user''s devices. id is the public device id used as the device_id claim; the device''s secret (the '
    'SHA-256 of the client-held secret) is kept apart in guestpass.device_secrets, so nothing here is secret. Clients '
    'may only read their own devices; the server writes through SECURITY DEFINER functions.';

comment on column public.devices.revoked_at is
    'When the user revoked this device (public.revoke_device): its sessions ended then and its secret signs in no more.';

create index devices_user_id_idx on public.devices (user_id);

create table guestpass.device_secrets (
    device_id uuid not null,
    app_id uuid not null,
    secret_hash text not null,
    constraint device_secrets_pkey primary key (device_id),
    constraint device_secrets_device_id_fkey foreign key (device_id) references public.devices (id) on delete cascade,
    -- One secret is one device per app: the key of every sign-in by device (ensure_guest_device, create_guest_user,
    -- redeem_account_code).
    constraint device_secrets_app_secret_key unique (app_id, secret_hash),
    constraint device_secrets_secret_hash_check check (octet_length(secret_hash) = 64 and secret_hash !~ '[^0-9a-f]')
);

comment on table guestpass.device_secrets is
    'GuestPass: the secret of each device, kept out of the exposed public.devices (0043). secret_hash is the '
    'lowercase hex SHA-256 of the client-held device secret (the secret is never stored), unique per app; app_id is '
    'the device''s app. No request role has any privilege on it: only the SECURITY DEFINER sign-in functions '
    '(ensure_guest_device, redeem_account_code, create_guest_user) read and write it. Deleting a device deletes its '
    'secret.';

comment on column guestpass.device_secrets.device_id is 'The device (public.devices.id, its public id).';

comment on column guestpass.device_secrets.app_id is
    'The device''s app (public.devices.app_id): the scope of the secret.';

comment on column guestpass.device_secrets.secret_hash is
    'Lowercase hex SHA-256 of the client-held device secret; one device per (app_id, secret_hash).';

