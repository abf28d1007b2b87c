#!/usr/bin/env python3
"""Cases for granary_route.py against real boto3 and stand-in members.

Run by scripts/e2e.sh with each Python that has boto3 (botocore versions
differ in how they treat a 307). The members are http.server servers on
loopback that answer as a Granary member does when asked for owner
routing: the one first asked redirects, the owner serves. Prints one line
per case, "PASS <name>" or "FAIL <name>: <why>", and exits 1 if any failed.
"""

import http.server
import os
import socket
import sys
import threading
import traceback

import boto3

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from granary_route import route_to_owners  # noqa: E402

BODY = b"the owner's bytes\n"


class Member(http.server.BaseHTTPRequestHandler):
    """Redirects GETs that ask for routing to self.server.owner (if set);
    serves BODY otherwise. Records (Host, route header, signed?) per GET."""

    def do_GET(self):
        srv = self.server
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


def member(owner=None):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Member)
    srv.owner, srv.seen = owner, []
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
    # Sent on once: signed for the owner's host, without asking again.
    assert owner.seen == [(addr(owner), None, True)], owner.seen


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
