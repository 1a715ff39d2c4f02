#!/usr/bin/env bash
# Makes the Debian package simpletunnel_VERSION_ARCH.deb with dpkg-deb: the
# two programs (Swift's runtime linked in), the systemd units, the service
# user (sysusers.d) and its state folder (tmpfiles.d), a commented
# /etc/simpletunnel/tunnel-server.conf (a conffile), shell completions and
# man pages generated from the programs themselves, and Depends computed
# from the binaries. Checks it with lintian when lintian is installed.
# Prints the .deb's path as its last line.
#
# Usage: Packaging/build-deb.sh [--binaries DIR] [--output DIR]
#   --binaries DIR  use DIR/tunnel-server and DIR/tunnel-client (stripped,
#                   as Packaging/build-binaries.sh makes them) instead of building
#   --output DIR    where the .deb goes (default .build/packaging)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
packaging="$root/Packaging"
binaries=""
output="$root/.build/packaging"
while [ $# -gt 0 ]; do
    case "$1" in
        --binaries) binaries=$(cd "$2" && pwd); shift 2 ;;
        --output) output="$2"; shift 2 ;;
        *) echo "usage: $0 [--binaries DIR] [--output DIR]" >&2; exit 2 ;;
    esac
done
command -v swift >/dev/null 2>&1 || export PATH="/opt/swift/usr/bin:$PATH"
for tool in dpkg-deb dpkg-shlibdeps; do
    command -v "$tool" >/dev/null 2>&1 || { echo "build-deb: $tool is missing: apt-get install dpkg-dev" >&2; exit 1; }
done
if [ -z "$binaries" ]; then
    binaries=$("$packaging/build-binaries.sh" | tail -n 1)
fi
server="$binaries/tunnel-server"
client="$binaries/tunnel-client"

version=$("$server" --version)
revision=1
architecture=$(dpkg --print-architecture)
# Dates inside the package come from the commit, so a rebuild is the same package.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}
maintainer=${DEB_MAINTAINER:-$(git -C "$root" log -1 --format='%an <%ae>')}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Staged where dpkg-shlibdeps expects a package's files: debian/PACKAGE.
stage="$work/source/debian/simpletunnel"
doc="$stage/usr/share/doc/simpletunnel"

install -D -m 0755 "$server" "$stage/usr/bin/tunnel-server"
install -D -m 0755 "$client" "$stage/usr/bin/tunnel-client"
install -D -m 0644 -t "$stage/usr/lib/systemd/system" \
    "$packaging/systemd/tunnel-server.service" "$packaging/systemd/tunnel-client@.service"
install -D -m 0644 "$packaging/sysusers.d/simpletunnel.conf" "$stage/usr/lib/sysusers.d/simpletunnel.conf"
install -D -m 0644 "$packaging/tmpfiles.d/simpletunnel.conf" "$stage/usr/lib/tmpfiles.d/simpletunnel.conf"
install -D -m 0644 "$packaging/etc/tunnel-server.conf" "$stage/etc/simpletunnel/tunnel-server.conf"
install -D -m 0644 "$packaging/etc/client-example.conf" "$doc/examples/client.conf"
install -D -m 0644 "$root/Examples/tunnel-server.plist" "$doc/examples/tunnel-server.plist"
install -D -m 0644 "$packaging/examples/simpletunnel.nft" "$doc/examples/simpletunnel.nft"
install -D -m 0644 "$packaging/examples/99-simpletunnel.conf" "$doc/examples/sysctl.d/99-simpletunnel.conf"
# The protocol and the guide for Apple's apps, which the man pages and the README point to.
install -D -m 0644 "$root/docs/PROTOCOL.md" "$doc/PROTOCOL.md"
install -D -m 0644 "$root/docs/APPLE-APPS.md" "$doc/APPLE-APPS.md"

# Completions and man pages come from the programs' own argument parsers,
# so they never disagree with --help.
for program in tunnel-server tunnel-client; do
    install -d "$stage/usr/share/bash-completion/completions" "$stage/usr/share/zsh/vendor-completions" \
        "$stage/usr/share/fish/vendor_completions.d"
    # bash-completion sources the script: it needs no #! line.
    "$stage/usr/bin/$program" --generate-completion-script bash | sed '1{/^#!/d}' \
        >"$stage/usr/share/bash-completion/completions/$program"
    "$stage/usr/bin/$program" --generate-completion-script zsh >"$stage/usr/share/zsh/vendor-completions/_$program"
    "$stage/usr/bin/$program" --generate-completion-script fish >"$stage/usr/share/fish/vendor_completions.d/$program.fish"
done
generate_manual=$("$packaging/build-generate-manual.sh" | tail -n 1)
man_date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)
install -d "$stage/usr/share/man/man1"
for program in tunnel-server tunnel-client; do
    # One page a program, its subcommands inside (man-db cannot index the
    # tool's per-subcommand pages, whose names have a space).
    "$generate_manual" "$stage/usr/bin/$program" --date "$man_date" --output-directory "$stage/usr/share/man/man1"
    page="$stage/usr/share/man/man1/$program.1"
    # whatis (man -k) shows .Nd as written: no quotes around it.
    sed -i 's/^\.Nd "\(.*\)"$/.Nd \1/' "$page"
    # What --help cannot say: the files, the signals, examples and the configuration's keys.
    [ -z "$(tail -c 1 "$page")" ] || echo >>"$page"  # the generated page ends without a newline
    cat "$packaging/man/$program.sections.mdoc" >>"$page"
done
find "$stage/usr/share" -type f -exec chmod 0644 {} +
gzip -9n "$stage/usr/share/man/man1/"*.1

# Debian's documentation files: the README, the copyright, the changelog.
install -m 0644 "$root/README.md" "$doc/README.md"
gzip -9n "$doc/README.md"
install -m 0644 "$packaging/debian/copyright" "$doc/copyright"
install -D -m 0644 "$packaging/debian/lintian-overrides" "$stage/usr/share/lintian/overrides/simpletunnel"
{
    echo "simpletunnel ($version-$revision) unstable; urgency=medium"
    echo
    echo "  * Built from commit $(git -C "$root" rev-parse --short HEAD) by Packaging/build-deb.sh."
    echo
    echo " -- $maintainer  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$doc/changelog.Debian.gz"

# Depends: what the binaries link, as the Debian packages providing it.
install -d -m 0755 "$stage/DEBIAN"
printf 'Source: simpletunnel\n\nPackage: simpletunnel\nArchitecture: any\n' >"$work/source/debian/control"
depends=$(cd "$work/source" && dpkg-shlibdeps -O "$stage/usr/bin/tunnel-server" "$stage/usr/bin/tunnel-client" \
    | sed -n 's/^shlibs:Depends=//p')
if grep -qi swift <<<"$depends"; then
    echo "build-deb: the binaries depend on Swift's libraries: $depends" >&2
    exit 1
fi

install -m 0755 -t "$stage/DEBIAN" "$packaging/debian/postinst" "$packaging/debian/prerm" "$packaging/debian/postrm"
echo "/etc/simpletunnel/tunnel-server.conf" >"$stage/DEBIAN/conffiles"
chmod 0644 "$stage/DEBIAN/conffiles"
installed_size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version-$revision/" -e "s/@ARCHITECTURE@/$architecture/" \
    -e "s/@DEPENDS@/$depends/" -e "s/@INSTALLED_SIZE@/$installed_size/" \
    -e "s/@MAINTAINER@/$maintainer/" "$packaging/debian/control.in" >"$stage/DEBIAN/control"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/md5sums" "$stage/DEBIAN/control"
find "$stage" -type d -exec chmod 0755 {} +
find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$output"
deb="$(cd "$output" && pwd)/simpletunnel_${version}-${revision}_${architecture}.deb"
# Both programs carry the same 34 MB of Foundation's ICU data, over 64 MiB
# apart in data.tar: beyond the dictionary of dpkg-deb's strongest preset
# (-z9: 35 MiB). dpkg-deb builds it uncompressed; xz with a dictionary that
# spans both makes the second copy cost next to nothing (21 MiB; unpacking
# needs about 200 MiB of memory). One thread: blocks would split the copies.
dpkg-deb --root-owner-group -Znone --build "$stage" "$work/uncompressed.deb" >&2
(
    cd "$work"
    ar x uncompressed.deb
    members=(debian-binary)
    [ -f control.tar ] && xz -T1 -9 control.tar
    xz -T1 --lzma2=preset=9e,dict=192MiB data.tar
    members+=(control.tar.xz data.tar.xz)
    rm -f "$deb"
    ar rcD "$deb" "${members[@]}"
    rm -f uncompressed.deb debian-binary control.tar.xz data.tar.xz
)
dpkg-deb --info "$deb" >/dev/null

if command -v lintian >/dev/null 2>&1; then
    lintian --fail-on error,warning "$deb" >&2
else
    echo "build-deb: lintian is not installed; the package was not checked" >&2
fi
echo "$deb"
