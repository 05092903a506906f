-- The ceiling of bench/consume.sh and bench/signup.sh: the minimal SQL of the same work, in a tiny schema of its own.
-- A guest is one INSERT … ON CONFLICT DO NOTHING of (app, device hash); a consume is one INSERT … ON CONFLICT DO
-- UPDATE of a (user, day) counter. pgbench runs them framed exactly like the server's request transaction (BEGIN;
-- set_config(role), set_config(claims); <statement>; COMMIT), as the login role, so the difference between this and
-- our functions is what our SQL costs beyond the work itself. Bench databases only; never a migration.
create schema if not exists bench_ceiling;

create table if not exists bench_ceiling.guests (
    id uuid primary key default gen_random_uuid(),
    app_id uuid not null,
    device_hash text not null,
    created_at timestamptz not null default now(),
    unique (app_id, device_hash)
);

create table if not exists bench_ceiling.usage (
    user_id uuid not null,
    day date not null,
    used integer not null default 0,
    primary key (user_id, day)
);

grant usage on schema bench_ceiling to anon, authenticated;
grant select, insert, update on bench_ceiling.guests, bench_ceiling.usage to anon, authenticated;
