#!/usr/bin/env bash
# Installs what `make bench` needs beyond `make deps`, skipping what is
# already there: nginx (the loadtest's proxy_cache reference target) and
# wrk (a light HTTP client for spot checks of warm GETs).
set -euo pipefail

need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
if [ ${#need[@]} -gt 0 ]; then
	echo "bench-deps: apt-get install ${need[*]}"
	sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
