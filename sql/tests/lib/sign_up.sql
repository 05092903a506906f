-- pgTAP helper, included with \ir lib/sign_up.sql: pg_temp.sign_up(device, client ip, session, refresh token) signs
-- a guest up as the server does (guestpass_server.sign_up_guest, as the current role: anon of an app), with the
-- secret of the device named p_device and the refresh token named p_token passed as the hex SHA-256 of their names,
-- no device facts, metadata or user agent, and no rate limit. Answers the user, its device, the session and whether
-- the user is new, e.g. `select user_id as g_user from pg_temp.sign_up('device g', '203.0.113.7', '…6a1', '6a1/0')
-- \gset`. Safe to include more than once.
create or replace function pg_temp.sign_up(p_device text, p_client_ip text, p_session uuid, p_token text)
returns table (user_id uuid, device_id uuid, session_id uuid, created boolean)
language sql
as $$
    select s.user_id, s.device_id, s.session_id, s.created
    from guestpass_server.sign_up_guest(
        encode(sha256(convert_to(p_device, 'UTF8')), 'hex'), null, null, p_client_ip, null, null, null, null, null,
        p_session, encode(sha256(convert_to(p_token, 'UTF8')), 'hex')
    ) as s
$$;
