#!/usr/bin/env bash
# Installs what `make test` needs, skipping what is already there:
# the MinIO server binary, Debian's boto3, xxhash (the boto3 helper
# clients/python/granary_route.py places chunks with it where it is, and
# its tests hold the helper's own XXH64 to it) and
# aws cli, fuse3 (the
# fusermount3 helper the FUSE sidecar's tests mount and unmount with),
# nginx (the loadtest's proxy_cache reference target, tested over MinIO),
# chromium (the web console's tests drive it headless) and prometheus
# (promtool, which checks deploy/monitoring's rules). It
# also checks that kubectl is there: deploy's tests render the Kubernetes
# manifests with `kubectl kustomize` (preinstalled on the project's
# machines; Debian's kubernetes-client is too old for them).
set -euo pipefail
version=$1 bin=$2

if [ ! -x "$bin" ]; then
	echo "deps: building MinIO $version (once; cached in GOPATH)"
	GOFLAGS=-buildvcs=false go install "github.com/minio/minio@$version"
fi

need=()
/usr/bin/python3 -c 'import boto3' 2>/dev/null || need+=(python3-boto3)
/usr/bin/python3 -c 'import xxhash' 2>/dev/null || need+=(python3-xxhash)
[ -x /usr/bin/aws ] || need+=(awscli)
command -v fusermount3 >/dev/null 2>&1 || need+=(fuse3)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
[ -x /usr/lib/chromium/chromium ] || command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v strace >/dev/null 2>&1 || need+=(strace)
if [ ${#need[@]} -gt 0 ]; then
	echo "deps: apt-get install ${need[*]}"
	sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! command -v kubectl >/dev/null 2>&1; then
	echo "deps: kubectl is missing: deploy's tests need 'kubectl kustomize' (kubectl 1.27 or later)" >&2
	exit 1
fi
