-- wrk script for bench/signup.sh: POST /auth/v1/signup with a fresh random (v4) device secret per
-- request, so every request creates a user, a device and a session.
--   wrk ... -s bench/signup.lua URL -- PUBLISHABLE_KEY [vary-ip|fixed-ip]
-- With vary-ip every request carries X-Forwarded-For: <random 10.x.y.z> (the server trusts that
-- header in the bench), as sign-ups from many clients would.

local thread_count = 0

function setup(thread)
  thread_count = thread_count + 1
  thread:set("thread_id", thread_count)
end

local apikey, vary_ip
local fixed_headers

function init(args)
  apikey = args[1] or error("usage: -- PUBLISHABLE_KEY [vary-ip|fixed-ip]")
  vary_ip = (args[2] or "vary-ip") == "vary-ip"
  -- One seed per thread (each thread has its own Lua state and would otherwise repeat the others).
  math.randomseed(os.time() * 1000 + (thread_id or 0) * 7919 + math.floor(os.clock() * 1000000))
  for _ = 1, 10 do math.random() end
  fixed_headers = {
    ["Content-Type"] = "application/json",
    ["apikey"] = apikey,
    ["Authorization"] = "Bearer " .. apikey,
  }
end

local function r16() return math.random(0, 0xffff) end

-- RFC 4122 version 4: version nibble 4, variant bits 10.
local function uuid4()
  return string.format("%04x%04x-%04x-%04x-%04x-%04x%04x%04x",
    r16(), r16(), r16(), 0x4000 + math.random(0, 0x0fff), 0x8000 + math.random(0, 0x3fff), r16(), r16(), r16())
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
