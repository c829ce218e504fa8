#!/usr/bin/env python3
"""A real single-node Slurm, made and torn down here, runs the cluster scripts
(scripts/slurm/submit.sh: a 4-task job array of `stripeline replay --frames`
parts, then the dependent join job) over a synthetic recording; the joined
PLY, height map, range map and XYZ TIFF must be byte for byte those of one
unsharded replay; a part that fails keeps the join from running. docs/scale-out.md,
"Recordings on a cluster".

Debian's slurmctld, slurmd and munge (scripts/setup-debian.sh --tests), as
root: a munge key made here, munged, slurmctld and slurmd in the foreground
on loopback with their own slurm.conf, state and sockets in a temporary
directory (proctrack/linuxproc, task/none: no cgroups needed), killed at the
end whatever happens. No GPU is asked for (--gres none): the CPU backend.

    check_slurm_array.py SOURCE_DIR STRIPELINE
Exit 0 passed, 1 failed, 77 skipped (a `SKIP: reason` line says why).
"""
import filecmp
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SBIN = ["/usr/sbin", "/sbin", "/usr/local/sbin"]
TASKS = 4
FRAMES = 90          # not a multiple of TASKS: parts of 22 and 23 frames
OUTPUTS = "ply,heightmap,xyz,range-map"
JOINED = ["scan.ply", "heightmap.png", "xyz.tif", "range.tif"]


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(77)


def which(name):
    return shutil.which(name) or shutil.which(name, path=os.pathsep.join(SBIN))


def die_with_parent():
    """In a daemon's child before exec: SIGKILL when this driver dies, even by
    SIGKILL (ctest's timeout), so that no daemon outlives the test."""
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, check, timeout):
    """Polls check() until it returns something true; fails naming `what` after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise RuntimeError(f"timed out after {timeout} s waiting for {what}")


class Cluster:
    """munged, slurmctld and slurmd of a private one-node cluster under `root`."""

    def __init__(self, root, tools):
        self.root, self.tools, self.procs = root, tools, []
        self.env = dict(os.environ, SLURM_CONF=os.path.join(root, "slurm.conf"))

    def path(self, name):
        return os.path.join(self.root, name)

    def start(self, name, argv):
        log = open(self.path(name + ".out"), "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True, preexec_fn=die_with_parent)
        self.procs.append((name, p))
        return p

    def write_conf(self):
        ncpu = os.cpu_count() or 1
        for d in ("state", "spool"):
            os.makedirs(self.path(d), exist_ok=True)
        conf = f"""ClusterName=stripelinetest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.path('munge.sock')}
StateSaveLocation={self.path('state')}
SlurmdSpoolDir={self.path('spool')}
SlurmctldPidFile={self.path('slurmctld.pid')}
SlurmdPidFile={self.path('slurmd.pid')}
SlurmctldLogFile={self.path('slurmctld.log')}
SlurmdLogFile={self.path('slurmd.log')}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
MinJobAge=600
NodeName=stripelinenode NodeAddr=127.0.0.1 NodeHostname=localhost CPUs={ncpu} RealMemory=1 State=UNKNOWN
PartitionName=test Nodes=stripelinenode Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""
        with open(self.path("slurm.conf"), "w") as f:
            f.write(conf)

    def up(self):
        key = self.path("munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self.write_conf()
        t = self.tools
        self.start("munged", [t["munged"], "-F", "-f", f"--socket={self.path('munge.sock')}", f"--key-file={key}",
                              f"--pid-file={self.path('munged.pid')}", f"--seed-file={self.path('munged.seed')}",
                              f"--log-file={self.path('munged.log')}"])
        wait_for("munged's socket", lambda: os.path.exists(self.path("munge.sock")), 20)
        self.start("slurmctld", [t["slurmctld"], "-D", "-i", "-f", self.path("slurm.conf")])
        wait_for("slurmctld to answer (scontrol ping)", lambda: "UP" in self.run([t["scontrol"], "ping"], check=False), 60)
        self.start("slurmd", [t["slurmd"], "-D", "-N", "stripelinenode", "-f", self.path("slurm.conf")])
        wait_for("the node to be idle (sinfo)",
                 lambda: self.run([t["sinfo"], "-h", "-o", "%T"], check=False).strip() == "idle", 60)

    def run(self, argv, check=True):
        r = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stdout}{r.stderr}")
        return r.stdout + (r.stderr if not check else "")

    def down(self):
        if any(name == "slurmctld" and p.poll() is None for name, p in self.procs):  # an orderly stop first: slurmd ends its steps
            subprocess.run([self.tools["scontrol"], "shutdown"], env=self.env, capture_output=True, timeout=30)
            for name, p in self.procs:
                if name != "munged":
                    try:
                        p.wait(timeout=15)
                    except subprocess.TimeoutExpired:
                        pass
        for name, p in reversed(self.procs):  # slurmd, slurmctld, munged: each its own session, killed whole
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                    p.wait(timeout=15)
                except (subprocess.TimeoutExpired, ProcessLookupError):
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    p.wait(timeout=15)

    def logs(self):
        for name in ("munged.out", "slurmctld.out", "slurmctld.log", "slurmd.out", "slurmd.log"):
            p = self.path(name)
            if os.path.exists(p):
                text = open(p, errors="replace").read()
                print(f"--- {name} (last 40 lines)\n" + "\n".join(text.splitlines()[-40:]))


def job_states(cluster, scontrol, job):
    """{JobId: (JobState, ExitCode)} of a job and, for an array, each of its tasks."""
    out = cluster.run([scontrol, "show", "job", "-o", str(job)], check=False)
    states = {}
    for line in out.splitlines():
        jid = re.search(r"\bArrayJobId=(\d+)", line) or re.search(r"\bJobId=(\d+)", line)
        state = re.search(r"\bJobState=(\S+)", line)
        code = re.search(r"\bExitCode=(\S+)", line)
        task = re.search(r"\bArrayTaskId=(\S+)", line)
        if jid and state:
            states[jid.group(1) + ("_" + task.group(1) if task else "")] = (state.group(1), code.group(1) if code else "?")
    return states


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    source, stripeline = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    names = ["munged", "munge", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo", "squeue", "scancel"]
    tools = {n: which(n) for n in names}
    missing = [n for n, p in tools.items() if p is None]
    if missing:
        skip(f"no {', '.join(missing)} (Debian: apt-get install slurmctld slurmd slurm-client munge; scripts/setup-debian.sh --tests)")
    if os.geteuid() != 0:
        skip("needs root: the test's own slurmctld and slurmd run as root (SlurmUser=root) to start jobs")
    # SIGTERM/SIGINT (ctest, Ctrl-C) unwind through the `finally` below, which stops the daemons.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda number, frame: sys.exit(f"stopped by signal {number}"))
    cal = os.path.join(source, "tests", "data", "slurm", "sheet-of-light.toml")
    root = tempfile.mkdtemp(prefix="stripeline-slurm-")
    os.chmod(root, 0o755)  # munged's socket directory must be searchable by all
    cluster = Cluster(root, tools)
    ok = False
    try:
        # The recording: the calibrated gauge scene, 90 frames.
        work = os.path.join(root, "work")
        os.makedirs(work)
        rec = os.path.join(work, "gauge.tiff")
        subprocess.run([stripeline, "synth", rec, "--scene", "gauge", "--roi", "160,460,512,232", "--frames", str(FRAMES)],
                       check=True, capture_output=True)
        replay_flags = ["--calibration", cal, "--roi-offset", "160,460", "--range-grid", "-45:-17:0.25", "--backend", "cpu"]
        # One unsharded replay: what the joined files must equal.
        whole = os.path.join(work, "whole")
        os.makedirs(whole)
        subprocess.run([stripeline, "replay", rec, "-H", "232", "-q", "--ply", os.path.join(whole, "scan.ply"), "--heightmap",
                        os.path.join(whole, "heightmap.png"), "--xyz-tiff", os.path.join(whole, "xyz.tif"), "--range-map",
                        os.path.join(whole, "range.tif")] + replay_flags, check=True)

        cluster.up()
        out = os.path.join(work, "cluster")
        submitted = subprocess.run([os.path.join(source, "scripts", "slurm", "submit.sh"), rec, "-H", "232", "--out", out, "--tasks", str(TASKS),
                                    "--outputs", OUTPUTS, "--stripeline", stripeline, "--gres", "none", "--"] + replay_flags,
                                   env=cluster.env, capture_output=True, text=True, timeout=120)
        print(submitted.stdout + submitted.stderr, end="")
        if submitted.returncode != 0:
            raise RuntimeError(f"submit.sh failed ({submitted.returncode})")
        ids = re.search(r"job array (\d+) .*join: job (\d+)", submitted.stdout)
        if not ids:
            raise RuntimeError("submit.sh did not print the two job ids")
        array, join = ids.group(1), ids.group(2)
        wait_for("every job to leave the queue (squeue)",
                 lambda: cluster.run([tools["squeue"], "-h"], check=False).strip() == "" or None, 420)
        states = {**job_states(cluster, tools["scontrol"], array), **job_states(cluster, tools["scontrol"], join)}
        print("jobs: " + ", ".join(f"{k} {s} {c}" for k, (s, c) in sorted(states.items())))
        tasks = [k for k in states if k.startswith(array + "_")]
        failed = [k for k, (s, c) in states.items() if s != "COMPLETED" or c != "0:0"]
        if len(tasks) != TASKS or join not in states or failed:
            for f in sorted(os.listdir(out)):
                if f.endswith(".out"):
                    print(f"--- {f}\n" + open(os.path.join(out, f), errors="replace").read())
            raise RuntimeError(f"expected {TASKS} array tasks and the join COMPLETED with 0:0; not so: {failed or states}")
        for name in JOINED:
            joined, single = os.path.join(out, name), os.path.join(whole, name)
            if not os.path.exists(joined):
                raise RuntimeError(f"the join wrote no {name}")
            if not filecmp.cmp(joined, single, shallow=False):
                raise RuntimeError(f"{name}: the joined file ({os.path.getsize(joined)} bytes) differs from the unsharded "
                                   f"replay's ({os.path.getsize(single)} bytes)")
            print(f"{name}: {os.path.getsize(joined)} bytes, identical to one unsharded replay")

        # A part that fails (here: a frame count beyond the recording, so the last
        # task's END is): the join never runs (afterok) and writes nothing.
        bad = os.path.join(work, "bad")
        submitted = subprocess.run([os.path.join(source, "scripts", "slurm", "submit.sh"), rec, "-H", "232", "--out", bad, "--tasks", str(TASKS),
                                    "--outputs", "heightmap", "--stripeline", stripeline, "--gres", "none", "--frame-count", str(FRAMES + 5), "--",
                                    "--backend", "cpu"], env=cluster.env, capture_output=True, text=True, timeout=120)
        ids = re.search(r"job array (\d+) .*join: job (\d+)", submitted.stdout)
        if submitted.returncode != 0 or not ids:
            raise RuntimeError(f"submit.sh failed ({submitted.returncode}): {submitted.stdout}{submitted.stderr}")
        array, join = ids.group(1), ids.group(2)
        never = lambda: "DependencyNeverSatisfied" in cluster.run([tools["scontrol"], "show", "job", "-o", join], check=False)
        wait_for("the join to wait on a dependency never satisfied", never, 300)
        states = job_states(cluster, tools["scontrol"], array)
        print("a failing part: " + ", ".join(f"{k} {s} {c}" for k, (s, c) in sorted(states.items())) + f"; join {join} DependencyNeverSatisfied")
        if states.get(f"{array}_{TASKS - 1}", ("?",))[0] != "FAILED" or os.path.exists(os.path.join(bad, "heightmap.png")):
            raise RuntimeError(f"expected the last part FAILED and no joined height map: {states}")
        cluster.run([tools["scancel"], join], check=False)
        ok = True
        print(f"passed: a {TASKS}-task array on slurmctld/slurmd, then the join, gave the unsharded replay's files byte for byte")
    except (RuntimeError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        print(f"FAILED: {e}")
        cluster.logs()
    finally:
        cluster.down()
        shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
