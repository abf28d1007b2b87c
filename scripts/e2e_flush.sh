#!/usr/bin/env bash
# After the write-back runs: `granary flush s3://e2e-wb/` must succeed, and
# MinIO must then hold exactly what the gateway lists (keys and ETags).
# Usage: e2e_flush.sh GRANARY_BIN MINIO_PORT MINIO_USER MINIO_PASS
set -uo pipefail
bin=$1 minio_port=$2 minio_user=$3 minio_pass=$4

if out=$(GRANARY_ACCESS_KEY=$E2E_ACCESS_KEY GRANARY_SECRET_KEY=$E2E_SECRET_KEY \
	timeout 300 "$bin" flush --endpoint "$E2E_ENDPOINT" s3://e2e-wb/ 2>&1); then
	echo "PASS granary flush s3://e2e-wb/"
else
	echo "FAIL granary flush s3://e2e-wb/: $out"
	exit 0
fi
echo "$out" | tail -n 2 >&2

MINIO_ENDPOINT=http://127.0.0.1:$minio_port MINIO_USER=$minio_user MINIO_PASS=$minio_pass \
	/usr/bin/python3 - <<'PY'
import os, boto3

def listing(endpoint, ak, sk):
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name=os.environ["E2E_REGION"],
                      aws_access_key_id=ak, aws_secret_access_key=sk)
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="e2e-wb"):
        for o in page.get("Contents", []):
            out[o["Key"]] = o["ETag"]
    return out

gw = listing(os.environ["E2E_ENDPOINT"], os.environ["E2E_ACCESS_KEY"], os.environ["E2E_SECRET_KEY"])
origin = listing(os.environ["MINIO_ENDPOINT"], os.environ["MINIO_USER"], os.environ["MINIO_PASS"])
if gw == origin:
    print("PASS write-back bucket at the origin after flush (%d objects)" % len(origin))
else:
    only_gw = sorted(set(gw.items()) - set(origin.items()))[:5]
    only_origin = sorted(set(origin.items()) - set(gw.items()))[:5]
    print("FAIL write-back bucket differs at the origin: gateway only %s, origin only %s" % (only_gw, only_origin))
PY
