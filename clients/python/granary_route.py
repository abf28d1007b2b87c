"""Owner routing for boto3 clients of a Granary cluster.

A GET sent to any member of a Granary cluster is answered with the object,
but a member that does not own the chunk relays it from the member that
does: the cluster moves the bytes twice. A client that adds the header
``X-Granary-Route: owner`` is instead answered 307 with the owner's address
(Location, and X-Granary-Owner naming it), and reads from the owner itself,
so each read costs the cluster one node's work, whichever member the
client was pointed at.

botocore does not follow such a redirect by itself. ``route_to_owners``
makes a client do so for GetObject (get_object, download_file,
download_fileobj): it adds the header, and on a redirect from Granary it
sends the request again to the Location, signed for that host. A request
that was sent on once goes without the header, so it never bounces twice;
if the owner cannot be reached (it died since), the request goes back to
the member first asked, which reads the chunk as it would have without
routing.

    import boto3
    from granary_route import route_to_owners

    s3 = route_to_owners(boto3.client("s3", endpoint_url="http://granary:9000"))
    body = s3.get_object(Bucket="train", Key="shard-0001.tar")["Body"].read()

Standard library and botocore only; copy this file next to your code.
"""

import urllib.parse

ROUTE_HEADER = "X-Granary-Route"
OWNER_HEADER = "x-granary-owner"
_SENT_ON = "granary_sent_on"  # request context: the URL the request was redirected from
_SENT_BACK = "granary_sent_back"  # request context: the owner was unreachable


def route_to_owners(client):
    """Makes client's GetObject calls read from the chunk's owner; returns client."""
    events = client.meta.events
    events.register("before-sign.s3.GetObject", _ask_for_owner)
    events.register_first("needs-retry.s3.GetObject", _follow_to_owner)
    return client


def _ask_for_owner(request, **kwargs):
    if not request.context.get(_SENT_ON):
        request.headers[ROUTE_HEADER] = "owner"


def _follow_to_owner(response, request_dict, caught_exception=None, **kwargs):
    """On Granary's redirect, points the request at the owner and retries at once;
    if the owner cannot be reached, sends it back to the member first asked."""
    context = request_dict["context"]
    if caught_exception is not None:
        back = context.get(_SENT_ON)
        if back and not context.get(_SENT_BACK) and _unreachable(caught_exception):
            request_dict["url"] = back
            context[_SENT_BACK] = True
            return 0
        return None
    if response is None or response[0] is None:
        return None
    http = response[0]
    if http.status_code != 307 or OWNER_HEADER not in http.headers:
        return None
    if context.get(_SENT_ON):
        return None
    location = urllib.parse.urlsplit(http.headers["location"])
    if location.scheme not in ("http", "https") or not location.netloc:
        return None
    context[_SENT_ON] = request_dict["url"]
    request_dict["url"] = urllib.parse.urlunsplit(location)
    # botocore's own S3 redirect handler sees the 307 too: mark the request
    # as redirected so it leaves it alone (it would look for a region).
    context.setdefault("s3_redirect", {})["redirected"] = True
    return 0


def _unreachable(exc):
    """Whether exc says the owner could not be connected to (it may have died
    after the member redirected to it)."""
    from botocore.exceptions import ConnectionError as BotoConnectionError

    return isinstance(exc, (BotoConnectionError, ConnectionError))
