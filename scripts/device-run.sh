#!/bin/bash
# Runs the load test from the kit scripts/device-kit.sh builds (bin/kit),
# on a host without Go: unpacks it, then runs the scenarios given (by
# default reads, checkpoint and cluster-scale; -quick for a smoke run),
# each part on cores of its own where the host has 8 or more. Reports and
# the log go to $OUT (default ./kit-out). Not every scenario can run from
# the kit: hdfs-epochs builds its HDFS daemon with Go, and the mount
# scenarios need root and /dev/fuse.
set -uo pipefail
kit=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/kit-out}
quick=()
if [ "${1:-}" = -quick ]; then
	quick=(-quick)
	shift
fi
scenarios=${1:-reads,checkpoint,cluster-scale}
work=$(mktemp -d /tmp/granary-kit.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
for b in granary loadtest minio; do
	xz -dc "$kit/$b.xz" > "$work/$b" && chmod +x "$work/$b"
done
tar -C "$work" -xJf "$kit/nginx.tar.xz"
export MINIO_BIN=$work/minio PATH=$work/nginx:$PATH
{
	echo "host: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; $(uname -r)"
	nginx -v 2>&1
} > "$out/host.txt"
rc=0
for s in ${scenarios//,/ }; do
	"$work/loadtest" -granary "$work/granary" "${quick[@]}" -scenario "$s" -out "$out/$s.md" \
		>> "$out/log.txt" 2>&1
	status=$?
	echo "$s: exit $status" >> "$out/host.txt"
	[ $status -eq 0 ] || rc=$status
done
exit $rc
