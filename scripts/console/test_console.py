"""The operator console in headless Chromium, against three real nodes on PostgreSQL.

Started by ./run (which installs what it needs and builds the server). Makes a fresh
PostgreSQL schema, starts three `recruitd serve` nodes on it, imports a generated
workspace through the first node's admin interface and makes an API key, then, in the
browser, on the first node's console:

1. logs in with the admin token (the login form);
2. sees three alive nodes and the workspace's writer (as the cluster view names it);
3. writes a note through the API (HTTPS, the node's own certificate) and sees the
   workspace's position change on the page within 2 s of the write's answer;
4. kills a node with SIGKILL (the writer, unless it is the console's own node) and sees
   it shown as not alive within the lease and 2 s, then a live writer;
5. finds, in no URL the browser asked for and in no localStorage or sessionStorage
   entry, the admin token (nor the session id in a URL or in `document.cookie`), and
   the cookie HttpOnly, SameSite=Strict, on /admin;
6. in a fresh browser context (no cookie), is refused the page (401, the login form)
   and every JSON path of the console.

A screenshot of the page goes to each --screenshot path. Any failed check ends the
script with a message and a non-zero status; the nodes are stopped and the schema
dropped whatever happens.

With --hold SECONDS --admin URL --token-file FILE it only logs in to a running node's
console and keeps the page open (refreshing itself), for measurements with the console
open; it fails if the login fails or the page stays in error.
"""

import argparse
import json
import os
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# A node's lease: a node whose lease passes is dead (src/cluster/mod.rs, LEASE).
LEASE_S = 5.0
DATA_PATHS = [
    "/admin/v1/console/overview",
    "/admin/v1/console/traffic",
    "/admin/v1/console/workspaces?q=a",
]


class Failed(Exception):
    """A check that did not hold."""


def check(ok, what):
    if not ok:
        raise Failed(what)
    print(f"ok: {what}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, token=None, body=None, cafile=None, timeout=30):
    """A request; (status, parsed JSON or None)."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    ctx = ssl.create_default_context(cafile=cafile) if cafile else None
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as res:
            raw = res.read()
            return res.status, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, None


def wait_for(what, within, probe, every=0.1):
    """Polls `probe` until it returns a true value (returned), else fails."""
    deadline = time.monotonic() + within
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise Failed(f"{what} within {within} s")
        time.sleep(every)


class Node:
    def __init__(self, name, binary, database, root, work):
        self.name = name
        self.dir = os.path.join(root, name)
        self.api_port, self.admin_port = free_port(), free_port()
        self.api = f"https://127.0.0.1:{self.api_port}"
        self.admin = f"http://127.0.0.1:{self.admin_port}"
        self.log = os.path.join(work, f"node-{name}.log")
        env = {k: v for k, v in os.environ.items() if not k.startswith("RECRUITD_")}
        env["RECRUITD_LOG"] = "warn"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [binary, "--data-dir", self.dir, "--database-url", database, "serve",
                 "--node-name", name,
                 "--listen", f"127.0.0.1:{self.api_port}",
                 "--admin-listen", f"127.0.0.1:{self.admin_port}"],
                stdout=log, stderr=log, env=env)

    @property
    def token(self):
        with open(os.path.join(self.dir, "admin-token")) as f:
            return f.read().strip()

    @property
    def cacert(self):
        return os.path.join(self.dir, "tls", "cert.pem")

    def ready(self):
        if self.proc.poll() is not None:
            with open(self.log) as f:
                raise Failed(f"node {self.name} exited:\n{f.read()}")
        try:
            return http("GET", f"{self.admin}/admin/v1/ready", self.token, timeout=5)[0] == 200
        except (OSError, ValueError):
            return False

    def overview(self):
        status, body = http("GET", f"{self.admin}/admin/v1/console/overview", self.token)
        if status != 200:
            raise Failed(f"the overview of {self.name} answered {status}: {body}")
        return body["data"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def browser(p):
    return p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)


def log_in(page, admin, token):
    page.goto(f"{admin}/admin/console")
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    if page.locator("#token").count() > 0:
        raise Failed(f"the console at {admin} refused the token")
    page.wait_for_selector("#nodes tbody tr", timeout=15000)


def storage_text(page):
    return page.evaluate(
        """() => {
          const all = {};
          for (const s of [window.localStorage, window.sessionStorage]) {
            for (let i = 0; i < s.length; i += 1) all[s.key(i)] = s.getItem(s.key(i));
          }
          return JSON.stringify(all);
        }"""
    )


class Traffic(threading.Thread):
    """Lookups and lists through a node's API while the test runs: what the traffic
    panel draws."""

    def __init__(self, node, key, phone):
        super().__init__(daemon=True)
        self.node, self.key, self.phone = node, key, phone
        self.stopped = threading.Event()
        self.answered = 0

    def run(self):
        paths = [f"/v1/search/phone?number={urllib.parse.quote(self.phone)}", "/v1/candidates?limit=20"]
        i = 0
        while not self.stopped.is_set():
            try:
                status, _ = http("GET", self.node.api + paths[i % 2], self.key, cafile=self.node.cacert, timeout=10)
                self.answered += status == 200
            except OSError:
                pass
            i += 1
            self.stopped.wait(0.05)


def run_checks(args):
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    schema = f"recruitd_console_{int(time.time())}_{secrets.token_hex(4)}"
    base = args.database
    sep = "&" if "?" in base else "?"
    database = f"{base}{sep}application_name={schema}&options=-c%20search_path%3D{schema}"
    subprocess.run(["psql", base, "-qc", f'CREATE SCHEMA "{schema}"'], check=True)
    root = tempfile.mkdtemp(prefix="recruitd-console-")
    nodes = []
    traffic = None
    try:
        snapshot = os.path.join(root, "workspace.json")
        subprocess.run([args.bin, "generate", "--people", str(args.people), "--seed", "7", "--out", snapshot],
                       check=True, capture_output=True)
        with open(snapshot) as f:
            snap = json.load(f)
        workspace = snap["workspace"]["id"]
        owner = next(u["email"] for u in snap["users"] if u.get("role") == "owner")
        company = snap["companies"][0]["id"]
        phone = next(c["phone"] for c in snap["contacts"] if c.get("phone"))

        # One at a time, each ready before the next starts.
        for name in ["n1", "n2", "n3"]:
            node = Node(name, args.bin, database, root, work)
            nodes.append(node)
            with open(os.path.join(work, "pids"), "a") as f:
                f.write(f"{node.proc.pid}\n")
            wait_for(f"node {name} ready", 90, node.ready, every=0.25)
        n1 = nodes[0]
        with open(snapshot, "rb") as f:
            status, body = http("POST", f"{n1.admin}/admin/v1/import", n1.token, f.read(), timeout=120)
        check(status == 200, f"the snapshot imported through {n1.name}'s admin interface ({status})")
        status, body = http("POST", f"{n1.admin}/admin/v1/keys", n1.token, {
            "workspace_id": workspace, "created_by_email": owner,
            "scopes": ["notes:write"], "rate_limit_per_minute": 1000000})
        check(status == 200, f"an API key made ({status}: {body and body.get('error')})")
        key = body["data"]["secret"]

        def settled():
            o = n1.overview()
            row = next((w for w in o["workspaces"] if w["id"] == workspace), None)
            alive = [n for n in o["nodes"] if n["alive"]]
            return row if len(alive) == 3 and row and row["writer"] and len(row["holders"]) == 2 else None

        row = wait_for("three alive nodes, the workspace written and held twice", 60, settled, every=0.5)
        writer = row["writer"]
        traffic = Traffic(n1, key, phone)
        traffic.start()

        with sync_playwright() as p:
            b = browser(p)
            context = b.new_context(viewport={"width": 1440, "height": 1000})
            urls = []
            context.on("request", lambda r: urls.append(r.url))
            page = context.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))

            # 1. The login form, then the console.
            res = page.goto(f"{n1.admin}/admin/console")
            check(res.status == 401 and page.locator("#token").count() == 1,
                  "without a session the page is the login form, answered 401")
            page.fill("#token", n1.token)
            page.click("button[type=submit]")
            page.wait_for_selector("#nodes tbody tr", timeout=15000)
            check(page.url == f"{n1.admin}/admin/console", "logged in: the console")

            # 2. Three alive nodes, and the workspace's writer.
            page.wait_for_function(
                "() => document.querySelectorAll('#nodes tbody tr[data-alive=\"true\"]').length === 3",
                timeout=10000)
            check(True, "three nodes shown alive")
            ws_row = f'#workspaces tr[data-workspace="{workspace}"]'
            page.wait_for_selector(ws_row, timeout=10000)
            # The writer can still move once after the cluster settles: the import made
            # n1 the writer, and it hands the lease to the best placed holder once that
            # holder has loaded its copy. So the page is compared with the cluster view
            # read at the same moment, until both agree (the page refreshes every second).
            def agreed():
                shown = page.inner_text(f"{ws_row} td.writer")
                now = n1.overview()
                row = next((w for w in now["workspaces"] if w["id"] == workspace), None)
                return (shown, row["writer"]) if row and shown == row["writer"] else None

            shown, writer = wait_for("the page's writer agreeing with the cluster view", 10, agreed, every=0.25)
            check(True, f"the workspace's writer shown: {shown}, as the cluster view says")

            # 3. A write moves the position shown within 2 s of its answer.
            before = int(page.get_attribute(f"{ws_row} td.position", "data-position"))
            status, body = http("POST", f"{n1.api}/v1/notes", key, {
                "parent_type": "company", "parent_id": company,
                "body_html": "written while the console watched", "reference": "console-check-1"},
                cafile=n1.cacert)
            answered = time.monotonic()
            check(status == 201, f"a note written through the API over HTTPS ({status})")
            page.wait_for_function(
                f"""() => {{
                  const c = document.querySelector('{ws_row} td.position');
                  return c && Number(c.dataset.position) > {before};
                }}""", timeout=2000)
            took = time.monotonic() - answered
            after = int(page.get_attribute(f"{ws_row} td.position", "data-position"))
            check(after > before and took <= 2.0,
                  f"the position moved from {before} to {after} on the page {took:.2f} s after the write")

            # The workspace's own panel, and this node's traffic.
            page.click(f"{ws_row} td.name")
            page.wait_for_function(
                "() => document.querySelectorAll('#detail-counts tbody tr').length === 9", timeout=10000)
            shown = page.evaluate(
                """() => Object.fromEntries([...document.querySelectorAll('#detail-counts tbody tr')]
                     .map((tr) => [tr.cells[0].textContent, Number(tr.cells[1].textContent.replace(/,/g, ''))]))""")
            status, counts = http("GET", f"{n1.api}/v1/counts", key, cafile=n1.cacert)
            check(status == 200 and shown == counts["data"],
                  f"the workspace's panel shows the API's counts ({shown['candidates']} candidates)")
            keys = page.inner_text("#detail-keys tbody")
            check(key not in keys and "notes:write" in keys, "its keys shown, without their secrets")
            page.wait_for_selector('#traffic .route[data-route="GET /v1/search/phone"]', timeout=20000)
            check(True, "the traffic panel draws the lookups answered by this node")

            # 4. A node killed shows as not alive within the lease and 2 s.
            victim = next(n for n in nodes if n.name == writer) if writer != n1.name else nodes[1]
            victim.proc.send_signal(signal.SIGKILL)
            victim.proc.wait()
            killed = time.monotonic()
            page.wait_for_selector(f'#nodes tr[data-node="{victim.name}"][data-alive="false"]',
                                   timeout=(LEASE_S + 2.0) * 1000)
            took = time.monotonic() - killed
            check(took <= LEASE_S + 2.0, f"{victim.name} (killed) shown not alive {took:.2f} s after the kill")
            live = [n.name for n in nodes if n is not victim]
            page.wait_for_function(
                f"""() => {{
                  const c = document.querySelector('{ws_row} td.writer');
                  return c && {json.dumps(live)}.includes(c.textContent);
                }}""", timeout=20000)
            check(True, f"a live node shown as the writer: {page.inner_text(f'{ws_row} td.writer')}")
            time.sleep(1.5)  # one more refresh of every panel, for the picture
            for path in args.screenshot:
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                page.screenshot(path=path, full_page=True)
                print(f"screenshot: {path}", flush=True)

            # 5. No secret in a URL, in storage, or readable by scripts.
            token = n1.token
            cookies = [c for c in context.cookies() if c["name"] == "recruitd_console"]
            check(len(cookies) == 1, "one session cookie")
            cookie = cookies[0]
            check(cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/admin",
                  f"the cookie is HttpOnly, SameSite={cookie['sameSite']}, Path={cookie['path']}")
            check(token not in cookie["value"], "the cookie is not the token")
            check(len(urls) > 10, f"{len(urls)} requests recorded")
            check(all(token not in u and cookie["value"] not in u for u in urls),
                  "no URL the browser asked for holds the token or the session id")
            check(token not in storage_text(page), "no localStorage or sessionStorage entry holds the token")
            check(page.evaluate("document.cookie") == "", "the session cookie is unreadable to scripts")
            check(not errors, f"no script error on the page: {errors}")

            # 6. Without the cookie: the login form, and no data.
            fresh = b.new_context()
            res = fresh.request.get(f"{n1.admin}/admin/console")
            check(res.status == 401 and b"/admin/console/login" in res.body() and b"nodes" not in res.body(),
                  "a fresh context gets the login form, 401, without data")
            for path in DATA_PATHS + [f"/admin/v1/console/workspaces/{workspace}"]:
                res = fresh.request.get(f"{n1.admin}{path}")
                check(res.status == 401, f"a fresh context is refused {path} ({res.status})")
            fresh_page = fresh.new_page()
            fresh_page.goto(f"{n1.admin}/admin/console")
            check(fresh_page.locator("#nodes").count() == 0 and fresh_page.locator("#token").count() == 1,
                  "a fresh context's page shows the login form alone")
            b.close()
        check(traffic.answered > 0, f"{traffic.answered} lookups and lists answered meanwhile")
        print("console: every check passed", flush=True)
    finally:
        if traffic:
            traffic.stopped.set()
        for node in nodes:
            node.stop()
        subprocess.run(["psql", base, "-qc", f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'],
                       capture_output=True)
        subprocess.run(["rm", "-rf", root])


def hold(args):
    with open(args.token_file) as f:
        token = f.read().strip()
    with sync_playwright() as p:
        b = browser(p)
        page = b.new_page()
        requests = [0]
        page.on("request", lambda r: requests.__setitem__(0, requests[0] + 1))
        log_in(page, args.admin, token)
        rows = page.locator("#workspaces tbody tr")
        page.wait_for_timeout(1500)
        if rows.count() > 0:
            rows.first.click()  # the workspace's panel refreshes too
        print(f"console open on {args.admin} for {args.hold} s", flush=True)
        deadline = time.monotonic() + args.hold
        stale_since = None
        while time.monotonic() < deadline:
            page.wait_for_timeout(min(5000, max(0, (deadline - time.monotonic()) * 1000)))
            stale = "stale" in (page.get_attribute("#status", "class") or "")
            if stale and stale_since is None:
                stale_since = time.monotonic()
            elif not stale:
                stale_since = None
            if stale_since is not None and time.monotonic() - stale_since > 30:
                raise Failed(f"the console stayed in error: {page.inner_text('#status')}")
        print(f"held: {requests[0]} requests made by the page", flush=True)
        b.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", help="the recruitd binary")
    ap.add_argument("--database", help="PostgreSQL URL (a schema of its own is made in it)")
    ap.add_argument("--work", help="where logs go")
    ap.add_argument("--people", type=int, default=200)
    ap.add_argument("--screenshot", action="append", default=[])
    ap.add_argument("--hold", type=float, help="keep a logged-in console open this many seconds")
    ap.add_argument("--admin", help="--hold: the node's admin URL (http://127.0.0.1:8444)")
    ap.add_argument("--token-file", help="--hold: a file holding the admin token")
    args = ap.parse_args()
    try:
        if args.hold is not None:
            if not args.admin or not args.token_file:
                ap.error("--hold needs --admin and --token-file")
            hold(args)
        else:
            if not args.bin or not args.database or not args.work:
                ap.error("--bin, --database and --work are needed")
            run_checks(args)
    except (Failed, PlaywrightError, OSError, subprocess.CalledProcessError) as e:
        print(f"FAILED: {e}", file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
