#!/usr/bin/env python3
"""Resource-exhaustion attacks against a running recruitd, each beside a probe.

The attacker connects from 127.0.0.1; the probe, a legitimate client in a process of its
own, from 127.0.0.2 (another peer to the server): every `--probe-every` it opens a new
TLS connection and makes one `GET /v1/openapi.json` (public), recording its latency or
its failure. The report gives the attacker's connections held, the probe's outcome
(answered, failed, p50/p99/max latency), and the server's resident memory and open
descriptors before, at their peak and at the attack's end (sampled from /proc with
--pid). An attacker whose connection is refused or closed tries again a second later.

Attacks:
  idle-h2         TLS with ALPN h2, the HTTP/2 preface and SETTINGS, then only answers to
                  the server's PINGs; never a stream. Reconnects what is closed.
  idle-h1         TLS (ALPN http/1.1), then nothing. Reconnects what is closed.
  big-headers     HTTP/2 (if offered) a header block of --header-mib MiB in CONTINUATION
                  frames, else HTTP/1.1 a request head of that size.
  no-read         HTTP/1.1 requests for --path (with --key) on connections that never read
                  their answers (receive buffer 4 KiB).
  slow-handshake  TCP connections that send the first byte of a ClientHello and stop.
  bad-keys        keep-alive connections sending requests with unknown keys as fast as
                  answered; the report counts the answers by status (with --log, the
                  bytes the server's log grew by).
  admin-body      uploads of --body-mib MiB to the admin import with a wrong token, on
                  the admin port (--admin-port).

Standard library only. Example:
  python3 loadtest/attacks.py --port 8443 --attack idle-h2 --count 3000 --hold 30 --pid $PID
"""

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import ssl
import statistics
import struct
import time

PROBE_PEER = "127.0.0.2"
ATTACK_PEER = "127.0.0.1"


def tls_context(alpn):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(alpn)
    return ctx


def sample(pid):
    """(resident MiB, open descriptors) of the server, or (None, None)."""
    if not pid:
        return None, None
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) / 1024
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        return rss, fds
    except OSError:
        return None, None


class Stats:
    def __init__(self):
        self.held = 0
        self.peak_held = 0
        self.opened = 0
        self.refused = 0
        self.probe_ok = []
        self.probe_failed = 0
        self.peak_rss = 0.0
        self.peak_fds = 0
        self.statuses = {}

    def hold(self, delta):
        self.held += delta
        self.peak_held = max(self.peak_held, self.held)


async def open_tls(host, port, alpn, local=ATTACK_PEER, timeout=10, rcvbuf=None):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.bind((local, 0))
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await asyncio.wait_for(loop.sock_connect(sock, (host, port)), timeout)
    return await asyncio.wait_for(
        asyncio.open_connection(sock=sock, ssl=tls_context(alpn), server_hostname=host),
        timeout,
    )


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


async def read_frames(reader, writer, stats):
    """Answers SETTINGS and PING until the server closes."""
    while True:
        head = await reader.readexactly(9)
        length = int.from_bytes(head[:3], "big")
        kind, flags = head[3], head[4]
        payload = await reader.readexactly(length)
        if kind == 4 and not flags & 1:
            writer.write(frame(4, 1, 0))
        elif kind == 6 and not flags & 1:
            writer.write(frame(6, 1, 0, payload))
        await writer.drain()


async def idle_conn(args, stats, h2):
    """Holds one idle connection for as long as the attack lasts, reopening it."""
    while not stats.done:
        try:
            reader, writer = await open_tls(args.host, args.port, ["h2"] if h2 else ["http/1.1"])
        except (OSError, asyncio.TimeoutError, ssl.SSLError):
            stats.refused += 1
            await asyncio.sleep(1)
            continue
        stats.opened += 1
        proto = writer.get_extra_info("ssl_object").selected_alpn_protocol()
        if h2 and proto != "h2":
            stats.refused += 1
            writer.close()
            await asyncio.sleep(1)
            continue
        stats.hold(1)
        try:
            if h2:
                writer.write(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0))
                await writer.drain()
                await read_frames(reader, writer, stats)
            else:
                await reader.read()
        except (OSError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            stats.hold(-1)
            writer.close()
        await asyncio.sleep(1)


QUIET = (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, ssl.SSLError, ValueError)


async def held_conn(stats, connect, body):
    """One attacking connection: opened by `connect` (counted as refused when it fails),
    held in `stats` while `body(reader, writer)` runs, closed after it. A connection the
    server ends is the attack's expected outcome, not an error."""
    try:
        reader, writer = await connect
    except (OSError, asyncio.TimeoutError, ssl.SSLError):
        stats.refused += 1
        return
    stats.opened += 1
    stats.hold(1)
    try:
        await body(reader, writer)
    except QUIET:
        pass
    finally:
        stats.hold(-1)
        writer.close()


def count_status(stats, head):
    """Counts an answer by the status in its head."""
    status = int(head.split(b" ", 2)[1])
    stats.statuses[status] = stats.statuses.get(status, 0) + 1


async def big_headers_conn(args, stats):
    total = args.header_mib << 20

    async def body(reader, writer):
        if writer.get_extra_info("ssl_object").selected_alpn_protocol() == "h2":
            writer.write(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0))
            # A literal header, new name, of one long value: its length announced up front.
            block = b"\x00\x01x" + b"\x7f" + encode_rest(total - 4, 7)
            first = block + b"a" * (16384 - len(block))
            writer.write(frame(1, 0, 1, first))
            sent = len(first)
            while sent < total and not stats.done and not writer.transport.is_closing():
                chunk = min(16384, total - sent)
                writer.write(frame(9, 0, 1, b"a" * chunk))
                sent += chunk
                await writer.drain()
        else:
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: ")
            sent = 0
            while sent < total and not stats.done and not writer.transport.is_closing():
                writer.write(b"a" * 16384)
                sent += 16384
                await writer.drain()
        await asyncio.wait_for(reader.read(), args.hold)

    await held_conn(stats, open_tls(args.host, args.port, ["h2", "http/1.1"]), body)


def encode_rest(value, prefix_bits):
    """The continuation bytes of an HPACK integer whose prefix is all ones."""
    value -= (1 << prefix_bits) - 1
    out = bytearray()
    while value >= 128:
        out.append((value & 127) | 128)
        value >>= 7
    out.append(value)
    return bytes(out)


async def no_read_conn(args, stats):
    request = f"GET {args.path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {args.key}\r\n\r\n"

    async def body(reader, writer):
        for _ in range(args.pipeline):
            writer.write(request.encode())
        await writer.drain()
        # Never read; learn of the close only by a write failing.
        while not stats.done:
            await asyncio.sleep(1)
            if writer.transport.is_closing() or reader.at_eof():
                break
            sock = writer.get_extra_info("socket")
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) if sock else 0
            if err or tcp_state_closed(sock):
                break

    await held_conn(stats, open_tls(args.host, args.port, ["http/1.1"], rcvbuf=4096), body)


def tcp_state_closed(sock):
    """Whether the server ended the connection (TCP state CLOSE_WAIT or worse)."""
    if sock is None:
        return True
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)
    return info[0] not in (1,)  # 1 = ESTABLISHED


async def slow_handshake_conn(args, stats):
    loop = asyncio.get_running_loop()
    while not stats.done:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((ATTACK_PEER, 0))
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, (args.host, args.port))
            await loop.sock_sendall(sock, b"\x16")
            stats.opened += 1
            stats.hold(1)
            try:
                data = await loop.sock_recv(sock, 1)
                if not data:
                    stats.refused += 1
            except OSError:
                stats.refused += 1
            finally:
                stats.hold(-1)
        except OSError:
            stats.refused += 1
        finally:
            sock.close()
        await asyncio.sleep(1)


def probe_process(args, results):
    """The probe's own process and event loop, so the attack's load on this script's loop
    does not count as the server's delay."""
    stats = Stats()
    stats.done = False

    async def run():
        task = asyncio.create_task(probe(args, stats))
        await asyncio.sleep(args.hold)
        stats.done = True
        await task

    asyncio.run(run())
    results.put((stats.probe_ok, stats.probe_failed))


async def bad_keys_conn(args, stats, n):
    async def body(reader, writer):
        i = 0
        while not stats.done:
            i += 1
            writer.write(
                f"GET /v1/counts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer rk_bad_{n}_{i}_0123456789abcdef\r\n\r\n".encode()
            )
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            count_status(stats, head)

    await held_conn(stats, open_tls(args.host, args.port, ["http/1.1"]), body)


async def admin_body_conn(args, stats):
    total = args.body_mib << 20

    async def body(reader, writer):
        writer.write(
            f"POST /admin/v1/import HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong-token\r\nContent-Type: application/json\r\nContent-Length: {total}\r\n\r\n".encode()
        )
        chunk = b" " * (1 << 20)
        sent = 0
        try:
            while sent < total and not stats.done and not writer.transport.is_closing():
                writer.write(chunk)
                sent += len(chunk)
                await writer.drain()
        finally:
            stats.sent_mib = getattr(stats, "sent_mib", 0) + sent / (1 << 20)
        count_status(stats, await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), args.hold))

    await held_conn(stats, asyncio.open_connection(args.host, args.admin_port), body)


async def probe(args, stats):
    request = f"GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
    while not stats.done:
        started = time.monotonic()
        try:
            reader, writer = await open_tls(args.host, args.port, ["http/1.1"], local=PROBE_PEER, timeout=10)
            writer.write(request)
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            await asyncio.wait_for(reader.read(), 10)
            writer.close()
            if not head.startswith(b"HTTP/1.1 200"):
                raise OSError(head[:40])
            stats.probe_ok.append(time.monotonic() - started)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ssl.SSLError):
            stats.probe_failed += 1
        await asyncio.sleep(args.probe_every)


async def sampler(args, stats):
    while not stats.done:
        rss, fds = sample(args.pid)
        if rss is not None:
            stats.peak_rss = max(stats.peak_rss, rss)
            stats.peak_fds = max(stats.peak_fds, fds)
        await asyncio.sleep(0.25)


async def main(args):
    stats = Stats()
    stats.done = False
    rss0, fds0 = sample(args.pid)
    log0 = os.path.getsize(args.log) if args.log else None
    workers = []
    for i in range(args.count):
        if args.attack == "idle-h2":
            workers.append(asyncio.create_task(idle_conn(args, stats, True)))
        elif args.attack == "idle-h1":
            workers.append(asyncio.create_task(idle_conn(args, stats, False)))
        elif args.attack == "big-headers":
            workers.append(asyncio.create_task(big_headers_conn(args, stats)))
        elif args.attack == "no-read":
            workers.append(asyncio.create_task(no_read_conn(args, stats)))
        elif args.attack == "slow-handshake":
            workers.append(asyncio.create_task(slow_handshake_conn(args, stats)))
        elif args.attack == "bad-keys":
            workers.append(asyncio.create_task(bad_keys_conn(args, stats, i)))
        elif args.attack == "admin-body":
            workers.append(asyncio.create_task(admin_body_conn(args, stats)))
        if i % 50 == 49:
            await asyncio.sleep(0.01)
    # Spawned, not forked: a fork would inherit this process's running event loop.
    spawn = multiprocessing.get_context("spawn")
    results = spawn.Queue()
    prober = spawn.Process(target=probe_process, args=(args, results))
    prober.start()
    others = [asyncio.create_task(sampler(args, stats))]
    await asyncio.sleep(args.hold)
    held_at_end = stats.held
    rss_end, fds_end = sample(args.pid)
    stats.done = True
    stats.probe_ok, stats.probe_failed = await asyncio.get_running_loop().run_in_executor(None, results.get)
    prober.join()
    for w in workers:
        w.cancel()
    await asyncio.gather(*others, return_exceptions=True)
    await asyncio.gather(*workers, return_exceptions=True)
    ok = sorted(stats.probe_ok)

    def pct(q):
        return round(ok[min(len(ok) - 1, int(q * len(ok)))] * 1000, 1) if ok else None

    print(json.dumps({
        "attack": args.attack,
        "attackers": args.count,
        "hold_s": args.hold,
        "connections_opened": stats.opened,
        "refused_or_closed_early": stats.refused,
        "held_peak": stats.peak_held,
        "held_at_end": held_at_end,
        "probe_answered": len(ok),
        "probe_failed": stats.probe_failed,
        "probe_p50_ms": pct(0.5),
        "probe_p99_ms": pct(0.99),
        "probe_max_ms": round(ok[-1] * 1000, 1) if ok else None,
        "server_rss_mib_before": round(rss0) if rss0 else None,
        "server_rss_mib_peak": round(stats.peak_rss) if args.pid else None,
        "server_fds_before": fds0,
        "server_fds_peak": stats.peak_fds if args.pid else None,
        "answers_by_status": {str(k): v for k, v in sorted(stats.statuses.items())},
        "log_bytes_written": os.path.getsize(args.log) - log0 if args.log else None,
        "body_mib_sent": round(getattr(stats, "sent_mib", 0)) if args.attack == "admin-body" else None,
        "server_rss_mib_end": round(rss_end) if rss_end else None,
        "server_fds_end": fds_end,
    }))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8443)
    p.add_argument("--attack", required=True,
                   choices=["idle-h2", "idle-h1", "big-headers", "no-read", "slow-handshake",
                            "bad-keys", "admin-body"])
    p.add_argument("--count", type=int, default=1000, help="attacking connections")
    p.add_argument("--hold", type=float, default=30, help="seconds the attack lasts")
    p.add_argument("--pid", type=int, help="the server's pid, to sample its memory and descriptors")
    p.add_argument("--probe-every", type=float, default=0.2)
    p.add_argument("--header-mib", type=int, default=16)
    p.add_argument("--key", default="", help="API key for no-read")
    p.add_argument("--path", default="/v1/candidates?limit=100")
    p.add_argument("--pipeline", type=int, default=16, help="requests per no-read connection")
    p.add_argument("--admin-port", type=int, default=8444)
    p.add_argument("--body-mib", type=int, default=1024, help="admin-body upload size")
    p.add_argument("--log", help="the server's log file, to measure what the attack wrote to it")
    asyncio.run(main(p.parse_args()))
