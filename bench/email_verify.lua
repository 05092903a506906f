-- wrk script for bench/email.sh: POST /auth/v1/verify {type: email, email, token} with a wrong code for one of the
-- bench's addresses otp-<FIRST…LAST>@bench.example (each with a pending code), picked at random per request. The
-- expected answer is 403 otp_expired: the server computes the code's HMAC and runs guestpass_server.email_verify,
-- which counts the miss against the address's live codes (the same SQL bench/email.sh's pgbench runs).
--   wrk ... -s bench/email_verify.lua URL -- PUBLISHABLE_KEY FIRST LAST TOKEN [vary-ip|fixed-ip]
-- done() prints the WRK_RESULT line of bench/wrk_result.lua with non2xx = the answers that were not 403 otp_expired
-- (a 200, a code that happened to be right, is counted apart: matched=N).

dofile("bench/wrk_threads.lua") -- setup() (thread_id, threads), seed_random()

local headers, first, last, token, vary_ip
unexpected = 0
matched = 0

function init(args)
  local apikey = args[1] or error("usage: -- PUBLISHABLE_KEY FIRST LAST TOKEN [vary-ip|fixed-ip]")
  first = tonumber(args[2]) or error("FIRST must be a number")
  last = tonumber(args[3]) or error("LAST must be a number")
  token = args[4] or error("TOKEN is required")
  vary_ip = (args[5] or "vary-ip") == "vary-ip"
  seed_random()
  headers = { ["Content-Type"] = "application/json", ["apikey"] = apikey, ["Authorization"] = "Bearer " .. apikey }
end

function request()
  if vary_ip then
    headers["X-Forwarded-For"] = string.format("10.%d.%d.%d", math.random(0, 255), math.random(0, 255), math.random(1, 254))
  end
  return wrk.format("POST", "/auth/v1/verify", headers,
    '{"type":"email","email":"otp-' .. math.random(first, last) .. '@bench.example","token":"' .. token .. '"}')
end

function response(status, _, body)
  if status == 403 and string.find(body, "otp_expired", 1, true) then return end
  if status == 200 then matched = matched + 1 else unexpected = unexpected + 1 end
end

function done(summary, latency, _)
  local bad, hits = 0, 0
  for _, thread in ipairs(threads) do
    bad = bad + thread:get("unexpected")
    hits = hits + thread:get("matched")
  end
  local errors = summary.errors
  io.write(string.format(
    "WRK_RESULT requests=%d duration_us=%d non2xx=%d connect=%d read=%d write=%d timeout=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d matched=%d\n",
    summary.requests, summary.duration, bad, errors.connect, errors.read, errors.write, errors.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, hits))
end
