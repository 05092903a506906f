-- pgTAP helpers, included with \ir lib/fixtures.sql: the rows the policy tests start from, written as the owner (call
-- them before any role switch, as `select from pg_temp.…(…);`). Safe to include more than once. The fixed ids:
--   apps X 00000000-0000-4000-8000-0000000000f1, Y …0000000000f2; users A …00000000000a, B …00000000000b (app X),
--   C …00000000000c (app Y); devices A1 …0000000000a1, A2 …0000000000a2 (A), B1 …0000000000b1, C1 …0000000000c1,
--   each with its secret (guestpass.device_secrets) = hex SHA-256 of 'secret <name>' (e.g. 'secret a1').
--   pg_temp.make_app(id, name): one app.
--   pg_temp.make_apps_xy(): apps X ('App X') and Y ('App Y').
--   pg_temp.make_user(id, app [, timezone, email, updated_at]): one user (timezone 'UTC', no email, updated now).
--   pg_temp.make_users(app, ids [, timezone]): several users of one app.
--   pg_temp.make_device(id, user, secret): one device of the user, in the user's app, and the secret's hash in
--     guestpass.device_secrets.
--   pg_temp.make_users_abc([devices, updated_at]): users A, B (app X) and C (app Y), and the devices named in
--     p_devices (default all of a1, a2, b1, c1; '{}' for none); needs apps X and Y (make_apps_xy).
create or replace function pg_temp.make_app(p_id uuid, p_name text)
returns void
language sql
as $$ insert into guestpass.apps (id, name) values (p_id, p_name) $$;

create or replace function pg_temp.make_apps_xy()
returns void
language plpgsql
as $$
begin
    perform pg_temp.make_app('00000000-0000-4000-8000-0000000000f1', 'App X');
    perform pg_temp.make_app('00000000-0000-4000-8000-0000000000f2', 'App Y');
end
$$;

create or replace function pg_temp.make_user(
    p_id uuid, p_app uuid, p_timezone text default 'UTC', p_email text default null,
    p_updated_at timestamptz default now()
)
returns void
language sql
as $$
    insert into public.users (id, app_id, timezone, email, updated_at)
    values (p_id, p_app, p_timezone, p_email, p_updated_at)
$$;

create or replace function pg_temp.make_users(p_app uuid, p_ids uuid[], p_timezone text default 'UTC')
returns void
language plpgsql
as $$
begin
    perform pg_temp.make_user(i.id, p_app, p_timezone) from unnest(p_ids) with ordinality as i (id, n) order by i.n;
end
$$;

create or replace function pg_temp.make_device(p_id uuid, p_user uuid, p_secret text)
returns void
language sql
as $$
    with device as (
        insert into public.devices (id, app_id, user_id)
        select p_id, u.app_id, u.id
        from public.users as u
        where u.id = p_user
        returning id, app_id
    )
    insert into guestpass.device_secrets (device_id, app_id, secret_hash)
    select device.id, device.app_id, encode(sha256(convert_to(p_secret, 'UTF8')), 'hex')
    from device
$$;

create or replace function pg_temp.make_users_abc(
    p_devices text[] default array['a1', 'a2', 'b1', 'c1'], p_updated_at timestamptz default now()
)
returns void
language plpgsql
as $$
begin
    perform pg_temp.make_user('00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-0000000000f1',
                              p_updated_at => p_updated_at);
    perform pg_temp.make_user('00000000-0000-4000-8000-00000000000b', '00000000-0000-4000-8000-0000000000f1',
                              p_updated_at => p_updated_at);
    perform pg_temp.make_user('00000000-0000-4000-8000-00000000000c', '00000000-0000-4000-8000-0000000000f2',
                              p_updated_at => p_updated_at);
    perform pg_temp.make_device(('00000000-0000-4000-8000-0000000000' || d.name)::uuid,
                                ('00000000-0000-4000-8000-00000000000' || left(d.name, 1))::uuid, 'secret ' || d.name)
    from unnest(p_devices) with ordinality as d (name, n)
    order by d.n;
end
$$;
