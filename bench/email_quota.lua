-- wrk script for bench/email.sh: POST /rest/v1/rpc/get_quota with body {} as one of the bench's signed-up guests,
-- picked at random per request (as bench/consume.lua calls consume_quota): the probe of another route's latency.
--   wrk ... -s bench/email_quota.lua URL -- PUBLISHABLE_KEY TOKENS_FILE
-- TOKENS_FILE is a Lua file that returns the list of access tokens: return { "eyJ…", … }
-- With BENCH_WRK_DELAY_MS set, each connection waits that many milliseconds before each request (a light, paced load
-- whose latency is the route's own, not a queue's).

dofile("bench/wrk_threads.lua") -- setup() (thread_id, threads), seed_random()

local requests, count

function init(args)
  local apikey = args[1] or error("usage: -- PUBLISHABLE_KEY TOKENS_FILE")
  local tokens = dofile(args[2] or error("usage: -- PUBLISHABLE_KEY TOKENS_FILE"))
  seed_random()
  requests = {}
  for i, token in ipairs(tokens) do
    requests[i] = wrk.format("POST", "/rest/v1/rpc/get_quota", {
      ["Content-Type"] = "application/json",
      ["apikey"] = apikey,
      ["Authorization"] = "Bearer " .. token,
    }, "{}")
  end
  count = #requests
  if count == 0 then error("no tokens in " .. args[2]) end
end

function request()
  return requests[math.random(1, count)]
end

dofile("bench/wrk_result.lua") -- done(): the WRK_RESULT line
