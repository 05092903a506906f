-- guest identity structure: sessions, refresh tokens and rate-limit buckets stay internal (forced RLS, no policies,
-- no grants), every guest identity function is a pinned SECURITY DEFINER function callable by exactly the request
-- role it serves, and the server's entry points live in guestpass_server (schema guestpass stays closed).
begin;
select plan(38);

\ir lib/catalog.sql

-- Tables, keys and what deleting a parent does.

select has_table('guestpass', 'sessions', 'guestpass.sessions exists');
select has_table('guestpass', 'refresh_tokens', 'guestpass.refresh_tokens exists');
select has_table('guestpass', 'rate_limits', 'guestpass.rate_limits exists');

select is(
    pg_temp.policies_in('guestpass'),
    '{}'::text[],
    'no policy on any guestpass table: only SECURITY DEFINER functions reach them'
);

select col_is_pk('guestpass', 'sessions', 'id', 'sessions are keyed by id (the session_id claim)');
select col_is_pk('guestpass', 'refresh_tokens', 'id', 'refresh tokens are keyed by id');
select col_is_pk('guestpass', 'rate_limits', 'bucket', 'rate limits are keyed by bucket');
select fk_ok(
    'guestpass', 'sessions', array['user_id', 'app_id'], 'public', 'users', array['id', 'app_id'],
    'a session''s user is in the session''s app (composite foreign key)'
);
select fk_ok(
    'guestpass', 'sessions', array['device_id', 'user_id'], 'public', 'devices', array['id', 'user_id'],
    'a session points at a device of its own user (0036: composite foreign key)'
);
select fk_ok(
    'guestpass', 'refresh_tokens', 'session_id', 'guestpass', 'sessions', 'id', 'a refresh token belongs to a session'
);
select is(
    pg_temp.fk_on_delete(array['guestpass.sessions', 'guestpass.refresh_tokens']::regclass[]),
    array[
        'refresh_tokens_session_id_fkey on delete cascade',
        'sessions_device_user_fkey on delete set null',
        'sessions_user_id_fkey on delete cascade'
    ],
    'deleting a user (and so an app) or a session deletes its sessions and tokens; deleting a device only detaches it'
);
select col_is_unique(
    'guestpass', 'refresh_tokens', array['session_id', 'counter'], 'one refresh token per session and counter'
);
select col_is_unique('guestpass', 'refresh_tokens', array['token_hash'], 'a refresh token hash is unique');
select has_index(
    'guestpass', 'sessions', 'sessions_user_id_idx', array['user_id'], 'sessions are indexed by user (sign-out)'
);

-- The functions.

create temporary table gp_functions (fn regprocedure primary key) on commit drop;
insert into gp_functions (fn) values
    ('guestpass.check_rate_limit_arguments(text, integer, double precision)'),
    ('guestpass.take_rate_limit(text, integer, double precision)'),
    ('guestpass.peek_rate_limit(text, integer, double precision)'),
    ('guestpass.ensure_guest_device(uuid, text, jsonb)'),
    ('public.create_guest_user(uuid)'),
    ('guestpass_server.sign_up_guest(text, jsonb, jsonb, text, integer, double precision, integer, '
     'double precision, text, uuid, text)'),
    ('guestpass_server.refresh_session(uuid, integer, text, text, double precision)'),
    ('guestpass_server.current_user_profile()'),
    ('guestpass_server.sign_out(text)'),
    ('guestpass_server.resolve_api_key(text)');

select function_returns(
    'public', 'create_guest_user', array['uuid'], 'uuid', 'public.create_guest_user(uuid) returns the user id'
);
select function_returns(
    'guestpass', 'take_rate_limit', array['text', 'integer', 'double precision'], 'double precision',
    'guestpass.take_rate_limit returns the seconds to wait'
);
select function_returns(
    'guestpass_server', 'sign_up_guest',
    array['text', 'jsonb', 'jsonb', 'text', 'integer', 'double precision', 'integer', 'double precision', 'text',
          'uuid', 'text'],
    'setof record', 'guestpass_server.sign_up_guest returns a table'
);
select function_returns(
    'guestpass_server', 'sign_out', array['text'], 'integer', 'guestpass_server.sign_out returns a count'
);

select is(
    array(
        select p.oid::regprocedure::text
        from gp_functions as f
        join pg_catalog.pg_proc as p on p.oid = f.fn
        where not p.prosecdef and p.proname <> 'check_rate_limit_arguments'
        order by 1
    ),
    '{}'::text[],
    'every guest identity function but the argument check is SECURITY DEFINER'
);
select is(
    array(
        select p.oid::regprocedure::text
        from gp_functions as f
        join pg_catalog.pg_proc as p on p.oid = f.fn
        where p.proconfig is distinct from array['search_path=""'] and p.proname <> 'check_rate_limit_arguments'
        order by 1
    ),
    '{}'::text[],
    'every guest identity function but the argument check runs with an empty search_path (the check is an inlinable '
    || 'SQL expression, 0042: a SET clause would stop its inlining)'
);
select is(
    array(
        select p.oid::regprocedure::text
        from pg_catalog.pg_proc as p
        where p.pronamespace = 'guestpass_server'::regnamespace
          and not (p.prosecdef and p.proconfig is not distinct from array['search_path=""'])
        order by 1
    ),
    '{}'::text[],
    'every function in guestpass_server is SECURITY DEFINER with an empty search_path'
);
select is(
    array(
        select p.oid::regprocedure::text
        from pg_catalog.pg_proc as p
        where (p.oid in (select fn from gp_functions) or p.pronamespace = 'guestpass_server'::regnamespace)
          and pg_temp.public_may_execute(p.oid)
        order by 1
    ),
    '{}'::text[],
    'no guest identity function is executable by PUBLIC'
);
select is(
    array(
        select format('%I.%I(%s) %s', n.nspname, p.proname, pg_catalog.oidvectortypes(p.proargtypes), p.provolatile)
        from gp_functions as f
        join pg_catalog.pg_proc as p on p.oid = f.fn
        join pg_catalog.pg_namespace as n on n.oid = p.pronamespace
        where p.pronamespace = 'guestpass_server'::regnamespace or p.proname = 'create_guest_user'
        order by 1
    ),
    array[
        'guestpass_server.current_user_profile() s',
        'guestpass_server.refresh_session(uuid, integer, text, text, double precision) v',
        'guestpass_server.resolve_api_key(text) s',
        'guestpass_server.sign_out(text) v',
        'guestpass_server.sign_up_guest(text, jsonb, jsonb, text, integer, double precision, integer, '
        || 'double precision, text, uuid, text) v',
        'public.create_guest_user(uuid) v'
    ],
    'the read-only entry points are STABLE, the others VOLATILE'
);

-- Exact grants: who may call what.

select is(
    array(
        select format('%I.%I', n.nspname, p.proname) || ' to ' || r.rolname
        from pg_catalog.pg_proc as p
        join pg_catalog.pg_namespace as n on n.oid = p.pronamespace
        cross join pg_catalog.pg_roles as r
        where (p.oid in (select fn from gp_functions) or p.pronamespace = 'guestpass_server'::regnamespace)
          and r.rolname in ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
          and pg_catalog.has_function_privilege(r.oid, p.oid, 'EXECUTE')
        order by 1
    ),
    array[
        'guestpass_server.app_apple_settings to anon',
        'guestpass_server.app_devicecheck_settings to authenticated',
        'guestpass_server.app_email_settings to anon',
        'guestpass_server.create_account_code to authenticated',
        'guestpass_server.current_user_profile to authenticated',
        'guestpass_server.delete_account to authenticated',
        'guestpass_server.devicecheck_begin to authenticated',
        'guestpass_server.devicecheck_finish to authenticated',
        'guestpass_server.devicecheck_take_lease to authenticated',
        -- email (14_email.sql): the public endpoints run as anon, the signed-in ones as authenticated
        'guestpass_server.email_change_request to authenticated',
        'guestpass_server.email_password_lookup to anon',
        'guestpass_server.email_password_sign_in to anon',
        'guestpass_server.email_password_state to authenticated',
        'guestpass_server.email_reauthenticate to authenticated',
        'guestpass_server.email_send_code to anon',
        'guestpass_server.email_set_password to authenticated',
        'guestpass_server.email_sign_up to anon',
        'guestpass_server.email_verify to anon',
        'guestpass_server.exchange_auth_code to anon',
        -- the mail outbox (15_mail_outbox.sql): the sender calls these as the login role, outside request transactions
        'guestpass_server.mail_claim to guestpass_authenticator',
        'guestpass_server.mail_failed to guestpass_authenticator',
        'guestpass_server.mail_queue_state to guestpass_authenticator',
        'guestpass_server.mail_sent to guestpass_authenticator',
        'guestpass_server.merge_guest to authenticated',
        -- the table API's fts filter (to_tsquery, a refusal as PGRST100): every request role reads tables
        'guestpass_server.parse_tsquery to anon',
        'guestpass_server.parse_tsquery to authenticated',
        'guestpass_server.parse_tsquery to service_role',
        -- Realtime (13_realtime.sql): the server calls these as its login role, outside request transactions.
        'guestpass_server.realtime_broadcast to guestpass_authenticator',
        'guestpass_server.realtime_live_sessions to guestpass_authenticator',
        'guestpass_server.realtime_poll to guestpass_authenticator',
        'guestpass_server.realtime_presence_expire to guestpass_authenticator',
        'guestpass_server.realtime_presence_renew to guestpass_authenticator',
        'guestpass_server.realtime_presence_state to guestpass_authenticator',
        'guestpass_server.realtime_presence_track to guestpass_authenticator',
        'guestpass_server.realtime_presence_untrack to guestpass_authenticator',
        'guestpass_server.realtime_prune to guestpass_authenticator',
        'guestpass_server.realtime_sync to guestpass_authenticator',
        'guestpass_server.redeem_account_code to anon',
        'guestpass_server.refresh_session to anon',
        -- the table API's refusal (PGRST116, PGRST124): every request role writes tables
        'guestpass_server.refuse_table_result to anon',
        'guestpass_server.refuse_table_result to authenticated',
        'guestpass_server.refuse_table_result to service_role',
        'guestpass_server.resolve_api_key to anon',
        'guestpass_server.sign_in_with_identity to anon',
        'guestpass_server.sign_in_with_identity to authenticated',
        'guestpass_server.sign_out to authenticated',
        'guestpass_server.sign_up_guest to anon',
        -- storage (16_storage.sql): an upload's start and the bucket lookup run as the caller's role; the public
        -- bucket lookup and the sweep as the login role, outside request transactions
        'guestpass_server.storage_bucket to anon',
        'guestpass_server.storage_bucket to authenticated',
        'guestpass_server.storage_bucket to service_role',
        'guestpass_server.storage_public_bucket_app to guestpass_authenticator',
        'guestpass_server.storage_sweep_claim to guestpass_authenticator',
        'guestpass_server.storage_sweep_done to guestpass_authenticator',
        'guestpass_server.storage_upload_abandon to guestpass_authenticator',
        'guestpass_server.storage_upload_begin to anon',
        'guestpass_server.storage_upload_begin to authenticated',
        'guestpass_server.storage_upload_begin to service_role',
        'guestpass_server.store_apple_refresh_token to anon',
        'guestpass_server.store_apple_refresh_token to authenticated',
        'guestpass_server.update_user to authenticated',
        'guestpass_server.user_email_state to authenticated',
        'public.create_guest_user to anon',
        'public.create_guest_user to authenticated',
        'public.create_guest_user to service_role'
    ],
    'each guest identity function is executable by exactly the request roles it serves; internals by none'
);

select function_privs_are(
    'public', 'create_guest_user', array['uuid'], 'anon', array['EXECUTE'], 'anon may call create_guest_user'
);
select function_privs_are(
    'public', 'create_guest_user', array['uuid'], 'authenticated', array['EXECUTE'],
    'authenticated may call create_guest_user'
);
select function_privs_are(
    'public', 'create_guest_user', array['uuid'], 'service_role', array['EXECUTE'],
    'service_role may call create_guest_user'
);
select function_privs_are(
    'public', 'create_guest_user', array['uuid'], 'guestpass_authenticator', '{}'::text[],
    'the login role itself may not call create_guest_user'
);
select function_privs_are(
    'guestpass_server', 'sign_up_guest',
    array['text', 'jsonb', 'jsonb', 'text', 'integer', 'double precision', 'integer', 'double precision', 'text',
          'uuid', 'text'],
    'authenticated', '{}'::text[], 'authenticated may not call sign_up_guest'
);
select function_privs_are(
    'guestpass_server', 'refresh_session', array['uuid', 'integer', 'text', 'text', 'double precision'],
    'anon', array['EXECUTE'], 'anon may call refresh_session'
);
select function_privs_are(
    'guestpass_server', 'sign_out', array['text'], 'anon', '{}'::text[], 'anon may not call sign_out'
);
select function_privs_are(
    'guestpass_server', 'current_user_profile', '{}'::name[], 'service_role', '{}'::text[],
    'service_role may not call current_user_profile'
);
select function_privs_are(
    'guestpass', 'take_rate_limit', array['text', 'integer', 'double precision'], 'anon', '{}'::text[],
    'anon may not take rate-limit tokens directly'
);
select function_privs_are(
    'guestpass', 'ensure_guest_device', array['uuid', 'text', 'jsonb'], 'service_role', '{}'::text[],
    'service_role may not call ensure_guest_device directly'
);

-- The schema of the entry points.

select has_schema('guestpass_server', 'schema guestpass_server exists');
select is(
    pg_temp.schema_users('guestpass_server'),
    array['anon', 'authenticated', 'guestpass_authenticator', 'service_role'],
    'exactly the request roles and the login role have usage on guestpass_server (service_role for the table API''s '
    || 'refusal only, the login role for the Realtime functions only)'
);
select is(
    array(
        select r.rolname::text
        from pg_catalog.pg_roles as r
        where r.rolname in ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
          and (pg_catalog.has_schema_privilege(r.oid, 'guestpass_server', 'CREATE')
               or pg_catalog.has_schema_privilege(r.oid, 'guestpass', 'CREATE'))
        order by 1
    ),
    '{}'::text[],
    'no app-facing role may create objects in guestpass or guestpass_server'
);
select is(
    array(
        select c.relname::text
        from pg_catalog.pg_class as c
        where c.relnamespace = 'guestpass_server'::regnamespace
        order by 1
    ),
    '{}'::text[],
    'guestpass_server holds functions only, no table, view or sequence'
);

select * from finish();
rollback;
