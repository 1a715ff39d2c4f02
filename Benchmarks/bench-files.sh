# Configuration files the benchmark scripts share; sourced, defines functions only.

# write_pool_plist FILE ROUTE [ROUTE6]: a tunnel-server configuration leasing 10.90.0.2-10.90.0.250
# and pushing one route, ROUTE/24, with no DNS servers; with ROUTE6, also dual stack:
# leasing fd00:90::2-fd00:90::fa and pushing ROUTE6/64.
write_pool_plist() {
    local ipv6=""
    [ -n "${3:-}" ] && ipv6="<key>IPv6</key><dict><key>Pool</key><dict><key>StartAddress</key><string>fd00:90::2</string><key>EndAddress</key><string>fd00:90::fa</string></dict><key>Routes</key><array><dict><key>Address</key><string>$3</string><key>PrefixLength</key><integer>64</integer></dict></array></dict>"
    cat >"$1" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>IPv4</key>
	<dict>
		<key>Pool</key>
		<dict>
			<key>StartAddress</key>
			<string>10.90.0.2</string>
			<key>EndAddress</key>
			<string>10.90.0.250</string>
		</dict>
		<key>Routes</key>
		<array>
			<dict>
				<key>Address</key>
				<string>$2</string>
				<key>Netmask</key>
				<string>255.255.255.0</string>
			</dict>
		</array>
	</dict>
	$ipv6
	<key>DNS</key>
	<dict>
		<key>Servers</key>
		<array/>
	</dict>
</dict>
</plist>
PLIST
}

# write_sshd_config FILE PORT ADDRESS DIR: a private sshd on ADDRESS:PORT, key login only,
# TCP forwarding on; its host key, pid file and authorized_keys are in DIR.
write_sshd_config() {
    cat >"$1" <<CONF
Port $2
ListenAddress $3
HostKey $4/host_key
PidFile $4/sshd.pid
AuthorizedKeysFile $4/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowTcpForwarding yes
X11Forwarding no
PrintMotd no
UseDNS no
CONF
}

# make_ssh_keys DIR: throwaway host and client keys in DIR, the client's key authorized
# (what write_sshd_config names), and sshd's privilege separation directory.
make_ssh_keys() {
    mkdir -p "$1"
    ssh-keygen -q -t ed25519 -N '' -f "$1/host_key" -C bench-host
    ssh-keygen -q -t ed25519 -N '' -f "$1/client_key" -C bench-client
    cp "$1/client_key.pub" "$1/authorized_keys"
    chmod 600 "$1/authorized_keys"
    [ -d /run/sshd ] || mkdir -p -m 0755 /run/sshd
}

# server_port LOG: the loopback port a tunnel-server started with --port 0 says it listens on.
server_port() { grep -oE 'listening on 127\.0\.0\.1:[0-9]+' "$1" | head -1 | sed 's/.*://'; }

# server_fingerprint LOG: the SHA-256 of the self-signed certificate a server on the embedded
# default logs, for the client's --pin-sha256.
server_fingerprint() { grep -oE 'SHA-256 [0-9A-Fa-f:]+' "$1" | head -1 | sed 's/^SHA-256 //'; }
