-- apps and their API keys: the key lookup behind every request
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.

-- API keys: which app a request belongs to.
create or replace function guestpass_server.resolve_api_key(p_key_hash text)
    returns table (app_id uuid, kind text)
    language sql stable security definer set search_path = '' as $$
    select k.app_id, k.kind
    from guestpass.api_keys as k
    where k.key_hash = p_key_hash and k.revoked_at is null
$$;

comment on function guestpass_server.resolve_api_key(text) is
    'GuestPass server: the app and kind (publishable or secret) of the API key whose lowercase hex SHA-256 is '
    'p_key_hash, or no row when it is unknown or revoked. The server calls it as anon before it knows the app.';

-- Row-level security, on and forced for the tables of this area (0002_apps_and_keys.sql): a role, the tables' owner
-- included, sees only the rows a policy gives it; a table with no policy for a role shows it none.
alter table guestpass.apps enable row level security, force row level security;
alter table guestpass.api_keys enable row level security, force row level security;

-- Grants: no function of this file is PUBLIC's; the roles below are the only callers of each.
revoke all on function guestpass_server.resolve_api_key(text) from public;
grant execute on function guestpass_server.resolve_api_key(text) to anon;
