-- sign-up's rate limits (guestpass_server.sign_up_guest, 0041): a token of the client's bucket and of one shard of
-- the app's is taken before any write, so a refused sign-up (PT429 with the seconds to wait, or PT401 for a revoked
-- device) leaves no user, device, session or refresh token behind and takes no token from either bucket; an empty
-- shard falls back to another shard that holds one. Runs as anon of app X from chosen client addresses.
begin;
select plan(16);

\ir lib/fixtures.sql
\ir lib/roles.sql

select from pg_temp.make_apps_xy();

-- sign_up_guest as anon of app X (or p_app) with a new session; answers 'ok', or the SQLSTATE and the error's detail.
create function pg_temp.sign_up(
    p_secret text, p_address text, p_ip_capacity integer, p_app_capacity integer,
    p_app uuid default '00000000-0000-4000-8000-0000000000f1'
)
returns text
language plpgsql
as $$
declare
    v_detail text;
begin
    perform pg_temp.as_anon(p_app);
    perform guestpass_server.sign_up_guest(
        case when p_secret is null then null else encode(sha256(convert_to(p_secret, 'UTF8')), 'hex') end,
        null, null, p_address, p_ip_capacity, 1.0 / 3600, p_app_capacity, 1.0 / 3600, 'pgTAP', gen_random_uuid(),
        encode(sha256(convert_to(gen_random_uuid()::text, 'UTF8')), 'hex')
    );
    reset role;
    return 'ok';
exception when others then
    get stacked diagnostics v_detail = pg_exception_detail;
    reset role;
    return sqlstate || coalesce(' ' || nullif(v_detail, ''), '');
end
$$;

-- Everything a sign-up writes, counted: users, devices, sessions, refresh tokens of app X.
create function pg_temp.written() returns bigint[] language sql as $$
    select array[
        (select count(*) from public.users where app_id = '00000000-0000-4000-8000-0000000000f1'),
        (select count(*) from public.devices where app_id = '00000000-0000-4000-8000-0000000000f1'),
        (select count(*) from guestpass.sessions where app_id = '00000000-0000-4000-8000-0000000000f1'),
        (select count(*) from guestpass.refresh_tokens as t
         join guestpass.sessions as s on s.id = t.session_id
         where s.app_id = '00000000-0000-4000-8000-0000000000f1')
    ]
$$;

-- The tokens left in bucket p_bucket (null: no row, a full bucket).
create function pg_temp.tokens(p_bucket text) returns double precision language sql as $$
    select r.tokens from guestpass.rate_limits as r where r.bucket = p_bucket
$$;

-- The client's bucket: capacity 2, one token an hour. The app's: capacity 1000 (16 shards, never empty here).
select is(pg_temp.sign_up('device a1', '198.51.100.1', 2, 1000), 'ok', 'a first sign-up from one address');
select is(pg_temp.sign_up('device a2', '198.51.100.1', 2, 1000), 'ok', 'a second (capacity 2)');
select is(pg_temp.written(), array[2, 2, 2, 2]::bigint[], 'two users, devices, sessions and refresh tokens');
create temporary table app_tokens as
    select r.bucket, r.tokens from guestpass.rate_limits as r
    where r.bucket like 'signup:app:00000000-0000-4000-8000-0000000000f1:%';
select is(
    (select sum(guestpass.shard_capacity(1000, 16, split_part(bucket, ':', 4)::integer) - tokens)::integer from app_tokens),
    2, 'the app''s shards gave two tokens'
);

select is(
    pg_temp.sign_up('device a3', '198.51.100.1', 2, 1000), 'PT429 3600',
    'the third is refused: PT429 with the seconds to wait (an hour for one token at one an hour)'
);
select is(pg_temp.written(), array[2, 2, 2, 2]::bigint[], 'the refused sign-up wrote nothing');
select is(
    (select sum(tokens) from guestpass.rate_limits where bucket like 'signup:app:00000000-0000-4000-8000-0000000000f1:%'),
    (select sum(tokens) from app_tokens),
    'and took no token of the app'
);
select is(pg_temp.sign_up('device a1', '198.51.100.1', 2, 1000), 'PT429 3600', 'an empty bucket refuses a known device too');

-- Another address has its own bucket; without a per-IP limit the address does not matter.
select is(pg_temp.sign_up('device b1', '198.51.100.2', 2, 1000), 'ok', 'another address signs up');
select is(pg_temp.sign_up('device c1', '198.51.100.1', null, 1000), 'ok', 'a null capacity turns the per-IP limit off');

-- The app's bucket, capacity 1 (one shard) in app Y: the second sign-up, from a fresh address, is refused and its
-- address's token is given back (its bucket row never commits).
select is(
    pg_temp.sign_up('device y1', '198.51.100.10', 5, 1, '00000000-0000-4000-8000-0000000000f2'), 'ok',
    'app Y''s first sign-up takes its one token'
);
select is(
    pg_temp.sign_up('device y2', '198.51.100.11', 5, 1, '00000000-0000-4000-8000-0000000000f2'), 'PT429 3600',
    'its second is refused by the app''s bucket'
);
select is(pg_temp.tokens('signup:ip:198.51.100.11'), null, 'and takes nothing from the address''s bucket');
select is(
    (select count(*)::integer from public.users where app_id = '00000000-0000-4000-8000-0000000000f2'), 1,
    'nor writes a user'
);

-- A revoked device: PT401, and its address's token is given back.
update public.devices set revoked_at = now()
where id = (select s.device_id from guestpass.device_secrets as s
            where s.secret_hash = encode(sha256(convert_to('device b1', 'UTF8')), 'hex'));
select is(pg_temp.sign_up('device b1', '198.51.100.2', 2, 1000), 'PT401', 'a revoked device is refused: PT401');
select is(pg_temp.tokens('signup:ip:198.51.100.2'), 1::double precision, 'and its address keeps its token');

select * from finish();
rollback;
