-- wrk script for bench/email.sh: POST /auth/v1/token?grant_type=password as one of the bench's confirmed email users,
-- picked at random per request; every answer should be 200 with a session (one scrypt verification each).
--   wrk ... -s bench/email_password.lua URL -- PUBLISHABLE_KEY USERS_FILE [vary-ip|fixed-ip]
-- USERS_FILE is a Lua file that returns the list of users: return { { "pw-1@bench.example", "password" }, … }
-- With vary-ip every request carries X-Forwarded-For: <random 10.x.y.z> (the server trusts that header in the bench).

dofile("bench/wrk_threads.lua") -- setup() (thread_id, threads), seed_random()

local bodies, count, headers, vary_ip

function init(args)
  local apikey = args[1] or error("usage: -- PUBLISHABLE_KEY USERS_FILE [vary-ip|fixed-ip]")
  local users = dofile(args[2] or error("usage: -- PUBLISHABLE_KEY USERS_FILE [vary-ip|fixed-ip]"))
  vary_ip = (args[3] or "vary-ip") == "vary-ip"
  seed_random()
  headers = { ["Content-Type"] = "application/json", ["apikey"] = apikey, ["Authorization"] = "Bearer " .. apikey }
  bodies = {}
  for i, user in ipairs(users) do
    bodies[i] = '{"email":"' .. user[1] .. '","password":"' .. user[2] .. '"}'
  end
  count = #bodies
  if count == 0 then error("no users in " .. args[2]) end
end

function request()
  if vary_ip then
    headers["X-Forwarded-For"] = string.format("10.%d.%d.%d", math.random(0, 255), math.random(0, 255), math.random(1, 254))
  end
  return wrk.format("POST", "/auth/v1/token?grant_type=password", headers, bodies[math.random(1, count)])
end

dofile("bench/wrk_result.lua") -- done(): the WRK_RESULT line
