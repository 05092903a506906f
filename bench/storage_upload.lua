-- wrk script for bench/storage.sh: POST /storage/v1/object/bench/<thread>-<n> with a raw body of BODY_BYTES random
-- bytes as the app's backend (secret key), a new key per request (no upsert, no replaced version to sweep).
--   wrk ... -s bench/storage_upload.lua URL -- SECRET_KEY BODY_BYTES

dofile("bench/wrk_threads.lua") -- setup() (thread_id, threads), seed_random(), uuid4()

local headers, body, counter, run

function init(args)
  local key = args[1] or error("usage: -- SECRET_KEY BODY_BYTES")
  local size = tonumber(args[2] or error("usage: -- SECRET_KEY BODY_BYTES"))
  seed_random()
  local bytes = {}
  for i = 1, size do bytes[i] = string.char(math.random(0, 255)) end
  body = table.concat(bytes)
  headers = { ["apikey"] = key, ["Content-Type"] = "application/octet-stream" }
  counter = 0
  run = uuid4():sub(1, 8)
end

function request()
  counter = counter + 1
  return wrk.format("POST", string.format("/storage/v1/object/bench/%s-%d-%d", run, thread_id, counter), headers, body)
end

dofile("bench/wrk_result.lua") -- done(): the WRK_RESULT line
