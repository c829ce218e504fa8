#!/usr/bin/env bash
# Build the Debian package from build/ (scripts/build.sh first):
#   scripts/package-deb.sh            -> build/stripeline_<version>_<arch>.deb
# CPack installs into a staging root with prefix /usr (/etc for the service's
# configuration), and dpkg-shlibdeps turns the shared libraries the ELF files
# need into Depends (Debian's package names). Needs dpkg-dev (dpkg-shlibdeps).
# Extra arguments go to cpack.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${STRIPELINE_BUILD_DIR:-build}
[[ -f "$build/CPackConfig.cmake" ]] || { echo "package-deb: $build is not configured (run scripts/build.sh first)" >&2; exit 2; }
command -v dpkg-shlibdeps >/dev/null || { echo "package-deb: dpkg-shlibdeps not found (apt-get install dpkg-dev)" >&2; exit 2; }
cmake --build "$build" --target stripeline stripeline_gentl_sim >&2
(cd "$build" && cpack -G DEB -B "$PWD/package" "$@" >/dev/null)
deb=$(ls -t "$build"/package/stripeline_*.deb | head -1)
echo "$deb"
dpkg-deb -f "$deb" Package Version Architecture Depends Recommends
