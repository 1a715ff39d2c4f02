#!/usr/bin/env bash
# Installs the package on a fresh Debian 12 (a debootstrap minbase in a
# chroot) and uses it: both programs answer --version; the installed server,
# started as the service user on 127.0.0.1, reloaded, serves the installed
# client and logs with journal priorities; `check` passes the shipped
# configuration and refuses a broken one; the docs and examples are there;
# an edited conffile survives reinstalling; the units pass
# `systemd-analyze verify` and tunnel-server.service's exposure is at most
# 2.5; `apt-get purge` leaves no file behind. The system has systemd
# installed (not running), as a Debian server would, so the maintainer
# scripts create the user and enable the unit as they would there. Every
# mount and the chroot are removed, even on failure. Runs as root.
#
# The mirror is the one this machine's apt sources name for bookworm
# (SIMPLETUNNEL_DEBIAN_MIRROR overrides it). Only the mirror is reached over
# the network; the server and client talk over loopback.
#
# Usage: Packaging/test-install.sh simpletunnel_VERSION_ARCH.deb
set -euo pipefail
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: $0 simpletunnel_VERSION_ARCH.deb" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "test-install: needs root (debootstrap, chroot)" >&2; exit 1; }
deb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
suite=bookworm
began=$(date +%s)
command -v debootstrap >/dev/null 2>&1 || { echo "test-install: debootstrap is missing: apt-get install debootstrap" >&2; exit 1; }

# The first archive this machine's apt sources (one-line or deb822) name for the suite.
apt_mirror() {
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
        | awk -v suite="$suite" '$1 == "deb" { sub(/\[[^]]*\] */, ""); if ($3 == suite) { print $2; exit } }'
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v suite="$suite" '
        /^[[:space:]]*$/ { if (uris != "" && types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ")) { print uris; exit }
                           uris = ""; suites = ""; types = ""; next }
        /^URIs:/ { uris = $2 } /^Suites:/ { $1 = ""; suites = $0 } /^Types:/ { $1 = ""; types = $0 }
        END { if (uris != "" && types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ")) print uris }'
}
mirror=${SIMPLETUNNEL_DEBIAN_MIRROR:-$(apt_mirror | head -n 1)}
[ -n "$mirror" ] || { echo "test-install: no apt source of this machine names $suite; set SIMPLETUNNEL_DEBIAN_MIRROR" >&2; exit 1; }

system=$(mktemp -d /var/tmp/simpletunnel-install.XXXXXX)
chmod 0755 "$system"  # its root: every user there must get through it
server=""
cleanup() {
    status=$?
    [ -n "$server" ] && kill -TERM "$server" 2>/dev/null && wait "$server" 2>/dev/null
    for mount in "$system/dev/pts" "$system/dev" "$system/sys" "$system/proc"; do
        mountpoint -q "$mount" 2>/dev/null && { umount "$mount" || umount -l "$mount"; }
    done
    # --one-file-system: never into a mount that failed to go away.
    rm -rf --one-file-system "$system"
    rm -f "$system.debootstrap.log" "$system.before" "$system.after"
    echo "test-install: took $(($(date +%s) - began)) s" >&2
    exit $status
}
trap cleanup EXIT
in_system() {
    chroot "$system" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        DEBIAN_FRONTEND=noninteractive "$@"
}
fail() { echo "test-install: FAILED: $*" >&2; exit 1; }

echo "test-install: debootstrap $suite (minbase) from $mirror" >&2
debootstrap --variant=minbase "$suite" "$system" "$mirror" >"$system.debootstrap.log" 2>&1 \
    || { cat "$system.debootstrap.log" >&2; rm -f "$system.debootstrap.log"; fail "debootstrap"; }
rm -f "$system.debootstrap.log"
mount -t proc proc "$system/proc"
mount -t sysfs sysfs "$system/sys"
mount --bind /dev "$system/dev"
mount --bind /dev/pts "$system/dev/pts"

# systemd and the libraries the package depends on first, so the file lists
# before and after compare the package alone.
depends=$(dpkg-deb -f "$deb" Depends | sed -e 's/([^)]*)//g' -e 's/,/ /g')
# shellcheck disable=SC2086
in_system apt-get install -y -qq --no-install-recommends systemd $depends >/dev/null
snapshot() {
    # What dpkg and apt keep about packages and logs are theirs; the backups
    # systemd-sysusers makes of /etc/passwd and friends, and the user itself,
    # stay (see postrm).
    in_system find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp \
        -o -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache -o -path /var/log \) -prune \
        -o -print | grep -Ev '^/etc/(passwd|group|shadow|gshadow)-$' | sort
}
snapshot >"$system.before"

cp "$deb" "$system/tmp/"
in_system apt-get install -y -qq "/tmp/$(basename "$deb")" >/dev/null
for program in tunnel-server tunnel-client; do
    version=$(in_system "$program" --version) || fail "$program --version"
    echo "test-install: $program --version: $version" >&2
done
in_system getent passwd simpletunnel >/dev/null || fail "no simpletunnel user"
# Names as the installed system knows them (its user ids are not the host's).
state=$(in_system stat -c '%U %a' /var/lib/simpletunnel)
[ "$state" = "simpletunnel 700" ] || fail "/var/lib/simpletunnel is $state, not simpletunnel 700"

# The configuration as shipped passes `check` (the unit's ExecStartPre), run
# as the service user with the unit's options; a broken file fails it, naming it.
as_user() {
    chroot "$system" /usr/bin/env -i PATH=/usr/bin:/bin setpriv --reuid simpletunnel --regid simpletunnel --init-groups "$@"
}
# shellcheck disable=SC1090,SC2086
options=$(. "$system/etc/simpletunnel/tunnel-server.conf" && echo $TUNNEL_SERVER_OPTIONS)
# shellcheck disable=SC2086
checked=$(as_user /usr/bin/tunnel-server check --state-directory /var/lib/simpletunnel $options 2>&1) \
    || { echo "$checked" >&2; fail "tunnel-server check refused the shipped configuration"; }
grep -q "configuration OK" <<<"$checked" || fail "tunnel-server check said: $checked"
printf '<plist version="1.0"><dict><key>Server</key><dict><key>Limits</key><dict><key>Tunels</key><integer>5</integer></dict></dict></dict></plist>\n' \
    >"$system/tmp/broken.plist"
chmod 0644 "$system/tmp/broken.plist"
if broken=$(as_user /usr/bin/tunnel-server check --state-directory /var/lib/simpletunnel --config /tmp/broken.plist 2>&1); then
    fail "tunnel-server check passed a configuration with a misspelt key"
fi
grep -q "Tunels" <<<"$broken" || fail "tunnel-server check did not name the bad key: $broken"
echo "test-install: check passes the shipped configuration and names a bad key" >&2

# The installed server, as the service user with the service's state folder,
# in the operator's order: start, reload, then a new client. Its standard
# error is the journal's stream (JOURNAL_STREAM names it), so each line must
# carry its syslog priority.
log="$system/tmp/server.log"
: >"$log"
journal=$(stat -c '%d:%i' "$log")
chroot "$system" /usr/bin/env -i PATH=/usr/bin:/bin JOURNAL_STREAM="$journal" \
    setpriv --reuid simpletunnel --regid simpletunnel --init-groups \
    /usr/bin/tunnel-server --state-directory /var/lib/simpletunnel --control /var/lib/simpletunnel/server.sock \
    --host 127.0.0.1 --port 0 >>"$log" 2>&1 &
server=$!
for _ in $(seq 1 100); do
    grep -q "connect with:" "$log" && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
done
grep -q '^<5>listening on 127\.0\.0\.1:' "$log" || { cat "$log" >&2; fail "the server's log lines carry no journal priority"; }
reloaded=$(as_user /usr/bin/tunnel-server reload --control /var/lib/simpletunnel/server.sock 2>&1) \
    || { echo "$reloaded" >&2; cat "$log" >&2; fail "tunnel-server reload failed"; }
connect=$(sed -n 's/.*connect with: \(tunnel-client config --server 127\.0\.0\.1:[0-9]* --pin-sha256 [0-9a-f]*\).*/\1/p' "$log")
[ -n "$connect" ] || { cat "$log" >&2; fail "the installed server did not print a client command"; }
# shellcheck disable=SC2086
configuration=$(in_system $connect) || fail "the installed client could not fetch the configuration after a reload"
grep -q '{' <<<"$configuration" || fail "tunnel-client config printed no JSON: $configuration"
[ -n "$(in_system find /var/lib/simpletunnel -type f -user simpletunnel)" ] \
    || fail "the server kept no certificate in /var/lib/simpletunnel"
kill -TERM "$server"
wait "$server" || { cat "$log" >&2; fail "the installed server did not exit cleanly on SIGTERM"; }
server=""
rm -f "$log" "$system/tmp/broken.plist"
echo "test-install: installed server, reloaded, served the installed client on loopback; its log carries journal priorities" >&2

# The documentation a new operator is pointed to is there.
doc="$system/usr/share/doc/simpletunnel"
for file in examples/tunnel-server.plist examples/client.conf examples/simpletunnel.nft examples/sysctl.d/99-simpletunnel.conf \
    PROTOCOL.md APPLE-APPS.md README.md.gz copyright; do
    [ -f "$doc/$file" ] || fail "the package has no $doc/$file"
done
grep -q '^License: Apache-2.0' "$doc/copyright" || fail "the copyright file names no licence"
for section in FILES SIGNALS EXAMPLES CONFIGURATION; do
    zcat "$system/usr/share/man/man1/tunnel-server.1.gz" | grep -q "^\.Sh $section" || fail "man tunnel-server has no $section section"
done

# An edited conffile survives reinstalling the package.
conffile="$system/etc/simpletunnel/tunnel-server.conf"
echo '# edited by test-install' >>"$conffile"
in_system dpkg -i "/tmp/$(basename "$deb")" >/dev/null
grep -q '^# edited by test-install$' "$conffile" || fail "reinstalling overwrote the edited tunnel-server.conf"

# The units as installed: they load (man pages are checked as files: no man
# here), the server's is enabled, and its exposure stays low.
in_system systemd-analyze verify --man=no tunnel-server.service "tunnel-client@example.service" >&2 \
    || fail "systemd-analyze verify"
for page in tunnel-server tunnel-client; do
    [ -f "$system/usr/share/man/man1/$page.1.gz" ] || fail "no man page $page(1)"
done
[ -L "$system/etc/systemd/system/multi-user.target.wants/tunnel-server.service" ] \
    || fail "tunnel-server.service is not enabled"
exposure=$(in_system systemd-analyze security --offline=yes tunnel-server.service 2>&1 \
    | sed -n 's/.*Overall exposure level for tunnel-server.service: \([0-9.]*\).*/\1/p')
[ -n "$exposure" ] || fail "systemd-analyze security printed no exposure for tunnel-server.service"
awk -v e="$exposure" 'BEGIN { exit !(e <= 2.5) }' || fail "tunnel-server.service exposure $exposure is above 2.5"
echo "test-install: tunnel-server.service exposure $exposure" >&2

# Purge leaves nothing of the package behind.
rm -f "$system/tmp/$(basename "$deb")"
in_system apt-get purge -y -qq simpletunnel >/dev/null
snapshot >"$system.after"
if ! diff "$system.before" "$system.after" >&2; then
    rm -f "$system.before" "$system.after"
    fail "apt-get purge left files behind (lines with > above)"
fi
rm -f "$system.before" "$system.after"
echo "test-install: ok" >&2
