# Granary image: one static binary on Debian slim, with fuse3 for the
# `granary mount` sidecar. Used by docker-compose.yml; build it alone with
#   docker build -t granary:local .
#
# The image runs as the unprivileged user "granary" (uid 10001), which is
# enough for `granary serve`. `granary mount` needs /dev/fuse and the
# SYS_ADMIN capability and must run as root (user: "0:0" in compose, or
# docker run --user 0 --device /dev/fuse --cap-add SYS_ADMIN
# --security-opt apparmor:unconfined ...): see the mount service in
# docker-compose.yml.

# --- build stage: a static binary (no cgo: nothing in Granary needs it) ---
FROM golang:1.26-bookworm AS build
WORKDIR /src
# Modules first, so that source edits do not invalidate the download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /granary ./cmd/granary

# --- runtime stage ---
FROM debian:bookworm-slim
# fuse3: fusermount3 for `granary mount`; ca-certificates: https origins;
# curl: the compose health checks (GET /healthz).
RUN apt-get update \
	&& apt-get install -y --no-install-recommends fuse3 ca-certificates curl \
	&& rm -rf /var/lib/apt/lists/*
# /data is the node's --data-dir. It exists in the image, owned by granary,
# so that a named volume mounted there starts out writable by that user (a
# host bind mount instead keeps the host's ownership: chown it to 10001).
RUN useradd --system --uid 10001 --user-group --home-dir /data --no-create-home granary \
	&& mkdir -p /data /mnt/data \
	&& chown granary:granary /data
COPY --from=build /granary /usr/local/bin/granary
USER granary
WORKDIR /data
# No VOLUME: compose mounts a named volume on /data per node (docker run
# users: -v granary-data:/data, or the cache lives in the container).
# 9000: the S3 endpoint (clients, and peer traffic between cluster nodes);
# 7946: memberlist gossip (TCP and UDP), used only with --join.
EXPOSE 9000 7946 7946/udp
ENTRYPOINT ["granary"]
# A single node caching the directories under /data/origin. Clusters
# override the command (docker-compose.yml). With --peers each node's
# address is its own entry in the list, so listening on 0.0.0.0 needs
# nothing else; with --join, also give --advertise HOST:9000 (or
# GRANARY_ADVERTISE) and --gossip-bind IP:7946, since 0.0.0.0 names no
# address peers could reach.
CMD ["serve", "--listen", "0.0.0.0:9000", "--data-dir", "/data"]
