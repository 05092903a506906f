-- Shared by the bench/*.lua wrk scripts (dofile("bench/wrk_threads.lua") at the top; the bench scripts run from the
-- repository root): the threads, numbered, and their random numbers.
--   setup()        numbers the threads: thread_id is 1, 2, … in each thread's Lua state; `threads` lists them, in the
--                  main state, for done() to read their variables
--   seed_random()  in init(): one seed per thread (each thread has its own Lua state and would otherwise repeat the
--                  others' numbers)
--   uuid4()        a random RFC 4122 version 4 UUID (version nibble 4, variant bits 10)
--   delay()        only with BENCH_WRK_DELAY_MS=M set (a decimal): each connection waits M milliseconds on average before
--                  each request, a paced load (wrk's delays are whole milliseconds, so each is M rounded down or up at
--                  random, M on average)

threads = {}

function setup(thread)
  threads[#threads + 1] = thread
  thread:set("thread_id", #threads)
end

function seed_random()
  math.randomseed(os.time() * 1000 + (thread_id or 0) * 7919 + math.floor(os.clock() * 1000000))
  for _ = 1, 10 do math.random() end
end

local function r16() return math.random(0, 0xffff) end

function uuid4()
  return string.format("%04x%04x-%04x-%04x-%04x-%04x%04x%04x",
    r16(), r16(), r16(), 0x4000 + math.random(0, 0x0fff), 0x8000 + math.random(0, 0x3fff), r16(), r16(), r16())
end

local pause = tonumber(os.getenv("BENCH_WRK_DELAY_MS") or "")
if pause then
  local whole = math.floor(pause)
  local fraction = pause - whole
  function delay()
    if fraction > 0 and math.random() < fraction then return whole + 1 end
    return whole
  end
end
