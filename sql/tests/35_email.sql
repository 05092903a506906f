-- email: codes, limits, uniqueness per app and the guest's upgrade, at the SQL boundary (repeatable/14_email.sql,
-- 15_mail_outbox.sql). The server's part (drawing codes, the HMAC, sealing the payload) is stood in for by fixed
-- hashes: a "code hash" here is the hex SHA-256 of a label. Fixtures: apps X and Y (lib/fixtures.sql).
begin;
select plan(37);

\ir lib/fixtures.sql
\ir lib/roles.sql

select from pg_temp.make_apps_xy();

create temporary table hashes (label text primary key, hash text not null);
insert into hashes select l, encode(sha256(convert_to(l, 'UTF8')), 'hex')
from unnest(array['code1', 'link1', 'wrong', 'code2', 'link2', 'code3', 'link3', 'code4', 'link4', 'code5', 'link5',
    'refresh1', 'refresh2', 'refresh3', 'code6', 'link6', 'code7', 'link7']) as l;
grant select on hashes to anon, authenticated;
create function pg_temp.h(p_label text) returns text language sql stable as $$ select hash from hashes where label = p_label $$;
-- A sealed payload as the server sends it (at least nonce + tag long); its bytes do not matter here.
create function pg_temp.payload() returns bytea language sql immutable as $$ select decode(repeat('ab', 40), 'hex') $$;

-- 1. Sign-up: an unconfirmed user, its sign-up code and one queued mail, all in the one transaction.
select from pg_temp.as_anon();
select is(
    (select status from guestpass_server.email_sign_up('Ann@Example.com', '$scrypt$ln=15,r=8,p=1$c2FsdA$aGFzaA', '{}',
        pg_temp.h('code1'), pg_temp.h('link1'), pg_temp.payload(), null, null, null, gen_random_uuid(), pg_temp.h('refresh1'),
        'pgtap', 100, 1)),
    'pending', 'a sign-up with a new address is pending its confirmation');
reset role;
select is((select count(*)::int from guestpass.mail_outbox where recipient = 'ann@example.com' and kind = 'confirmation'), 1,
    'one confirmation mail is queued, to the address lower-cased');
select is((select count(*)::int from guestpass.email_codes where address = 'ann@example.com' and purpose = 'signup'), 1,
    'the sign-up code is stored, hashed');
select ok((select not exists (select 1 from guestpass.email_codes where code_hash = 'code1' or link_hash = 'link1')),
    'no code or link is stored in the clear');

-- 2. Five wrong tries kill the code: the right one then answers otp_expired.
select from pg_temp.as_anon();
select is((select status from guestpass_server.email_verify('signup', 'ann@example.com', pg_temp.h('wrong'), null, false, null,
    gen_random_uuid(), pg_temp.h('refresh2'), 'pgtap', pg_temp.h('link2'), 100, 1)), 'otp_expired', 'a wrong code is refused');
reset role;
select is((select failed_attempts from guestpass.email_codes where address = 'ann@example.com'), 1, 'and counted');
update guestpass.email_codes set failed_attempts = 4 where address = 'ann@example.com';
select from pg_temp.as_anon();
select is((select status from guestpass_server.email_verify('signup', 'ann@example.com', pg_temp.h('wrong'), null, false, null,
    gen_random_uuid(), pg_temp.h('refresh2'), 'pgtap', pg_temp.h('link2'), 100, 1)), 'otp_expired', 'the fifth wrong try');
select is((select status from guestpass_server.email_verify('signup', 'ann@example.com', pg_temp.h('code1'), null, false, null,
    gen_random_uuid(), pg_temp.h('refresh2'), 'pgtap', pg_temp.h('link2'), 100, 1)), 'otp_expired',
    'after five wrong tries the right code is refused too');
reset role;

-- 3. A fresh code verifies once: the address is confirmed, a session opens; the code is then spent.
update guestpass.mail_outbox set created_at = created_at - interval '2 minutes' where recipient = 'ann@example.com';
select from pg_temp.as_anon();
select is(
    (select status from guestpass_server.email_send_code('resend_signup', 'ann@example.com', false, null, pg_temp.h('code3'),
        pg_temp.h('link3'), pg_temp.payload(), null, null, null, 100, 1)),
    'sent', 'resend: a new confirmation for the unconfirmed address');
select is((select status || ' ' || amr from guestpass_server.email_verify('email', 'ANN@example.com', pg_temp.h('code3'), null,
    false, null, '00000000-0000-4000-8000-00000000e001', pg_temp.h('refresh2'), 'pgtap', pg_temp.h('link2'), 100, 1)),
    'verified otp', 'the new code verifies (type email, any case of the address)');
select is((select status from guestpass_server.email_verify('email', 'ann@example.com', pg_temp.h('code3'), null, false, null,
    gen_random_uuid(), pg_temp.h('refresh3'), 'pgtap', pg_temp.h('link2'), 100, 1)), 'otp_expired', 'a code works once');
reset role;
select ok((select c.email_confirmed_at is not null from guestpass.email_credentials as c join public.users as u on u.id = c.user_id
    where u.email = 'ann@example.com'), 'the address is confirmed');
select is((select count(*)::int from guestpass.sessions where id = '00000000-0000-4000-8000-00000000e001'), 1, 'the session opened');
select is((select guestpass.user_identities(u.id) -> 0 -> 'identity_data' ->> 'email_verified' from public.users as u
    where u.email = 'ann@example.com'), 'true', 'the email identity is verified');

-- 4. One mail per address per interval; the same address is another account in another app.
select from pg_temp.as_anon();
select is((select status from guestpass_server.email_send_code('otp', 'ann@example.com', true, null, pg_temp.h('code4'),
    pg_temp.h('link4'), pg_temp.payload(), null, null, null, 100, 1)), 'over_email_send_rate_limit',
    'a second mail to the address within the interval is refused');
select ok((select wait_seconds between 1 and 60 from guestpass_server.email_send_code('otp', 'ann@example.com', true, null,
    pg_temp.h('code4'), pg_temp.h('link4'), pg_temp.payload(), null, null, null, 100, 1)), 'with the seconds to wait');
select is((select status from guestpass_server.email_sign_up('ann@example.com', '$scrypt$ln=15,r=8,p=1$c2FsdA$aGFzaA', '{}',
    pg_temp.h('code5'), pg_temp.h('link5'), pg_temp.payload(), null, null, null, gen_random_uuid(), pg_temp.h('refresh3'), 'pgtap',
    100, 1)), 'exists', 'a sign-up with a confirmed address answers exists (the server invents a user)');
select from pg_temp.as_anon('00000000-0000-4000-8000-0000000000f2');
select is((select status from guestpass_server.email_sign_up('ann@example.com', '$scrypt$ln=15,r=8,p=1$c2FsdA$aGFzaA', '{}',
    pg_temp.h('code5'), pg_temp.h('link5'), pg_temp.payload(), null, null, null, gen_random_uuid(), pg_temp.h('refresh3'), 'pgtap',
    100, 1)), 'pending', 'the same address in app Y is another account');
reset role;
select is((select count(*)::int from guestpass.mail_outbox where recipient = 'ann@example.com' and app_id = '00000000-0000-4000-8000-0000000000f1'),
    2, 'refused requests queued nothing');

-- 5. A guest adds an address: taken → email_exists and nothing changes; free → pending, then the same user.
select from pg_temp.make_user('00000000-0000-4000-8000-0000000000a1', '00000000-0000-4000-8000-0000000000f1');
insert into guestpass.sessions (id, app_id, user_id) values
    ('00000000-0000-4000-8000-00000000e0a1', '00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-0000000000a1');
select from pg_temp.as_user('00000000-0000-4000-8000-0000000000a1', p_session => '00000000-0000-4000-8000-00000000e0a1');
select is((select status from guestpass_server.email_change_request('ann@example.com', null, pg_temp.h('code6'), pg_temp.h('link6'),
    pg_temp.payload(), pg_temp.h('code7'), pg_temp.h('link7'), pg_temp.payload(), null, null, null, 100, 1)), 'email_exists',
    'a guest cannot take an address another user of the app holds');
reset role;
select ok((select is_anonymous and email is null from public.users where id = '00000000-0000-4000-8000-0000000000a1'),
    'the guest is untouched');
select ok((select not exists (select 1 from guestpass.email_credentials where user_id = '00000000-0000-4000-8000-0000000000a1')),
    'and has no pending change');
select from pg_temp.as_user('00000000-0000-4000-8000-0000000000a1', p_session => '00000000-0000-4000-8000-00000000e0a1');
select is((select status || ' ' || (email_state ->> 'new_email') from guestpass_server.email_change_request('Guest@Example.com', null,
    pg_temp.h('code6'), pg_temp.h('link6'), pg_temp.payload(), pg_temp.h('code7'), pg_temp.h('link7'), pg_temp.payload(), null,
    null, null, 100, 1)), 'pending guest@example.com', 'a free address is pending, shown as new_email');
select from pg_temp.as_anon();
select is((select status || ' ' || user_id::text || ' ' || is_anonymous::text from guestpass_server.email_verify('email_change',
    'guest@example.com', pg_temp.h('code6'), null, false, null, gen_random_uuid(), pg_temp.h('refresh3'), 'pgtap',
    pg_temp.h('link2'), 100, 1)), 'verified 00000000-0000-4000-8000-0000000000a1 false',
    'verifying the change answers the same user, no longer anonymous');
reset role;
select is((select email from public.users where id = '00000000-0000-4000-8000-0000000000a1'), 'guest@example.com',
    'the guest now has the address');
select is((select app_metadata -> 'providers' from public.users where id = '00000000-0000-4000-8000-0000000000a1'), '["email"]'::jsonb,
    'with email among its providers');

-- 6. The outbox: a claim leases due rows (attempts + 1, not due again until the lease ends); sent erases the payload.
select is((select count(*)::int from guestpass_server.mail_claim(1000, 60)), 4, 'the sender claims every due mail');
select is((select count(*)::int from guestpass_server.mail_claim(1000, 60)), 0, 'a second claim finds them leased');
select guestpass_server.mail_sent(id) from guestpass.mail_outbox where recipient = 'guest@example.com';
select ok((select sent_at is not null and payload is null from guestpass.mail_outbox where recipient = 'guest@example.com'),
    'a sent mail keeps no code');
select guestpass_server.mail_failed(id, 'relay down', false, 10) from guestpass.mail_outbox where recipient = 'ann@example.com'
    and app_id = '00000000-0000-4000-8000-0000000000f2';
select ok((select failed_at is null and payload is not null and next_attempt_at > now()
    from guestpass.mail_outbox where app_id = '00000000-0000-4000-8000-0000000000f2'), 'a transient failure is retried later');

-- 7. Sign in with Apple and a confirmed address: a new account unless the app links them, never on an unconfirmed one.
select from pg_temp.as_anon();
select is((select status || ' ' || (user_id <> '00000000-0000-4000-8000-0000000000a1')::text
    from guestpass_server.sign_in_with_identity('apple', 'apple-1', 'guest@example.com', false, false, 'pgtap', '', gen_random_uuid(),
        pg_temp.h('code1'))), 'created true', 'an Apple id with a confirmed address of the app is a new account by default');
reset role;
update guestpass.apps set email_link_apple = true where id = '00000000-0000-4000-8000-0000000000f1';
select from pg_temp.as_anon();
select is((select status || ' ' || user_id::text
    from guestpass_server.sign_in_with_identity('apple', 'apple-2', 'Guest@Example.com', false, false, 'pgtap', '', gen_random_uuid(),
        pg_temp.h('code2'))), 'signed_in 00000000-0000-4000-8000-0000000000a1',
    'with email_link_apple it signs in to the account whose confirmed address it is');
select is((select status from guestpass_server.email_sign_up('pending@example.com', '$scrypt$ln=15,r=8,p=1$c2FsdA$aGFzaA', '{}',
    pg_temp.h('code4'), pg_temp.h('link4'), pg_temp.payload(), null, null, null, gen_random_uuid(), pg_temp.h('refresh1'), 'pgtap',
    100, 1)), 'pending', 'an unconfirmed sign-up holds pending@example.com');
select is((select status from guestpass_server.sign_in_with_identity('apple', 'apple-3', 'pending@example.com', false, false,
    'pgtap', '', gen_random_uuid(), pg_temp.h('code3'))), 'created', 'an unconfirmed address never links, even then');
reset role;

-- 8. The walls: no request role reads the email tables.
select from pg_temp.as_user('00000000-0000-4000-8000-0000000000a1');
select throws_ok('select * from guestpass.email_credentials', '42501', null, 'authenticated cannot read credentials');
select throws_ok('select * from guestpass.mail_outbox', '42501', null, 'nor the outbox');
reset role;
select from pg_temp.as_anon();
select throws_ok('select guestpass_server.mail_claim(1, 1)', '42501', null, 'anon cannot claim mail');
reset role;

select * from finish();
rollback;
