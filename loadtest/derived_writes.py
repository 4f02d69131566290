"""Writes that make derived changes in a large workspace, for docs/benchmarks.md
("Derived changes in a large workspace"): in turn, a PATCH of a job's title, a PATCH of
a job's owning recruiter (its applications show the new recruiter), an import through
the admin interface of a user with a new name, and of a pipeline stage as it was.

Open loop at --rate per second; latency from each request's intended start; p50 and
p99 per kind. Standard library only. Creates its own key through the admin interface,
for the workspace of --snapshot (read from the file's first 30 MB: its workspace, users
and stages).

    python3 loadtest/derived_writes.py --api 127.0.0.1:8443 --admin 127.0.0.1:8444 \
        --token "$(cat data/admin-token)" --snapshot people-1m.json --rate 20
"""
import json, ssl, time, threading, http.client, random, re, argparse
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

ap = argparse.ArgumentParser()
ap.add_argument("--api", required=True)          # host:port of HTTPS API
ap.add_argument("--admin", required=True)        # host:port of admin
ap.add_argument("--token", required=True)
ap.add_argument("--snapshot", required=True)
ap.add_argument("--rate", type=float, default=20)
ap.add_argument("--duration", type=float, default=35)
ap.add_argument("--warmup", type=float, default=5)
ap.add_argument("--only", type=int, default=None)  # one kind of write (0-3) at the whole rate
a = ap.parse_args()

head = open(a.snapshot, "rb").read(30_000_000).decode("utf-8", "ignore")
dec = json.JSONDecoder()
def array(name):
    i = head.index('"%s"' % name)
    i = head.index("[", i)
    v, _ = dec.raw_decode(head, i)
    return v
def obj(name):
    i = head.index('"%s"' % name)
    i = head.index("{", i)
    v, _ = dec.raw_decode(head, i)
    return v
fmt = re.search(r'"format"\s*:\s*("[^"]*"|\d+)', head).group(1)
fmt = json.loads(fmt)
ws = obj("workspace")
users = array("users")
stages = array("pipeline_stages")
owner = next(u for u in users if u.get("status") == "active" and u.get("role") == "owner")
recruiters = [u for u in users if u.get("status") == "active"]

ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
ah, ap_ = a.admin.split(":")
def admin(method, path, body):
    c = http.client.HTTPConnection(ah, int(ap_), timeout=60)
    c.request(method, path, json.dumps(body), {"Authorization": "Bearer " + a.token, "Content-Type": "application/json"})
    r = c.getresponse(); d = r.read(); c.close()
    return r.status, d
st, d = admin("POST", "/admin/v1/keys", {"workspace_id": ws["id"], "created_by_email": owner["email"], "scopes": ["read", "records:write"], "rate_limit_per_minute": 1000000})
assert st in (200, 201), d
key = json.loads(d)["data"]["secret"]
host, port = a.api.split(":")
local = threading.local()
def conn(kind):
    c = getattr(local, kind, None)
    if c is None:
        c = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=30) if kind == "api" else http.client.HTTPConnection(ah, int(ap_), timeout=30)
        setattr(local, kind, c)
    return c
def call(kind, method, path, body):
    hdr = {"Content-Type": "application/json"}
    hdr["Authorization"] = "Bearer " + (key if kind == "api" else a.token)
    for attempt in range(2):
        c = conn(kind)
        try:
            c.request(method, path, json.dumps(body) if body is not None else None, hdr)
            r = c.getresponse(); d = r.read()
            return r.status, d
        except (http.client.HTTPException, OSError):
            c.close(); setattr(local, kind, None)
    raise RuntimeError("connection failed")
st, d = call("api", "GET", "/v1/jobs?limit=100", None)
assert st == 200, d
jobs = [j["id"] for j in json.loads(d)["data"]]
now = lambda: datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
def op(i):
    kind = i % 4 if a.only is None else a.only
    j = jobs[i % len(jobs)]
    if kind == 0:
        st, d = call("api", "PATCH", "/v1/jobs/" + j, {"title": "Title %d" % i}); ok = st == 200
    elif kind == 1:
        r = random.choice(recruiters)["id"]
        st, d = call("api", "PATCH", "/v1/jobs/" + j, {"owning_recruiter_id": r}); ok = st == 200
    elif kind == 2:
        u = dict(users[i % len(users)]); u["name"] = u["name"].split(" #")[0] + " #%d" % i; u["updated_at"] = now()
        st, d = call("admin", "POST", "/admin/v1/import", {"format": fmt, "workspace": ws, "users": [u]}); ok = st == 200
    else:
        s = stages[i % len(stages)]
        st, d = call("admin", "POST", "/admin/v1/import", {"format": fmt, "workspace": ws, "pipeline_stages": [s]}); ok = st == 200
    return kind, ok, st, d[:200]
names = ["job title PATCH", "job recruiter PATCH", "user import", "stage import"]
lat = {k: [] for k in range(4)}; errors = []
start = time.monotonic() + 0.5
total = int(a.rate * a.duration)
def run(i, intended):
    kind, ok, st, d = op(i)
    done = time.monotonic()
    if not ok: errors.append((names[kind], st, d))
    if intended - start >= a.warmup:
        lat[kind].append((done - intended) * 1000)
with ThreadPoolExecutor(16) as pool:
    for i in range(total):
        intended = start + i / a.rate
        delay = intended - time.monotonic()
        if delay > 0: time.sleep(delay)
        pool.submit(run, i, intended)
def pct(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else float("nan")
for k in range(4):
    print("%-22s n=%4d p50 %.2f ms p99 %.2f ms max %.2f ms" % (names[k], len(lat[k]), pct(lat[k], 50), pct(lat[k], 99), max(lat[k]) if lat[k] else 0))
allv = [x for k in range(4) for x in lat[k]]
print("%-22s n=%4d p50 %.2f ms p99 %.2f ms" % ("all", len(allv), pct(allv, 50), pct(allv, 99)))
print("errors", len(errors), errors[:3])
