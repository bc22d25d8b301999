# bench/sendrecv_bench.py N ITERS: mpi4py's Sendrecv of N doubles around a
# ring into a preallocated numpy array (the other side of
# bench/sendrecv_bench.lua; same output, side=mpi4py).
import sys
import numpy as np
from mpi4py import MPI

w = MPI.COMM_WORLD
rank, size = w.Get_rank(), w.Get_size()
n = int(sys.argv[1]) if len(sys.argv) > 1 else 120
iters = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
a = np.full(n, float(rank))
b = np.empty(n)
right, left = (rank + 1) % size, (rank - 1) % size
best = float("inf")
for _ in range(3):
    w.Barrier()
    t0 = MPI.Wtime()
    for _ in range(iters):
        w.Sendrecv(a, dest=right, sendtag=0, recvbuf=b, source=left, recvtag=0)
    t = w.allreduce((MPI.Wtime() - t0) / iters, op=MPI.MAX)
    best = min(best, t)
assert b[n - 1] == left
if rank == 0:
    print("RESULT side=mpi4py ranks=%d n=%d us=%.3f" % (size, n, best * 1e6))
