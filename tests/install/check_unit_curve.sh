#!/usr/bin/env bash
# ctest Install.UnitServesCurveClient: the daemon started from the installed
# unit's ExecStart line, with CURVE on and its keys handed over as systemd's
# LoadCredential= would, serves an allowed subscriber and refuses another.
# There is no systemd (PID 1) here, so the ExecStart line is run by hand: the
# key files of <prefix>/etc/stripeline/keys are copied as the credentials
# "curve_<name>" (mode 0400) into a folder named by CREDENTIALS_DIRECTORY,
# as systemd does for LoadCredential=curve:<prefix>/etc/stripeline/keys;
# the service's daemon.toml is edited as an admin would (curve = true, keys
# from ${CREDENTIALS_DIRECTORY}), plus a free port and a scratch scan folder.
#   tests/install/check_unit_curve.sh BUILD_DIR
set -euo pipefail
build=$1
work=$(mktemp -d /tmp/stripeline-curve.XXXXXX)
pid=
cleanup() { [[ -n "$pid" ]] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [[ -f "$work/daemon.log" ]] && tail -20 "$work/daemon.log" >&2; exit 1; }

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
bin=$prefix/bin/stripeline
keys=$prefix/etc/stripeline/keys
unit=$prefix/lib/systemd/system/stripeline.service
"$bin" daemon --keygen "$keys/server" >/dev/null
"$bin" daemon --keygen "$keys/client1" >/dev/null
"$bin" daemon --keygen "$work/stranger" >/dev/null

# LoadCredential=curve:<keys folder>: every file becomes curve_<file name>, 0400.
src=$(sed -n 's/^LoadCredential=curve://p' "$unit")
[[ "$src" == "$keys" ]] || fail "LoadCredential=curve: names '$src' (expected $keys)"
creds=$work/credentials
mkdir -m 0700 "$creds"
for f in "$src"/*; do install -m 0400 "$f" "$creds/curve_$(basename "$f")"; done

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
config=$prefix/etc/stripeline/daemon.toml
sed -i -e "s|^dir = \"/var/lib/stripeline/scans\"|dir = \"$work/scans\"|" \
       -e 's|^curve = false|curve = true|' \
       -e 's|^server_secret_key = ""|server_secret_key = "${CREDENTIALS_DIRECTORY}/curve_server.secret"|' \
       -e 's|^client_keys = \[\]|client_keys = ["${CREDENTIALS_DIRECTORY}/curve_client1.pub"]|' \
       -e "s|^endpoint = \"tcp://127.0.0.1:5556\"|endpoint = \"tcp://127.0.0.1:$port\"|" \
       -e 's|^port = 9560|port = 0|' "$config"
grep -q '^curve = true' "$config" && grep -q "127.0.0.1:$port" "$config" || fail "could not edit $config"

# Without the credentials folder the configuration is refused, saying why.
if out=$(env -u CREDENTIALS_DIRECTORY "$bin" daemon --check --config "$config" 2>&1); then fail "--check passed without CREDENTIALS_DIRECTORY"; fi
grep -q 'CREDENTIALS_DIRECTORY' <<<"$out" || fail "--check without CREDENTIALS_DIRECTORY: $out"
CREDENTIALS_DIRECTORY=$creds "$bin" daemon --check --config "$config" >/dev/null 2>&1 || fail "daemon --check with the credentials"

exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
echo "ExecStart: $exec_start  (CREDENTIALS_DIRECTORY=$creds)"
cd "$work"
CREDENTIALS_DIRECTORY=$creds $exec_start >"$work/daemon.log" 2>&1 &
pid=$!

out=$("$bin" subscribe "tcp://127.0.0.1:$port" --server-key "$keys/server.pub" --client-key "$keys/client1.secret" --rows 200 --timeout 30 -q 2>&1) ||
  fail "the allowed client got nothing: $out"
grep -q 'received 200 rows' <<<"$out" || fail "allowed client: $out"
echo "allowed client: $(grep 'received' <<<"$out" | head -1)"

set +e
out=$("$bin" subscribe "tcp://127.0.0.1:$port" --server-key "$keys/server.pub" --client-key "$work/stranger.secret" --rows 10 --timeout 3 -q 2>&1)
rc=$?
set -e
[[ $rc -ne 0 ]] || fail "a client whose key is not allowed received rows: $out"
for _ in $(seq 50); do grep -q 'refused' "$work/daemon.log" && break; sleep 0.1; done
grep -q 'refused' "$work/daemon.log" || fail "the daemon did not log the refused client"
echo "stranger: refused (subscribe exit $rc; daemon: $(grep -m1 'refused' "$work/daemon.log" | sed 's/.*publisher:/publisher:/'))"
kill -TERM "$pid"
wait "$pid" || fail "the daemon did not exit 0 on SIGTERM"
pid=
echo "daemon stopped cleanly"
