# bench/heat_bench.py NY NX STEPS OUT: examples/heat.lua's computation in
# numpy, serial (the reference of bench/heat_bench.sh): writes the interior
# to OUT (native doubles, C order) and prints "RESULT side=numpy sec=T"
# (the steps only, as heat.lua's own timing line).
import sys, time
import numpy as np

NY, NX, STEPS, OUT = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
i = np.arange(NY).reshape(NY, 1)
j = np.arange(NX).reshape(1, NX)
u = np.zeros((NY + 2, NX + 2))
inside = (i - NY / 3) ** 2 + (j - NX / 2) ** 2 < (NX / 5) ** 2
u[1:-1, 1:-1] = np.where(inside, 100.0, ((7 * i + 13 * j) % 17) / 17)
t0 = time.perf_counter()
for _ in range(STEPS):
    u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.2 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1])
t = time.perf_counter() - t0
u[1:-1, 1:-1].tofile(OUT)
print("RESULT side=numpy sec=%.6f" % t)
