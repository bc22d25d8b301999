# array_bench.py — the numpy and mpi4py side of bench/array_bench.lua (read
# its header): the same parts, loop (numpy's sum only: numpy has no
# element loop worth timing), ops and job, on the same data and file.
#
#   mpirun -n P /usr/bin/python3 bench/array_bench.py PART...
#
# Needs python3-numpy and python3-mpi4py (Debian's); prints the RESULT lines
# of array_bench.lua with side=numpy.
import os
import sys
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def envn(name, default):
    try:
        v = int(os.environ.get(name, ""))
        return v if v > 0 else default
    except ValueError:
        return default


N = envn("LMPIO_ARRAY_BENCH_N", 10000000)
REPS = envn("LMPIO_ARRAY_BENCH_REPS", 3)
FILE = os.environ.get("LMPIO_ARRAY_BENCH_FILE", "/dev/shm/lmpio-array-bench.dat")
PIECE = 2 * 1024 * 1024
LO, HI, NBINS = 0.0, 1.0, 66


def result(part, test, sec, n=None, check=None):
    s = "RESULT side=numpy part=%s test=%s sec=%.6f" % (part, test, sec)
    if n:
        s += " ns=%.2f n=%d" % (sec / n * 1e9, n)
    if check is not None:
        s += " check=" + check
    print(s, flush=True)


def best(fn):
    b, r = float("inf"), None
    for _ in range(REPS):
        t0 = MPI.Wtime()
        r = fn()
        b = min(b, MPI.Wtime() - t0)
    return b, r


def block(n, parts, i):
    b = n // parts + (n % parts != 0)
    first = min(b * i, n)
    return first, min(b * (i + 1), n) - first


def data():
    return np.random.default_rng(42).random(N)


def part_loop():
    if rank != 0:
        return
    a = data()
    sec, r = best(lambda: a.sum())
    result("loop", "sum_bulk", sec, N, "%.6f" % r)


def part_ops():
    if rank != 0:
        return
    a = data()
    sec, r = best(lambda: a.sum())
    result("ops", "sum_bulk", sec, N, "%.6f" % r)
    sec, r = best(lambda: (a.min(), a.max()))
    result("ops", "minmax_bulk", sec, N, "%.6f,%.6f" % r)
    sec, r = best(lambda: np.histogram(a, bins=NBINS, range=(LO, HI))[0])
    result("ops", "histogram_bulk", sec, N, "%d,%d,%d" % (r[0], r[1], r[-1]))


def part_job():
    fh = MPI.File.Open(comm, FILE, MPI.MODE_RDONLY)
    total = fh.Get_size() // 8
    first, count = block(total, size, rank)
    rounds = comm.allreduce((count + PIECE - 1) // PIECE, op=MPI.MAX)
    buf = np.empty(PIECE)
    b, tread, counts = float("inf"), 0.0, None
    for _ in range(REPS):
        counts = np.zeros(NBINS, dtype=np.int64)
        comm.Barrier()
        t0, tr = MPI.Wtime(), 0.0
        for r in range(rounds):
            n = max(0, min(PIECE, count - r * PIECE))
            view = buf[:n]
            t1 = MPI.Wtime()
            fh.Read_at_all((first + r * PIECE) * 8, view)
            tr += MPI.Wtime() - t1
            counts += np.histogram(view, bins=NBINS, range=(LO, HI))[0]
        total_counts = np.empty_like(counts)
        comm.Allreduce(counts, total_counts, op=MPI.SUM)
        comm.Barrier()
        t = comm.allreduce(MPI.Wtime() - t0, op=MPI.MAX)
        if t < b:
            b, tread = t, comm.allreduce(tr, op=MPI.MAX)
        counts = total_counts
    fh.Close()
    if rank == 0:
        c = counts
        result("job", "job_bulk", b, total, "%d,%d,%d,sum=%d" % (c[0], c[1], c[-1], c.sum()))
        result("job", "job_bulk_read", tread, total)


parts = {"loop": part_loop, "ops": part_ops, "job": part_job}
for p in sys.argv[1:] or ["loop", "ops", "job"]:
    parts[p]()
    comm.Barrier()
