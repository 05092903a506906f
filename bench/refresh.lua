-- wrk script for bench/refresh.sh: POST /auth/v1/token?grant_type=refresh_token, each request rotating one of the
-- bench's sessions: the answer's new refresh token replaces the one used, for that session's next request.
--   wrk ... -s bench/refresh.lua URL -- PUBLISHABLE_KEY TOKENS_FILE
-- TOKENS_FILE is a Lua file that returns the sessions' current refresh tokens: return { "gpr_…", … }. Thread k of n
-- takes tokens k, k + n, k + 2n, …; a connection sends its next request only after its answer, so a thread needs
-- at least as many sessions as it has connections (bench/refresh.sh signs up 4 per connection).

dofile("bench/wrk_threads.lua") -- setup() (thread_id, threads), seed_random(), uuid4()

local apikey
local ready = {} -- refresh tokens not in flight

function init(args)
  apikey = args[1] or error("usage: -- PUBLISHABLE_KEY TOKENS_FILE")
  local tokens = dofile(args[2] or error("usage: -- PUBLISHABLE_KEY TOKENS_FILE"))
  local threads = tonumber(os.getenv("BENCH_WRK_THREADS") or "1") -- wrk -t, as bench/refresh.sh sets it
  for i, token in ipairs(tokens) do
    if (i - 1) % threads == (thread_id or 1) - 1 then ready[#ready + 1] = token end
  end
  if #ready == 0 then error("no tokens for thread " .. tostring(thread_id)) end
end

local function refresh(token)
  return wrk.format("POST", "/auth/v1/token?grant_type=refresh_token", {
    ["Content-Type"] = "application/json",
    ["apikey"] = apikey,
    ["Authorization"] = "Bearer " .. apikey,
  }, '{"refresh_token":"' .. token .. '"}')
end

function request()
  -- No session at hand (only after failed answers): a request answered 400, counted as an error.
  return refresh(table.remove(ready) or "gpr_none")
end

-- A rotated session goes back to the pool with its new token; a failed answer loses its session (and is counted).
function response(status, headers, body)
  local next_token = status == 200 and body and body:match('"refresh_token"%s*:%s*"([^"]+)"')
  if next_token then ready[#ready + 1] = next_token end
end

dofile("bench/wrk_result.lua") -- done(): the WRK_RESULT line
