#!/usr/bin/env bash
# Reprocess a recording on a Slurm cluster: a job array of N parts
# (shard.sbatch, one GPU each) and a join job that runs after every part
# succeeded (join.sbatch, --dependency=afterok). The joined files in OUT/ are
# byte for byte those of one `stripeline replay` of the whole recording.
# docs/scale-out.md, "Recordings on a cluster".
#
#   scripts/slurm/submit.sh REC -H FRAME_HEIGHT --out DIR [options] [-- REPLAY FLAGS...]
#
# Options:
#   --tasks N           parts (array tasks), default 4
#   --outputs LIST      comma-separated: ply, heightmap, xyz, range-map, range-codes (default ply,heightmap)
#   --frame-count F     frames in the recording (default: what `stripeline describe` reads from it)
#   --stripeline PATH   the program on the nodes (default: `stripeline` on PATH here, as an absolute path)
#   --gres SPEC         each part's generic resources (default gpu:1, or $STRIPELINE_SLURM_GRES;
#                       "none": ask for none, e.g. CPU nodes, the CPU backend)
#   --sbatch ARG        one more argument for both sbatch calls (repeat: --sbatch --partition=gpu --sbatch --time=1:00:00)
# After "--": flags for every part's replay (--backend cuda, --calibration cal.toml, --range-grid ..., -c config.toml).
# OUT (and REC) must be on a file system every node sees. Prints the two job ids.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() { sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "submit.sh: $*" >&2; exit 2; }

rec="" frame_height="" out="" tasks=4 outputs=ply,heightmap frames="" stripeline=""
gres=${STRIPELINE_SLURM_GRES-gpu:1}
sbatch_args=()
while (($#)); do
  case $1 in
    -H|--frame-height) frame_height=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --tasks) tasks=${2:?}; shift 2 ;;
    --outputs) outputs=${2:?}; shift 2 ;;
    --frame-count) frames=${2:?}; shift 2 ;;
    --stripeline) stripeline=${2:?}; shift 2 ;;
    --gres) gres=${2?}; shift 2 ;;
    --sbatch) sbatch_args+=("${2:?}"); shift 2 ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) [[ -z $rec ]] || die "a second recording '$1' (expected one)"; rec=$1; shift ;;
  esac
done
[[ -n $rec && -n $frame_height && -n $out ]] || usage
[[ $tasks =~ ^[1-9][0-9]*$ ]] || die "--tasks '$tasks' (expected a whole number >= 1)"
if [[ -z $stripeline ]]; then stripeline=$(command -v stripeline) || die "no stripeline on PATH (expected --stripeline PATH)"; fi
stripeline=$(realpath "$stripeline")
rec=$(realpath "$rec")
mkdir -p "$out"
out=$(realpath "$out")

if [[ -z $frames ]]; then  # the recording's own count (stripeline synth and io/recording.h write it)
  frames=$("$stripeline" describe --json "$rec" | sed -n 's/.*"frames":\([0-9][0-9]*\).*/\1/p')
  [[ -n $frames ]] || die "$rec records no frame count (expected --frame-count F: its height / $frame_height)"
fi
[[ $frames =~ ^[0-9]+$ ]] && ((frames >= tasks)) || die "--frame-count '$frames' for $tasks tasks (expected at least one frame per task)"

gres_args=()
[[ -z $gres || $gres == none ]] || gres_args=(--gres="$gres")
array=$(sbatch --parsable --array=0-$((tasks - 1)) "${gres_args[@]}" --chdir="$out" "${sbatch_args[@]}" \
  "$here/shard.sbatch" "$stripeline" "$rec" "$frame_height" "$frames" "$out" "$outputs" "$@")
array=${array%%;*}  # "jobid;cluster" on a federation
join=$(sbatch --parsable --dependency=afterok:"$array" --chdir="$out" "${sbatch_args[@]}" \
  "$here/join.sbatch" "$stripeline" "$tasks" "$out" "$outputs")
join=${join%%;*}
echo "parts: job array $array (${tasks} tasks, ${frames} frames${gres_args:+, ${gres_args[*]}}); join: job $join -> $out"
