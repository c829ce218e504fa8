#!/usr/bin/env bash
# Install what stripeline needs on a bare Debian 12 (run as root, or with sudo
# available). Safe to run again: it installs only what is missing.
#   scripts/setup-debian.sh           build dependencies
#   scripts/setup-debian.sh --viewers PCL's and CloudCompare's command lines, Open3D (ctest Viewers.ReadTheNewPly)
#   scripts/setup-debian.sh --tests   plus what the test suite uses (Open3D to read PLYs back, pyzmq and numpy for the python/ package and its offline venv test, clang for the fuzzing run, Slurm and munge for the job-array test) and mmdebstrap (scripts/bare-debian-check.sh)
set -euo pipefail

packages=(build-essential cmake ninja-build pkg-config git curl dpkg-dev file
          libtbb-dev libzmq3-dev cppzmq-dev libgtest-dev libgmock-dev
          libcli11-dev libtomlplusplus-dev libspdlog-dev libfmt-dev
          libtiff-dev libpng-dev libdeflate-dev libhwy-dev
          nlohmann-json3-dev libsystemd-dev
          libaravis-dev libusb-1.0-0-dev zlib1g-dev
          libceres-dev libmodbus-dev)
# (curl: the README's /metrics example. dpkg-dev: dpkg-shlibdeps, which
# computes the .deb's Depends: scripts/package-deb.sh; file: CPackDeb runs it
# on every packaged file, and fails without it.)
# (libmodbus-dev: the daemon's Modbus TCP server of measured parts, docs/measure.md.)
# (aravis-0.8.pc names libusb-1.0 and zlib, which Debian 12's libaravis-dev
# does not pull in: pkg-config fails without them.)
# (libceres-dev: the sheet-of-light calibration's fit, calibration/; it brings
# Eigen 3, which the calibration tests use too.)
# The camera tests run Aravis' simulated GigE Vision camera inside a private
# network namespace: aravis-tools, util-linux (unshare) and iproute2 (ip).
# ctest NetNs.* (scripts/netns-heads.sh) puts heads, merge, proxy and consumer in
# network namespaces joined by veth pairs and bridges: iproute2 (ip, ss), python3-zmq, python3-numpy.
if [[ "${1:-}" == "--tests" ]]; then
  packages+=(python3 python3-numpy python3-open3d python3-zmq python3-venv python3-setuptools python3-wheel python3-pip aravis-tools util-linux iproute2)
  # The sanitizer and fuzz presets (CMakePresets.json, docs/fuzzing.md): clang with libFuzzer, ASan and UBSan.
  packages+=(clang libclang-rt-14-dev)
  # scripts/bare-debian-check.sh (CI, after the tests): a minimal Debian 12 root to run the README's two commands in.
  packages+=(mmdebstrap)
  # ctest Install.Tree checks the installed unit with systemd-analyze (verify, security --offline).
  packages+=(systemd)
  # ctest Slurm.JobArrayJoinsToTheUnshardedReplay starts its own one-node Slurm (tests/slurm/check_slurm_array.py).
  packages+=(slurmctld slurmd slurm-client munge)
  # ctest -L browser: reports (tests/report/) and the live viewer in headless Chromium, driven over its DevTools protocol (tests/browser/cdp.py).
  packages+=(chromium python3-websocket)
fi
# The point-cloud viewers ctest Viewers.ReadTheNewPly opens our PLYs with
# (PCL's pcl_ply2pcd, CloudCompare's command line; a large Qt stack, so opt-in:
# without them the test says each is absent).
if [[ "${1:-}" == "--viewers" ]]; then
  packages+=(python3 python3-numpy python3-open3d pcl-tools cloudcompare)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# Packages with daemons (munge, slurmd, slurmctld for the Slurm test, which
# starts its own) are installed without starting them: where no
# policy-rc.d exists (a chroot such as the bare check's, a booted machine) a
# temporary one refuses every start, so no system-wide daemon runs and a
# root without an init cannot fail the install.
policy=/usr/sbin/policy-rc.d
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\n# scripts/setup-debian.sh: no daemon started while it installs (removed after)\nexit 101\n' | $SUDO tee $policy >/dev/null
  $SUDO chmod 755 $policy
  trap '$SUDO rm -f $policy' EXIT
fi
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
