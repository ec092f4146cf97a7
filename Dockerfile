# Glassplane all-in-one image. Untested here (no Docker engine runs on the
# development machines); kept simple so it is easy to check by reading.
#   docker build -t glassplane .
#   docker run --privileged -p 8080:8080 -p 6443:6443 glassplane
# The dashboard listens beyond loopback, so it asks for the login token that
# `glassplane up` writes to /var/lib/glassplane/dashboard-token.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/glassplane ./cmd/glassplane

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends containerd runc busybox-static containernetworking-plugins iproute2 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/glassplane /usr/local/bin/glassplane
VOLUME /var/lib/glassplane
EXPOSE 6443 8080 2379
ENTRYPOINT ["/usr/local/bin/glassplane", "up", "--data-dir", "/var/lib/glassplane", \
            "--api-listen", "0.0.0.0:6443", "--web-listen", "0.0.0.0:8080", "--etcd-listen", "127.0.0.1:2379"]
