-- identities and accounts: the sign-in identities (Sign in with Apple) and the roles of a user
-- Versioned: applied once, never edited after a release. Sign-in, merging, the profile, set-up and deletion live in
-- repeatable/09_identities_and_accounts.sql.

create table guestpass.identities (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null,
    user_id uuid not null,
    provider text not null,
    subject text not null,
    email text,
    is_private_email boolean not null default false,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    last_sign_in_at timestamptz not null default now(),
    -- Apple's refresh token, kept to revoke it when the account is deleted, and the client id it was issued to.
    apple_client_id text,
    apple_refresh_token bytea,
    constraint identities_pkey primary key (id),
    constraint identities_app_provider_subject_key unique (app_id, provider, subject),
    constraint identities_user_id_fkey foreign key (user_id, app_id)
        references public.users (id, app_id) on delete cascade,
    constraint identities_provider_check check (provider in ('apple')),
    constraint identities_subject_check check (char_length(subject) between 1 and 255),
    constraint identities_email_check check (char_length(email) <= 320),
    constraint identities_apple_client_id_check check (char_length(apple_client_id) between 1 and 255),
    constraint identities_apple_refresh_token_check check (octet_length(apple_refresh_token) <= 4096)
);

comment on table guestpass.identities is
    'GuestPass: a sign-in identity of a user (provider apple: subject = Apple''s user id, the token''s sub), unique '
    'per app, provider and subject. email and is_private_email are what the provider last shared (an Apple relay '
    'address is private). Deleting the user deletes its identities, so a later sign-in with the same Apple id is a '
    'new user.';

create index identities_user_id_idx on guestpass.identities (user_id);

comment on column guestpass.identities.apple_client_id is
    'The audience of the identity token the refresh token came with: the client_id Apple expects at revocation.';

comment on column guestpass.identities.apple_refresh_token is
    'Apple''s refresh token from the authorization-code exchange, sealed by the server (AES-256-GCM, nonce ‖ '
    'ciphertext ‖ tag, associated data <app id>:<subject>), kept to revoke it when the account is deleted.';

create table guestpass.user_roles (
    user_id uuid not null,
    app_id uuid not null,
    role text not null,
    created_at timestamptz not null default now(),
    constraint user_roles_pkey primary key (user_id, role),
    constraint user_roles_user_id_fkey foreign key (user_id, app_id) references public.users (id, app_id) on delete cascade,
    constraint user_roles_role_check check (role ~ '^[a-z][a-z0-9_]{0,39}$')
);

comment on table guestpass.user_roles is
    'GuestPass: the roles of a user (one row per role), mirrored into users.app_metadata.roles so that access tokens '
    'carry them (auth.has_role).';

