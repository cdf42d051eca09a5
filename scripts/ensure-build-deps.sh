#!/usr/bin/env bash
# What `pip install` needs to build the packages that PyPI has no wheel of for this machine:
# python-ldap (the `directory` extra) builds against libldap and libsasl. Installs only what is missing.
set -euo pipefail
missing=()
for pkg in libldap2-dev libsasl2-dev gcc python3-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} = 0 ] && exit 0
echo "ensure-build-deps: installing ${missing[*]} (to build python-ldap)"
run() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
run apt-get update -qq
DEBIAN_FRONTEND=noninteractive run apt-get install -y -qq -o DPkg::Lock::Timeout=300 "${missing[@]}" >/dev/null
