#!/usr/bin/env python3
"""Spot check of warm GETs: CPU per GET of Granary builds and of nginx.

Starts MinIO with 1,000 objects of each size, one Granary node per binary
given (--freshness immutable) and nginx proxy_cache over it (tuned as
scripts/nginx-cache.conf says, one worker, cache in /dev/shm), reads
every object once through each, then replays boto3-signed GETs (unsigned
for nginx, which checks no signature) with wrk in interleaved rounds: each round every target in turn, the order turned
round each round. With two cores or more, the caches run on core 0 and wrk
on core 1. It prints, per size and reader count, the medians of the
rounds: each target's user and system CPU per GET (from /proc), wrk's,
the rate, and the total against nginx's. The rig behind the README's wrk
figures (Benchmarks, "Sending the head at once" and after).

  scripts/warmrig.py [--rounds 5] [--secs 4] [--readers 16,64]
                     [--sizes 4,100] [--profile DIR] [--client wrk|go]
                     [--shared] [--list] [--presign] [--ram SIZE]
                     NAME=GRANARY_BINARY ...

--client go reads with scripts/goclient instead (built with go first): Go's
net/http, each GET signed as it is sent, as the reads scenario's client
reads (nginx unsigned again); its column is then the Go client's CPU per
GET. --shared runs the caches and the client on every core, as the reads
scenario does on a small machine, instead of core 0 and core 1. --list
(with --client go) has each reader list the prefix before it reads, as a
data loader that lists first does, on connections its GETs then reuse
(not at nginx, which serves every connection alike). --presign (with
--client go) signs each GET as a presigned URL, in its query. --ram
sets the nodes' RAM tier (default 2GiB, which holds every set); with less
than a set, most of its GETs read the disk tier (1GiB).

With --profile, each set ends with one more pass per node, not counted,
during which Go's CPU profile of the node is written to
DIR/NAME-SIZE-READERS.pprof (`go tool pprof -top BINARY FILE`).

Needs minio (MINIO, ~/go/bin or PATH), nginx, wrk, taskset and boto3:
`make deps bench-deps`.
"""

import argparse
import concurrent.futures
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import boto3
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

BUCKET = "bench"
OBJECTS = 1000
MINIO_KEY, MINIO_SECRET = "minioadmin", "minioadmin"
NODE_KEY, NODE_SECRET = "warmrigaccess", "warmrigsecret1234567890"
CLK = os.sysconf("SC_CLK_TCK")


class Rig:
    """The processes started, stopped (their sessions) at exit."""

    def __init__(self, root):
        self.root = root
        self.procs = []
        self.shm = None  # nginx's cache directory, once it has one

    def start(self, name, cmd, env=None, pin=None):
        if pin is not None:
            cmd = ["taskset", "-c", pin] + cmd
        log = open(os.path.join(self.root, name + ".log"), "w")
        p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(p)
        return p

    def stop(self):
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, proc, limit=60):
    """Polls url until it answers (any HTTP status) or proc exits."""
    end = time.time() + limit
    while time.time() < end:
        if proc.poll() is not None:
            sys.exit("warmrig: %s exited (status %d)" % (proc.args, proc.returncode))
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.1)
    sys.exit("warmrig: %s did not answer in %ds" % (url, limit))


def find(binary, env_name=None):
    for c in [os.environ.get(env_name or "", ""), shutil.which(binary),
              os.path.expanduser("~/go/bin/" + binary), "/usr/sbin/" + binary]:
        if c and os.access(c, os.X_OK):
            return c
    sys.exit("warmrig: no %s (make deps bench-deps)" % binary)


def s3(endpoint, key, secret):
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=key, aws_secret_access_key=secret)


def start_minio(rig):
    port = free_port()
    env = dict(os.environ, MINIO_ROOT_USER=MINIO_KEY, MINIO_ROOT_PASSWORD=MINIO_SECRET)
    p = rig.start("minio", [find("minio", "MINIO"), "server", os.path.join(rig.root, "minio"),
                            "--address", "127.0.0.1:%d" % port, "--quiet"], env=env)
    wait_ready("http://127.0.0.1:%d/minio/health/ready" % port, p)
    return port


def fill_origin(port, sizes):
    """Writes OBJECTS random objects of each size under k<size>/, readable
    anonymously (nginx passes GETs on unsigned)."""
    c = s3("http://127.0.0.1:%d" % port, MINIO_KEY, MINIO_SECRET)
    c.create_bucket(Bucket=BUCKET)
    for kib in sizes:
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda i: c.put_object(Bucket=BUCKET, Key=key(kib, i), Body=os.urandom(kib << 10)),
                        range(OBJECTS)))
    c.put_bucket_policy(Bucket=BUCKET, Policy='{"Version":"2012-10-17","Statement":[{"Effect":"Allow",'
                        '"Principal":{"AWS":["*"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::%s/*"]}]}'
                        % BUCKET)


def key(kib, i):
    return "k%d/%04d" % (kib, i)


def start_node(rig, name, binary, origin, pin, profile, ram):
    port = free_port()
    data = os.path.join(rig.root, "node-" + name)
    pprof = "127.0.0.1:%d" % free_port() if profile else None
    env = dict(os.environ, GRANARY_ACCESS_KEY=NODE_KEY, GRANARY_SECRET_KEY=NODE_SECRET,
               GRANARY_ORIGIN_ACCESS_KEY=MINIO_KEY, GRANARY_ORIGIN_SECRET_KEY=MINIO_SECRET)
    p = rig.start("node-" + name, [binary, "serve", "--listen", "127.0.0.1:%d" % port, "--data-dir", data,
                                   "--ram", ram, "--disk", "1GiB", "--freshness", "immutable",
                                   "--origin", "s3://127.0.0.1:%d?secure=false" % origin,
                                   "--log-level", "warn"] + (["--pprof-listen", pprof] if pprof else []), env=env, pin=pin)
    wait_ready("http://127.0.0.1:%d/healthz" % port, p)
    return {"name": name, "port": port, "pid": p.pid, "signed": True, "pprof": pprof}


def start_nginx(rig, origin, pin):
    """nginx as scripts/nginx-cache.conf tunes it, one worker (on the
    caches' core), its cache in /dev/shm."""
    port = free_port()
    cache = os.path.join("/dev/shm", os.path.basename(rig.root))
    conf = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "nginx-cache.conf")).read()
    fields = {"USER": "user root;" if os.getuid() == 0 else "", "WORKERS": "1", "DIR": rig.root,
              "CACHE": cache, "ORIGIN": "127.0.0.1:%d" % origin, "PORT": str(port)}
    for k, v in fields.items():
        conf = conf.replace("@%s@" % k, v)
    path = os.path.join(rig.root, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    p = rig.start("nginx", [find("nginx"), "-c", path, "-p", rig.root, "-g", "daemon off;"], pin=pin)
    wait_ready("http://127.0.0.1:%d/" % port, p)
    rig.shm = cache
    return {"name": "nginx", "port": port, "pid": worker_of(p.pid), "signed": False}


def worker_of(master):
    """The one nginx worker: the master's child."""
    end = time.time() + 30
    while time.time() < end:
        with open("/proc/%d/task/%d/children" % (master, master)) as f:
            kids = f.read().split()
        if kids:
            return int(kids[0])
        time.sleep(0.05)
    sys.exit("warmrig: nginx started no worker")


def get_headers(t, path):
    """The header fields of a GET of path at t: boto3's signature for a
    node, none for nginx."""
    r = AWSRequest(method="GET", url="http://127.0.0.1:%d%s" % (t["port"], path), headers={"User-Agent": "warmrig"})
    if t["signed"]:
        S3SigV4Auth(Credentials(NODE_KEY, NODE_SECRET), "s3", "us-east-1").add_auth(r)
    return dict(r.headers.items())


def requests_of(t, kib):
    """Every object's GET as wrk sends it."""
    out = []
    for i in range(OBJECTS):
        path = "/%s/%s" % (BUCKET, key(kib, i))
        head = "".join("%s: %s\r\n" % kv for kv in get_headers(t, path).items())
        out.append("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\n" % (path, t["port"], head))
    return out


def wrk_script(rig, t, kib):
    """A wrk script cycling over requests_of (signed now: they last 15 minutes)."""
    path = os.path.join(rig.root, "%s-%d.lua" % (t["name"], kib))
    lines = ['  "%s",' % q.replace("\r", "\\r").replace("\n", "\\n") for q in requests_of(t, kib)]
    with open(path, "w") as f:
        f.write("reqs = {\n%s\n}\ni = 0\nrequest = function() i = i %% #reqs + 1; return reqs[i] end\n"
                % "\n".join(lines))
    return path


def warm(t, kib):
    """Reads every object through t once, so the rounds read a warm cache."""
    def get(i):
        path = "/%s/%s" % (BUCKET, key(kib, i))
        url = "http://127.0.0.1:%d%s" % (t["port"], path)
        req = urllib.request.Request(url, headers=get_headers(t, path))
        with urllib.request.urlopen(req, timeout=60) as resp:
            if len(resp.read()) != kib << 10:
                sys.exit("warmrig: %s returned a short body" % url)
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(get, range(OBJECTS)))


def settle(pid, limit=60):
    """Waits until pid is idle (under 2% of a core over half a second): a
    node writes what the warm-up fetched to its disk tier after the GETs."""
    end = time.time() + limit
    while time.time() < end:
        before = sum(cpu_of(pid))
        time.sleep(0.5)
        if sum(cpu_of(pid)) - before < 0.01:
            return
    sys.exit("warmrig: process %d still busy after %ds" % (pid, limit))


def cpu_of(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) / CLK, int(f[12]) / CLK


def build_goclient(rig):
    """scripts/goclient, built into the rig's directory."""
    out = os.path.join(rig.root, "goclient")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run(["go", "build", "-o", out, "./scripts/goclient"], cwd=repo, check=True)
    return out


def one_pass(t, script, readers, secs, pin):
    """One pass at t, with wrk replaying script or, when script is a
    (goclient, KiB, lists, presign) tuple, the Go client: per GET, t's user and system µs
    and the client's; the rate; non-2xx answers (the Go client fails on
    any)."""
    if isinstance(script, tuple):
        goclient, kib, lists, presign = script
        cmd = [goclient, "-base", "http://127.0.0.1:%d/%s/k%d/" % (t["port"], BUCKET, kib), "-objects", str(OBJECTS),
               "-size", str(kib << 10), "-readers", str(readers), "-for", "%ds" % secs]
        if lists and t["signed"]:  # nginx's unsigned listing would reach MinIO, which refuses it
            cmd.append("-list")
        if presign and t["signed"]:
            cmd.append("-presign")
        if t["signed"]:
            cmd += ["-access", NODE_KEY, "-secret", NODE_SECRET]
    else:
        cmd = ["wrk", "-t1", "-c%d" % readers, "-d%ds" % secs, "-s", script, "http://127.0.0.1:%d/" % t["port"]]
    if pin is not None:
        cmd = ["taskset", "-c", pin] + cmd
    u0, s0 = cpu_of(t["pid"])
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    u1, s1 = cpu_of(t["pid"])
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if isinstance(script, tuple):
        n, bad = int(out), None
    else:
        n = int(re.search(r"(\d+) requests in", out).group(1))
        bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    client = c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime
    return ((u1 - u0) * 1e6 / n, (s1 - s0) * 1e6 / n, client * 1e6 / n, n / secs, int(bad.group(1)) if bad else 0)


def measure(rig, targets, kib, readers, args, pin):
    if args.goclient:
        scripts = {t["name"]: (args.goclient, kib, args.list, args.presign) for t in targets}
    else:
        scripts = {t["name"]: wrk_script(rig, t, kib) for t in targets}
    runs = {t["name"]: [] for t in targets}
    for r in range(args.rounds):
        order = targets if r % 2 == 0 else targets[::-1]
        for t in order:
            runs[t["name"]].append(one_pass(t, scripts[t["name"]], readers, args.secs, pin))
    if args.profile:
        for t in targets:
            if t.get("pprof"):
                profile(t, scripts[t["name"]], readers, args, pin, "%s-%d-%d" % (t["name"], kib, readers))
    return {name: [statistics.median(x[i] for x in rs) for i in range(4)] + [sum(x[4] for x in rs)]
            for name, rs in runs.items()}


def profile(t, script, readers, args, pin, name):
    """One more wrk pass at t, not counted, while its CPU profile is taken
    into args.profile/name.pprof."""
    secs = max(args.secs, 4)
    url = "http://%s/debug/pprof/profile?seconds=%d" % (t["pprof"], secs - 2)
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        got = ex.submit(lambda: urllib.request.urlopen(url, timeout=secs + 30).read())
        one_pass(t, script, readers, secs, pin)
        with open(os.path.join(args.profile, name + ".pprof"), "wb") as f:
            f.write(got.result())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--secs", type=int, default=4)
    ap.add_argument("--readers", default="16,64")
    ap.add_argument("--sizes", default="4,100", help="object sizes in KiB")
    ap.add_argument("--profile", metavar="DIR", help="write each node's CPU profile of each set here")
    ap.add_argument("--client", choices=["wrk", "go"], default="wrk", help="what reads: wrk, or scripts/goclient")
    ap.add_argument("--shared", action="store_true", help="caches and client on every core, none pinned")
    ap.add_argument("--list", action="store_true", help="with --client go: each reader lists the prefix before it reads")
    ap.add_argument("--presign", action="store_true", help="with --client go: presigned GETs (SigV4 in the query)")
    ap.add_argument("--ram", default="2GiB",
                    help="the nodes' --ram; smaller than a size's set (1,000 objects), its reads come from the disk tier")
    ap.add_argument("builds", nargs="+", metavar="NAME=GRANARY_BINARY")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    two = os.cpu_count() >= 2 and not args.shared
    cache_pin, client_pin = ("0", "1") if two else (None, None)
    rig = Rig(tempfile.mkdtemp(prefix="warmrig-"))
    refused = 0
    try:
        if (args.list or args.presign) and args.client != "go":
            sys.exit("warmrig: --list and --presign read with the Go client: add --client go")
        args.goclient = build_goclient(rig) if args.client == "go" else None
        origin = start_minio(rig)
        fill_origin(origin, sizes)
        targets = [start_node(rig, b.split("=", 1)[0], os.path.abspath(b.split("=", 1)[1]), origin, cache_pin,
                              args.profile, args.ram) for b in args.builds]
        targets.append(start_nginx(rig, origin, cache_pin))
        for t in targets:
            for kib in sizes:
                warm(t, kib)
        for t in targets:
            settle(t["pid"])
        print("| size | readers | target | user µs/GET | sys µs/GET | total | vs nginx | %s µs/GET | GETs/s | non-2xx |" % args.client)
        print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for kib in sizes:
            for readers in [int(r) for r in args.readers.split(",")]:
                res = measure(rig, targets, kib, readers, args, client_pin)
                ref = res["nginx"][0] + res["nginx"][1]
                for t in targets:
                    u, s, w, rate, bad = res[t["name"]]
                    refused += bad
                    print("| %d KiB | %d | %s | %.1f | %.1f | %.1f | %.2fx | %.1f | %.0f | %d |"
                          % (kib, readers, t["name"], u, s, u + s, (u + s) / ref, w, rate, bad), flush=True)
    finally:
        rig.stop()
        if rig.shm:
            shutil.rmtree(rig.shm, ignore_errors=True)
        shutil.rmtree(rig.root, ignore_errors=True)
    if refused:
        sys.exit("warmrig: %d GETs were answered with an error: the figures above count them" % refused)


if __name__ == "__main__":
    main()
