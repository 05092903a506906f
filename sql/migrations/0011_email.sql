-- email: email accounts (a guest adds an address, sign-up, password and one-time-code sign-in, recovery, email
-- change), their one-time codes, PKCE flow codes, and the outbox mail leaves through
-- Versioned: applied once, never edited after a release. The design (codes, limits, delivery) is written at the head
-- of repeatable/14_email.sql and repeatable/15_mail_outbox.sql, which hold the functions, policies and grants.
--
-- Every table here is internal: row-level security enabled and forced with no policies, no grant to any request
-- role; only SECURITY DEFINER functions read and write them. Nothing secret is kept in the clear: passwords as
-- scrypt strings (bcrypt ones imported from GoTrue until the next sign-in), one-time codes as HMAC-SHA256 under a
-- server key, link tokens and PKCE codes as SHA-256, SMTP passwords and queued mail bodies sealed (AES-256-GCM) by
-- the server.

-- Each app's email settings, set by `guestpass apps configure`.
alter table guestpass.apps
    add column email_enabled boolean not null default true,
    add column email_autoconfirm boolean not null default false,
    add column email_otp_length integer not null default 6
        constraint apps_email_otp_length_check check (email_otp_length between 6 and 10),
    add column email_otp_lifetime_seconds integer not null default 3600
        constraint apps_email_otp_lifetime_seconds_check check (email_otp_lifetime_seconds between 60 and 86400),
    add column email_send_interval_seconds integer not null default 60
        constraint apps_email_send_interval_seconds_check check (email_send_interval_seconds between 0 and 3600),
    add column email_hourly_limit integer not null default 100
        constraint apps_email_hourly_limit_check check (email_hourly_limit between 0 and 1000000),
    add column email_secure_change boolean not null default false,
    add column email_reauthenticate_password boolean not null default false,
    add column email_link_apple boolean not null default false,
    add column password_min_length integer not null default 8
        constraint apps_password_min_length_check check (password_min_length between 6 and 72),
    add column password_required_characters text[] not null default '{}'
        constraint apps_password_required_characters_check check (
            cardinality(password_required_characters) <= 8 and array_position(password_required_characters, null) is null
        ),
    add column site_url text
        constraint apps_site_url_check check (site_url ~ '^https?://[^\s]+$' and char_length(site_url) <= 2048),
    add column redirect_urls text[] not null default '{}'
        constraint apps_redirect_urls_check check (
            cardinality(redirect_urls) <= 50 and array_position(redirect_urls, null) is null
            and array_to_string(redirect_urls, '') !~ '\s'
        ),
    add column smtp_host text
        constraint apps_smtp_host_check check (smtp_host ~ '^[A-Za-z0-9.:\[\]-]{1,253}$'),
    add column smtp_port integer
        constraint apps_smtp_port_check check (smtp_port between 1 and 65535),
    add column smtp_user text
        constraint apps_smtp_user_check check (char_length(smtp_user) between 1 and 512),
    add column smtp_password bytea
        constraint apps_smtp_password_check check (octet_length(smtp_password) <= 1024),
    add column smtp_security text not null default 'starttls'
        constraint apps_smtp_security_check check (smtp_security in ('starttls', 'tls', 'plain')),
    add column smtp_sender text
        constraint apps_smtp_sender_check check (smtp_sender ~ '^[^\s<>@]+@[^\s<>@]+$' and char_length(smtp_sender) <= 254),
    add column smtp_sender_name text
        constraint apps_smtp_sender_name_check check (char_length(smtp_sender_name) <= 200 and smtp_sender_name !~ '[[:cntrl:]]'),
    add column smtp_ca_file text
        constraint apps_smtp_ca_file_check check (smtp_ca_file <> ''),
    add column email_templates jsonb not null default '{}'
        constraint apps_email_templates_check check (jsonb_typeof(email_templates) = 'object');

comment on column guestpass.apps.email_enabled is 'Email: email sign-up, sign-in and upgrade offered (default on).';
comment on column guestpass.apps.email_autoconfirm is
    'Email: addresses are taken as confirmed without a mail (GoTrue''s MAILER_AUTOCONFIRM); default off.';
comment on column guestpass.apps.email_otp_length is 'Email: digits per one-time code (6 to 10, default 6).';
comment on column guestpass.apps.email_otp_lifetime_seconds is
    'Email: how long a one-time code or link works (60 to 86400 seconds, default 3600).';
comment on column guestpass.apps.email_send_interval_seconds is
    'Email: the shortest time between two mails to one address (default 60 s; 429 over_email_send_rate_limit).';
comment on column guestpass.apps.email_hourly_limit is 'Email: mails the app may queue per hour (default 100; 0 = none).';
comment on column guestpass.apps.email_secure_change is
    'Email: an email change of a user with a confirmed address is confirmed by both addresses (default off).';
comment on column guestpass.apps.email_reauthenticate_password is
    'Email: a password change from a session older than 24 hours needs a reauthentication nonce (default off).';
comment on column guestpass.apps.email_link_apple is
    'Email: a first Sign in with Apple whose verified email is a confirmed address of an account signs in to that '
    'account instead of making a new one (default off).';
comment on column guestpass.apps.password_min_length is 'Passwords: the fewest characters (6 to 72, default 8).';
comment on column guestpass.apps.password_required_characters is
    'Passwords: character sets of which each password must hold one character (e.g. {abcdefghijklmnopqrstuvwxyz,0123456789}).';
comment on column guestpass.apps.site_url is 'Email: where links lead when redirect_to is absent or not allowed.';
comment on column guestpass.apps.redirect_urls is
    'Email: the redirect_to URLs links may lead to: exact, or a prefix ending in * (https://app.example/*).';
comment on column guestpass.apps.smtp_host is 'SMTP: the relay''s host; null = no mail leaves (it stays queued).';
comment on column guestpass.apps.smtp_password is
    'SMTP: the relay''s password, sealed by the server (AES-256-GCM, nonce ‖ ciphertext ‖ tag, bound to the app).';
comment on column guestpass.apps.smtp_security is
    'SMTP: starttls (required, the default), tls (implicit, port 465), or plain (refused unless the host is loopback).';
comment on column guestpass.apps.smtp_ca_file is 'SMTP: a CA file the server trusts for a private relay.';
comment on column guestpass.apps.email_templates is
    'Email: templates by kind (confirmation, magic_link, recovery, email_change, reauthentication), each '
    '{subject, text, html} in Mustache; a missing kind uses the built-in one.';

-- Email identities: the email provider beside Apple (subject = the user id, as GoTrue's).
alter table guestpass.identities drop constraint identities_provider_check;
alter table guestpass.identities add constraint identities_provider_check check (provider in ('apple', 'email'));

-- What a user's email account holds beyond public.users (which is readable by the user: nothing secret there).
create table guestpass.email_credentials (
    user_id uuid not null,
    app_id uuid not null,
    password_hash text,
    password_changed_at timestamptz,
    email_confirmed_at timestamptz,
    new_email text,
    email_change_secure boolean not null default false,
    confirmation_sent_at timestamptz,
    recovery_sent_at timestamptz,
    email_change_sent_at timestamptz,
    reauthentication_sent_at timestamptz,
    constraint email_credentials_pkey primary key (user_id),
    constraint email_credentials_user_id_fkey foreign key (user_id, app_id)
        references public.users (id, app_id) on delete cascade,
    constraint email_credentials_password_hash_check check (
        password_hash ~ '^\$(scrypt\$|2[aby]\$)' and octet_length(password_hash) <= 512
    ),
    constraint email_credentials_new_email_check check (char_length(new_email) <= 255)
);
comment on table guestpass.email_credentials is
    'GuestPass: a user''s password (a self-describing scrypt string, or an imported bcrypt one), whether and when its '
    'address (public.users.email) was confirmed, the address it is changing to (and whether that change needs both '
    'addresses to confirm it: email_change_secure), and when each kind of mail last left.';

-- One-time codes (and the link token sent with each), one live per user and purpose.
create table guestpass.email_codes (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null,
    user_id uuid not null,
    purpose text not null,
    address text not null,
    code_hash text not null,
    link_hash text not null,
    code_challenge text,
    code_challenge_method text,
    redirect_to text,
    device_id uuid,
    password_hash text,
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    failed_attempts integer not null default 0,
    used_at timestamptz,
    constraint email_codes_pkey primary key (id),
    constraint email_codes_user_purpose_key unique (user_id, purpose),
    constraint email_codes_link_hash_key unique (link_hash),
    constraint email_codes_user_id_fkey foreign key (user_id, app_id) references public.users (id, app_id) on delete cascade,
    constraint email_codes_purpose_check check (
        purpose in ('signup', 'magiclink', 'recovery', 'email_change_new', 'email_change_current', 'reauthentication')
    ),
    constraint email_codes_address_check check (address = lower(address) and char_length(address) between 3 and 255),
    constraint email_codes_code_hash_check check (octet_length(code_hash) = 64 and code_hash !~ '[^0-9a-f]'),
    constraint email_codes_link_hash_check check (octet_length(link_hash) = 64 and link_hash !~ '[^0-9a-f]'),
    constraint email_codes_challenge_check check (
        (code_challenge is null and code_challenge_method is null)
        or (code_challenge ~ '^[A-Za-z0-9._~-]{43,128}$' and code_challenge_method in ('s256', 'plain'))
    ),
    constraint email_codes_redirect_to_check check (char_length(redirect_to) <= 2048),
    constraint email_codes_password_hash_check check (
        password_hash ~ '^\$(scrypt\$|2[aby]\$)' and octet_length(password_hash) <= 512
    ),
    constraint email_codes_failed_attempts_check check (failed_attempts >= 0)
);
comment on table guestpass.email_codes is
    'GuestPass: the live one-time code of each user and purpose: code_hash = HMAC-SHA256 (server key) of app, address '
    'and code; link_hash = SHA-256 of the link token mailed with it. Single use (used_at), expires, and dead after 5 '
    'wrong tries (failed_attempts). A PKCE challenge turns its link into an authorization code. password_hash: the '
    'password a sign-up came with, which becomes the account''s only when this code confirms it (so a password set by '
    'someone who never read the mail does not survive the owner''s confirmation).';
create index email_codes_app_address_idx on guestpass.email_codes (app_id, address);

-- PKCE authorization codes (a verified link under PKCE answers ?code=…; POST /token?grant_type=pkce trades it).
create table guestpass.auth_codes (
    code_hash text not null,
    app_id uuid not null,
    user_id uuid not null,
    device_id uuid,
    code_challenge text not null,
    code_challenge_method text not null,
    authentication_method text not null,
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    used_at timestamptz,
    constraint auth_codes_pkey primary key (code_hash),
    constraint auth_codes_user_id_fkey foreign key (user_id, app_id) references public.users (id, app_id) on delete cascade,
    constraint auth_codes_code_hash_check check (octet_length(code_hash) = 64 and code_hash !~ '[^0-9a-f]'),
    constraint auth_codes_method_check check (code_challenge_method in ('s256', 'plain'))
);
comment on table guestpass.auth_codes is
    'GuestPass: PKCE authorization codes (SHA-256 of the code), five minutes, single use, for the verifier whose '
    'challenge they carry.';
create index auth_codes_user_id_idx on guestpass.auth_codes (user_id);

-- The outbox: one row per mail, written in the transaction of the code it carries.
create table guestpass.mail_outbox (
    id bigint generated always as identity,
    app_id uuid not null,
    kind text not null,
    recipient text not null,
    email text,
    new_email text,
    verify_type text,
    redirect_to text,
    payload bytea,
    created_at timestamptz not null default now(),
    next_attempt_at timestamptz not null default now(),
    claimed_until timestamptz,
    attempts integer not null default 0,
    sent_at timestamptz,
    failed_at timestamptz,
    last_error text,
    constraint mail_outbox_pkey primary key (id),
    constraint mail_outbox_app_id_fkey foreign key (app_id) references guestpass.apps (id) on delete cascade,
    constraint mail_outbox_kind_check check (
        kind in ('confirmation', 'magic_link', 'recovery', 'email_change', 'reauthentication')
    ),
    constraint mail_outbox_recipient_check check (recipient = lower(recipient) and char_length(recipient) between 3 and 255),
    constraint mail_outbox_payload_check check (octet_length(payload) <= 4096),
    constraint mail_outbox_last_error_check check (char_length(last_error) <= 1000)
);
comment on table guestpass.mail_outbox is
    'GuestPass: mail to send. payload is the sealed code and link token (AES-256-GCM, the server''s key), erased once '
    'sent or failed for good. A sender claims due rows (claimed_until, FOR UPDATE SKIP LOCKED), sends, and marks them '
    'sent_at, or failed_at after its last try; next_attempt_at backs off between tries.';
create index mail_outbox_due_idx on guestpass.mail_outbox (next_attempt_at) where sent_at is null and failed_at is null;
create index mail_outbox_recipient_idx on guestpass.mail_outbox (app_id, recipient, created_at);

-- What every email function answers (repeatable/14_email.sql, guestpass.email_answer): a status, the seconds to wait,
-- where a link leads, and the user as the server shows it, with its identities, email state, session device and amr.
create type guestpass.email_result as (
    status text,
    wait_seconds double precision,
    redirect_to text,
    user_id uuid,
    device_id uuid,
    is_anonymous boolean,
    email text,
    user_metadata jsonb,
    app_metadata jsonb,
    created_at timestamptz,
    updated_at timestamptz,
    last_sign_in_at timestamptz,
    identities jsonb,
    email_state jsonb,
    amr text
);
comment on type guestpass.email_result is
    'GuestPass: the one answer of the email functions (guestpass.email_answer): status, wait_seconds (rate limits), '
    'redirect_to (a link''s target), and the user columns (null without a user).';
