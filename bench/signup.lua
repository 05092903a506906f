-- wrk script for bench/signup.sh: POST /auth/v1/signup with a fresh random (v4) device secret per
-- request, so every request creates a user, a device and a session.
--   wrk ... -s bench/signup.lua URL -- PUBLISHABLE_KEY [vary-ip|fixed-ip]
-- With vary-ip every request carries X-Forwarded-For: <random 10.x.y.z> (the server trusts that
-- header in the bench), as sign-ups from many clients would.

dofile("bench/wrk_threads.lua") -- setup() (thread_id, threads), seed_random(), uuid4()

local apikey, vary_ip
local fixed_headers

function init(args)
  apikey = args[1] or error("usage: -- PUBLISHABLE_KEY [vary-ip|fixed-ip]")
  vary_ip = (args[2] or "vary-ip") == "vary-ip"
  seed_random()
  fixed_headers = {
    ["Content-Type"] = "application/json",
    ["apikey"] = apikey,
    ["Authorization"] = "Bearer " .. apikey,
  }
end

function request()
  local headers = fixed_headers
  if vary_ip then
    headers = {}
    for k, v in pairs(fixed_headers) do headers[k] = v end
    headers["X-Forwarded-For"] = string.format("10.%d.%d.%d", math.random(0, 255), math.random(0, 255), math.random(1, 254))
  end
  return wrk.format("POST", "/auth/v1/signup", headers, '{"data":{"device_id":"' .. uuid4() .. '"}}')
end

dofile("bench/wrk_result.lua") -- done(): the WRK_RESULT line
