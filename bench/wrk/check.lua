-- wrk script for the simple GET rows of bench/run.py.
-- Environment: BENCH_PATH (request path), BENCH_AUTH (optional Authorization header value),
-- BENCH_EXPECT (optional; one or more plain substrings separated by "\t", all must be in every
-- body). Every response is checked: status 200 and the expected substrings. done() prints one
-- JSON line prefixed with "BENCH_RESULT " (counts and latency percentiles in microseconds).
local path = os.getenv("BENCH_PATH") or "/"
local auth = os.getenv("BENCH_AUTH")
local expect_raw = os.getenv("BENCH_EXPECT") or ""
local expects = {}
for piece in string.gmatch(expect_raw, "[^\t]+") do table.insert(expects, piece) end

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  failures = 0
  responses = 0
  first_failure = ""
  local headers = {}
  if auth then headers["Authorization"] = auth end
  req = wrk.format("GET", path, headers, nil)
end

function request()
  return req
end

function response(status, headers, body)
  responses = responses + 1
  local ok = (status == 200)
  if ok then
    for _, e in ipairs(expects) do
      if not string.find(body, e, 1, true) then ok = false break end
    end
  end
  if not ok then
    failures = failures + 1
    if first_failure == "" then
      first_failure = tostring(status) .. " " .. string.sub(body or "", 1, 120)
    end
  end
end

function done(summary, latency, requests)
  local failures_total, responses_total, first = 0, 0, ""
  for _, t in ipairs(threads) do
    failures_total = failures_total + t:get("failures")
    responses_total = responses_total + t:get("responses")
    local f = t:get("first_failure")
    if first == "" and f ~= nil then first = f end
  end
  local e = summary.errors
  first = string.gsub(first, '[%c"\\]', " ")
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"duration_us":%d,"responses_checked":%d,"check_failures":%d,' ..
    '"socket_errors":%d,"non2xx":%d,"p50_us":%d,"p99_us":%d,"first_failure":"%s"}\n',
    summary.requests, summary.duration, responses_total, failures_total,
    e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99), first))
end
