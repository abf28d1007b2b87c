#!/usr/bin/env python3
"""End-to-end cases for a scoped access key through boto3.

Run by scripts/e2e.sh against a Granary node after `granary user add` gave
E2E_SCOPED_ACCESS_KEY / E2E_SCOPED_SECRET_KEY the grants
read,list:BUCKET/pub/ and write,delete:BUCKET/in/ (BUCKET is E2E_BUCKET,
which only this script uses). The node's own key (E2E_ACCESS_KEY) sets the
bucket up and checks that nothing a refused call touched changed. Prints
"PASS <name>" or "FAIL <name>: <why>" per case; exits 1 if any failed.
"""

import os
import sys
import time
import traceback

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError


def client(key, secret):
    return boto3.client(
        "s3", endpoint_url=os.environ["E2E_ENDPOINT"], region_name=os.environ["E2E_REGION"],
        aws_access_key_id=key, aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1}, s3={"addressing_style": "path"}),
    )


ROOT = client(os.environ["E2E_ACCESS_KEY"], os.environ["E2E_SECRET_KEY"])
USER = client(os.environ["E2E_SCOPED_ACCESS_KEY"], os.environ["E2E_SCOPED_SECRET_KEY"])
BUCKET = os.environ["E2E_BUCKET"]


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def denied(fn, **kwargs):
    """Calls fn, which must fail with AccessDenied."""
    try:
        fn(**kwargs)
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code")
        check(code == "AccessDenied", f"{fn.__name__}: error {code!r}, want AccessDenied")
        return
    raise AssertionError(f"{fn.__name__} {kwargs} succeeded, want AccessDenied")


def missing(key):
    try:
        ROOT.head_object(Bucket=BUCKET, Key=key)
    except ClientError as e:
        check(e.response["Error"]["Code"] in ("404", "NoSuchKey"), f"head {key}: {e}")
        return
    raise AssertionError(f"{key} exists after a refused call")


def setup():
    try:
        ROOT.create_bucket(Bucket=BUCKET)
    except ClientError as e:  # a run with another Python made it
        if e.response["Error"]["Code"] not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
            raise
    ROOT.put_object(Bucket=BUCKET, Key="pub/a", Body=b"public sample")
    ROOT.put_object(Bucket=BUCKET, Key="secret/a", Body=b"not for the trainer")


def reads():
    got = USER.get_object(Bucket=BUCKET, Key="pub/a")["Body"].read()
    check(got == b"public sample", f"granted read got {got!r}")
    denied(USER.get_object, Bucket=BUCKET, Key="secret/a")
    keys = [o["Key"] for o in USER.list_objects_v2(Bucket=BUCKET, Prefix="pub/").get("Contents", [])]
    check(keys == ["pub/a"], f"granted list: {keys}")
    denied(USER.list_objects_v2, Bucket=BUCKET)
    names = [b["Name"] for b in USER.list_buckets()["Buckets"]]
    check(names == [BUCKET], f"list_buckets shows {names}, want [{BUCKET}] only")


def writes():
    USER.put_object(Bucket=BUCKET, Key="in/x", Body=b"written")
    denied(USER.put_object, Bucket=BUCKET, Key="pub/a", Body=b"overwrite")
    got = ROOT.get_object(Bucket=BUCKET, Key="pub/a")["Body"].read()
    check(got == b"public sample", f"pub/a changed to {got!r}")
    denied(USER.put_object, Bucket=BUCKET, Key="pub/new", Body=b"x")
    missing("pub/new")
    denied(USER.copy_object, Bucket=BUCKET, Key="in/stolen", CopySource={"Bucket": BUCKET, "Key": "secret/a"})
    missing("in/stolen")
    denied(USER.create_bucket, Bucket=BUCKET + "-mine")


def deletes():
    denied(USER.delete_object, Bucket=BUCKET, Key="pub/a")
    ROOT.head_object(Bucket=BUCKET, Key="pub/a")
    out = USER.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": "in/x"}, {"Key": "pub/a"}]})
    errors = {e["Key"]: e["Code"] for e in out.get("Errors", [])}
    check(errors == {"pub/a": "AccessDenied"}, f"delete_objects errors {errors}")
    missing("in/x")
    ROOT.head_object(Bucket=BUCKET, Key="pub/a")


def main():
    failed = 0
    for fn in (setup, reads, writes, deletes):
        start = time.monotonic()
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - any failure fails the case
            failed += 1
            print(f"FAIL policy/{fn.__name__}: {e}", flush=True)
            traceback.print_exc(file=sys.stderr)
            continue
        print(f"PASS policy/{fn.__name__} ({time.monotonic() - start:.2f}s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
