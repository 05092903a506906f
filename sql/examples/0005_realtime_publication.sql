-- publish the example app's tables to Realtime: readings, device_logs and reading_notes in supabase_realtime
-- The Supabase way of opting a table into postgres_changes. `alter publication … add table` fails for a table that
-- is already a member, so each table is added only when missing (this file may meet a database where someone added
-- one by hand). Each table has a primary key, which a published table needs for UPDATE and DELETE.
-- Then guestpass_server.realtime_sync() puts the capture trigger on them in this same transaction, so they are
-- captured as soon as this file commits (`guestpass migrate up` runs the sync again after every run anyway; the
-- servers every 60 s).

do $$
declare
    v_table text;
begin
    foreach v_table in array array['readings', 'device_logs', 'reading_notes'] loop
        if not exists (
            select 1 from pg_catalog.pg_publication_tables as p
            where p.pubname = 'supabase_realtime' and p.schemaname = 'public' and p.tablename = v_table
        ) then
            execute format('alter publication supabase_realtime add table public.%I', v_table);
        end if;
    end loop;
end
$$;

select count(*) from guestpass_server.realtime_sync();
