#!/usr/bin/env python3
"""GPU memory of replays against the device memory budget (docs/memory.md).

memory_budget_rss.py's sweep (widths, frame heights, depths, every method) on
the CUDA backend, each replay's device memory sampled with nvidia-smi every
20 ms: its peak above the idle GPU (the CUDA context included) beside the
device plan the run's summary reports. Needs nvidia-smi; /usr/bin/time is
used when present for the host peak (0 otherwise).

  python3 bench/memory_budget_gpu.py --binary build/stripeline --budget 256M --device-budget 256M --csv out.csv
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memory_budget_rss as rss  # noqa: E402


def gpu_used_mib():
    out = subprocess.check_output(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"], text=True)
    return int(out.split()[0])


IDLE = gpu_used_mib()
PEAKS = []


def run_sampled(binary, args):
    """rss.run with nvidia-smi sampling around it; the peak goes to PEAKS."""
    with tempfile.NamedTemporaryFile("r") as samples:
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-lms", "20"], stdout=open(samples.name, "w"))
        try:
            if os.path.exists("/usr/bin/time"):
                result = rss.ORIGINAL_RUN(binary, args)
            else:
                log = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                result = (log.returncode, 0, log.stdout)
        finally:
            smi.terminate()
            smi.wait()
        values = [int(v) for v in samples.read().split() if v.strip().isdigit()]
    PEAKS.append(max(values, default=IDLE) - IDLE)
    print(f"    device peak {PEAKS[-1]} MiB above the idle GPU ({IDLE} MiB)", flush=True)
    return result


if __name__ == "__main__":
    rss.ORIGINAL_RUN = rss.run
    rss.run = run_sampled
    if "--backend" not in sys.argv:
        sys.argv += ["--backend", "cuda"]
    sys.exit(rss.main())
