-- Shared by the bench/*.lua wrk scripts (dofile("bench/wrk_result.lua"); the bench scripts run from the repository
-- root): done() prints one WRK_RESULT line that bench/lib.sh's bench_wrk_result reads.
function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    "WRK_RESULT requests=%d duration_us=%d non2xx=%d connect=%d read=%d write=%d timeout=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d\n",
    summary.requests, summary.duration, errors.status, errors.connect, errors.read, errors.write, errors.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
