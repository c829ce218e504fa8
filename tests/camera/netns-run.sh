#!/bin/sh
# Runs a command inside a private network namespace whose only interface is
# loopback, brought up. The camera tests need it: GigE Vision discovery is a
# broadcast on every interface, and no discovery or stream packet of a test
# may leave the machine. ctest runs every camera test through this script
# (the camera_tests target's CROSSCOMPILING_EMULATOR); by hand:
#   tests/camera/netns-run.sh build/tests/camera_tests --gtest_filter='Camera*'
# As root (CI) it uses `unshare -n`; other users get a user namespace too
# (`unshare -rn`) where the kernel allows it. Where neither is allowed the
# command still runs, with STRIPELINE_NETNS_UNAVAILABLE saying why, and the
# camera tests skip visibly.
set -u
if [ "${STRIPELINE_IN_NETNS:-}" = 1 ]; then exec "$@"; fi
for flags in -n -rn; do
  if unshare $flags true 2>/dev/null; then
    exec unshare $flags env STRIPELINE_IN_NETNS=1 sh -c '
      # The tests also bring loopback up themselves if it is still down.
      if command -v ip >/dev/null 2>&1; then ip link set lo up; fi
      exec "$@"' netns-run "$@"
  fi
done
STRIPELINE_NETNS_UNAVAILABLE="neither 'unshare -n' nor 'unshare -rn' is permitted for $(id -un) here" exec "$@"
