# MPI-IO from Python (Debian's python3-mpi4py, unmodified), served by lmpio
# when liblmpio-mpi.so is preloaded: files, views, collective and ordered
# calls, and a data representation registered from Python with
# MPI.Register_datarep -- which the MPI library's own MPI-IO refuses.
# Prints "ok NAME" / "not ok NAME" on rank 0 (what core/test/check.sh counts).
import os
import struct
import sys
from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
failures = 0


def check(name, cond):
    global failures
    ok = comm.allreduce(bool(cond), op=MPI.LAND)
    if not cond:
        print("rank %d: %s failed" % (rank, name), file=sys.stderr)
    if rank == 0:
        print("%sok %s" % ("" if ok else "not ", name), flush=True)
    if not ok:
        failures += 1


tmp = os.environ.get("TMPDIR") or "/tmp"
path = os.path.join(tmp, "lmpio-dropin-py-%d.dat" % comm.bcast(os.getpid()))
n = 6

fh = MPI.File.Open(comm, path, MPI.MODE_CREATE | MPI.MODE_RDWR)
info = fh.Get_info()
check("served by lmpio (lmpio_version in get_info)", info.Get("lmpio_version") is not None)
info.Free()

# A view interleaving the ranks int by int, written collectively.
ftype = MPI.INT.Create_vector(n, 1, size).Create_resized(0, n * size * 4)
ftype.Commit()
fh.Set_view(rank * 4, MPI.INT, ftype)
out = array("i", [rank * 100 + i for i in range(n)])
fh.Write_at_all(0, out)
fh.Set_view(0, MPI.INT, MPI.INT)
whole = array("i", [0] * (n * size))
fh.Read_at_all(0, whole)
check("Write_at_all through a view: interleaved in the file",
      list(whole) == [(i % size) * 100 + i // size for i in range(n * size)])
ftype.Free()

# Ordered calls and the shared pointer.
fh.Set_size(0)
fh.Write_ordered(array("i", [rank] * (rank + 1)))
check("Write_ordered moves the shared pointer",
      fh.Get_position_shared() == size * (size + 1) // 2)
fh.Seek_shared(0)
got = array("i", [-1] * (rank + 1))
fh.Read_ordered(got)
check("Read_ordered", list(got) == [rank] * (rank + 1))
fh.Seek(0)
got = array("i", [-1] * 2)
st = MPI.Status()
fh.Read(got, status=st)
first = [r for r in range(size) for _ in range(r + 1)][:2]
check("Read with the individual pointer, short at the end", list(got)[:len(first)] == first)
check("Get_count of the status", st.Get_count(MPI.INT) == len(first))

# Errors come back as exceptions with the error class.
try:
    MPI.File.Open(comm, path + ".missing/none", MPI.MODE_RDONLY)
    cls = None
except MPI.Exception as e:
    cls = e.Get_error_class()
check("open of a missing file raises MPI_ERR_NO_SUCH_FILE", cls == MPI.ERR_NO_SUCH_FILE)
fh.Close()

# A representation with Python conversion functions: each int kept as
# 2 bytes, big-endian.
calls = {"read": 0, "write": 0}


def extent_fn(datatype):
    return 2


def write_fn(userbuf, datatype, count, filebuf, position):
    calls["write"] += 1
    src = memoryview(userbuf).cast("B").cast("i")
    dst = memoryview(filebuf).cast("B")
    for i in range(count):
        dst[2 * i:2 * i + 2] = struct.pack(">h", src[position + i])


def read_fn(userbuf, datatype, count, filebuf, position):
    calls["read"] += 1
    src = memoryview(filebuf).cast("B")
    dst = memoryview(userbuf).cast("B").cast("i")
    for i in range(count):
        dst[position + i] = struct.unpack(">h", bytes(src[2 * i:2 * i + 2]))[0]


MPI.Register_datarep("py-be16", read_fn, write_fn, extent_fn)
fh = MPI.File.Open(comm, path, MPI.MODE_CREATE | MPI.MODE_RDWR)
fh.Set_size(0)
fh.Set_view(0, MPI.INT, MPI.INT, "py-be16")
out = array("i", [(rank * n + i) * (-1 if i % 2 else 1) for i in range(n)])
fh.Write_at_all(rank * n, out)
check("Register_datarep from Python: write converts", calls["write"] > 0)
check("file holds 2 bytes per int", fh.Get_size() == 2 * n * size)
back = array("i", [0] * n)
fh.Read_at_all(rank * n, back)
check("read converts back", calls["read"] > 0 and back == out)
fh.Set_view(0, MPI.BYTE, MPI.BYTE, "native")
raw = bytearray(2 * n)
fh.Read_at(2 * rank * n, raw)
check("big-endian bytes in the file", bytes(raw) == b"".join(struct.pack(">h", v) for v in out))
fh.Close()
comm.Barrier()
if rank == 0:
    MPI.File.Delete(path)
sys.exit(1 if failures else 0)
