-- wrk script for bench/tables.sh and bench/cpu.sh: one request (GET or POST) as one of the bench's signed-up users,
-- picked at random per request (as bench/tables.sh's pgbench picks one of its per-user scripts).
--   wrk ... -s bench/tables.lua URL -- PUBLISHABLE_KEY TOKENS_FILE METHOD PATH EXPECTED_STATUS [BODY [PREFER]]
-- TOKENS_FILE is a Lua file that returns the list of access tokens: return { "eyJ…", … }. A POST sends BODY as
-- application/json with `Prefer: PREFER` (default return=minimal; "-" sends no Prefer). Every answer whose status is
-- not EXPECTED_STATUS is counted (wrk itself counts only statuses ≥ 400); done() prints the WRK_RESULT line of
-- bench/wrk_result.lua, then "WRK_STATUS unexpected=N bytes=B" (B: every byte wrk read, headers included).
-- With BENCH_WRK_DELAY_MS=M each connection waits M milliseconds on average before each request (bench/wrk_threads.lua).

dofile("bench/wrk_threads.lua") -- setup() (thread_id, threads), seed_random(), uuid4()

local usage = "usage: -- PUBLISHABLE_KEY TOKENS_FILE METHOD PATH EXPECTED_STATUS [BODY]"
local requests, count, expected
unexpected = 0 -- global: done() reads it from each thread

function init(args)
  local apikey = args[1] or error(usage)
  local tokens = dofile(args[2] or error(usage))
  local method = args[3] or error(usage)
  local path = args[4] or error(usage)
  expected = tonumber(args[5] or error(usage))
  local body = args[6]
  local prefer = args[7] or "return=minimal"
  seed_random()
  -- Every request is one of these, formatted once.
  requests = {}
  for i, token in ipairs(tokens) do
    local headers = { ["apikey"] = apikey, ["Authorization"] = "Bearer " .. token }
    if method == "POST" then
      headers["Content-Type"] = "application/json"
      if prefer ~= "-" then headers["Prefer"] = prefer end
    end
    requests[i] = wrk.format(method, path, headers, body)
  end
  count = #requests
  if count == 0 then error("no tokens in " .. args[2]) end
end

function request()
  return requests[math.random(1, count)]
end

function response(status, headers, body)
  if status ~= expected then unexpected = unexpected + 1 end
end

dofile("bench/wrk_result.lua") -- done(): the WRK_RESULT line
local print_result = done
function done(summary, latency, requests)
  print_result(summary, latency, requests)
  local n = 0
  for _, thread in ipairs(threads) do n = n + (tonumber(thread:get("unexpected")) or 0) end
  io.write(string.format("WRK_STATUS unexpected=%d bytes=%d\n", n, summary.bytes))
end
