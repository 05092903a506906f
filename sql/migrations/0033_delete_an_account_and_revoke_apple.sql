-- account deletion (App Store guideline 5.1.1(v)) and keeping what revoking Sign in with Apple needs
-- An app that offers Sign in with Apple must let the user delete the account in the app and must revoke the user's
-- Apple tokens then. Revoking needs Apple's refresh token, which the server gets by exchanging the authorization code
-- the app sends at sign-in, with a client secret signed by the app's Sign in with Apple key.
--
-- * guestpass.apps gains apple_team_id, apple_key_id, apple_key_path (the .p8 key, read by the server), for the code
--   exchange and the revocation; app_apple_settings returns them.
-- * guestpass.identities gains apple_client_id (the audience the user signed in with: the client_id Apple expects)
--   and apple_refresh_token, Apple's refresh token sealed by the server (AES-256-GCM under a key derived from its
--   signing key, bound to the app and subject): the database alone never holds it in the clear.
-- * guestpass_server.store_apple_refresh_token keeps one after a sign-in.
-- * guestpass_server.delete_account deletes the caller: the rows of public and the exposed schemas that reference the
--   user without ON DELETE CASCADE first (found from the catalog), then the user, with everything that cascades
--   (sessions, refresh tokens, devices, identities, ledger, usage, roles). It returns the sealed Apple tokens so that
--   the server revokes them after the commit. Deleted means gone: the same Apple id or device later is a new user.

alter table guestpass.apps
    add column apple_team_id text,
    add column apple_key_id text,
    add column apple_key_path text,
    add constraint apps_apple_team_id_check check (apple_team_id ~ '^[A-Z0-9]{10}$'),
    add constraint apps_apple_key_id_check check (apple_key_id ~ '^[A-Z0-9]{10}$');

comment on column guestpass.apps.apple_team_id is 'Sign in with Apple: the Apple team id (the client secret''s iss).';
comment on column guestpass.apps.apple_key_id is 'Sign in with Apple: the key id of the .p8 key (the client secret''s kid).';
comment on column guestpass.apps.apple_key_path is
    'Sign in with Apple: the path of the .p8 key, readable by the server, that signs client secrets for the code '
    'exchange and revocation; null = no exchange, no revocation.';

drop function guestpass_server.app_apple_settings();

create function guestpass_server.app_apple_settings()
    returns table (audiences text[], base_url text, team_id text, key_id text, key_path text)
    language sql
    stable
    security definer
    set search_path = ''
    as $$
    select a.apple_audiences, a.apple_base_url, a.apple_team_id, a.apple_key_id, a.apple_key_path
    from guestpass.apps as a
    where a.id = auth.app_id()
$$;

revoke all on function guestpass_server.app_apple_settings() from public;
grant execute on function guestpass_server.app_apple_settings() to anon;

comment on function guestpass_server.app_apple_settings() is
    'GuestPass server: the Sign in with Apple settings of the caller''s app (claim app_id): accepted audiences, Apple''s '
    'base URL (null = Apple''s own), team id, key id and .p8 key path (null = no code exchange or revocation); no row '
    'without a known app.';

alter table guestpass.identities
    add column apple_client_id text,
    add column apple_refresh_token bytea,
    add constraint identities_apple_client_id_check check (char_length(apple_client_id) between 1 and 255),
    add constraint identities_apple_refresh_token_check check (octet_length(apple_refresh_token) <= 4096);

comment on column guestpass.identities.apple_client_id is
    'The audience of the identity token the refresh token came with: the client_id Apple expects at revocation.';
comment on column guestpass.identities.apple_refresh_token is
    'Apple''s refresh token from the authorization-code exchange, sealed by the server (AES-256-GCM, nonce ‖ '
    'ciphertext ‖ tag, associated data <app id>:<subject>), kept to revoke it when the account is deleted.';

create function guestpass_server.store_apple_refresh_token(p_subject text, p_client_id text, p_sealed bytea)
    returns boolean
    language sql
    security definer
    set search_path = ''
    as $$
    update guestpass.identities as i
    set apple_client_id = p_client_id, apple_refresh_token = p_sealed, updated_at = guestpass.clock()
    where i.app_id = auth.app_id() and i.provider = 'apple' and i.subject = p_subject
    returning true
$$;

revoke all on function guestpass_server.store_apple_refresh_token(text, text, bytea) from public;
grant execute on function guestpass_server.store_apple_refresh_token(text, text, bytea) to anon, authenticated;

comment on function guestpass_server.store_apple_refresh_token(text, text, bytea) is
    'GuestPass server: keeps Apple''s refresh token (sealed by the server) and the client id for the Apple identity '
    'p_subject of the caller''s app (claim app_id), after a sign-in in the same transaction. Returns true, or no row when '
    'there is no such identity.';

create function guestpass_server.delete_account(p_schemas text[])
    returns table (apple_subject text, apple_client_id text, apple_refresh_token bytea)
    language plpgsql
    security definer
    set search_path = ''
    as $$
declare
    v_user uuid;
    v_app uuid;
    v_fk record;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    perform 1 from public.users as u where u.id = v_user and u.app_id = v_app for update;
    if not found then
        return;
    end if;

    return query
    select i.subject, i.apple_client_id, i.apple_refresh_token
    from guestpass.identities as i
    where i.user_id = v_user and i.provider = 'apple' and i.apple_refresh_token is not null;

    -- Rows that would block the delete (a foreign key without ON DELETE CASCADE / SET NULL) go first.
    for v_fk in
        select n.nspname as schema_name, c.relname as table_name, a.attname as column_name
        from pg_catalog.pg_constraint as k
        join pg_catalog.pg_class as c on c.oid = k.conrelid
        join pg_catalog.pg_namespace as n on n.oid = c.relnamespace
        cross join lateral unnest(k.conkey, k.confkey) as m (local_attnum, referenced_attnum)
        join pg_catalog.pg_attribute as a on a.attrelid = k.conrelid and a.attnum = m.local_attnum
        join pg_catalog.pg_attribute as r on r.attrelid = k.confrelid and r.attnum = m.referenced_attnum
        where k.contype = 'f'
          and k.confrelid = 'public.users'::regclass
          and k.confdeltype not in ('c', 'n', 'd')
          and r.attname = 'id'
          and n.nspname = any (array_append(coalesce(p_schemas, '{}'), 'public'))
          and n.nspname not in ('guestpass', 'guestpass_server', 'auth')
        order by n.nspname, c.relname, a.attname
    loop
        execute format('delete from %I.%I where %I = $1', v_fk.schema_name, v_fk.table_name, v_fk.column_name)
            using v_user;
    end loop;

    delete from public.users as u where u.id = v_user;
end
$$;

revoke all on function guestpass_server.delete_account(text[]) from public;
grant execute on function guestpass_server.delete_account(text[]) to authenticated;

comment on function guestpass_server.delete_account(text[]) is
    'GuestPass server: deletes the caller (claims sub and app_id) and every row that references it: rows of public and '
    'p_schemas whose foreign key to public.users does not cascade are deleted first (from the catalog), then the user '
    'with everything that cascades (sessions, refresh tokens, devices, identities, ledger, usage, roles). Returns the '
    'user''s sealed Apple refresh tokens with their client ids, for the server to revoke after the commit; no row and '
    'nothing deleted when the user is already gone.';
