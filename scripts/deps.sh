#!/usr/bin/env bash
# Installs what `make test` needs, skipping what is already there:
# the MinIO server binary, Debian's boto3 and aws cli, fuse3 (the
# fusermount3 helper the FUSE sidecar's tests mount and unmount with),
# nginx (the loadtest's proxy_cache reference target, tested over MinIO)
# and chromium (the web console's tests drive it headless).
set -euo pipefail
version=$1 bin=$2

if [ ! -x "$bin" ]; then
	echo "deps: building MinIO $version (once; cached in GOPATH)"
	GOFLAGS=-buildvcs=false go install "github.com/minio/minio@$version"
fi

need=()
/usr/bin/python3 -c 'import boto3' 2>/dev/null || need+=(python3-boto3)
[ -x /usr/bin/aws ] || need+=(awscli)
command -v fusermount3 >/dev/null 2>&1 || need+=(fuse3)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
[ -x /usr/lib/chromium/chromium ] || command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
	echo "deps: apt-get install ${need[*]}"
	sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
