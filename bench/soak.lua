-- wrk script for bench/soak.sh: the mixed load of apps at launch and in use. Every request is one of
--   launch: a sign-up (POST /auth/v1/signup, a new device) or a refresh (POST /auth/v1/token?grant_type=refresh_token
--           of a session this thread holds), 1 in 5 requests, half of each when sessions are at hand;
--   get_quota (POST /rest/v1/rpc/get_quota), 2 in 5; consume_quota (POST /rest/v1/rpc/consume_quota), 2 in 5.
-- Sessions come from the answers: every answer that carries a refresh token (sign-up, refresh) adds its session to
-- the thread's pool; a refresh takes one out (its token is used up). get_quota and consume use any held access token.
--   wrk ... -s bench/soak.lua URL -- PUBLISHABLE_KEY
dofile("bench/wrk_threads.lua") -- setup() (thread_id, threads), seed_random(), uuid4()

local apikey
local sessions = {} -- { access, refresh }
local max_sessions = 2000

function init(args)
  apikey = args[1] or error("usage: -- PUBLISHABLE_KEY")
  seed_random()
end

local function json(path, bearer, body)
  return wrk.format("POST", path, {
    ["Content-Type"] = "application/json", ["apikey"] = apikey, ["Authorization"] = "Bearer " .. bearer,
  }, body)
end

local function sign_up()
  return json("/auth/v1/signup", apikey, '{"data":{"device_id":"' .. uuid4() .. '"}}')
end

function request()
  local roll = math.random(1, 5)
  local count = #sessions
  if count == 0 then return sign_up() end
  if roll == 1 then
    if count < 50 or math.random(1, 2) == 1 then return sign_up() end
    local index = math.random(1, count)
    local session = sessions[index]
    sessions[index] = sessions[count]
    sessions[count] = nil
    return json("/auth/v1/token?grant_type=refresh_token", apikey, '{"refresh_token":"' .. session.refresh .. '"}')
  end
  local session = sessions[math.random(1, count)]
  local path = roll <= 3 and "/rest/v1/rpc/get_quota" or "/rest/v1/rpc/consume_quota"
  return json(path, session.access, "{}")
end

function response(status, headers, body)
  if status ~= 200 or body == nil then return end
  local access = body:match('"access_token"%s*:%s*"([^"]+)"')
  local refresh = body:match('"refresh_token"%s*:%s*"([^"]+)"')
  if access and refresh then
    if #sessions >= max_sessions then table.remove(sessions, 1) end
    sessions[#sessions + 1] = { access = access, refresh = refresh }
  end
end

dofile("bench/wrk_result.lua") -- done(): the WRK_RESULT line
