#!/usr/bin/env bash
# What the local stack and the tests need from the machine, said once and
# used by `make run`, `make test` and `.ci/run`: Debian packages, Node.js,
# the dev identity provider's npm packages, and a data folder PostgreSQL's
# unprivileged account can reach. Run as root it installs what is missing;
# otherwise it names the one command that does and fails before anything is
# built.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)

# Debian packages: the local PostgreSQL and Prometheus, Chromium for the
# browser tests, a font so screenshots have text, iproute2 for the
# simulated pods' network namespace.
packages=(postgresql prometheus chromium chromium-driver fonts-dejavu-core iproute2)

installed() {
	# `dpkg -s` also succeeds for a package removed with `apt-get remove`
	# (its config files stay), so ask for the installed state itself.
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

missing() {
	need=()
	for pkg in "${packages[@]}"; do
		installed "$pkg" || need+=("$pkg")
	done
	command -v node >/dev/null 2>&1 || need+=(nodejs)
	command -v npm >/dev/null 2>&1 || need+=(npm)
}
missing

if ! command -v go >/dev/null 2>&1; then
	echo "✗ Go is not installed: Gantry needs Go 1.26 (https://go.dev/doc/install)" >&2
	exit 1
fi

if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "✗ missing Debian packages: ${need[*]}" >&2
		echo "  install them with:  sudo $root/deploy/local/prerequisites.sh" >&2
		exit 1
	fi
	echo "  … installing Debian packages: ${need[*]}"
	log=$(mktemp)
	if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; } >"$log" 2>&1; then
		cat "$log" >&2
		rm -f "$log"
		echo "✗ apt-get install ${need[*]} failed (its output is above)" >&2
		exit 1
	fi
	rm -f "$log"
	wanted=("${need[@]}")
	missing
	if [ ${#need[@]} -gt 0 ]; then
		echo "✗ still missing after apt-get install: ${need[*]}" >&2
		exit 1
	fi
	echo "  ✓ installed ${wanted[*]}"
fi

# The dev identity provider's npm packages (oidc-provider), installed again
# only when the lock file changed.
idp="$root/deploy/local/idp"
if ! [ "$idp/node_modules/.package-lock.json" -nt "$idp/package-lock.json" ]; then
	echo "  … installing the identity provider's npm packages (npm ci)"
	(cd "$idp" && npm ci --no-audit --no-fund --loglevel=error)
fi

# As root the stack runs PostgreSQL as the unprivileged `postgres` account,
# which must be able to walk down to the data folder in this clone (a clone
# under /root would otherwise be out of its reach).
if [ "$(id -u)" -eq 0 ]; then
	d=$root
	while [ "$d" != "/" ]; do
		chmod o+x "$d" 2>/dev/null || true
		d=$(dirname "$d")
	done
fi
