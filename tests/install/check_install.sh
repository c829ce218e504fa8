#!/usr/bin/env bash
# ctest Install.Tree: `cmake --install BUILD --prefix TMP` holds what README
# ("Installing") and cmake/install.cmake list; the installed program runs;
# the installed unit names the installed paths, passes `systemd-analyze
# verify` and scores <= 4.0 on `systemd-analyze security --offline=yes`
# (where systemd-analyze exists; said when it does not).
#   tests/install/check_install.sh BUILD_DIR [KEEP_PREFIX]
set -euo pipefail
build=$1
prefix=${2:-$(mktemp -d /tmp/stripeline-install.XXXXXX)}
[[ -n "${2:-}" ]] || trap 'rm -rf "$prefix"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
expect=(
  bin/stripeline
  lib/stripeline/gentl/stripeline-sim.cti
  lib/systemd/system/stripeline.service
  etc/stripeline/daemon.toml
  share/stripeline/configs/demo.toml share/stripeline/configs/replay.toml
  share/stripeline/configs/camera.toml share/stripeline/configs/daemon.toml
  share/stripeline/configs/targets/step.toml
  share/stripeline/python/pyproject.toml share/stripeline/python/stripeline/__init__.py
  share/doc/stripeline/README.md share/doc/stripeline/daemon.md share/doc/stripeline/data-model.md
  share/doc/stripeline/cameras.md share/doc/stripeline/python.md
)
for f in "${expect[@]}"; do [[ -f "$prefix/$f" ]] || fail "$prefix/$f not installed"; done
[[ -d "$prefix/etc/stripeline/keys" ]] || fail "etc/stripeline/keys not installed"
[[ $(stat -c %a "$prefix/etc/stripeline/keys") == 700 ]] || fail "etc/stripeline/keys is mode $(stat -c %a "$prefix/etc/stripeline/keys") (expected 700)"
[[ -x "$prefix/bin/stripeline" ]] || fail "bin/stripeline is not executable"
"$prefix/bin/stripeline" --version >/dev/null || fail "the installed stripeline does not run"
echo "installed: ${#expect[@]} files + etc/stripeline/keys/ (0700) under $prefix"

unit=$prefix/lib/systemd/system/stripeline.service
grep -qx "ExecStart=$prefix/bin/stripeline daemon --config $prefix/etc/stripeline/daemon.toml" "$unit" ||
  fail "ExecStart does not name the installed paths: $(grep ^ExecStart "$unit")"
grep -qx "LoadCredential=curve:$prefix/etc/stripeline/keys" "$unit" || fail "LoadCredential does not name $prefix/etc/stripeline/keys"
grep -q '^dir = "/var/lib/stripeline/scans"' "$prefix/etc/stripeline/daemon.toml" || fail "the service's daemon.toml does not write under /var/lib/stripeline"
if ! command -v systemd-analyze >/dev/null; then
  echo "systemd-analyze not found: the unit's verify and security checks are skipped"
  exit 0
fi
out=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify: $out"
[[ -z "$out" ]] || fail "systemd-analyze verify is not clean: $out"
score=$(systemd-analyze security --offline=yes "$unit" 2>&1 | sed -n 's/.*Overall exposure level for stripeline.service: \([0-9.]*\).*/\1/p')
[[ -n "$score" ]] || fail "no exposure level from systemd-analyze security"
awk -v s="$score" 'BEGIN { exit !(s <= 4.0) }' || fail "exposure $score > 4.0"
echo "unit: verify clean, systemd-analyze security exposure $score (<= 4.0)"
