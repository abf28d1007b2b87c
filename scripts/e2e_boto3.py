#!/usr/bin/env python3
"""End-to-end cases for an S3 endpoint through boto3 (stdlib otherwise).

Run by scripts/e2e.sh with each Python interpreter that has boto3. Reads
E2E_ENDPOINT, E2E_ACCESS_KEY, E2E_SECRET_KEY, E2E_REGION and E2E_BUCKET (an
existing bucket) and E2E_PREFIX (keys of this run live under it);
E2E_CA_BUNDLE, for an https endpoint, is the CA file clients verify it
with (verify=), and adds the case that a client without it fails;
E2E_CASES, if set, names the cases to run (space-separated). Prints one
line per case, "PASS <name>" or "FAIL <name>: <why>", and exits 1 if any
case failed. Multipart uploads are covered twice: through boto3's transfer
manager (upload_file/download_file of a 40 MiB file in 8 MiB parts) and
through the low-level calls (parts, copies, listings, abort, refusals).
"""

import concurrent.futures
import hashlib
import os
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

import boto3
import botocore
from botocore.config import Config
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError

CASES = []
TLS_CASES = []  # only against an https endpoint with E2E_CA_BUNDLE


def case(fn):
    """Registers fn as a case, run in definition order."""
    CASES.append(fn)
    return fn


def tls_case(fn):
    """Registers fn as a case of an https endpoint."""
    TLS_CASES.append(fn)
    return fn


def sha(data):
    return hashlib.sha256(data).hexdigest()


def payload(n, seed):
    """n deterministic pseudo-random bytes (distinct per seed)."""
    out = bytearray()
    block = hashlib.sha256(seed.encode()).digest()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block * 64
    return bytes(out[:n])


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def expect_error(code, fn, *args, **kwargs):
    """Calls fn and checks that it fails with the S3 error code."""
    try:
        fn(*args, **kwargs)
    except ClientError as e:
        got = e.response.get("Error", {}).get("Code")
        check(got == code, f"error code {got!r}, want {code!r}")
        return e
    raise AssertionError(f"no error, want {code}")


class Env:
    """The endpoint, clients and names one run works with."""

    def __init__(self):
        self.endpoint = os.environ["E2E_ENDPOINT"]
        self.region = os.environ.get("E2E_REGION", "us-east-1")
        self.bucket = os.environ["E2E_BUCKET"]
        self.prefix = os.environ["E2E_PREFIX"].rstrip("/") + "/"
        self.ca_bundle = os.environ.get("E2E_CA_BUNDLE") or None
        self.s3 = self.client(os.environ["E2E_ACCESS_KEY"], os.environ["E2E_SECRET_KEY"])
        self.bad = self.client(os.environ["E2E_ACCESS_KEY"], os.environ["E2E_SECRET_KEY"] + "-wrong")

    def client(self, access, secret, verify="bundle"):
        """A client; verify is the CA bundle's path, "bundle" for
        E2E_CA_BUNDLE (None: the default, botocore's own bundle)."""
        cfg = Config(
            signature_version="s3v4",
            s3={"addressing_style": "path"},
            retries={"max_attempts": 1, "mode": "standard"},
            connect_timeout=5,
            read_timeout=60,
            max_pool_connections=16,
        )
        return boto3.session.Session().client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=access,
            aws_secret_access_key=secret,
            region_name=self.region,
            config=cfg,
            verify=self.ca_bundle if verify == "bundle" else verify,
        )

    def key(self, name):
        return self.prefix + name

    def get(self, key, **kw):
        return self.s3.get_object(Bucket=self.bucket, Key=key, **kw)


@case
def put_get_sizes(env):
    for n in (0, 1, 4096, 1 << 20 | 7, 5 << 20):
        data = payload(n, f"size-{n}")
        key = env.key(f"sizes/{n}")
        env.s3.put_object(Bucket=env.bucket, Key=key, Body=data)
        got = env.get(key)["Body"].read()
        check(len(got) == n and sha(got) == sha(data), f"size {n}: read back {len(got)} bytes, sha mismatch")


@case
def ranged_get(env):
    data = payload(3 << 20, "range")
    key = env.key("range/obj")
    env.s3.put_object(Bucket=env.bucket, Key=key, Body=data)
    size = len(data)
    cases = {
        "bytes=0-0": data[0:1],
        "bytes=100-199": data[100:200],
        "bytes=1048570-2097160": data[1048570:2097161],
        f"bytes={size - 10}-": data[size - 10:],
        "bytes=-4096": data[-4096:],
        f"bytes=5-{size + 100}": data[5:],
    }
    for rng, want in cases.items():
        r = env.get(key, Range=rng)
        got = r["Body"].read()
        check(r["ResponseMetadata"]["HTTPStatusCode"] == 206, f"{rng}: status {r['ResponseMetadata']['HTTPStatusCode']}")
        check(sha(got) == sha(want), f"{rng}: {len(got)} bytes, want {len(want)}")
        check(r["ContentLength"] == len(want), f"{rng}: Content-Length {r['ContentLength']}")
        check(r["ContentRange"].endswith(f"/{size}"), f"{rng}: Content-Range {r['ContentRange']}")
    expect_error("InvalidRange", env.get, key, Range=f"bytes={size}-")


@case
def head_object(env):
    data = payload(12345, "head")
    key = env.key("head/obj.bin")
    env.s3.put_object(
        Bucket=env.bucket, Key=key, Body=data, ContentType="application/x-e2e",
        Metadata={"purpose": "e2e", "owner": "granary"},
    )
    h = env.s3.head_object(Bucket=env.bucket, Key=key)
    check(h["ContentLength"] == len(data), f"ContentLength {h['ContentLength']}")
    check(h["ETag"] == '"' + hashlib.md5(data).hexdigest() + '"', f"ETag {h['ETag']}")
    check(h["ContentType"] == "application/x-e2e", f"ContentType {h['ContentType']}")
    check(h["Metadata"] == {"purpose": "e2e", "owner": "granary"}, f"Metadata {h['Metadata']}")
    check(h.get("LastModified") is not None, "no LastModified")
    g = env.get(key)
    check(g["ETag"] == h["ETag"] and g["Metadata"] == h["Metadata"], "GET disagrees with HEAD")
    g["Body"].read()
    expect_error("404", env.s3.head_object, Bucket=env.bucket, Key=env.key("head/missing"))


@case
def large_put_keeps_etag(env):
    """put_object of 20 MB (one PUT, over the origin's 16 MiB parts): its
    ETag is the MD5, and stays so once the object is at the origin."""
    data = payload(20_000_000, "large-put")
    key = env.key("large/put.bin")
    etag = env.s3.put_object(Bucket=env.bucket, Key=key, Body=data)["ETag"]
    check(etag == '"' + hashlib.md5(data).hexdigest() + '"', f"put ETag {etag}")
    if os.environ.get("E2E_WRITE_BACK") == "1" and os.environ.get("E2E_DIRECT") != "1":
        wait_persisted(env, key)
    h = env.s3.head_object(Bucket=env.bucket, Key=key)
    check(h["ETag"] == etag, f"HEAD ETag {h['ETag']}, the put answered {etag}")
    got = env.get(key, IfMatch=etag)["Body"].read()
    check(sha(got) == sha(data), "GET If-Match read other bytes")


def wait_persisted(env, key, limit=300):
    """Polls HEAD until the write-back node says key is at the origin."""
    deadline = time.monotonic() + limit
    while True:
        h = env.s3.head_object(Bucket=env.bucket, Key=key)
        if h["ResponseMetadata"]["HTTPHeaders"].get("x-granary-persisted") == "true":
            return
        check(time.monotonic() < deadline, f"{key} not at the origin after {limit}s")
        time.sleep(0.2)


def put_many(env, keys):
    def put(k):
        env.s3.put_object(Bucket=env.bucket, Key=k, Body=k.encode())

    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(put, keys))


@case
def list_pagination(env):
    base = env.key("page/")
    keys = sorted(f"{base}{i:05d}" for i in range(1500))
    put_many(env, keys)
    for page_size in (None, 100, 999):
        cfg = {"PageSize": page_size} if page_size else {}
        seen, pages, full = [], 0, 0
        paginator = env.s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=env.bucket, Prefix=base, PaginationConfig=cfg):
            pages += 1
            check(pages <= 100, "more than 100 pages: the listing does not end")
            got = [o["Key"] for o in page.get("Contents", [])]
            full += 1 if got else 0
            seen += got
        check(len(seen) == len(set(seen)), f"page size {page_size}: {len(seen) - len(set(seen))} keys repeated")
        check(seen == keys, f"page size {page_size}: listed {len(seen)} keys, want {len(keys)} in order")
        # A server may mark the page that ends exactly at the last key as
        # truncated and answer one more, empty page (MinIO does).
        want_pages = -(-len(keys) // (page_size or 1000))
        check(full == want_pages and pages <= want_pages + 1, f"page size {page_size}: {pages} pages, want {want_pages}")


@case
def list_delimiter(env):
    base = env.key("tree/")
    put_many(env, [base + k for k in ("a/1", "a/2", "b/c/1", "top1", "top2")])
    r = env.s3.list_objects_v2(Bucket=env.bucket, Prefix=base, Delimiter="/")
    prefixes = [p["Prefix"] for p in r.get("CommonPrefixes", [])]
    keys = [o["Key"] for o in r.get("Contents", [])]
    check(prefixes == [base + "a/", base + "b/"], f"common prefixes {prefixes}")
    check(keys == [base + "top1", base + "top2"], f"keys {keys}")
    r = env.s3.list_objects_v2(Bucket=env.bucket, Prefix=base, Delimiter="/", MaxKeys=1)
    check(r["IsTruncated"] and r["KeyCount"] == 1, f"MaxKeys=1: truncated {r['IsTruncated']} count {r['KeyCount']}")


@case
def copy_object(env):
    data = payload(200_000, "copy")
    src, dst = env.key("copy/src"), env.key("copy/dst")
    env.s3.put_object(Bucket=env.bucket, Key=src, Body=data, Metadata={"color": "blue"})
    env.s3.copy_object(Bucket=env.bucket, Key=dst, CopySource={"Bucket": env.bucket, "Key": src})
    g = env.get(dst)
    check(sha(g["Body"].read()) == sha(data), "copy has other bytes")
    check(g["Metadata"] == {"color": "blue"}, f"copy metadata {g['Metadata']}")


@case
def delete_object(env):
    key = env.key("delete/one")
    env.s3.put_object(Bucket=env.bucket, Key=key, Body=b"bye")
    env.s3.delete_object(Bucket=env.bucket, Key=key)
    expect_error("NoSuchKey", env.get, key)
    env.s3.delete_object(Bucket=env.bucket, Key=key)  # deleting twice is not an error


@case
def delete_objects(env):
    keys = [env.key(f"delete/many/{i}") for i in range(20)]
    put_many(env, keys)
    r = env.s3.delete_objects(Bucket=env.bucket, Delete={"Objects": [{"Key": k} for k in keys]})
    check(not r.get("Errors"), f"errors {r.get('Errors')}")
    check(sorted(d["Key"] for d in r.get("Deleted", [])) == sorted(keys), "not every key reported deleted")
    left = env.s3.list_objects_v2(Bucket=env.bucket, Prefix=env.key("delete/many/"))
    check(left["KeyCount"] == 0, f"{left['KeyCount']} keys left")


@case
def presigned_get(env):
    data = payload(70_000, "presign")
    key = env.key("presign/obj")
    env.s3.put_object(Bucket=env.bucket, Key=key, Body=data)
    url = env.s3.generate_presigned_url("get_object", Params={"Bucket": env.bucket, "Key": key}, ExpiresIn=300)
    with urllib.request.urlopen(url, timeout=30) as r:
        check(sha(r.read()) == sha(data), "presigned GET returned other bytes")
    short = env.s3.generate_presigned_url("get_object", Params={"Bucket": env.bucket, "Key": key}, ExpiresIn=1)
    # Expiry is checked at one-second resolution against X-Amz-Date: wait
    # until that second and the next have surely passed.
    time.sleep(2.5)
    try:
        urllib.request.urlopen(short, timeout=30).read()
    except urllib.error.HTTPError as e:
        body = e.read().decode(errors="replace")
        check(e.code == 403, f"expired URL: status {e.code}")
        check("<Code>AccessDenied</Code>" in body, f"expired URL: body {body[:300]}")
        return
    raise AssertionError("expired presigned URL was accepted")


@case
def errors(env):
    expect_error("NoSuchKey", env.get, env.key("missing/key"))
    expect_error("NoSuchBucket", env.s3.get_object, Bucket="e2e-no-such-bucket", Key="k")
    expect_error("NoSuchBucket", env.s3.list_objects_v2, Bucket="e2e-no-such-bucket")
    expect_error("SignatureDoesNotMatch", env.bad.get_object, Bucket=env.bucket, Key=env.key("sizes/1"))
    expect_error("SignatureDoesNotMatch", env.bad.list_objects_v2, Bucket=env.bucket)


MiB = 1 << 20


def file_sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(MiB), b""):
            h.update(block)
    return h.hexdigest()


@case
def transfer_multipart(env):
    """upload_file/download_file of 40 MiB in 8 MiB parts, both ways."""
    cfg = TransferConfig(multipart_threshold=8 * MiB, multipart_chunksize=8 * MiB, max_concurrency=4)
    key = env.key("transfer/forty.bin")
    with tempfile.TemporaryDirectory() as d:
        up, down = os.path.join(d, "up.bin"), os.path.join(d, "down.bin")
        with open(up, "wb") as f:
            f.write(payload(40 * MiB + 12345, "transfer"))
        env.s3.upload_file(up, env.bucket, key, Config=cfg)
        h = env.s3.head_object(Bucket=env.bucket, Key=key)
        check(h["ContentLength"] == os.path.getsize(up), f"ContentLength {h['ContentLength']}")
        check(h["ETag"].strip('"').endswith("-6"), f"ETag {h['ETag']} is not that of a 6-part upload")
        if os.environ.get("E2E_DIRECT") != "1":  # Granary's own header
            persisted = h["ResponseMetadata"]["HTTPHeaders"].get("x-granary-persisted")
            # A write-back bucket acknowledges before the origin has it.
            want = ("true", "false") if os.environ.get("E2E_WRITE_BACK") == "1" else ("true",)
            check(persisted in want, f"x-granary-persisted {persisted!r}")
        env.s3.download_file(env.bucket, key, down, Config=cfg)
        check(file_sha(down) == file_sha(up), "downloaded file differs")


def parts_of(env, key, upload_id, **kw):
    return env.s3.list_parts(Bucket=env.bucket, Key=key, UploadId=upload_id, **kw)


@case
def multipart_low_level(env):
    """create, upload_part(_copy), list_parts, list_multipart_uploads, complete."""
    key = env.key("mpu/low level.bin")
    first, last = payload(5 * MiB, "mpu-1"), payload(MiB + 3, "mpu-3")
    src, src_data = env.key("mpu/copy-source"), payload(6 * MiB, "mpu-src")
    env.s3.put_object(Bucket=env.bucket, Key=src, Body=src_data)
    copied = src_data[1000:1000 + 5 * MiB]
    up = env.s3.create_multipart_upload(Bucket=env.bucket, Key=key, ContentType="application/x-mpu",
                                        Metadata={"kind": "low-level"})
    uid = up["UploadId"]
    check(up["Bucket"] == env.bucket and up["Key"] == key, f"create answered {up['Bucket']}/{up['Key']}")
    etags = {}
    for n, data in ((1, first), (3, last)):
        r = env.s3.upload_part(Bucket=env.bucket, Key=key, UploadId=uid, PartNumber=n, Body=data)
        check(r["ETag"] == '"' + hashlib.md5(data).hexdigest() + '"', f"part {n} ETag {r['ETag']}")
        etags[n] = r["ETag"]
    # Part 2: 5 MiB of the source from byte 1000, copied by the server.
    r = env.s3.upload_part_copy(Bucket=env.bucket, Key=key, UploadId=uid, PartNumber=2,
                                CopySource={"Bucket": env.bucket, "Key": src},
                                CopySourceRange=f"bytes=1000-{1000 + 5 * MiB - 1}")
    check(r["CopyPartResult"]["ETag"] == '"' + hashlib.md5(copied).hexdigest() + '"', f"copy ETag {r['CopyPartResult']}")
    etags[2] = r["CopyPartResult"]["ETag"]
    p = parts_of(env, key, uid, MaxParts=2)
    check([x["PartNumber"] for x in p["Parts"]] == [1, 2] and p["IsTruncated"], f"first page {p.get('Parts')}")
    p2 = parts_of(env, key, uid, PartNumberMarker=p["NextPartNumberMarker"])
    check([x["PartNumber"] for x in p2["Parts"]] == [3] and not p2["IsTruncated"], f"second page {p2.get('Parts')}")
    check([x["Size"] for x in p["Parts"] + p2["Parts"]] == [len(first), len(copied), len(last)], "part sizes")
    ups = env.s3.list_multipart_uploads(Bucket=env.bucket, Prefix=key)
    check(any(u["UploadId"] == uid and u["Key"] == key for u in ups.get("Uploads", [])), f"uploads {ups.get('Uploads')}")
    done = env.s3.complete_multipart_upload(Bucket=env.bucket, Key=key, UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": n, "ETag": etags[n]} for n in (1, 2, 3)]})
    check(done["ETag"].strip('"').endswith("-3"), f"completed ETag {done['ETag']}")
    g = env.get(key)
    check(sha(g["Body"].read()) == sha(first + copied + last), "completed object has other bytes")
    check(g["ContentType"] == "application/x-mpu" and g["Metadata"] == {"kind": "low-level"},
          f"type {g['ContentType']} metadata {g['Metadata']}")
    ups = env.s3.list_multipart_uploads(Bucket=env.bucket, Prefix=key)
    check(not any(u["UploadId"] == uid for u in ups.get("Uploads", [])), "completed upload still listed")


@case
def multipart_abort_and_refusals(env):
    key = env.key("mpu/aborted")
    uid = env.s3.create_multipart_upload(Bucket=env.bucket, Key=key)["UploadId"]
    small = [env.s3.upload_part(Bucket=env.bucket, Key=key, UploadId=uid, PartNumber=n, Body=b"tiny")["ETag"]
             for n in (1, 2)]
    expect_error("EntityTooSmall", env.s3.complete_multipart_upload, Bucket=env.bucket, Key=key, UploadId=uid,
                 MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e} for n, e in ((1, small[0]), (2, small[1]))]})
    expect_error("InvalidPart", env.s3.complete_multipart_upload, Bucket=env.bucket, Key=key, UploadId=uid,
                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"' + "0" * 32 + '"'}]})
    expect_error("InvalidPartOrder", env.s3.complete_multipart_upload, Bucket=env.bucket, Key=key, UploadId=uid,
                 MultipartUpload={"Parts": [{"PartNumber": 2, "ETag": small[1]}, {"PartNumber": 1, "ETag": small[0]}]})
    env.s3.abort_multipart_upload(Bucket=env.bucket, Key=key, UploadId=uid)
    expect_error("NoSuchUpload", parts_of, env, key, uid)
    expect_error("NoSuchUpload", env.s3.upload_part, Bucket=env.bucket, Key=key, UploadId=uid, PartNumber=3, Body=b"x")
    # Aborting again: S3 answers NoSuchUpload, MinIO (and Granary over it) success.
    try:
        env.s3.abort_multipart_upload(Bucket=env.bucket, Key=key, UploadId=uid)
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code")
        check(code == "NoSuchUpload", f"second abort: error code {code!r}")
    ups = env.s3.list_multipart_uploads(Bucket=env.bucket, Prefix=key)
    check(not ups.get("Uploads"), f"aborted upload still listed: {ups.get('Uploads')}")
    expect_error("NoSuchKey", env.get, key)


@tls_case
def untrusted_ca(env):
    """Without the CA bundle a client refuses the node's certificate."""
    s3 = env.client(os.environ["E2E_ACCESS_KEY"], os.environ["E2E_SECRET_KEY"], verify=None)
    try:
        s3.list_objects_v2(Bucket=env.bucket, MaxKeys=1)
    except botocore.exceptions.SSLError as e:
        check("CERTIFICATE_VERIFY_FAILED" in str(e), f"an SSLError but not a failed verification: {e}")
        return
    raise AssertionError("a client without the CA trusted the node")


def selected(env):
    """The cases to run: E2E_CASES's, in its order, else every one."""
    cases = CASES + (TLS_CASES if env.ca_bundle else [])
    names = os.environ.get("E2E_CASES", "").split()
    if not names:
        return cases
    by_name = {fn.__name__: fn for fn in cases}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit(f"E2E_CASES: no such case {unknown} (untrusted_ca needs E2E_CA_BUNDLE)")
    return [by_name[n] for n in names]


def main():
    env = Env()
    tag = f"boto3 {boto3.__version__} (botocore {botocore.__version__}, {sys.executable})"
    print(f"# {tag} against {env.endpoint}", flush=True)
    failed = 0
    for fn in selected(env):
        start = time.monotonic()
        try:
            fn(env)
        except Exception as e:  # noqa: BLE001 - any failure fails the case
            failed += 1
            print(f"FAIL boto3/{fn.__name__}: {e}", flush=True)
            traceback.print_exc(file=sys.stderr)
            continue
        print(f"PASS boto3/{fn.__name__} ({time.monotonic() - start:.2f}s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
