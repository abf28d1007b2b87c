#!/bin/bash
# Builds the kit that runs the load test on a host without Go or a
# network (the 16-core machine some sessions borrow): static granary and
# loadtest binaries, MinIO stripped, nginx with the libraries it links,
# all xz-compressed, and scripts/device-run.sh, in bin/kit (git-ignored:
# carry it). On that host, from the repository root:
#
#	bash bin/kit/device-run.sh [-quick] [scenario,...]
#
# writes its reports and log under $OUT. Run it here first: it works on
# any Linux host, and pins only where there are 8 or more cores.
set -euo pipefail
cd "$(dirname "$0")/.."
kit=bin/kit
rm -rf "$kit"
mkdir -p "$kit/nginx/lib"
export CGO_ENABLED=0
go build -trimpath -ldflags "-s -w" -o "$kit/granary" ./cmd/granary
go build -trimpath -ldflags "-s -w" -o "$kit/loadtest" ./loadtest

minio=${MINIO_BIN:-$(go env GOPATH)/bin/minio}
strip -o "$kit/minio" "$minio" 2>/dev/null || cp "$minio" "$kit/minio"

# nginx and every library it links, run through their own loader.
nginx=$(command -v nginx || echo /usr/sbin/nginx)
cp "$nginx" "$kit/nginx/nginx.bin"
ldd "$nginx" | awk '/=>/ {print $3} /ld-linux/ {print $1}' | while read -r lib; do
	cp -L "$lib" "$kit/nginx/lib/"
done
cat > "$kit/nginx/nginx" <<'EOF'
#!/bin/sh
# nginx through the loader and libraries it was copied with.
d=$(dirname "$(readlink -f "$0")")
exec "$d/lib/ld-linux-x86-64.so.2" --library-path "$d/lib" "$d/nginx.bin" "$@"
EOF
chmod +x "$kit/nginx/nginx"

xz -T0 -6 "$kit/granary" "$kit/loadtest" "$kit/minio"
tar -C "$kit" -cJf "$kit/nginx.tar.xz" nginx
rm -rf "$kit/nginx"
cp scripts/device-run.sh "$kit/"
du -sh "$kit"
