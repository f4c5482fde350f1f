#!/usr/bin/env bash
# Installs the Debian packages that build, run and test gala-gopher need (idempotent).
set -euo pipefail

PKGS=(
  make gcc clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config
  libuv1-dev libnng-dev librdkafka-dev libconfig-dev libcjson-dev
  libmicrohttpd-dev libgnutls28-dev libcmocka-dev
  kcat prometheus linux-perf curl iproute2 nftables procps
  libclang-rt-14-dev valgrind python3 openssl prometheus-node-exporter
  protobuf-compiler
  nginx wrk libbpf-tools e2fsprogs util-linux
  dpkg-dev systemd python3-yaml binutils
  redis-server postgresql mariadb-server dnsmasq-base
  openjdk-17-jdk-headless qemu-system-x86
  chromium chromium-driver groff-base man-db
  python3-grpcio nghttp2-client
  libcapstone-dev golang-go libpq-dev haproxy
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: need root to install: ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
