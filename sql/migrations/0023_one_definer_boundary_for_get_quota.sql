-- get_quota crosses one SECURITY DEFINER boundary, as consume_quota does since 0021: quota_state runs as its caller
-- guestpass.quota_state is internal (REVOKE … FROM PUBLIC) and called only by SECURITY DEFINER functions of its owner
-- with search_path '' (public.get_quota, grant_credits, set_premium, set_timezone). 0021 took the nested boundary off
-- the consume path and left this one on get_quota's: a second switch of user and a save and restore of search_path on
-- every call, buying nothing. Every name in its body is schema-qualified.

alter function guestpass.quota_state(uuid, timestamptz) security invoker reset all;
