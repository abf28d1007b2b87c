"""Owner routing for boto3 clients of a Granary cluster.

A GET sent to any member of a Granary cluster is answered with the object,
but a member that does not own the chunk relays it from the member that
does: the cluster moves the bytes twice. ``route_to_owners`` makes a boto3
client send each GetObject (get_object, download_file, download_fileobj)
to the member that owns the chunk the read starts in, so each read costs
the cluster one node's work, whichever member the client was pointed at:

    import boto3
    from granary_route import route_to_owners

    s3 = route_to_owners(boto3.client("s3", endpoint_url="http://granary:9000"))
    body = s3.get_object(Bucket="train", Key="shard-0001.tar")["Body"].read()

Two ways, the first where it can:

- By the ring. The client learns the cluster's placement from the member
  it was pointed at (GET /_granary/ring, again every minute) and sends
  each request straight to the owner, signed for it. A chunk's place is
  XXH64 of its name: the ``xxhash`` module computes it where installed
  (Debian: python3-xxhash; pip: xxhash), this file's own XXH64 otherwise
  (about 3 us a request against 0.05, beside the 0.6 ms or more boto3
  spends on a GET).
- By redirect, where the ring is unknown (a member too old to answer
  it) or out of date, or where PLACE_BY_RING is set False. Every
  request carries ``X-Granary-Route: owner``: a member that would relay
  the chunk answers 307 with the owner's address (Location;
  X-Granary-Owner names it), and the client sends the request there,
  signed for that host (at most twice). A redirect also means the
  client's ring is out of date: it is fetched again.

If an owner cannot be reached (it died since), the request goes back to
the member first asked, without routing, which reads as it would have.
Path-style requests only (boto3's default for an endpoint_url given as an
address); others go where boto3 sends them.

Standard library, botocore and (optionally) xxhash; copy this file next
to your code.
"""

import json
import struct
import threading
import time
import urllib.parse

try:
    from xxhash import xxh64_intdigest as xxh64
except ImportError:  # this file's own, below
    xxh64 = None

ROUTE_HEADER = "X-Granary-Route"
OWNER_HEADER = "x-granary-owner"
RING_BUCKET, RING_KEY = "_granary", "ring"  # GET /_granary/ring, signed as any GET
RING_TTL = 60.0  # seconds a fetched ring is used before it is fetched again
MAX_REDIRECTS = 2
PLACE_BY_RING = True  # False: placement by redirect alone

# Request context keys (the context lives across a call's attempts).
_FROM = "granary_from"  # the URL the call was first sent to, once routed
_HOPS = "granary_hops"  # redirects followed
_BACK = "granary_back"  # routing given up: the call goes to _FROM as is


def route_to_owners(client):
    """Makes client's GetObject calls read from the chunk's owner; returns client."""
    router = _Router(client)
    events = client.meta.events
    events.register("before-sign.s3.GetObject", router.before_sign)
    events.register_first("needs-retry.s3.GetObject", router.needs_retry)
    return client


class _Ring:
    """The cluster's placement as GET /_granary/ring gives it."""

    def __init__(self, answer):
        self.addrs = [m["addr"] for m in answer["members"]]
        self.chunk = int(answer["chunkSize"])
        self.partitions = list(answer["partitions"])
        if self.chunk <= 0 or not self.partitions or not self.addrs:
            raise ValueError("empty ring")

    def owner(self, bucket, key, index):
        """The address of the primary owner of chunk index of bucket/key."""
        ring_key = b"%s\x00%s\x00%d" % (bucket.encode(), key.encode(), index)
        return self.addrs[self.partitions[xxh64(ring_key) % len(self.partitions)]]


class _Router:
    def __init__(self, client):
        self.client = client
        self.endpoint = urllib.parse.urlsplit(client.meta.endpoint_url).netloc
        self.lock = threading.Lock()
        self.ring = None
        self.fetched = float("-inf")  # when the ring was last asked for
        self.fetching = False

    # -- placement by the ring --

    def current_ring(self):
        """The ring, fetched first if missing or stale (None if unknown)."""
        if not PLACE_BY_RING:
            return None
        with self.lock:
            due = time.monotonic() - self.fetched >= RING_TTL and not self.fetching
            if due:
                self.fetching = True
        if due:
            ring = None
            try:
                body = self.client.get_object(Bucket=RING_BUCKET, Key=RING_KEY)["Body"].read()
                ring = _Ring(json.loads(body))
            except Exception:  # not a cluster member that answers it: redirects only
                ring = None
            with self.lock:
                self.ring, self.fetched, self.fetching = ring, time.monotonic(), False
        return self.ring

    def stale(self):
        """A member redirected: the ring is fetched again on the next call."""
        with self.lock:
            self.fetched = float("-inf")

    def before_sign(self, request, **kwargs):
        context = request.context
        if context.get(_BACK):
            return
        request.headers[ROUTE_HEADER] = "owner"
        if context.get(_HOPS):
            return  # sent where a member redirected it
        url = urllib.parse.urlsplit(request.url)
        if url.netloc != self.endpoint:
            return  # virtual-hosted: the bucket is in the host name
        bucket, _, key = urllib.parse.unquote(url.path).lstrip("/").partition("/")
        if bucket == RING_BUCKET or not key:
            return
        ring = self.current_ring()
        start = _range_start(request.headers.get("Range"))
        if ring is None or start is None:
            return
        owner = ring.owner(bucket, key, start // ring.chunk)
        if owner != url.netloc:
            context.setdefault(_FROM, request.url)
            request.url = urllib.parse.urlunsplit(url._replace(netloc=owner))

    # -- redirects and unreachable owners --

    def needs_retry(self, response, request_dict, caught_exception=None, **kwargs):
        context = request_dict["context"]
        if caught_exception is not None:
            if context.get(_FROM) and not context.get(_BACK) and _unreachable(caught_exception):
                return self.send_back(request_dict)
            return None
        if response is None or response[0] is None:
            return None
        http = response[0]
        if http.status_code != 307 or OWNER_HEADER not in http.headers:
            return None
        self.stale()
        if context.get(_HOPS, 0) >= MAX_REDIRECTS:
            return self.send_back(request_dict)
        location = urllib.parse.urlsplit(http.headers["location"])
        if location.scheme not in ("http", "https") or not location.netloc:
            return None
        context.setdefault(_FROM, request_dict["url"])
        context[_HOPS] = context.get(_HOPS, 0) + 1
        request_dict["url"] = urllib.parse.urlunsplit(location)
        # botocore's own S3 redirect handler sees the 307 too: mark the
        # request as redirected so it leaves it alone (it looks for a region).
        context.setdefault("s3_redirect", {})["redirected"] = True
        return 0

    @staticmethod
    def send_back(request_dict):
        """Sends the call to the member first asked, without routing."""
        context = request_dict["context"]
        request_dict["url"] = context.get(_FROM, request_dict["url"])
        context[_BACK] = True
        return 0


def _range_start(value):
    """The first byte a Range header asks for: 0 without one, None for a
    suffix or a form this helper does not place."""
    if not value:
        return 0
    unit, _, spec = value.partition("=")
    first, dash, _ = spec.strip().partition("-")
    if unit.strip().lower() != "bytes" or not dash or "," in spec or not first.strip().isdigit():
        return None
    return int(first)


def _unreachable(exc):
    """Whether exc says the owner could not be connected to (it may have died
    after the member pointed at it)."""
    from botocore.exceptions import ConnectionError as BotoConnectionError

    return isinstance(exc, (BotoConnectionError, ConnectionError))


# XXH64 (seed 0), as the xxhash module and the nodes' ring compute it
# (https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md), for
# a Python without that module. Every value is kept below 2**64.
_MASK = (1 << 64) - 1
_P1, _P2, _P3, _P4, _P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                           0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _MASK


def _round(acc, lane):
    return _rotl((acc + lane * _P2) & _MASK, 31) * _P1 & _MASK


def _xxh64(data):
    """XXH64 of data (bytes) with seed 0, as an int."""
    n, i = len(data), 0
    if n >= 32:
        v = [(_P1 + _P2) & _MASK, _P2, 0, (-_P1) & _MASK]
        while i + 32 <= n:
            v = [_round(a, lane) for a, lane in zip(v, struct.unpack_from("<4Q", data, i))]
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _MASK
        for a in v:
            h = ((h ^ _round(0, a)) * _P1 + _P4) & _MASK
    else:
        h = _P5
    h = (h + n) & _MASK
    while i + 8 <= n:
        h = (_rotl(h ^ _round(0, struct.unpack_from("<Q", data, i)[0]), 27) * _P1 + _P4) & _MASK
        i += 8
    if i + 4 <= n:
        h = (_rotl(h ^ (struct.unpack_from("<I", data, i)[0] * _P1 & _MASK), 23) * _P2 + _P3) & _MASK
        i += 4
    for b in data[i:]:
        h = _rotl(h ^ (b * _P5 & _MASK), 11) * _P1 & _MASK
    h = (h ^ (h >> 33)) * _P2 & _MASK
    h = (h ^ (h >> 29)) * _P3 & _MASK
    return h ^ (h >> 32)


if xxh64 is None:
    xxh64 = _xxh64
