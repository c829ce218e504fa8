#!/usr/bin/env bash
# Several hosts without a network: heads -> merge -> proxy -> consumer, each
# process in its own network namespace, joined by veth pairs to two bridges
# in a hub namespace (docs/scale-out.md, "Several hosts, tested without a
# network"):
#
#   line LAN  NET.0/24:   head i  NET.(11+i)   --publish tcp://NET.(11+i):5556
#                         merge   NET.2        subscribes to every head, publishes on tcp://NET.2:5570
#                         proxy   NET.3        (its first leg) subscribes to the merge
#   office LAN NET2.0/24: proxy   NET2.3       (its second leg) serves consumers on tcp://NET2.3:5560
#                         consumer NET2.4      python/examples/receive_merged.py
#
# The consumer's namespace has no route to the line LAN: only the proxy joins
# the two. No namespace has a default route or a link to the host's own
# interfaces: nothing leaves them. Everything made here (namespaces, their
# links, the processes) is removed at the end, on failure and on SIGINT/SIGTERM too.
#
# Heads are synthetic calibrated heads (tests/synthetic_head_publisher: the real
# Publisher, 256 columns, points in mm, encoder 4 f for frame f); put your own
# heads' endpoints to `stripeline merge` for real ones.
#
#   scripts/netns-heads.sh [--stripeline build/stripeline] [--head-program build/tests/synthetic_head_publisher]
#       [--heads 3] [--frames 1200] [--rate 400] [--kill-head 1 --kill-after 160] [--curve] [--out DIR]
#
# --kill-head I: head I stops after --kill-after rows (all of them received by the
# merge), is SIGKILLed (no series-end) and started again where the line will be
# --restart-ahead seconds later (what the other heads published by then).
# Writes into --out: each process's log (head-I.log, head-I-restart.log,
# merge.log, proxy.log, consumer.log), the consumer's merged.npz(.json), the
# merge's merged.tif, and run.env (KEY=VALUE: what happened, for tests).
# Exit 0 done; 1 a step failed (the line says which); 2 bad usage;
# 77 this machine cannot make network namespaces (not root, no `ip netns`, no
# CAP_SYS_ADMIN in a container): a "SKIP: reason" line says why.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(dirname "$here")
stripeline="$src/build/stripeline"
head_program="$src/build/tests/synthetic_head_publisher"
heads=3 frames=1200 rate=400 kill_head=-1 kill_after=160 restart_ahead=1.0 window_ms=2000
python=${PYTHON:-python3}
curve=0 out="" net=10.213.7 net2=10.213.8 timeout=120

die() { echo "netns-heads: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --stripeline) stripeline=$2; shift 2 ;;
    --head-program) head_program=$2; shift 2 ;;
    --heads) heads=$2; shift 2 ;;
    --frames) frames=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --kill-head) kill_head=$2; shift 2 ;;
    --kill-after) kill_after=$2; shift 2 ;;
    --restart-ahead) restart_ahead=$2; shift 2 ;;
    --window-ms) window_ms=$2; shift 2 ;;
    --curve) curve=1; shift ;;
    --out) out=$2; shift 2 ;;
    --net) net=$2; shift 2 ;;
    --net2) net2=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "netns-heads: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$heads" =~ ^[1-8]$ ]] || { echo "netns-heads: --heads '$heads' (expected 1..8)" >&2; exit 2; }
[[ "$frames" =~ ^[0-9]+$ && "$rate" =~ ^[0-9]+$ && "$rate" -gt 0 ]] || { echo "netns-heads: --frames/--rate must be positive integers" >&2; exit 2; }
if [[ "$kill_head" != -1 ]]; then
  [[ "$kill_head" =~ ^[0-9]+$ && "$kill_head" -lt "$heads" ]] || { echo "netns-heads: --kill-head '$kill_head' (expected 0..$((heads - 1)))" >&2; exit 2; }
  [[ "$kill_after" =~ ^[0-9]+$ && $((kill_after % 8)) == 0 && "$kill_after" -gt 0 && "$kill_after" -lt "$frames" ]] ||
    { echo "netns-heads: --kill-after '$kill_after' (expected a multiple of 8 rows below --frames)" >&2; exit 2; }
  [[ "$heads" -ge 2 ]] || { echo "netns-heads: --kill-head needs another head to tell where the line is (--heads >= 2)" >&2; exit 2; }
fi
for p in "$stripeline" "$head_program"; do [[ -x "$p" ]] || { echo "netns-heads: '$p' is not an executable (build it: cmake --build build --target stripeline synthetic_head_publisher)" >&2; exit 2; }; done
[[ "$net" =~ ^10\.[0-9]+\.[0-9]+$ && "$net2" =~ ^10\.[0-9]+\.[0-9]+$ && "$net" != "$net2" ]] || { echo "netns-heads: --net/--net2 '$net'/'$net2' (expected two different 10.A.B prefixes)" >&2; exit 2; }

skip() { echo "SKIP: $*"; exit 77; }
[[ $(id -u) == 0 ]] || skip "network namespaces need root (run as root, or in a container with CAP_SYS_ADMIN and CAP_NET_ADMIN)"
command -v ip >/dev/null && ip netns list >/dev/null 2>&1 || skip "'ip netns' is not available (apt-get install iproute2)"
# A namespace made, entered and removed at once: a container without
# CAP_SYS_ADMIN refuses the add; a chroot whose root is no mount point accepts
# the add but refuses the exec (ip netns exec runs mount --make-rslave /).
probe="stripeline-probe-$$"
if ! probe_error=$(ip netns add "$probe" 2>&1); then skip "network namespaces cannot be made here: ${probe_error:-ip netns add failed}"; fi
probe_entered=yes
probe_error=$(ip netns exec "$probe" true 2>&1) || probe_entered=no
ip netns del "$probe" 2>/dev/null || true
[[ $probe_entered == yes ]] || skip "network namespaces cannot be entered here: ${probe_error:-ip netns exec failed}"
command -v "$python" >/dev/null && "$python" -c 'import zmq, numpy' 2>/dev/null || skip "python3 with pyzmq and numpy is needed for the consumer (apt-get install python3-zmq python3-numpy; PYTHON=/usr/bin/python3 picks the interpreter)"

if [[ -z "$out" ]]; then out=$(mktemp -d /tmp/netns-heads.XXXXXX); fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
tag="slnh$$"           # this run's namespaces: slnh<pid>-hub, -merge, -proxy, -consumer, -head<i>
namespaces=() pids=()

teardown() {
  local rc=$?
  trap - EXIT INT TERM
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 30); do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  local n
  for n in "${namespaces[@]}"; do  # anything still inside (a grandchild of ours) goes with its namespace
    for p in $(ip netns pids "$n" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
    ip netns del "$n" 2>/dev/null || true
  done
  exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ns_add() {  # ns_add NAME: a namespace with its loopback up
  ip netns add "$1" || { [[ ${#namespaces[@]} == 0 ]] && skip "cannot make a network namespace (a container without CAP_SYS_ADMIN?)"; die "cannot make namespace $1"; }
  namespaces+=("$1")
  ip -n "$1" link set lo up
}
hub="$tag-hub"
ns_add "$hub"
for br in line office; do
  ip -n "$hub" link add "$br" type bridge
  ip -n "$hub" link set "$br" up
done
link() {  # link NS IFACE BRIDGE ADDRESS: a veth pair, IFACE in NS (ADDRESS/24), its peer on the hub's BRIDGE
  local peer="${NS_SHORT}$2"
  ip -n "$hub" link add "$peer" type veth peer name "$2" netns "$1"
  ip -n "$hub" link set "$peer" master "$3" up
  ip -n "$1" addr add "$4/24" dev "$2"
  ip -n "$1" link set "$2" up
}
node() {  # node SHORT: namespace $tag-SHORT
  ns_add "$tag-$1"
  NS_SHORT=$1
}
node merge; link "$tag-merge" eth0 line "$net.2"
node proxy; link "$tag-proxy" eth0 line "$net.3"; link "$tag-proxy" eth1 office "$net2.3"
node consumer; link "$tag-consumer" eth0 office "$net2.4"
for ((h = 0; h < heads; h++)); do node "head$h"; link "$tag-head$h" eth0 line "$net.$((11 + h))"; done
echo "netns-heads: namespaces ${namespaces[*]} (line $net.0/24, office $net2.0/24, no default route); logs in $out"

# CURVE: one key pair per process; each server admits only the next hop's key.
keys="$out/keys"
if [[ $curve == 1 ]]; then
  mkdir -p "$keys"
  for k in merge proxy consumer $(for ((h = 0; h < heads; h++)); do echo "head$h"; done); do
    "$stripeline" daemon --keygen "$keys/$k" >/dev/null
  done
fi

# Heads side by side, 35 mm apart, each seeing 40 mm (5 mm overlaps): the
# transforms the merge maps them through, and the world grid over all of them.
shift_of() { "$python" -c "print(35.0 * ($1 - ($heads - 1) / 2))"; }
{
  printf '[alignment]\nformat = "stripeline-head-transforms"\nversion = 1\n'
  for ((h = 0; h < heads; h++)); do
    printf '[[head]]\nname = "h%d"\nrotation = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]\ntranslation = [%s, 0.0, 0.0]\n' "$h" "$(shift_of $h)"
  done
} >"$out/heads.toml"
half=$("$python" -c "print(35.0 * ($heads - 1) / 2 + 20.0)")

wait_for() {  # wait_for SECONDS WHAT COMMAND...: polls COMMAND until it succeeds
  local until=$((SECONDS + $1)) what=$2
  shift 2
  until "$@"; do
    [[ $SECONDS -lt $until ]] || die "timed out waiting for $what"
    sleep 0.05
  done
}
start() {  # start NS LOG COMMAND...: COMMAND in namespace NS, its pid in $started
  ip netns exec "$1" "${@:3}" >"$out/$2" 2>&1 &
  started=$!
  pids+=("$started")
}
merge_received() {  # merge_received HEAD: the merge's last 'received' count for head HEAD (0 before any)
  local n
  n=$(grep -o "head h$1 (bit $1): sent [0-9]* = received [0-9]*" "$out/merge.log" | tail -1 | sed 's/.*received //') || true
  echo "${n:-0}"
}
log_has() { grep -q "$2" "$out/$1" 2>/dev/null; }
proxy_subscribed() { grep -q 'subscriptions upstream [1-9]' "$out/proxy.log" 2>/dev/null; }
proxy_connected() { ip netns exec "$tag-merge" ss -Htn state established '( sport = :5570 )' 2>/dev/null | grep -q .; }

merge_args=(merge --transforms "$out/heads.toml" --grid "-$half:$half:0.2" --window-ms "$window_ms" --stats-interval 0.2
            --publish "tcp://$net.2:5570" --range-map "$out/merged.tif")
for ((h = 0; h < heads; h++)); do
  merge_args+=(--head "h$h=tcp://$net.$((11 + h)):5556")
  [[ $curve == 1 ]] && merge_args+=(--server-key "h$h=$keys/head$h.pub")
done
[[ $curve == 1 ]] && merge_args+=(--client-key "$keys/merge.secret" --curve --server-secret-key "$keys/merge.secret" --allow "$keys/proxy.pub")
proxy_args=(proxy "tcp://$net.2:5570" --backend "tcp://$net2.3:5560" --stats-interval 0.2)
[[ $curve == 1 ]] && proxy_args+=(--server-key "$keys/merge.pub" --client-key "$keys/proxy.secret" --curve --server-secret-key "$keys/proxy.secret" --allow "$keys/consumer.pub")
consumer_args=(env "PYTHONPATH=$src/python" "$python" -u "$src/python/examples/receive_merged.py" "tcp://$net2.3:5560" --out "$out/merged.npz" --timeout "$timeout")
[[ $curve == 1 ]] && consumer_args+=(--server-key "$keys/proxy.pub" --client-key "$keys/consumer.secret")

start "$tag-merge" merge.log "$stripeline" "${merge_args[@]}"; merge_pid=$started
start "$tag-proxy" proxy.log "$stripeline" "${proxy_args[@]}"; proxy_pid=$started
start "$tag-consumer" consumer.log "${consumer_args[@]}"; consumer_pid=$started
# The consumer's subscription has gone through the proxy to the merge before any head starts.
wait_for 30 "the proxy to forward the consumer's subscription to the merge (proxy.log)" proxy_subscribed
wait_for 30 "the proxy's connection to the merge" proxy_connected

head_cmd() {  # head_cmd I FIRST [HOLD]; with $go set, the head waits for that file once the merge is in
  local c=(env)
  [[ -n "${go:-}" ]] && c+=("SYNTHETIC_HEAD_GO_FILE=$go")
  [[ $curve == 1 ]] && c+=("SYNTHETIC_HEAD_CURVE_SECRET=$keys/head$1.secret" "SYNTHETIC_HEAD_CURVE_ALLOW=$keys/merge.pub")
  c+=("$head_program" "tcp://$net.$((11 + $1)):5556" "$2" "$frames" "$rate" "$(shift_of "$1")" "${@:3}")
  printf '%s\n' "${c[@]}"
}
declare -A head_pid
go="$out/go"
rm -f "$go"
for ((h = 0; h < heads; h++)); do
  mapfile -t cmd < <(if [[ $h == "$kill_head" ]]; then head_cmd "$h" 0 "$kill_after"; else head_cmd "$h" 0; fi)
  start "$tag-head$h" "head-$h.log" "${cmd[@]}"
  head_pid[$h]=$started
done
# The heads start together (as heads on one encoder do), once the merge is connected to every one.
for ((h = 0; h < heads; h++)); do wait_for 60 "the merge to subscribe to head $h (head-$h.log)" log_has "head-$h.log" '^subscribed'; done
touch "$go"
go=""
t0=$(date +%s.%N)

facts="$out/run.env"
{
  echo "heads=$heads frames=$frames rate=$rate curve=$curve window_ms=$window_ms net=$net net2=$net2"
  echo "grid=-$half:$half:0.2"
} >"$facts"
if [[ "$kill_head" != -1 ]]; then
  k=$kill_head
  wait_for 60 "head $k to publish its $kill_after rows (head-$k.log)" log_has "head-$k.log" '^holding'
  received_all() { [[ $(merge_received "$k") == "$kill_after" ]]; }
  wait_for 30 "the merge to receive head $k's $kill_after rows (merge.log)" received_all
  kill -KILL "${head_pid[$k]}"
  wait "${head_pid[$k]}" 2>/dev/null || true  # (no "Killed" job notice)
  t_kill=$(date +%s.%N)
  other=$(( k == 0 ? 1 : 0 ))
  now_at=$(grep -o '^published [0-9]*' "$out/head-$other.log" | tail -1 | sed 's/published //') || true
  [[ -n "$now_at" ]] || die "head $other has published nothing (head-$other.log)"
  restart=$("$python" -c "print(int(($now_at + $rate * $restart_ahead) // 8 * 8))")
  [[ $((restart + 80)) -lt $frames ]] || die "the other heads ran ahead of the restart (line at frame $now_at of $frames): a loaded machine; try a lower --rate or more --frames"
  mapfile -t cmd < <(head_cmd "$k" "$restart")
  start "$tag-head$k" "head-$k-restart.log" "${cmd[@]}"
  head_pid[$k]=$started
  wait_for 60 "the restarted head $k to publish (head-$k-restart.log)" log_has "head-$k-restart.log" '^published'
  t_back=$(date +%s.%N)
  echo "killed_head=$k kill_after=$kill_after line_at_kill=$now_at restart=$restart kill_s=$("$python" -c "print(round($t_kill - $t0, 3))") restart_gap_s=$("$python" -c "print(round($t_back - $t_kill, 3))")" >>"$facts"
  echo "netns-heads: head $k SIGKILLed after $kill_after rows (line at frame $now_at), restarted at frame $restart, publishing again $("$python" -c "print(round($t_back - $t_kill, 2))") s later"
fi

deadline=$((SECONDS + timeout + frames / rate))
wait_pid() {  # wait_pid PID WHAT: its exit status in $status; fails after the deadline
  while kill -0 "$1" 2>/dev/null; do
    [[ $SECONDS -lt $deadline ]] || die "timed out waiting for $2 to end"
    sleep 0.1
  done
  status=0
  wait "$1" || status=$?
}
for ((h = 0; h < heads; h++)); do
  wait_pid "${head_pid[$h]}" "head $h"
  [[ $status == 0 ]] || die "head $h exited $status (head-$h*.log)"
done
wait_pid "$merge_pid" "the merge (every head ended its series)"
[[ $status == 0 ]] || die "the merge exited $status (merge.log)"
wait_pid "$consumer_pid" "the consumer (the merged series-end)"
[[ $status == 0 ]] || die "the consumer exited $status (consumer.log)"
kill -INT "$proxy_pid"
wait_pid "$proxy_pid" "the proxy"
[[ $status == 0 ]] || die "the proxy exited $status (proxy.log)"
t_end=$(date +%s.%N)
echo "wall_s=$("$python" -c "print(round($t_end - $t0, 3))")" >>"$facts"
# The consumer cannot reach a head: only the proxy joins the two LANs.
if ip netns exec "$tag-consumer" "$python" -c "import socket; socket.create_connection(('$net.11', 5556), timeout=1)" 2>/dev/null; then
  die "the consumer's namespace reached head 0 at $net.11: the LANs are not apart"
fi
echo "consumer_reaches_heads=no" >>"$facts"
grep -A"$heads" '^merge complete' "$out/merge.log" || true
tail -1 "$out/proxy.log"
tail -1 "$out/consumer.log"
echo "netns-heads: done; the namespaces are removed; results in $out"
