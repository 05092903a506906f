-- account deletion needs a live session: an access token whose session ended (logout, a revoked device) cannot delete
-- An access token outlives its session by up to its lifetime (an hour by default): after a logout or a device
-- revocation it still verifies. Every other signed-in call that changes the account (transfer and recovery codes,
-- the profile, the welcome grant) already checks the claims' session in the database; delete_account did not, so a
-- token copied before a logout could still erase the account. It now raises 42501 'the session has ended' unless the
-- claims' session_id is a live session of the caller, as guestpass_server.create_account_code does (0036). A deletion
-- retried after it succeeded meets the same answer: the session went with the user. Body otherwise as in 0034.

create or replace function guestpass_server.delete_account(p_schemas text[])
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
    if not found or not exists (
        select 1 from guestpass.sessions as s
        where s.id = auth.claim_uuid('session_id') and s.user_id = v_user and s.revoked_at is null
    ) then
        raise exception using errcode = '42501', message = 'the session has ended';
    end if;

    return query
    select i.subject, i.apple_client_id, i.apple_refresh_token
    from guestpass.identities as i
    where i.user_id = v_user and i.provider = 'apple' and i.apple_refresh_token is not null;

    -- Rows that would block the delete (a foreign key without ON DELETE CASCADE / SET NULL) go first.
    for v_fk in
        select r.schema_name, r.table_name, r.column_name
        from guestpass.user_references(p_schemas) as r
        where r.on_delete not in ('c', 'n', 'd')
    loop
        execute format('delete from %I.%I where %I = $1', v_fk.schema_name, v_fk.table_name, v_fk.column_name)
            using v_user;
    end loop;

    delete from public.users as u where u.id = v_user;
end
$$;

comment on function guestpass_server.delete_account(text[]) is
    'GuestPass server: deletes the caller (claims sub and app_id) and every row that references it: rows of public and '
    'p_schemas whose foreign key to public.users does not cascade are deleted first (from the catalog), then the user '
    'with everything that cascades (sessions, refresh tokens, devices, identities, ledger, usage, roles). Returns the '
    'user''s sealed Apple refresh tokens with their client ids, for the server to revoke after the commit. Raises 42501 '
    'unless the claims'' session_id is a live session of the caller (a logged-out or revoked token, or a user already '
    'deleted).';
