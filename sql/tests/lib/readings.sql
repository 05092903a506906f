-- pgTAP helper for the example app (needs sql/examples applied), included with \ir lib/readings.sql:
-- pg_temp.make_readings_abc() writes, as the owner, readings RA1 …0000000a0001 (A, face, {"n": 1}, 2024-01-01),
-- RA2 …0000000a0002 (A, palm, {"n": 2}, 2024-01-02), RB1 …0000000b0001 (B, coffee, {"n": 3}, 2024-01-03) and
-- RC1 …0000000c0001 (C of app Y, face, {"n": 4}, 2024-01-04), for the users of lib/fixtures.sql's make_users_abc.
-- Call it as `select from pg_temp.make_readings_abc();`. Safe to include more than once.
create or replace function pg_temp.make_readings_abc()
returns void
language sql
as $$
    insert into public.readings (id, app_id, user_id, kind, content, created_at) values
        ('00000000-0000-4000-8000-0000000a0001', '00000000-0000-4000-8000-0000000000f1',
         '00000000-0000-4000-8000-00000000000a', 'face', '{"n": 1}', '2024-01-01'),
        ('00000000-0000-4000-8000-0000000a0002', '00000000-0000-4000-8000-0000000000f1',
         '00000000-0000-4000-8000-00000000000a', 'palm', '{"n": 2}', '2024-01-02'),
        ('00000000-0000-4000-8000-0000000b0001', '00000000-0000-4000-8000-0000000000f1',
         '00000000-0000-4000-8000-00000000000b', 'coffee', '{"n": 3}', '2024-01-03'),
        ('00000000-0000-4000-8000-0000000c0001', '00000000-0000-4000-8000-0000000000f2',
         '00000000-0000-4000-8000-00000000000c', 'face', '{"n": 4}', '2024-01-04')
$$;
