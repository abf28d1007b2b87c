#!/usr/bin/env bash
# bench-compare.sh: `granary bench train` against the same data set, in one
# run, on this machine: straight from a MinIO origin behind an emulated
# WAN link (scripts/slowlink: 25 MB/s per connection, 100 MB/s in all,
# 20 ms each way), through a Granary node in front of that link on its
# first (cold) pass and warm, through a cluster of three Granary nodes in
# front of that link with the reads spread over its nodes (cold and warm),
# and through nginx proxy_cache in front of
# the same link (cold and warm; only for workloads of one sample per
# object: nginx fetches whole objects, which breaks signed range GETs;
# skipped if nginx is not installed). Prints a Markdown
# table (AU at a fixed accelerator count over --repeat runs, and the most
# accelerators kept at the workload's AU threshold), then one of `granary
# bench ckpt` (a $CKPT checkpoint over 8 ranks) direct and through the
# node; the JSON results stay in $BENCH_DIR.
#
#   scripts/bench-compare.sh [path/to/granary]     (make build first)
#   WORKLOAD=resnet50 ACCEL=h100 N=2 REPEAT=3 MAX=16 scripts/bench-compare.sh
set -euo pipefail
GRANARY=${1:-bin/granary}
MINIO=${MINIO_BIN:-$(go env GOPATH)/bin/minio}
DIR=${BENCH_DIR:-$(mktemp -d /tmp/granary-bench-XXXXXX)}
WORKLOAD=${WORKLOAD:-resnet50} ACCEL=${ACCEL:-h100} N=${N:-1} REPEAT=${REPEAT:-3} MAX=${MAX:-16} CKPT=${CKPT:-512MiB}
ORIGIN_PORT=${ORIGIN_PORT:-19600} NODE_PORT=${NODE_PORT:-19610} NGINX_PORT=${NGINX_PORT:-19620} CLUSTER_PORT=${CLUSTER_PORT:-19630}
export MINIO_ROOT_USER=minioadmin MINIO_ROOT_PASSWORD=minioadmin
export GRANARY_ORIGIN_ACCESS_KEY=$MINIO_ROOT_USER GRANARY_ORIGIN_SECRET_KEY=$MINIO_ROOT_PASSWORD
NODE_KEY=granary NODE_SECRET=granary-secret-key
TARGET=s3://bench/$WORKLOAD/

[ -x "$MINIO" ] || { echo "bench-compare: no MinIO server at $MINIO (make deps)" >&2; exit 1; }
[ -x "$GRANARY" ] || { echo "bench-compare: no granary binary at $GRANARY (make build)" >&2; exit 1; }
mkdir -p "$DIR"
pids=()
stop() {
	trap - EXIT INT TERM
	kill -TERM "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

wait_ready() { # URL LOG
	for _ in $(seq 300); do
		curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "bench-compare: $1 not ready; last lines of $2:" >&2
	tail -n 20 "$2" >&2
	exit 1
}

"$MINIO" server "$DIR/origin" --address "127.0.0.1:$ORIGIN_PORT" --console-address "127.0.0.1:$((ORIGIN_PORT + 1))" \
	>"$DIR/minio.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$ORIGIN_PORT/minio/health/ready" "$DIR/minio.log"
go build -o "$DIR/slowlink" ./scripts/slowlink
"$DIR/slowlink" -upstream "127.0.0.1:$ORIGIN_PORT" >"$DIR/link.addr" 2>"$DIR/link.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$DIR/link.addr" ] && break; sleep 0.1; done
LINK=$(head -n1 "$DIR/link.addr")
GRANARY_ACCESS_KEY=$NODE_KEY GRANARY_SECRET_KEY=$NODE_SECRET "$GRANARY" serve --listen "127.0.0.1:$NODE_PORT" \
	--data-dir "$DIR/node" --origin "s3://$LINK?secure=false" --ram 2GiB --disk 8GiB >"$DIR/node.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$NODE_PORT/healthz" "$DIR/node.log"
# The cluster: three nodes with static peers, each with the lone node's RAM.
peers="" cluster=()
for i in 1 2 3; do
	peers+="${peers:+,}c$i=127.0.0.1:$((CLUSTER_PORT + i - 1))"
	cluster+=("http://127.0.0.1:$((CLUSTER_PORT + i - 1))")
done
for i in 1 2 3; do
	GRANARY_ACCESS_KEY=$NODE_KEY GRANARY_SECRET_KEY=$NODE_SECRET GRANARY_CLUSTER_SECRET=bench-compare-cluster-secret \
		"$GRANARY" serve --node-id "c$i" --peers "$peers" --listen "127.0.0.1:$((CLUSTER_PORT + i - 1))" \
		--data-dir "$DIR/c$i" --origin "s3://$LINK?secure=false" --ram 2GiB --disk 8GiB >"$DIR/c$i.log" 2>&1 &
	pids+=($!)
done
for i in 1 2 3; do
	wait_ready "http://127.0.0.1:$((CLUSTER_PORT + i - 1))/healthz" "$DIR/c$i.log"
done
spread=(--endpoint "${cluster[0]}" --also-endpoint "${cluster[1]},${cluster[2]}")

NGINX=$(command -v nginx || true)
[ "$WORKLOAD" = resnet50 ] && NGINX=""
if [ -n "$NGINX" ]; then
	mkdir -p "$DIR/nginx" "$DIR/nginx-cache"
	user=""
	[ "$(id -u)" = 0 ] && user="user root;"
	sed -e "s|@USER@|$user|" -e "s|@WORKERS@|auto|" -e "s|@DIR@|$DIR/nginx|g" -e "s|@CACHE@|$DIR/nginx-cache|" \
		-e "s|@ORIGIN@|$LINK|" -e "s|@PORT@|$NGINX_PORT|" "$(dirname "$0")/nginx-cache.conf" >"$DIR/nginx/nginx.conf"
	"$NGINX" -c "$DIR/nginx/nginx.conf" -g 'daemon off;' >"$DIR/nginx/stderr.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$NGINX_PORT/" && break; sleep 0.1; done
fi

origin() { AWS_ACCESS_KEY_ID=$MINIO_ROOT_USER AWS_SECRET_ACCESS_KEY=$MINIO_ROOT_PASSWORD "$GRANARY" bench "$@"; }
node() { GRANARY_ACCESS_KEY=$NODE_KEY GRANARY_SECRET_KEY=$NODE_SECRET "$GRANARY" bench "$@"; }

echo "bench-compare: $WORKLOAD on $ACCEL; origin MinIO behind $LINK; node :$NODE_PORT; results in $DIR" >&2
origin gen --endpoint "http://127.0.0.1:$ORIGIN_PORT" --workload "$WORKLOAD" "$TARGET" >&2
origin train --endpoint "http://$LINK" --accelerator-type "$ACCEL" --accelerators "$N" --repeat "$REPEAT" --json "$TARGET" >"$DIR/direct.json"
node train --endpoint "http://127.0.0.1:$NODE_PORT" --accelerator-type "$ACCEL" --accelerators "$N" --epochs 1 --json "$TARGET" >"$DIR/cold.json"
node train --endpoint "http://127.0.0.1:$NODE_PORT" --accelerator-type "$ACCEL" --accelerators "$N" --repeat "$REPEAT" --json "$TARGET" >"$DIR/warm.json"
origin train --endpoint "http://$LINK" --accelerator-type "$ACCEL" --find-max --max-accelerators "$MAX" --json "$TARGET" >"$DIR/direct-max.json"
node train --endpoint "http://127.0.0.1:$NODE_PORT" --accelerator-type "$ACCEL" --find-max --max-accelerators "$MAX" --json "$TARGET" >"$DIR/warm-max.json"
node train "${spread[@]}" --accelerator-type "$ACCEL" --accelerators "$N" --epochs 1 --json "$TARGET" >"$DIR/cluster-cold.json"
node train "${spread[@]}" --accelerator-type "$ACCEL" --accelerators "$N" --repeat "$REPEAT" --json "$TARGET" >"$DIR/cluster-warm.json"
node train "${spread[@]}" --accelerator-type "$ACCEL" --find-max --max-accelerators "$MAX" --json "$TARGET" >"$DIR/cluster-max.json"
if [ -n "$NGINX" ]; then # signed GETs pass through nginx to MinIO, which checks them on a miss
	origin train --endpoint "http://127.0.0.1:$NGINX_PORT" --accelerator-type "$ACCEL" --accelerators "$N" --epochs 1 --json "$TARGET" >"$DIR/nginx-cold.json"
	origin train --endpoint "http://127.0.0.1:$NGINX_PORT" --accelerator-type "$ACCEL" --accelerators "$N" --repeat "$REPEAT" --json "$TARGET" >"$DIR/nginx-warm.json"
	origin train --endpoint "http://127.0.0.1:$NGINX_PORT" --accelerator-type "$ACCEL" --find-max --max-accelerators "$MAX" --json "$TARGET" >"$DIR/nginx-max.json"
fi

row() { # NAME FIXED.json [MAX.json]
	jq -r --arg name "$1" --slurpfile max <([ -n "${3:-}" ] && cat "$3" || echo null) '
		def pct: . * 1000 | round / 10 | tostring + "%";
		.runs[-1] as $r
		| "| \($name) | AU \(.au.mean | pct) (\(.au.min | pct)-\(.au.max | pct), \(.runs | length) runs) | "
		+ "\(.samples_per_s.mean | round) | \(.mb_per_s.mean * 10 | round / 10) | "
		+ "\($r.read_latency_p50_ms * 100 | round / 100) / \($r.read_latency_p99_ms * 100 | round / 100) ms | "
		+ (if $max[0] == null then "" else "\($max[0].max_accelerators)\(if $max[0].capped then "+" else "" end)" end) + " |"' "$2"
}
THRESHOLD=$(jq -r '.runs[0].au_threshold * 100 | round' "$DIR/direct.json")
echo
echo "$WORKLOAD on $N x $ACCEL (AU threshold $THRESHOLD%), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg):"
echo
echo "| target | AU at $N accelerator(s) | samples/s | MB/s | read p50 / p99 | most accelerators at >= $THRESHOLD% AU |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
row "origin behind the link" "$DIR/direct.json" "$DIR/direct-max.json"
row "Granary node, cold (first epoch)" "$DIR/cold.json"
row "Granary node, warm" "$DIR/warm.json" "$DIR/warm-max.json"
row "Granary cluster of 3, reads over every node, cold" "$DIR/cluster-cold.json"
row "Granary cluster of 3, reads over every node, warm" "$DIR/cluster-warm.json" "$DIR/cluster-max.json"
if [ -n "$NGINX" ]; then
	row "nginx proxy_cache, cold (first epoch)" "$DIR/nginx-cold.json"
	row "nginx proxy_cache, warm" "$DIR/nginx-warm.json" "$DIR/nginx-max.json"
fi
origin ckpt --endpoint "http://$LINK" --ranks 8 --size "$CKPT" --json s3://bench/direct/ >"$DIR/ckpt-direct.json"
node ckpt --endpoint "http://127.0.0.1:$NODE_PORT" --ranks 8 --size "$CKPT" --json s3://bench/node/ >"$DIR/ckpt-node.json"
echo
echo "| checkpoint, $CKPT over 8 ranks | save | restore, right after |"
echo "| --- | ---: | ---: |"
for t in direct:"origin behind the link" node:"Granary node"; do
	jq -r --arg name "${t#*:}" '"| \($name) | \(.save_gb_per_s * 1000 | round / 1000) GB/s | \(.restore_gb_per_s * 1000 | round / 1000) GB/s |"' "$DIR/ckpt-${t%%:*}.json"
done
