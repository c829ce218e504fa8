#!/usr/bin/env bash
# The README's two commands, run as a new user would, on a bare Debian 12:
# a minimal bookworm root (`mmdebstrap --variant=minbase bookworm`, plus git
# and ca-certificates, from this machine's own Debian apt sources), the
# current commit cloned into it (committed work only, as CI sees it), then
# `scripts/demo.sh` and `scripts/test.sh` inside it (chroot, in private mount
# and PID namespaces with /proc, /sys, /dev mounted). Prints each command's
# wall time and the test summary (ctest's, and every skip with its reason);
# exits non-zero if either command fails. A missing install step in
# scripts/setup-debian.sh (a tool the CI machine happens to have) fails here.
#
# Run as root (mmdebstrap, chroot, mounts). The root goes under
# $STRIPELINE_BARE_DIR (default /tmp) and is removed on every exit path
# (success, failure, Ctrl-C); the mounts live in a private mount namespace,
# so they vanish with it even if this script is killed.
#   scripts/bare-debian-check.sh            the check (CI: .ci/run; STRIPELINE_SKIP_BARE_CHECK=1 skips it there)
#   STRIPELINE_BARE_KEEP=1 scripts/bare-debian-check.sh   keep the root afterwards (to look inside; remove it by hand)
#   STRIPELINE_BARE_CUDA=/usr/local/cuda scripts/bare-debian-check.sh
#       bind that CUDA toolkit (read-only) at /usr/local/cuda in the root, as
#       on CI's machines, so the root's build is the CUDA build (.ci/run does
#       this: the root's tests are then CI's only run of the suite); with
#       STRIPELINE_CMAKE_ARGS passed in too (.ci/run: one architecture)
set -euo pipefail
# (The whole script is one { } block: bash reads it entirely before it runs,
# so editing or checking out this file during a run cannot change the run.)
{
src=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "bare-debian-check: $*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || fail "needs root (mmdebstrap, chroot, mounts); run it with sudo"
command -v mmdebstrap >/dev/null || fail "mmdebstrap not found: scripts/setup-debian.sh --tests installs it"
command -v unshare >/dev/null && command -v chroot >/dev/null || fail "unshare/chroot not found (util-linux, coreutils)"

# This machine's Debian sources (deb822 or one-line), Debian's archive only:
# the root gets the mirror this machine is known to reach.
sources=""
for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
  if [[ -s $f ]] && grep -Eq '^[^#]*(deb\.debian\.org|/debian)' "$f"; then sources=$f; break; fi
done
[[ -n $sources ]] || sources="http://deb.debian.org/debian"

if [[ -n ${STRIPELINE_BARE_CUDA:-} && ! -x ${STRIPELINE_BARE_CUDA}/bin/nvcc ]]; then
  fail "STRIPELINE_BARE_CUDA=$STRIPELINE_BARE_CUDA has no bin/nvcc (expected a CUDA toolkit's directory)"
fi
commit=$(git -C "$src" rev-parse HEAD) || fail "$src is not a git checkout"
if [[ -n $(git -C "$src" status --porcelain --untracked-files=no) ]]; then
  echo "bare-debian-check: note: uncommitted changes in $src are not part of the check (it clones $commit)"
fi

base=${STRIPELINE_BARE_DIR:-/tmp}
work=$(mktemp -d "$base/stripeline-bare.XXXXXX")
root=$work/root
log=$work/run.log
ns_pid=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  # unshare --fork blocks SIGINT and SIGTERM while it waits for its child:
  # SIGKILL it, and --kill-child takes the namespace's PID 1, so every
  # process of the command, down with it (and the mount namespace).
  if [[ -n $ns_pid ]] && kill -0 "$ns_pid" 2>/dev/null; then
    kill -KILL "$ns_pid" 2>/dev/null || true
    wait "$ns_pid" 2>/dev/null || true
  fi
  # The mounts were made in a private mount namespace that is gone by now;
  # if one is still visible here (it never should be), stop rather than
  # delete through it.
  if findmnt -rn -o TARGET | grep -q "^$work/"; then
    echo "bare-debian-check: mounts still under $work (left in place):" >&3
    findmnt -rn -o TARGET | grep "^$work/" >&3
    exit 1
  fi
  if [[ ${STRIPELINE_BARE_KEEP:-0} == 1 ]]; then
    echo "bare-debian-check: kept $root"
  else
    rm -rf --one-file-system "$work"
  fi
  exit "$rc"
}
# (fd 3: this script's stderr, for messages from a trap that fires inside a
# redirected command.)
exec 3>&2
trap cleanup EXIT
trap 'echo "bare-debian-check: interrupted; removing $work" >&3; exit 130' INT
trap 'echo "bare-debian-check: terminated; removing $work" >&3; exit 143' TERM

# A command in private mount and PID namespaces, in the background (so an
# interrupt reaches cleanup at once): every mount it makes and every process
# it starts end with it, however it ends.
in_namespaces() {
  unshare --mount --pid --fork --kill-child --propagation private -- "$@" &
  ns_pid=$!
  local rc=0
  wait "$ns_pid" || rc=$?
  ns_pid=""
  return "$rc"
}

secs() { date +%s; }
t0=$(secs)
echo "bare-debian-check: mmdebstrap --variant=minbase --include=git,ca-certificates bookworm $root ($sources)"
in_namespaces mmdebstrap --quiet --variant=minbase --include=git,ca-certificates bookworm "$root" "$sources" >"$work/mmdebstrap.log" 2>&1 ||
  { tail -30 "$work/mmdebstrap.log" >&2; fail "mmdebstrap failed (its log above)"; }
t_root=$(($(secs) - t0))

# The clone: the committed tree at HEAD, nothing of the working tree.
git clone --quiet --no-hardlinks "$src" "$root/root/stripeline"
# (A detached HEAD is on no branch the clone copied: fetch it.)
git -C "$root/root/stripeline" cat-file -e "$commit^{commit}" 2>/dev/null || git -C "$root/root/stripeline" fetch --quiet "$src" HEAD
git -C "$root/root/stripeline" checkout --quiet --detach "$commit"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
echo "bare-debian-check: root made in ${t_root} s; cloned $commit into /root/stripeline"

# Inside: one command, timed, its output to the terminal and to the log.
# The environment is a fresh login's, not ours (no CUDACXX, no ccache).
run_in_root() {
  local name=$1 t1 rc=0
  t1=$(secs)
  echo "===== $name (in the bare root)" | tee -a "$log"
  # /proc for the new PID namespace; /sys and /dev bound from the host (the
  # tests make network namespaces; /dev/shm, /dev/pts).
  in_namespaces bash -c '
    set -e
    r=$1; shift
    mount -t proc proc "$r/proc"
    mount --rbind /sys "$r/sys"; mount --make-rslave "$r/sys"
    mount --rbind /dev "$r/dev"; mount --make-rslave "$r/dev"
    mount -t tmpfs -o mode=0755 tmpfs "$r/run"
    mkdir -p "$r/run/lock"
    if [ -n "${STRIPELINE_BARE_CUDA:-}" ]; then
      mkdir -p "$r/usr/local/cuda"
      mount --bind "$(readlink -f "$STRIPELINE_BARE_CUDA")" "$r/usr/local/cuda"
      mount -o remount,bind,ro "$r/usr/local/cuda"
    fi
    exec chroot "$r" /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM="${TERM:-dumb}" \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      ${http_proxy:+http_proxy=$http_proxy} ${https_proxy:+https_proxy=$https_proxy} \
      ${STRIPELINE_CMAKE_ARGS:+STRIPELINE_CMAKE_ARGS="$STRIPELINE_CMAKE_ARGS"} \
      /bin/bash -c "cd /root/stripeline && $*"' bare "$root" "$name" \
    > >(tee -a "$log") 2>&1 || rc=$?
  eval "t_$2=$(($(secs) - t1))"
  echo "===== $name: exit $rc, $(($(secs) - t1)) s" | tee -a "$log"
  return "$rc"
}

# Both, in the README's order, even when the first fails (the second's
# summary says more).
status=0
run_in_root scripts/demo.sh demo || status=1
run_in_root scripts/test.sh test || status=1

echo
echo "================ bare Debian 12 check ($commit)"
echo "root (mmdebstrap minbase + git, ca-certificates): ${t_root} s"
echo "CUDA toolkit in the root: ${STRIPELINE_BARE_CUDA:-none (a CPU-only build)}${STRIPELINE_CMAKE_ARGS:+; cmake args: $STRIPELINE_CMAKE_ARGS}"
echo "scripts/demo.sh: ${t_demo:-not run} s"
echo "scripts/test.sh: ${t_test:-not run} s"
# ctest's summary (pass count, the tests that failed) and the skip reasons
# scripts/test.sh prints after it.
sed -n '/tests passed, .* tests failed out of/,$p' "$log" | grep -v '^===== ' || echo "(no ctest summary: scripts/test.sh did not get that far)"
if ((status != 0)); then
  echo "FAILED: a README command failed in the bare root (its output above)"
  exit 1
fi
echo "PASSED: both README commands on a bare Debian 12"
exit 0
}
