#!/usr/bin/env python3
"""End-to-end cases for the S3 behaviours a new user meets on day one,
through boto3 with its defaults: Signature Version 2 (the presigned URL an
unconfigured boto3 hands out, and a client with signature_version='s3'),
object and bucket tagging, the bucket's versioning status and listing of
versions, and the places where S3 differs from a naive implementation
(whitespace keys, empty metadata, Expires, partNumber reads, repeated
completes, re-uploaded parts, presign bounds, continuation tokens, dates,
Expect, canned ACLs, CORS preflights).

Run by scripts/e2e.sh with each Python interpreter that has boto3. Reads
E2E_ENDPOINT, E2E_ACCESS_KEY, E2E_SECRET_KEY, E2E_REGION, E2E_BUCKET (a
bucket only this script's runs use) and E2E_PREFIX (keys of this run live
under it); E2E_CASES, if set, names the cases to run. Prints "PASS <name>"
or "FAIL <name>: <why>" per case and exits 1 if any failed.
"""

import email.utils
import os
import socket
import sys
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import ClientError

CASES = []


def case(fn):
    """Registers fn as a case, run in definition order."""
    CASES.append(fn)
    return fn


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def error_code(fn, *args, **kwargs):
    """Calls fn, which must fail; returns the S3 error code and status."""
    try:
        fn(*args, **kwargs)
    except ClientError as e:
        err = e.response.get("Error", {})
        return err.get("Code"), e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    raise AssertionError(f"{getattr(fn, '__name__', fn)} succeeded, want an error")


def expect_error(code, fn, *args, **kwargs):
    got, status = error_code(fn, *args, **kwargs)
    check(got == code, f"error code {got!r} ({status}), want {code!r}")


def fetch(url, method="GET", headers=None, data=None):
    """A plain HTTP request (no SDK): returns status, headers and body."""
    req = urllib.request.Request(url, method=method, headers=headers or {}, data=data)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def xml_code(body):
    """The <Code> of an S3 error document."""
    s = body.decode(errors="replace")
    i, j = s.find("<Code>"), s.find("</Code>")
    return s[i + 6:j] if 0 <= i < j else s[:200]


class Env:
    """The endpoint, clients and names one run works with."""

    def __init__(self):
        self.endpoint = os.environ["E2E_ENDPOINT"]
        self.region = os.environ.get("E2E_REGION", "us-east-1")
        self.bucket = os.environ["E2E_BUCKET"]
        self.prefix = os.environ["E2E_PREFIX"].rstrip("/") + "/"
        self.ak, self.sk = os.environ["E2E_ACCESS_KEY"], os.environ["E2E_SECRET_KEY"]
        # As the README writes it: no Config at all.
        self.plain = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.ak,
                                  aws_secret_access_key=self.sk, region_name=self.region)
        self.s3 = self.client()
        self.v2 = self.client(signature_version="s3")

    def client(self, secret=None, **cfg):
        cfg.setdefault("retries", {"max_attempts": 1, "mode": "standard"})
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.ak,
                            aws_secret_access_key=secret or self.sk, region_name=self.region,
                            config=Config(s3={"addressing_style": "path"}, connect_timeout=5,
                                          read_timeout=60, **cfg))

    def key(self, name):
        return self.prefix + name


@case
def sigv2_presigned_default(env):
    """The README's presigned URL from an unconfigured boto3 (SigV2 on 1.43)."""
    key = env.key("v2/presigned obj+1")
    data = b"a presigned object" * 100
    env.s3.put_object(Bucket=env.bucket, Key=key, Body=data)
    url = env.plain.generate_presigned_url("get_object", Params={"Bucket": env.bucket, "Key": key})
    status, _, body = fetch(url)
    check(status == 200 and body == data, f"presigned GET {url}: {status} {body[:200]!r}")
    over = env.plain.generate_presigned_url(
        "get_object", Params={"Bucket": env.bucket, "Key": key, "ResponseContentType": "text/x-granary"})
    status, headers, body = fetch(over)
    check(status == 200 and headers.get("Content-Type") == "text/x-granary",
          f"presigned GET with an override: {status} {headers.get('Content-Type')} {body[:200]!r}")

    parts = urllib.parse.urlsplit(url)
    tampered = urllib.parse.urlunsplit(parts._replace(path=parts.path + "x"))
    status, _, body = fetch(tampered)
    check(status == 403 and xml_code(body) == "SignatureDoesNotMatch", f"tampered URL: {status} {body[:300]!r}")

    short = env.plain.generate_presigned_url("get_object", Params={"Bucket": env.bucket, "Key": key}, ExpiresIn=1)
    check("AWSAccessKeyId=" in short, f"not a SigV2 URL: {short}")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status, _, body = fetch(short)
        if status != 200:
            break
        time.sleep(0.5)
    check(status == 403 and xml_code(body) == "AccessDenied" and b"Request has expired" in body,
          f"expired URL: {status} {body[:300]!r}")


@case
def sigv2_client(env):
    """A client with signature_version='s3' puts, gets, lists and deletes."""
    s3 = env.v2
    keys = [env.key("v2/c/plain"), env.key("v2/c/sp ace+plus&amp=eq"), env.key("v2/c/日本語")]
    for i, key in enumerate(keys):
        s3.put_object(Bucket=env.bucket, Key=key, Body=b"v2 body %d" % i, Metadata={"who": "sigv2"},
                      ContentType="application/x-v2")
    for i, key in enumerate(keys):
        got = s3.get_object(Bucket=env.bucket, Key=key)
        check(got["Body"].read() == b"v2 body %d" % i, f"GET {key}")
        check(got["Metadata"].get("who") == "sigv2" and got["ContentType"] == "application/x-v2",
              f"GET {key} headers: {got['Metadata']} {got['ContentType']}")
    listed = s3.list_objects_v2(Bucket=env.bucket, Prefix=env.key("v2/c/"))
    check(sorted(o["Key"] for o in listed.get("Contents", [])) == sorted(keys), f"listed {listed.get('Contents')}")
    listed = s3.list_objects(Bucket=env.bucket, Prefix=env.key("v2/c/"), Delimiter="/")
    check(len(listed.get("Contents", [])) == 3, f"v1 list {listed.get('Contents')}")
    s3.delete_object(Bucket=env.bucket, Key=keys[0])
    s3.delete_objects(Bucket=env.bucket, Delete={"Objects": [{"Key": k} for k in keys[1:]]})
    left = s3.list_objects_v2(Bucket=env.bucket, Prefix=env.key("v2/c/")).get("KeyCount")
    check(left == 0, f"{left} objects left after the deletes")
    bad = env.client(secret=env.sk + "-wrong", signature_version="s3")
    expect_error("SignatureDoesNotMatch", bad.get_object, Bucket=env.bucket, Key=env.key("v2/presigned obj+1"))


@case
def object_tagging(env):
    """Tags with PUT, copy and multipart, on their own, counted on GET/HEAD."""
    s3, b = env.s3, env.bucket
    key = env.key("tags/obj")
    s3.put_object(Bucket=b, Key=key, Body=b"tagged", Tagging="project=granary&stage=raw%20data")
    got = s3.get_object_tagging(Bucket=b, Key=key)["TagSet"]
    check(sorted((t["Key"], t["Value"]) for t in got) == [("project", "granary"), ("stage", "raw data")], f"tags {got}")
    check(s3.get_object(Bucket=b, Key=key).get("TagCount") == 2, "GET TagCount after a tagged PUT")
    s3.put_object_tagging(Bucket=b, Key=key, Tagging={"TagSet": [{"Key": "only", "Value": "one"}]})
    check(s3.head_object(Bucket=b, Key=key)["ResponseMetadata"]["HTTPHeaders"].get("x-amz-tagging-count") == "1",
          "HEAD x-amz-tagging-count after PutObjectTagging")
    s3.copy_object(Bucket=b, Key=key + "-kept", CopySource={"Bucket": b, "Key": key})
    check(s3.get_object_tagging(Bucket=b, Key=key + "-kept")["TagSet"] == [{"Key": "only", "Value": "one"}], "COPY tags")
    s3.copy_object(Bucket=b, Key=key + "-repl", CopySource={"Bucket": b, "Key": key},
                   TaggingDirective="REPLACE", Tagging="copied=yes")
    check(s3.get_object_tagging(Bucket=b, Key=key + "-repl")["TagSet"] == [{"Key": "copied", "Value": "yes"}], "REPLACE tags")
    up = s3.create_multipart_upload(Bucket=b, Key=key + "-mp", Tagging="kind=checkpoint")
    part = s3.upload_part(Bucket=b, Key=key + "-mp", UploadId=up["UploadId"], PartNumber=1, Body=b"part")
    s3.complete_multipart_upload(Bucket=b, Key=key + "-mp", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    check(s3.get_object_tagging(Bucket=b, Key=key + "-mp")["TagSet"] == [{"Key": "kind", "Value": "checkpoint"}],
          "multipart tags")
    s3.delete_object_tagging(Bucket=b, Key=key)
    check(s3.get_object_tagging(Bucket=b, Key=key)["TagSet"] == [], "tags after DeleteObjectTagging")
    check("TagCount" not in s3.get_object(Bucket=b, Key=key), "TagCount after DeleteObjectTagging")
    eleven = [{"Key": f"k{i}", "Value": "v"} for i in range(11)]
    expect_error("InvalidTag", s3.put_object_tagging, Bucket=b, Key=key, Tagging={"TagSet": eleven})
    expect_error("InvalidTag", s3.put_object_tagging, Bucket=b, Key=key,
                 Tagging={"TagSet": [{"Key": "k" * 129, "Value": "v"}]})
    expect_error("InvalidTag", s3.put_object_tagging, Bucket=b, Key=key,
                 Tagging={"TagSet": [{"Key": "k", "Value": "v" * 257}]})
    expect_error("InvalidTag", s3.put_object_tagging, Bucket=b, Key=key,
                 Tagging={"TagSet": [{"Key": "k", "Value": "1"}, {"Key": "k", "Value": "2"}]})
    expect_error("NoSuchKey", s3.get_object_tagging, Bucket=b, Key=env.key("tags/absent"))
    # The same through SigV2.
    env.v2.put_object_tagging(Bucket=b, Key=key, Tagging={"TagSet": [{"Key": "v2", "Value": "yes"}]})
    check(env.v2.get_object_tagging(Bucket=b, Key=key)["TagSet"] == [{"Key": "v2", "Value": "yes"}], "SigV2 tagging")


@case
def bucket_tagging(env):
    """Put/Get/DeleteBucketTagging; an untagged bucket is NoSuchTagSet."""
    s3, b = env.s3, env.bucket
    s3.delete_bucket_tagging(Bucket=b)
    expect_error("NoSuchTagSet", s3.get_bucket_tagging, Bucket=b)
    s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": [{"Key": "team", "Value": "ml"}]})
    check(s3.get_bucket_tagging(Bucket=b)["TagSet"] == [{"Key": "team", "Value": "ml"}], "bucket tags")
    s3.delete_bucket_tagging(Bucket=b)
    expect_error("NoSuchTagSet", s3.get_bucket_tagging, Bucket=b)


@case
def versioning(env):
    """An unversioned bucket: its status, a clear refusal, null versions."""
    s3, b = env.s3, env.bucket
    got = s3.get_bucket_versioning(Bucket=b)
    check("Status" not in got, f"versioning status {got}")
    for status in ("Enabled", "Suspended"):
        code, st = error_code(s3.put_bucket_versioning, Bucket=b, VersioningConfiguration={"Status": status})
        check(code == "NotImplemented" and st == 501, f"PutBucketVersioning {status}: {code} {st}")
    keys = [env.key(f"vers/{k}") for k in ("a", "b/1", "b/2", "c")]
    for k in keys:
        s3.put_object(Bucket=b, Key=k, Body=b"v")
    listed, pages = [], 0
    for page in s3.get_paginator("list_object_versions").paginate(
            Bucket=b, Prefix=env.key("vers/"), PaginationConfig={"PageSize": 3}):
        pages += 1
        for v in page.get("Versions", []):
            check(v["VersionId"] == "null" and v["IsLatest"], f"version {v}")
            listed.append(v["Key"])
    check(listed == keys and pages == 2, f"listed {listed} in {pages} pages")


@case
def metadata_fidelity(env):
    """An empty x-amz-meta-* value and Expires come back as they were put."""
    s3, key = env.s3, env.key("meta/obj")
    expires = "Wed, 21 Oct 2037 07:28:00 GMT"
    s3.put_object(Bucket=env.bucket, Key=key, Body=b"m", Metadata={"empty": "", "full": "x"},
                  Expires=email.utils.parsedate_to_datetime(expires))
    for got in (s3.head_object(Bucket=env.bucket, Key=key), s3.get_object(Bucket=env.bucket, Key=key)):
        check(got["Metadata"] == {"empty": "", "full": "x"}, f"metadata {got['Metadata']}")
        raw = got["ResponseMetadata"]["HTTPHeaders"].get("expires")
        check(raw == expires, f"Expires {raw!r}, want {expires!r}")


@case
def empty_continuation_token(env):
    """ListObjectsV2 takes an empty continuation-token as none."""
    s3 = env.s3
    for i in range(3):
        s3.put_object(Bucket=env.bucket, Key=env.key(f"tok/{i}"), Body=b"t")
    got = s3.list_objects_v2(Bucket=env.bucket, Prefix=env.key("tok/"), ContinuationToken="")
    check(got.get("KeyCount") == 3, f"listed {got.get('KeyCount')} keys with an empty token")
    check(got.get("ContinuationToken") == "", f"the empty token echoed as {got.get('ContinuationToken')!r}")


@case
def presign_expires_bounds(env):
    """X-Amz-Expires out of range (zero, negative, over 7 days) is 403 AccessDenied."""
    key = env.key("presign/bounds")
    env.s3.put_object(Bucket=env.bucket, Key=key, Body=b"p")
    v4 = env.client(signature_version="s3v4")
    url = v4.generate_presigned_url("get_object", Params={"Bucket": env.bucket, "Key": key}, ExpiresIn=300)
    status, _, body = fetch(url)
    check(status == 200 and body == b"p", f"presigned v4 GET: {status}")
    for bad in ("0", "-1", "604801"):
        parts = urllib.parse.urlsplit(url)
        q = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        q = [(k, bad if k == "X-Amz-Expires" else v) for k, v in q]
        status, _, body = fetch(urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(q))))
        check(status == 403 and xml_code(body) == "AccessDenied", f"X-Amz-Expires={bad}: {status} {body[:200]!r}")
    # SigV2 names its end: ten years ahead is refused as SigV4's 604801 s is.
    url = env.v2.generate_presigned_url("get_object", Params={"Bucket": env.bucket, "Key": key},
                                        ExpiresIn=10 * 365 * 86400)
    check("AWSAccessKeyId=" in url, f"not a SigV2 URL: {url}")
    status, _, body = fetch(url)
    check(status == 403 and xml_code(body) == "AccessDenied", f"SigV2 URL for ten years: {status} {body[:200]!r}")


@case
def date_headers(env):
    """botocore's Date ("... -0000"), alone or beside x-amz-date, is accepted."""
    alone = env.client(signature_version="s3v4")
    alone.meta.events.register("before-sign.s3.PutObject", _add_date)
    alone.put_object(Bucket=env.bucket, Key=env.key("date/alone"), Body=b"d")
    both = env.client(signature_version="s3v4")
    both.meta.events.register("before-send.s3.PutObject", _add_date)
    both.put_object(Bucket=env.bucket, Key=env.key("date/both"), Body=b"d")
    for k in ("alone", "both"):
        check(env.s3.get_object(Bucket=env.bucket, Key=env.key("date/" + k))["Body"].read() == b"d", f"date/{k}")


def _add_date(request, **_):
    """Adds a Date in email.utils' "-0000" form (before signing botocore
    signs with it alone; after, it rides beside X-Amz-Date)."""
    request.headers["Date"] = email.utils.formatdate(usegmt=False)


@case
def expect_header(env):
    """Expect: 100-continue gets its interim 100; another expectation is
    ignored, not refused (no evidence AWS answers it with 417)."""
    key = env.key("expect/obj")
    url = env.plain.generate_presigned_url("put_object", Params={"Bucket": env.bucket, "Key": key})
    parts = urllib.parse.urlsplit(url)
    body = b"e" * 4096
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as conn:
        conn.sendall((f"PUT {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                      f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n").encode())
        first = conn.recv(4096)
        check(first.startswith(b"HTTP/1.1 100"), f"no 100 Continue before the body: {first[:80]!r}")
        conn.sendall(body)
        rest = conn.recv(4096)
        check(rest.startswith(b"HTTP/1.1 200"), f"after the body: {rest[:120]!r}")
    check(env.s3.get_object(Bucket=env.bucket, Key=key)["Body"].read() == body, "body of the 100-continue PUT")
    other = env.client(signature_version="s3v4")
    other.meta.events.register("before-sign.s3.PutObject", _add_expect)
    other.put_object(Bucket=env.bucket, Key=key + "-other", Body=b"o" * 100)
    check(env.s3.get_object(Bucket=env.bucket, Key=key + "-other")["Body"].read() == b"o" * 100, "Expect: other")


def _add_expect(request, **_):
    request.headers["Expect"] = "something-else"


@case
def expect_too_large(env):
    """A PUT declaring more than S3 takes is refused EntityTooLarge before
    any 100 Continue: the client never sends its body."""
    url = env.plain.generate_presigned_url("put_object", Params={"Bucket": env.bucket, "Key": env.key("expect/huge")})
    parts = urllib.parse.urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as conn:
        conn.sendall((f"PUT {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                      f"Content-Length: {6 << 40}\r\nExpect: 100-continue\r\n\r\n").encode())
        first = conn.recv(4096)
        check(first.startswith(b"HTTP/1.1 400") and b"<Code>EntityTooLarge</Code>" in first,
              f"6 TiB with Expect: {first[:200]!r}")


@case
def canned_private_acl(env):
    """ACLs answer as MinIO's: the owner's FULL_CONTROL; the canned private
    can be set, any other ACL is NotImplemented."""
    s3, key = env.s3, env.key("acl/obj")
    s3.put_object(Bucket=env.bucket, Key=key, Body=b"a")
    for got in (s3.get_object_acl(Bucket=env.bucket, Key=key), s3.get_bucket_acl(Bucket=env.bucket)):
        grants = got["Grants"]
        check(len(grants) == 1 and grants[0]["Permission"] == "FULL_CONTROL" and
              grants[0]["Grantee"].get("ID") == got["Owner"]["ID"], f"ACL {got}")
    s3.put_object_acl(Bucket=env.bucket, Key=key, ACL="private")
    s3.put_bucket_acl(Bucket=env.bucket, ACL="private")
    expect_error("NotImplemented", s3.put_object_acl, Bucket=env.bucket, Key=key, ACL="public-read")
    expect_error("NoSuchKey", s3.get_object_acl, Bucket=env.bucket, Key=key + "-missing")


@case
def preflight_without_cors(env):
    """OPTIONS on a presigned GET URL is a CORS preflight: 400 without
    Origin, 403 with one (no CORS is configured)."""
    key = env.key("cors/obj")
    env.s3.put_object(Bucket=env.bucket, Key=key, Body=b"c")
    url = env.s3.generate_presigned_url("get_object", Params={"Bucket": env.bucket, "Key": key}, ExpiresIn=300)
    status, _, body = fetch(url, method="OPTIONS")
    check(status == 400, f"OPTIONS without Origin: {status} {body[:200]!r}")
    status, _, body = fetch(url, method="OPTIONS", headers={"Origin": "example", "Access-Control-Request-Method": "GET"})
    check(status == 403 and xml_code(body) == "AccessForbidden", f"preflight: {status} {body[:200]!r}")


@case
def complete_repeated_part(env):
    """A completion naming part 1 twice is InvalidPart, as S3 answers."""
    s3, key = env.s3, env.key("mp/repeated")
    uid = s3.create_multipart_upload(Bucket=env.bucket, Key=key)["UploadId"]
    etag = s3.upload_part(Bucket=env.bucket, Key=key, UploadId=uid, PartNumber=1, Body=b"one")["ETag"]
    expect_error("InvalidPart", s3.complete_multipart_upload, Bucket=env.bucket, Key=key, UploadId=uid,
                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}, {"PartNumber": 1, "ETag": etag}]})
    s3.abort_multipart_upload(Bucket=env.bucket, Key=key, UploadId=uid)


@case
def complete_twice(env):
    """A second CompleteMultipartUpload answers 200 with the same ETag."""
    s3, key = env.s3, env.key("mp/twice")
    up = s3.create_multipart_upload(Bucket=env.bucket, Key=key)
    part = s3.upload_part(Bucket=env.bucket, Key=key, UploadId=up["UploadId"], PartNumber=1, Body=b"once")
    done = {"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]}
    first = s3.complete_multipart_upload(Bucket=env.bucket, Key=key, UploadId=up["UploadId"], MultipartUpload=done)
    again = s3.complete_multipart_upload(Bucket=env.bucket, Key=key, UploadId=up["UploadId"], MultipartUpload=done)
    check(again["ETag"] == first["ETag"], f"second complete: ETag {again['ETag']}, first {first['ETag']}")
    check(s3.get_object(Bucket=env.bucket, Key=key)["Body"].read() == b"once", "object after two completes")
    expect_error("NoSuchUpload", s3.complete_multipart_upload, Bucket=env.bucket, Key=key + "-other",
                 UploadId=up["UploadId"], MultipartUpload=done)


@case
def part_reupload_race(env):
    """Part 1 uploaded twice at once: the upload that finishes last wins."""
    s3, key = env.s3, env.key("mp/race")
    up = s3.create_multipart_upload(Bucket=env.bucket, Key=key)
    uid = up["UploadId"]
    slow = b"s" * 300_000
    url = env.plain.generate_presigned_url(
        "upload_part", Params={"Bucket": env.bucket, "Key": key, "UploadId": uid, "PartNumber": 1})
    parts = urllib.parse.urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as conn:
        conn.sendall((f"PUT {parts.path}?{parts.query} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                      f"Content-Length: {len(slow)}\r\n\r\n").encode() + slow[:100_000])
        # While the slow upload is half sent, a fast one of the same part
        # starts and finishes.
        fast = s3.upload_part(Bucket=env.bucket, Key=key, UploadId=uid, PartNumber=1, Body=b"f" * 1000)
        conn.sendall(slow[100_000:])
        answer = conn.recv(4096)
    check(answer.startswith(b"HTTP/1.1 200"), f"slow part upload: {answer[:200]!r}")
    etag = next(line.split(b":", 1)[1].strip() for line in answer.split(b"\r\n") if line.lower().startswith(b"etag:"))
    listed = s3.list_parts(Bucket=env.bucket, Key=key, UploadId=uid)["Parts"]
    check([(p["PartNumber"], p["ETag"], p["Size"]) for p in listed] == [(1, etag.decode(), len(slow))],
          f"parts {listed}, want the slow one ({etag}); the fast one was {fast['ETag']}")
    s3.complete_multipart_upload(Bucket=env.bucket, Key=key, UploadId=uid,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag.decode()}]})
    for _ in range(2):  # the second read is served from the cache
        check(s3.get_object(Bucket=env.bucket, Key=key)["Body"].read() == slow, "object is not the last-finished part")


@case
def part_number(env):
    """GET/HEAD with PartNumber: 206 with the part, parts count, InvalidPart past the end."""
    s3, key = env.s3, env.key("mp/parts")
    first, second = b"a" * (5 << 20), b"b" * 1000
    up = s3.create_multipart_upload(Bucket=env.bucket, Key=key)
    etags = [s3.upload_part(Bucket=env.bucket, Key=key, UploadId=up["UploadId"], PartNumber=i + 1, Body=body)["ETag"]
             for i, body in enumerate((first, second))]
    s3.complete_multipart_upload(Bucket=env.bucket, Key=key, UploadId=up["UploadId"], MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    total = len(first) + len(second)
    for n, body, off in ((1, first, 0), (2, second, len(first))):
        got = s3.get_object(Bucket=env.bucket, Key=key, PartNumber=n)
        check(got["ResponseMetadata"]["HTTPStatusCode"] == 206 and got["PartsCount"] == 2, f"GET part {n}: {got}")
        check(got["ContentRange"] == f"bytes {off}-{off + len(body) - 1}/{total}", f"part {n}: {got['ContentRange']}")
        check(got["Body"].read() == body, f"bytes of part {n}")
        head = s3.head_object(Bucket=env.bucket, Key=key, PartNumber=n)
        check(head["ContentLength"] == len(body) and head["PartsCount"] == 2, f"HEAD part {n}: {head}")
    expect_error("InvalidPart", s3.get_object, Bucket=env.bucket, Key=key, PartNumber=3)
    s3.put_object(Bucket=env.bucket, Key=key + "-whole", Body=b"whole")
    got = s3.get_object(Bucket=env.bucket, Key=key + "-whole", PartNumber=1)
    check(got["ResponseMetadata"]["HTTPStatusCode"] == 206 and got["Body"].read() == b"whole", "part 1 of a whole object")
    expect_error("InvalidPart", s3.get_object, Bucket=env.bucket, Key=key + "-whole", PartNumber=2)


@case
def whitespace_keys(env):
    """Keys of white space only, or with it at a segment's edge, as AWS takes them."""
    s3, b = env.s3, env.bucket
    # White-space-only keys cannot live under this run's prefix.
    keys = [" ", "\t", env.key(" lead"), env.key("trail "), env.key("sp/ /x")]
    for k in keys:
        s3.put_object(Bucket=b, Key=k, Body=k.encode())
        check(s3.get_object(Bucket=b, Key=k)["Body"].read() == k.encode(), f"GET {k!r}")
        s3.copy_object(Bucket=b, Key=env.key("wscopy/") + k.strip() + "!", CopySource={"Bucket": b, "Key": k})
        check(s3.head_object(Bucket=b, Key=k)["ContentLength"] == len(k), f"HEAD {k!r}")
    s3.put_object_tagging(Bucket=b, Key=" ", Tagging={"TagSet": [{"Key": "ws", "Value": "yes"}]})
    check(s3.get_object_tagging(Bucket=b, Key=" ")["TagSet"] == [{"Key": "ws", "Value": "yes"}], "tags of ' '")
    s3.copy_object(Bucket=b, Key="  ", CopySource={"Bucket": b, "Key": " "})
    check(s3.get_object(Bucket=b, Key="  ")["Body"].read() == b" ", "copy onto a white-space key")
    up = s3.create_multipart_upload(Bucket=b, Key=" \t")
    etag = s3.upload_part(Bucket=b, Key=" \t", UploadId=up["UploadId"], PartNumber=1, Body=b"in parts")["ETag"]
    s3.complete_multipart_upload(Bucket=b, Key=" \t", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    check(s3.get_object(Bucket=b, Key=" \t")["Body"].read() == b"in parts", "a white-space key uploaded in parts")
    listed = {o["Key"] for o in s3.list_objects_v2(Bucket=b, Prefix=" ").get("Contents", [])}
    check({" ", "  ", " \t"} <= listed, f"listed {listed}")
    for k in keys + ["  ", " \t"]:
        s3.delete_object(Bucket=b, Key=k)
        expect_error("NoSuchKey", s3.get_object, Bucket=b, Key=k)


def selected():
    names = os.environ.get("E2E_CASES", "").split()
    if not names:
        return CASES
    by_name = {fn.__name__: fn for fn in CASES}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit(f"E2E_CASES: no such case {unknown}")
    return [by_name[n] for n in names]


def main():
    env = Env()
    print(f"# compat: boto3 {boto3.__version__} (botocore {botocore.__version__}, {sys.executable}) "
          f"against {env.endpoint}", flush=True)
    failed = 0
    for fn in selected():
        start = time.monotonic()
        try:
            fn(env)
        except Exception as e:  # noqa: BLE001 - any failure fails the case
            failed += 1
            print(f"FAIL compat/{fn.__name__}: {e}", flush=True)
            traceback.print_exc(file=sys.stderr)
            continue
        print(f"PASS compat/{fn.__name__} ({time.monotonic() - start:.2f}s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
