#!/usr/bin/env bash
# ctest Install.DebianPackage: builds the .deb (scripts/package-deb.sh), checks
# its contents (dpkg-deb -c) and control fields (dpkg-deb -I: Depends are
# Debian package names, no -dev package, no CUDA runtime package), then
# installs it with dpkg into an empty root: a new folder whose dpkg database
# is a copy of this machine's status file (so Depends are checked against a
# real Debian 12 package set; no file of the host is in that root). The
# installed program runs from there (with the host's libraries) and the
# conffile is registered. Exit 77 (skipped) without dpkg-deb/dpkg-shlibdeps.
#   tests/install/check_deb.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
for t in dpkg dpkg-deb dpkg-shlibdeps cpack; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not found (apt-get install dpkg-dev)"; exit 77; }
done
out=$(STRIPELINE_BUILD_DIR=$build "$src/scripts/package-deb.sh") || fail "scripts/package-deb.sh failed"
deb=$(head -1 <<<"$out")
[[ -f "$deb" ]] || fail "no .deb made"
echo "package: $deb ($(stat -c %s "$deb") bytes)"
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/stripeline ./lib/systemd/system/stripeline.service ./etc/stripeline/daemon.toml ./etc/stripeline/keys/ \
         ./usr/share/stripeline/configs/daemon.toml ./usr/share/doc/stripeline/daemon.md ./usr/share/doc/stripeline/README.md \
         ./usr/share/stripeline/python/pyproject.toml; do
  grep -qx -- "$f" <<<"$contents" || fail "$f is not in the package"
done
grep -q '/stripeline/gentl/stripeline-sim.cti$' <<<"$contents" || fail "the GenTL producer is not in the package"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
# (libspdlog1.10's shlibs file names libspdlog1.10-fmt9, a name libspdlog1.10 provides: the fmt 9 ABI.)
for p in libtbb12 libzmq5 'libspdlog1\.10(-fmt9)?' libtiff6 libpng16-16 libdeflate0 libsystemd0 libc6 'libstdc\+\+6'; do
  grep -Eq "(^|, )$p( |,|$)" <<<"$depends" || fail "Depends lacks $p"
done
if dpkg-deb -c "$deb" >/dev/null && objdump -p "$build/stripeline" 2>/dev/null | grep -q 'NEEDED.*libaravis'; then
  grep -q "libaravis-0.8-0" <<<"$depends" || fail "Depends lacks libaravis-0.8-0 (the build links Aravis)"
fi
grep -Eq -- '-dev( |,|$)' <<<"$depends" && fail "Depends names a -dev package"
grep -Eiq 'cuda' <<<"$depends" && fail "Depends names a CUDA package (the runtime is linked statically)"
objdump -p "$build/stripeline" | grep -q 'NEEDED.*libcudart' && fail "stripeline links libcudart dynamically"
[[ $(dpkg-deb -f "$deb" Architecture) == "$(dpkg --print-architecture)" ]] || fail "architecture"

# Install into an empty root.
root=$(mktemp -d /tmp/stripeline-deb-root.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
cp /var/lib/dpkg/status "$root/var/lib/dpkg/status"
: >"$root/var/lib/dpkg/available"
dpkg --root="$root" --force-not-root --force-script-chrootless -i "$deb" >"$root.log" 2>&1 || { cat "$root.log"; rm -f "$root.log"; fail "dpkg -i into $root"; }
rm -f "$root.log"
[[ $(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Status}' stripeline) == "install ok installed" ]] || fail "not installed in $root"
dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Conffiles}\n' stripeline | grep -q '/etc/stripeline/daemon.toml' || fail "daemon.toml is not a conffile"
"$root/usr/bin/stripeline" --version >/dev/null || fail "the packaged stripeline does not run"
grep -qx 'ExecStart=/usr/bin/stripeline daemon --config /etc/stripeline/daemon.toml' "$root/lib/systemd/system/stripeline.service" ||
  fail "the packaged unit's ExecStart: $(grep ^ExecStart "$root/lib/systemd/system/stripeline.service")"
echo "installed into an empty root with dpkg --root: $(dpkg-query --admindir="$root/var/lib/dpkg" -L stripeline | wc -l) paths; /usr/bin/stripeline runs; daemon.toml is a conffile"
