-- sessions and refresh tokens: the sign-in sessions and their rotating refresh tokens
-- Versioned: applied once, never edited after a release. Functions, policies and grants live in repeatable/.
--
-- Token model: the server derives a session's refresh token from (session id, counter) with an HMAC, so it can
-- re-create the active token of a session from its counter; the database stores only the lowercase hex SHA-256 of
-- each token. Counter 0 is issued at sign-in, each rotation revokes the active token and issues counter + 1, so the
-- active token of a live session is always its highest counter. A session with revoked_at set is dead, with all its
-- tokens (sign-out, or family revocation after a replayed token). Both tables are internal: row-level security is
-- enabled and forced with no policies and no grants; only SECURITY DEFINER functions read and write them.

create table guestpass.sessions (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null,
    user_id uuid not null,
    device_id uuid,
    created_at timestamptz not null default now(),
    refreshed_at timestamptz,
    revoked_at timestamptz,
    user_agent text,
    ip text,
    constraint sessions_pkey primary key (id),
    -- Composite, so a session and its user can never sit in different apps.
    constraint sessions_user_id_fkey foreign key (user_id, app_id)
        references public.users (id, app_id) on delete cascade,
    -- A session's device is its user's; a merge that moves the device moves it along (on update cascade), and a
    -- deleted device leaves its sessions without one.
    constraint sessions_device_user_fkey foreign key (device_id, user_id)
        references public.devices (id, user_id) on update cascade on delete set null (device_id)
);

comment on table guestpass.sessions is
    'GuestPass: one row per sign-in (the session_id claim). device_id is the public id of the device signed in '
    'from, if any. refreshed_at is the last refresh-token rotation; a session with revoked_at set is signed out '
    'and none of its refresh tokens work any more.';

create index sessions_user_id_idx on guestpass.sessions (user_id);

-- Serves the ON DELETE SET NULL of sessions_device_user_fkey when a device is deleted.
create index sessions_device_id_idx on guestpass.sessions (device_id) where device_id is not null;

create table guestpass.refresh_tokens (
    id bigserial not null,
    session_id uuid not null,
    counter integer not null,
    token_hash text not null,
    created_at timestamptz not null default now(),
    revoked_at timestamptz,
    constraint refresh_tokens_pkey primary key (id),
    constraint refresh_tokens_session_id_fkey foreign key (session_id)
        references guestpass.sessions (id) on delete cascade,
    constraint refresh_tokens_session_counter_key unique (session_id, counter),
    constraint refresh_tokens_token_hash_key unique (token_hash),
    constraint refresh_tokens_counter_check check (counter >= 0),
    constraint refresh_tokens_token_hash_check check (octet_length(token_hash) = 64 and token_hash !~ '[^0-9a-f]')
);

comment on table guestpass.refresh_tokens is
    'GuestPass: the refresh tokens of a session, one per counter. token_hash is the lowercase hex SHA-256 of the '
    'token (the token is never stored; the server re-derives it from session id and counter with an HMAC). '
    'revoked_at is set when the token is rotated away or its session is revoked.';

