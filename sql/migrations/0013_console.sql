-- the operator console: its login role guestpass_console, schema guestpass_console (functions only), operators, the
-- apps each may see, their sessions, failed sign-ins, and the audit trail
-- Versioned: applied once, never edited after a release. Functions, policies, grants and triggers live in repeatable/
-- (17_console.sql).
--
-- guestpass_console is the console's login role, like guestpass_authenticator is the API's: it owns nothing, inherits
-- nothing, and is granted nothing but EXECUTE on the functions of schema guestpass_console, each of which resolves the
-- operator from a session and refuses apps that are not theirs. It is no member of another role, and no other role is
-- a member of it (0001's check that guestpass_authenticator can become only the request roles still holds). Its
-- password is set by the operator (`alter role … password`), never in a migration.
do $$
begin
    create role guestpass_console login noinherit nosuperuser nocreatedb nocreaterole noreplication nobypassrls;
exception when duplicate_object or unique_violation then null;  -- another database of the cluster created it
end
$$;
do $$
begin
    if exists (
        select 1 from pg_catalog.pg_roles as r
        where r.rolname = 'guestpass_console'
          and (r.rolsuper or r.rolbypassrls or not r.rolcanlogin or r.rolinherit or r.rolcreaterole or r.rolcreatedb
               or r.rolreplication)
    ) then
        raise exception 'role guestpass_console has disallowed attributes'
            using hint = 'GuestPass needs guestpass_console LOGIN NOINHERIT without superuser, createrole, createdb, '
                         'replication or bypassrls. Fix the role or use a separate cluster.';
    end if;
end
$$;
comment on role guestpass_console is
    'GuestPass: the operator console''s login role. Owns nothing; may only execute the functions of schema guestpass_console.';

create schema guestpass_console;
comment on schema guestpass_console is
    'GuestPass: the operator console''s functions (the only thing role guestpass_console may use).';

create table guestpass.operators (
    id uuid not null default gen_random_uuid(),
    email text not null,
    password_hash text not null,
    totp_secret bytea,
    totp_required boolean not null default false,
    totp_last_step bigint,
    all_apps boolean not null default false,
    created_at timestamptz not null default now(),
    disabled_at timestamptz,
    constraint operators_pkey primary key (id),
    constraint operators_email_key unique (email),
    constraint operators_email_check check (email = lower(email) and char_length(email) between 3 and 320),
    constraint operators_totp_check check (not totp_required or totp_secret is not null)
);
comment on table guestpass.operators is
    'GuestPass: people who sign in to the operator console (guestpass operators create). password_hash is the users'' '
    'KDF (scrypt PHC string); totp_secret the RFC 6238 key and totp_last_step the 30-second step of the last code '
    'accepted (a code of that step or an earlier one is refused: each code is good once); all_apps, or only the apps '
    'of guestpass.operator_apps.';

create table guestpass.operator_apps (
    operator_id uuid not null,
    app_id uuid not null,
    constraint operator_apps_pkey primary key (operator_id, app_id),
    constraint operator_apps_operator_id_fkey foreign key (operator_id) references guestpass.operators (id) on delete cascade,
    constraint operator_apps_app_id_fkey foreign key (app_id) references guestpass.apps (id) on delete cascade
);
create index operator_apps_app_id_idx on guestpass.operator_apps (app_id);

create table guestpass.operator_sessions (
    id uuid not null default gen_random_uuid(),
    operator_id uuid not null,
    token_hash text not null,
    second_factor_done boolean not null default false,
    created_at timestamptz not null default now(),
    last_seen_at timestamptz not null default now(),
    ended_at timestamptz,
    constraint operator_sessions_pkey primary key (id),
    constraint operator_sessions_token_hash_key unique (token_hash),
    constraint operator_sessions_operator_id_fkey foreign key (operator_id) references guestpass.operators (id) on delete cascade
);
create index operator_sessions_operator_id_idx on guestpass.operator_sessions (operator_id);
comment on table guestpass.operator_sessions is
    'GuestPass: console sign-ins. token_hash is the SHA-256 of the cookie''s token (the token itself is never stored); '
    'a session ends when signed out, 30 minutes after its last use, or 12 hours after it began.';

create table guestpass.operator_sign_in_failures (
    id bigint generated always as identity,
    email text not null,
    address text not null,
    failed_at timestamptz not null default now(),
    constraint operator_sign_in_failures_pkey primary key (id)
);
create index operator_sign_in_failures_email_idx on guestpass.operator_sign_in_failures (email, failed_at);
create index operator_sign_in_failures_address_idx on guestpass.operator_sign_in_failures (address, failed_at);

create table guestpass.operator_audit (
    id bigint generated always as identity,
    operator_id uuid not null,
    operator_email text not null,
    app_id uuid,
    user_id uuid,
    action text not null,
    detail jsonb not null default '{}',
    before jsonb,
    after jsonb,
    at timestamptz not null default now(),
    constraint operator_audit_pkey primary key (id)
);
create index operator_audit_user_id_idx on guestpass.operator_audit (user_id, id);
create index operator_audit_app_id_idx on guestpass.operator_audit (app_id, id);
comment on table guestpass.operator_audit is
    'GuestPass: every operator action, written in the transaction of the action: who (operator id and email as they '
    'were), when, what (action, detail), the values before and after. Rows outlive their operator, app and user (no '
    'foreign keys); a trigger refuses UPDATE and DELETE for every role, the owner included.';

-- The user search is exact and indexed per app of the operator: a user and a device by primary key, an email by
-- users_app_email_key (app_id, lower(email)), an Apple subject by identities_app_provider_subject_key, a share code by
-- share_codes_app_code_key; nothing new is needed.
