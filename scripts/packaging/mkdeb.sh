#!/usr/bin/env bash
# mkdeb.sh - turns a `make install DESTDIR=` tree into gala-gopher's Debian package (dpkg-deb --build).
#   scripts/packaging/mkdeb.sh WORKDIR VERSION OUT.deb
# WORKDIR/debian/gala-gopher is the staged tree; the runtime dependencies are computed by
# dpkg-shlibdeps from the libraries the installed binaries link (with the versions their symbols need).
set -euo pipefail

work=$1 version=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
root="$work/debian/gala-gopher"
arch=$(dpkg --print-architecture)

[ -x "$root/usr/bin/gala-gopher" ] || { echo "mkdeb: $root/usr/bin/gala-gopher is missing" >&2; exit 1; }

# dpkg-shlibdeps wants a source package's debian/control next to the staged tree.
printf 'Source: gala-gopher\n\nPackage: gala-gopher\nArchitecture: any\n' > "$work/debian/control"
mapfile -t elfs < <(cd "$work" && find debian/gala-gopher/usr/bin debian/gala-gopher/opt/gala-gopher/probes -type f -perm -u+x)
depends=$(cd "$work" && dpkg-shlibdeps -O "${elfs[@]/#/-e}" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "mkdeb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

mkdir -p "$root/DEBIAN"
installed_kb=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<CONTROL
Package: gala-gopher
Version: $version
Architecture: $arch
Maintainer: gala-gopher developers <gala-gopher@localhost>
Installed-Size: $installed_kb
Depends: $depends
Section: admin
Priority: optional
Description: eBPF observability agent (gala-gopher compatible)
 A supervisor runs each probe (system_infos, tcpprobe, endpoint, ioprobe,
 taskprobe, stackprobe) as its own process, validates every record against
 the .meta table schemas and exports metrics to Prometheus, Kafka or log files.
 Runs as the systemd service gala-gopher.service with
 /etc/gala-gopher/gala-gopher.conf.
CONTROL
# Every file under /etc is a configuration file: dpkg keeps the administrator's changes.
(cd "$root" && find etc -type f | sed 's|^|/|' | sort) > "$root/DEBIAN/conffiles"
install -m 0755 "$here/debian/postinst" "$here/debian/prerm" "$here/debian/postrm" "$root/DEBIAN/"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
	> "$root/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
echo "$out"
