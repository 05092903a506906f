-- meter the example app's add_reading: each reading consumes one unit of the caller's quota in the same transaction
-- Same signature, result type, SECURITY INVOKER and grants as in 0003; only the body changes. The reading is
-- inserted first and then public.consume_quota charges for it: an invalid reading (unknown kind, non-object content)
-- fails on its own constraint and charges nothing, and when the quota is exhausted consume_quota's PT429 'quota
-- exceeded' (with its Retry-After detail and resets_at hint) aborts the statement, so the insert is undone. Either
-- both happen or neither: no reading without a charge, no charge without a reading. (The insert holds a KEY SHARE
-- lock on the user row; consume_quota's FOR NO KEY UPDATE does not conflict with it, so concurrent metered inserts
-- of one user queue on the quota without deadlocking.)

create or replace function public.add_reading(p_kind text, p_content jsonb default '{}')
returns public.readings
language plpgsql
volatile
set search_path = ''
as $$
declare
    v_reading public.readings;
begin
    insert into public.readings (kind, content)
    values (p_kind, coalesce(p_content, '{}'::jsonb))
    returning * into v_reading;
    perform public.consume_quota(null, null);
    return v_reading;
end
$$;

comment on function public.add_reading(text, jsonb) is
    'Example app: adds a reading of kind p_kind (face, palm or coffee; else 23514) with content p_content (a JSON '
    'object, default {}) for the caller (claims sub and app_id), charges one unit of the caller''s quota for it '
    '(public.consume_quota) in the same transaction, and returns it. When the quota is exhausted raises PT429 '
    '''quota exceeded'' and adds nothing.';

revoke execute on function public.add_reading(text, jsonb) from public;
grant execute on function public.add_reading(text, jsonb) to authenticated;
