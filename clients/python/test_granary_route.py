#!/usr/bin/env python3
"""Cases for granary_route.py against real boto3 and stand-in members.

Run by scripts/e2e.sh with each Python that has boto3 (botocore versions
differ in how they treat a 307). The members are http.server servers on
loopback that answer as a Granary member does when asked for owner
routing: the one first asked redirects, the owner serves. Prints one line
per case, "PASS <name>" or "FAIL <name>: <why>", and exits 1 if any failed.
"""

import http.server
import json
import os
import random
import socket
import sys
import threading
import traceback

import boto3

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import granary_route  # noqa: E402
from granary_route import route_to_owners  # noqa: E402

BODY = b"the owner's bytes\n"


class Member(http.server.BaseHTTPRequestHandler):
    """Answers GET /_granary/ring with self.server.ring (404 if None);
    redirects other GETs that ask for routing to self.server.owner (if
    set); serves BODY otherwise. Records (Host, route header, signed?)
    per GET but the ring's, and counts the ring's in self.server.rings."""

    def do_GET(self):
        srv = self.server
        if self.path.startswith("/_granary/ring"):
            srv.rings += 1
            body = json.dumps(srv.ring).encode() if srv.ring else b""
            self.send_response(200 if srv.ring else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        srv.seen.append((self.headers.get("Host"), self.headers.get("X-Granary-Route"),
                         "Authorization" in self.headers))
        if self.headers.get("X-Granary-Route") == "owner" and srv.owner:
            self.send_response(307)
            self.send_header("Location", "http://%s%s" % (srv.owner, self.path))
            self.send_header("X-Granary-Owner", "n2")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.send_header("ETag", '"e"')
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args):
        pass


def member(owner=None, ring=None):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Member)
    srv.owner, srv.ring, srv.seen, srv.rings = owner, ring, [], 0
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def addr(srv):
    return "127.0.0.1:%d" % srv.server_address[1]


def client(srv):
    return route_to_owners(boto3.client(
        "s3", endpoint_url="http://" + addr(srv), region_name="us-east-1",
        aws_access_key_id="k", aws_secret_access_key="s"))


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def case_follows_to_owner():
    owner = member()
    first = member(owner=addr(owner))
    got = client(first).get_object(Bucket="b", Key="k/x")["Body"].read()
    assert got == BODY, got
    assert first.seen == [(addr(first), "owner", True)], first.seen
    # Sent on once, signed for the owner's host (still asking: a member
    # whose ring moved on may redirect it once more).
    assert owner.seen == [(addr(owner), "owner", True)], owner.seen


def case_dead_owner_goes_back():
    first = member(owner="127.0.0.1:%d" % closed_port())
    got = client(first).get_object(Bucket="b", Key="k")["Body"].read()
    assert got == BODY, got
    assert first.seen == [(addr(first), "owner", True), (addr(first), None, True)], first.seen


def case_plain_answer_untouched():
    only = member()
    got = client(only).get_object(Bucket="b", Key="k", Range="bytes=0-3")["Body"].read()
    assert got == BODY, got  # the stand-in ignores ranges
    assert only.seen == [(addr(only), "owner", True)], only.seen


def case_ring_places_without_redirect():
    owner = member()
    # A ring of two members whose every partition is the owner's.
    ring = {"self": "n1", "chunkSize": 1 << 20, "partitions": [1] * 2039,
            "members": [{"id": "n1", "addr": "placeholder"}, {"id": "n2", "addr": addr(owner)}]}
    first = member(ring=ring)
    ring["members"][0]["addr"] = addr(first)
    s3 = client(first)
    for key in ("a", "b/c d", "e"):
        assert s3.get_object(Bucket="b", Key=key)["Body"].read() == BODY
    assert first.seen == [], first.seen  # asked for the ring alone
    assert first.rings == 1, first.rings
    assert [h for h, _, _ in owner.seen] == [addr(owner)] * 3, owner.seen
    # A suffix range's start depends on the size: sent where boto3 sends it.
    s3.get_object(Bucket="b", Key="a", Range="bytes=-5")
    assert first.seen == [(addr(first), "owner", True)], first.seen


def case_ring_place_from_the_chunk_key():
    # The chunk's ring key is bucket NUL key NUL index, hashed with XXH64
    # (seed 0) modulo the partitions (internal/ring's TestPartitionIsTheLibrarys
    # holds the nodes to it).
    parts = list(range(7))
    ring = granary_route._Ring({"members": [{"addr": "m%d" % i} for i in range(7)], "chunkSize": 10, "partitions": parts})
    want = granary_route.xxh64(b"bkt\x00k/1\x0012") % 7
    assert ring.owner("bkt", "k/1", 12) == "m%d" % want


# XXH64 (seed 0) of bytes((i * 7 + 1) % 256 for i in range(n)), by the
# xxhash module (the C library): every path of the algorithm (no stripe,
# stripes, 8-, 4- and 1-byte tails).
XXH64_VECTORS = {0: 17241709254077376921, 1: 9962287286179718960, 4: 2516846778506330404,
                 7: 3749331977672828753, 8: 14335380077071249954, 31: 7688141604010655859,
                 32: 6487249428211880913, 33: 15875414925959086467, 63: 1215290787847309642,
                 100: 15152571799663479574}


def case_own_xxh64_is_the_librarys():
    own = granary_route._xxh64
    assert own(b"abc") == 4952883123889572249, own(b"abc")
    for n, want in XXH64_VECTORS.items():
        got = own(bytes((i * 7 + 1) % 256 for i in range(n)))
        assert got == want, (n, got, want)
    if granary_route.xxh64 is not own:  # the module is here too: random names
        rnd = random.Random(1)
        for n in range(200):
            data = bytes(rnd.randrange(256) for _ in range(n))
            assert own(data) == granary_route.xxh64(data), n


def case_no_ring_when_told():
    owner = member()
    ring = {"self": "n1", "chunkSize": 1 << 20, "partitions": [1] * 7,
            "members": [{"id": "n1", "addr": "placeholder"}, {"id": "n2", "addr": addr(owner)}]}
    first = member(ring=ring, owner=addr(owner))
    ring["members"][0]["addr"] = addr(first)
    granary_route.PLACE_BY_RING = False
    try:
        got = client(first).get_object(Bucket="b", Key="k")["Body"].read()
    finally:
        granary_route.PLACE_BY_RING = True
    assert got == BODY, got
    assert first.rings == 0, first.rings  # never asked for the ring
    assert first.seen == [(addr(first), "owner", True)], first.seen  # redirected
    assert owner.seen == [(addr(owner), "owner", True)], owner.seen


def main():
    failed = 0
    for name, fn in sorted((n, f) for n, f in globals().items() if n.startswith("case_")):
        try:
            fn()
            print("PASS route-" + name[5:])
        except Exception:
            failed += 1
            why = traceback.format_exc().strip().splitlines()[-1]
            print("FAIL route-%s: %s" % (name[5:], why))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
