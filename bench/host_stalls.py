#!/usr/bin/env python3
"""How often this machine stops running a busy thread, CPU by CPU.

One process per CPU, each pinned to its CPU, reads the monotonic clock in a
tight loop for a while and records every gap over the threshold: the times
that CPU ran something else (another thread, an interrupt) or, in a virtual
machine, the hypervisor ran something else on it (steal). A gap that many
CPUs see at once is the machine's, not one thread's scheduling.

The live path's latency tail (issue 24, docs/cuda.md) is read beside this:
a host whose idle CPUs stall for milliseconds gives every per-frame path
millisecond maxima, whatever the path does.

    python3 bench/host_stalls.py --cpus all --seconds 5
    python3 bench/host_stalls.py --cpus 15 --seconds 60 &   # beside a run on 0-14
"""
import argparse
import bisect
import multiprocessing as mp
import os
import time


def parse_cpus(text):
    if text == "all":
        return sorted(os.sched_getaffinity(0))
    cpus = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.extend(range(int(first), int(last or first) + 1))
    return cpus


def steal_ms():
    """The VM's steal time over all CPUs (/proc/stat), ms; 0 where not accounted."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) * 1000.0 / os.sysconf("SC_CLK_TCK")


def spin(cpu, seconds, threshold_ns, results):
    os.sched_setaffinity(0, {cpu})
    clock = time.perf_counter_ns
    gaps = []
    start = previous = clock()
    end = start + int(seconds * 1e9)
    while previous < end:
        now = clock()
        if now - previous > threshold_ns:
            gaps.append((previous, now - previous))
        previous = now
    results.put((cpu, gaps))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cpus", default="all", help='"all", or a list such as 0-3,8')
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--threshold-us", type=float, default=50.0, help="gaps longer than this are stalls")
    args = parser.parse_args()
    cpus = parse_cpus(args.cpus)
    threshold_ns = int(args.threshold_us * 1000)
    results = mp.Queue()
    steal_before = steal_ms()
    workers = [mp.Process(target=spin, args=(cpu, args.seconds, threshold_ns, results)) for cpu in cpus]
    for w in workers:
        w.start()
    gaps_by_cpu = dict(results.get() for _ in workers)
    for w in workers:
        w.join()
    steal = steal_ms() - steal_before

    print(f"host stalls: {len(cpus)} CPU(s) busy {args.seconds:.0f} s each, gaps over {args.threshold_us:.0f} us; "
          f"the VM's steal meanwhile {steal:.0f} ms (all CPUs)")
    every = []
    for cpu in cpus:
        gaps = gaps_by_cpu[cpu]
        every.extend((t, d, cpu) for t, d in gaps)
        total_ms = sum(d for _, d in gaps) / 1e6
        longest = max((d for _, d in gaps), default=0) / 1e3
        over_200 = sum(1 for _, d in gaps if d > 200_000)
        print(f"  CPU {cpu:3d}: {len(gaps):6d} stalls, {over_200:5d} over 200 us, {total_ms:8.2f} ms in all, the longest {longest:9.1f} us")
    # A stall is the machine's when at least half the CPUs measured were
    # stalled at its start too.
    if len(cpus) > 1:
        starts = {cpu: [t for t, _ in gaps_by_cpu[cpu]] for cpu in cpus}  # in time order, as recorded

        def stalled(cpu, t):
            i = bisect.bisect_right(starts[cpu], t) - 1
            return i >= 0 and t < starts[cpu][i] + gaps_by_cpu[cpu][i][1]

        shared = 0
        for t, d, cpu in every:
            if d > 200_000 and 1 + sum(stalled(other, t) for other in cpus if other != cpu) >= len(cpus) / 2:
                shared += 1
        print(f"  stalls over 200 us that at least half the CPUs shared: {shared}")


if __name__ == "__main__":
    main()
