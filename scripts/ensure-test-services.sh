#!/usr/bin/env bash
# Make sure what the tests talk to is there: PostgreSQL, Redis, Debian's Chromium, Node for the
# interop tests, slapd for the directory tests, nginx for the deployment tests. Starts or installs only
# what is missing; says what it did.
set -euo pipefail

say() { printf 'ensure-test-services: %s\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif have sudo; then sudo "$@"; else say "need root for: $*"; return 1; fi; }

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

pg_up() { (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; }
redis_up() { have redis-cli && [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ]; }

if ! pg_up; then
  if ! ls /etc/postgresql >/dev/null 2>&1; then say "installing PostgreSQL"; apt_install postgresql; fi
  say "starting PostgreSQL"
  as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  for _ in $(seq 50); do pg_up && break; sleep 0.2; done
fi
pg_up || { say "PostgreSQL is not reachable on 127.0.0.1:5432"; exit 1; }

if ! redis_up; then
  have redis-server || { say "installing Redis"; apt_install redis-server; }
  say "starting Redis"
  as_root mkdir -p /var/lib/redis /var/log/redis
  as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 50); do redis_up && break; sleep 0.2; done
fi
redis_up || { say "Redis is not reachable on 127.0.0.1:6379"; exit 1; }

# the backup-and-restore test runs the commands docs/operations.md gives (sqlite3 .backup/.restore)
have sqlite3 || { say "installing the sqlite3 shell for the backup test"; apt_install sqlite3; }
if [ ! -x /usr/bin/chromium ]; then say "installing Debian's Chromium for the browser tests"; apt_install chromium; fi
# Debian's OpenLDAP server and tools: the directory tests start their own slapd (own config, port
# and data directory); the system's slapd is never used.
if [ ! -x /usr/sbin/slapd ] || ! have ldapsearch; then say "installing slapd and ldap-utils for the directory tests"; apt_install slapd ldap-utils; fi
if ! have nginx && [ ! -x /usr/sbin/nginx ]; then say "installing Debian's nginx for the deployment tests"; apt_install nginx-light; fi
# The CAS clients of tests/e2e/test_e2e_cas_clients.py: Apache with mod_auth_cas (and mod_ssl, in
# front of the IdP), phpCAS on PHP's command line (its DOM and curl extensions).
if [ ! -x /usr/sbin/apache2 ] || [ ! -f /usr/lib/apache2/modules/mod_auth_cas.so ]; then
  say "installing Apache and mod_auth_cas for the CAS client tests"; apt_install apache2 libapache2-mod-auth-cas
fi
if ! have php || [ ! -f /usr/share/php/CAS.php ] || ! php -m | grep -qx dom; then
  say "installing PHP and phpCAS for the CAS client tests"; apt_install php-cli php-cas php-xml php-curl
fi
if ! have node; then say "installing Node.js for the interop tests"; apt_install nodejs npm || true; fi
say "PostgreSQL, Redis, Chromium and slapd are ready"
