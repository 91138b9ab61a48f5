-- wrk script for benchmarks/doors.py: 80% reads (search, recall, get), 20% writes (remember).
-- Each thread counts its acknowledged writes; done() prints one JSON line for the caller.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(os.time() + math.random(1000000))
  acknowledged = 0
  failed = 0
  last_was_write = {}
end

local function post(verb, body)
  return wrk.format("POST", "/v1/" .. verb .. "?memory=bench",
                    {["Content-Type"] = "application/json"}, body)
end

function request()
  local roll = math.random()
  if roll < 0.2 then
    wants_write = true
    return post("remember", string.format(
      '{"category": "context", "content": "wrkload write %d %d"}', math.random(1e9), os.time()))
  end
  wants_write = false
  if roll < 0.6 then
    return post("search", string.format('{"query": "word%d topic"}', math.random(0, 49)))
  elseif roll < 0.9 then
    return post("recall", '{"limit": 20, "from": "*"}')
  end
  return post("get", string.format('{"id": %d}', math.random(1, 500)))
end

function response(status, headers, body)
  if string.find(body, '"ok":false', 1, true) and status ~= 404 then
    failed = failed + 1
  elseif status == 200 and string.match(body, "^%d+$") then
    acknowledged = acknowledged + 1
  end
end

function done(summary, latency, requests)
  local writes, errors = 0, 0
  for _, thread in ipairs(threads) do
    writes = writes + thread:get("acknowledged")
    errors = errors + thread:get("failed")
  end
  io.write(string.format(
    '{"requests": %d, "seconds": %f, "p50_ms": %f, "p95_ms": %f, "writes": %d, "errors": %d,' ..
    ' "socket_errors": %d, "non_2xx": %d}\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000,
    latency:percentile(95) / 1000, writes, errors,
    summary.errors.connect + summary.errors.read + summary.errors.write +
    summary.errors.timeout, summary.errors.status))
end
