# lmpio — build, test, bench.  `make check` is the one test command.
MPICC    ?= mpicc
MPIRUN   ?= mpirun
LUA      ?= lua5.4
PREFIX   ?= /usr/local
DESTDIR  ?=
BUILD    ?= build
OPT      ?= -O2 -g
CFLAGS   ?= $(OPT)
# Warnings are errors in the project's own test builds (make check,
# check-core, check-asan set WERROR=-Werror; so does a developer with
# `make WERROR=-Werror ...`); a plain `make`, `make demo` and the rock only
# warn, so a newer compiler's new warning does not break a user's build.
# (Objects already built are not rebuilt when only WERROR changes.)
WERROR   ?=
WARN     ?= -Wall -Wextra $(WERROR)
ALLCFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -Icore/include -Icore/src
LUA_CFLAGS := $(shell pkg-config --cflags lua5.4 2>/dev/null || echo -I/usr/include/lua5.4)

CORE_SRC := $(wildcard core/src/*.c)
CORE_OBJ := $(patsubst core/src/%.c,$(BUILD)/obj/%.o,$(CORE_SRC))
CORE_HDR := core/include/lmpio.h $(wildcard core/src/*.h)
TESTS    := $(patsubst core/test/%.c,$(BUILD)/test/%,$(wildcard core/test/*_test.c))
# Programs of plain MPI (nothing of lmpio) that the dropin suite runs with
# liblmpio-mpi.so preloaded.
DROPIN_TESTS := $(patsubst core/test/dropin/%.c,$(BUILD)/dropin/%,$(wildcard core/test/dropin/*.c))
# Programs of plain MPI that need ranks on two machines, run on the
# simulated cluster of core/test/cluster/cluster.sh (make check-cluster).
# multinode-capi: the same checks through lmpio's C API.
CLUSTER_TESTS := $(patsubst core/test/cluster/%.c,$(BUILD)/cluster/%,$(wildcard core/test/cluster/*.c)) \
  $(BUILD)/cluster/multinode-capi
BENCHES  := $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/*.c))
CEXAMPLES:= $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
LUA_SRC  := $(wildcard lua/*.c)
LUA_MOD  := $(if $(LUA_SRC),$(BUILD)/lua/lmpio.so)
# The module's Lua files: every lua/*.lua but the command, and everything
# under lua/lmpio/ (lmpio.command.dump, a part of the command, is
# lua/lmpio/command/dump.lua; the rock installs them all), copied to the same
# place under $(BUILD)/lua: then LUA_CPATH_5_4 and LUA_PATH_5_4 pointing
# at $(BUILD)/lua find the whole module.
LUA_FILES := $(patsubst lua/%,$(BUILD)/lua/%,$(filter-out lua/lmpio-command.lua,\
  $(wildcard lua/*.lua lua/lmpio/*.lua lua/lmpio/*/*.lua)))
# The lmpio command of this build: lua/lmpio-command.lua with the module of
# $(BUILD)/lua, whatever the environment says (put $(BUILD)/bin on the PATH).
LMPIO_CMD := $(if $(LUA_SRC),$(BUILD)/bin/lmpio)
LUA_PROGRAM := $(or $(shell command -v $(LUA) 2>/dev/null),/usr/bin/env $(LUA))

LIBA  := $(BUILD)/lib/liblmpio.a
LIBSO := $(BUILD)/lib/liblmpio.so
# The drop-in: MPI_File_* over lmpio, for LD_PRELOAD (core/dropin/).
DROPIN_SRC := $(wildcard core/dropin/*.c)
DROPIN_OBJ := $(patsubst core/dropin/%.c,$(BUILD)/obj-dropin/%.o,$(DROPIN_SRC))
DROPIN_SO  := $(BUILD)/lib/liblmpio-mpi.so

# Open MPI refuses to run as root unless told; only needed when we are root.
ifeq ($(shell id -u),0)
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
endif
export MPIRUN MPICC LUA BUILD

.PHONY: check-cluster check-dropin check-public all lib tests benches examples lua deps doc html rock rock-install check check-core check-mpich check-asan lint demo bench bench-scale bench-ior install clean

all: lib $(BUILD)/lmpio.pc lua tests benches examples

lib: $(LIBA) $(LIBSO) $(DROPIN_SO)

$(BUILD)/obj/%.o: core/src/%.c $(CORE_HDR)
	@mkdir -p $(@D)
	$(MPICC) $(ALLCFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(LIBA): $(CORE_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(LIBSO): $(CORE_OBJ)
	@mkdir -p $(@D)
	$(MPICC) -shared -o $@ $^ -lm

$(BUILD)/obj-dropin/%.o: core/dropin/%.c core/dropin/dropin.h $(CORE_HDR)
	@mkdir -p $(@D)
	$(MPICC) $(ALLCFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

# The core goes inside, every symbol of it local: only the I/O chapter of
# MPI is exported (core/dropin/exports.map).
$(DROPIN_SO): $(DROPIN_OBJ) $(CORE_OBJ) core/dropin/exports.map
	@mkdir -p $(@D)
	$(MPICC) -shared -o $@ $(DROPIN_OBJ) $(CORE_OBJ) -Wl,--version-script=core/dropin/exports.map -lm -ldl -lpthread

$(BUILD)/lmpio.pc: Makefile
	@mkdir -p $(@D)
	printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: lmpio\nDescription: the MPI-IO file model as a library\nVersion: 0.1.0\nLibs: -L$${libdir} -llmpio\nCflags: -I$${includedir}\n' '$(PREFIX)' > $@

tests: $(TESTS) $(DROPIN_TESTS) $(CLUSTER_TESTS)
$(BUILD)/cluster/%: core/test/cluster/%.c
	@mkdir -p $(@D)
	$(MPICC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $< -o $@
$(BUILD)/cluster/multinode-capi: core/test/cluster/multinode.c $(LIBA)
	@mkdir -p $(@D)
	$(MPICC) -std=c11 -D_GNU_SOURCE -DMULTINODE_CAPI $(WARN) $(CFLAGS) -Icore/include $< -o $@ $(LIBA) -lm
$(BUILD)/dropin/%: core/test/dropin/%.c core/test/dropin/check.h
	@mkdir -p $(@D)
	$(MPICC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $< -o $@

$(BUILD)/test/%: core/test/%.c core/test/testlib.h $(LIBA)
	@mkdir -p $(@D)
	$(MPICC) $(ALLCFLAGS) $< -o $@ $(LIBA) -lm

benches: $(BENCHES)
$(BUILD)/bench/%: bench/%.c $(LIBA)
	@mkdir -p $(@D)
	$(MPICC) $(ALLCFLAGS) $< -o $@ $(LIBA) -lm
# (its counting layer of MPI calls)
$(BUILD)/bench/scale_bench: bench/scale_count.h
# (the hints of their opens from the environment)
$(patsubst %,$(BUILD)/bench/%,scale_bench small_calls_bench io_bench latency_bench): bench/bench_hints.h

examples: $(CEXAMPLES)
$(BUILD)/examples/%: examples/%.c $(LIBA)
	@mkdir -p $(@D)
	$(MPICC) $(ALLCFLAGS) $< -o $@ $(LIBA) -lm

# The Lua module sees the core through its public header only.  It links the
# shared library, found beside it through its rpath (build/lua/../lib);
# LUA_LINK=static puts the core inside the module instead (the rock does).
LUA_LINK ?= shared
ifeq ($(LUA_LINK),static)
LUA_LIBDEP := $(LIBA)
LUA_LIBS   := $(LIBA)
else
LUA_LIBDEP := $(LIBSO)
LUA_LIBS   := -L$(BUILD)/lib -llmpio -Wl,-rpath,'$$ORIGIN/../lib'
endif
lua: $(LUA_MOD) $(LUA_FILES) $(LMPIO_CMD)
$(BUILD)/lua/%.lua: lua/%.lua
	@mkdir -p $(@D)
	cp $< $@
# (paths in long brackets: any path but one holding "]==]")
$(BUILD)/bin/lmpio: Makefile
	@mkdir -p $(@D)
	printf '%s\n' '#!$(LUA_PROGRAM)' \
	  '-- The lmpio command of the build in $(abspath $(BUILD)) (made by make):' \
	  '-- lua/lmpio-command.lua of the source tree with the module of that' \
	  '-- build first on the search paths, whatever LUA_PATH and LUA_CPATH say.' \
	  'local build, command = [==[$(abspath $(BUILD))]==], [==[$(CURDIR)/lua/lmpio-command.lua]==]' \
	  'package.path = build .. "/lua/?.lua;" .. build .. "/lua/?/init.lua;" .. package.path' \
	  'package.cpath = build .. "/lua/?.so;" .. package.cpath' \
	  'arg[0] = command' \
	  'return assert(loadfile(command))(...)' > $@.tmp && chmod 755 $@.tmp && mv $@.tmp $@
$(BUILD)/lua/lmpio.so: $(LUA_SRC) $(wildcard lua/*.h) core/include/lmpio.h $(LUA_LIBDEP)
	@mkdir -p $(@D)
	$(MPICC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -Icore/include $(LUA_CFLAGS) -fPIC -shared \
	  $(LUA_SRC) -o $@ $(LUA_LIBS) -lm

# Installs from Debian's archive whatever of the toolchain is missing.
deps:
	@sh .ci/deps.sh

# The reference of the Lua module (LDoc, from the comments of lua/*.c and the
# topics in doc/), written to $(BUILD)/doc/index.html.  `make html` does the
# same without installing what is missing (the rock's build).
doc: deps
	@$(MAKE) --no-print-directory html
html:
	@command -v ldoc >/dev/null 2>&1 || { echo "the HTML reference needs LDoc: apt-get install lua-ldoc lua-markdown" >&2; exit 1; }
	@mkdir -p $(BUILD)/doc-src
	$(LUA) doc/gather.lua $(BUILD)/doc-src/lmpio.c lua/*.c
	ldoc -c doc/config.ld -d $(BUILD)/doc $(BUILD)/doc-src/lmpio.c

# The rock (rockspec/lmpio-scm-1.rockspec): `make rock` builds the module
# (LUA_LINK=static: one self-contained lmpio.so), the drop-in library and the
# HTML reference; `make rock-install` puts them in the directories that
# LuaRocks gives (ROCK_LIBDIR: lmpio.so and lmpio/liblmpio-mpi.so, found by
# `lmpio dropin-path`; ROCK_LUADIR: the module's Lua files; ROCK_DOCDIR: the
# reference, found by `lmpio doc-path`).  LuaRocks installs the command.
rock: lua $(DROPIN_SO) html
rock-install:
	@test -n "$(ROCK_LIBDIR)" -a -n "$(ROCK_LUADIR)" -a -n "$(ROCK_DOCDIR)" || \
	  { echo "make rock-install ROCK_LIBDIR=... ROCK_LUADIR=... ROCK_DOCDIR=... (LuaRocks' directories)" >&2; exit 2; }
	install -d "$(ROCK_LIBDIR)/lmpio" "$(ROCK_LUADIR)" "$(ROCK_DOCDIR)"
	install -m 755 $(LUA_MOD) "$(ROCK_LIBDIR)/"
	install -m 755 $(DROPIN_SO) "$(ROCK_LIBDIR)/lmpio/"
	cd $(BUILD)/lua && find . -name '*.lua' -exec sh -c 'install -D -m 644 "$$1" "$$0/$$1"' "$(ROCK_LUADIR)" {} \;
	cp -R $(BUILD)/doc/. "$(ROCK_DOCDIR)/"

check: deps
	$(MAKE) WERROR=-Werror all
	$(MAKE) lint
	sh core/test/check.sh

# Only the C suites (used for portability checks, e.g. MPICC=mpicc.mpich MPIRUN=mpirun.mpich).
check-core:
	$(MAKE) WERROR=-Werror lib tests
	sh core/test/check.sh core

# The core and its C tests built and run with MPICH 4.0 (installed beside
# Open MPI, which stays the default): a portability check, not part of CI.
# Each program gets 900 s, not 300: MPICH's ch4 device waits by polling and
# never gives the processor away (ch3's MPIR_CVAR_POLLS_BEFORE_YIELD has no
# ch4 counterpart), so at 4 ranks on 2 cores a collective call waits for the
# time slices of ranks spinning in theirs: fault_test's thousands of
# collective calls took 85-150 s on a busy machine here (Open MPI: 4 s) and
# passed 300 s when it was busier.  A hang still ends as a failure.
check-mpich:
	@sh .ci/deps.sh mpich
	LMPIO_TEST_TIMEOUT="$${LMPIO_TEST_TIMEOUT:-900}" \
	  $(MAKE) BUILD=$(BUILD)/mpich MPICC=mpicc.mpich MPIRUN=mpirun.mpich check-core

# Everything under AddressSanitizer and UBSan: the core and its C tests, the
# Lua module with its specs and the examples (lua5.4 is not instrumented: a
# wrapper preloads the sanitizer runtimes into it).  MPI's own allocations are
# not ours to chase: leak detection off.
ASAN_BUILD := $(BUILD)/asan
ASAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer
check-asan:
	$(MAKE) BUILD=$(ASAN_BUILD) WERROR=-Werror CFLAGS="$(ASAN_CFLAGS)" lib tests lua examples
	printf '#!/bin/sh\nLD_PRELOAD="%s %s" exec $(LUA) "$$@"\n' "$$($(MPICC) -print-file-name=libasan.so)" \
	  "$$($(MPICC) -print-file-name=libubsan.so)" > $(ASAN_BUILD)/lua-asan && chmod +x $(ASAN_BUILD)/lua-asan
	ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1 BUILD=$(ASAN_BUILD) LUA=$(abspath $(ASAN_BUILD))/lua-asan \
	  LMPIO_TEST_CFLAGS="$(ASAN_CFLAGS)" \
	  sh core/test/check.sh core lua examples

# The regression gate of the drop-in (core/test/dropin/public_suites.sh,
# doc/dropin.md): public test suites, from copies whose paths are given
# (never committed), built into $(BUILD)/public and run on lmpio through
# liblmpio-mpi.so, on OMPIO and on ROMIO, each judged by its suite's rule;
# fails when a run passes on a peer and fails on lmpio.  SUITES= and ONLY=
# pick a subset.  check-dropin SUITE=<MPICH copy> is its MPICH part.
PUBLIC_VARS := MPICH_SRC ROMIO_TESTS MPI_TEST_SUITE PNETCDF_SRC IOR_SRC HDF5_SRC MPI4PY SUITES ONLY BACKENDS PUBLIC_TIMEOUT MTS_TIMEOUT HDF5_NP
check-public: lib
	$(foreach v,$(PUBLIC_VARS),$(if $($(v)),$(v)="$($(v))")) bash core/test/dropin/public_suites.sh
check-dropin: lib
	$(MAKE) check-public MPICH_SRC="$(or $(MPICH_SRC),$(SUITE))" SUITES="mpich$(if $(MPI4PY), mpi4py)"

# The cluster suite alone: a simulated two-node cluster (network namespaces,
# GlusterFS, as root; core/test/cluster/suite.sh says what runs), e.g.
# make check-cluster RUNS=5 IMPLS="lmpio capi ompio romio" TABLE=1;
# NODES=4 makes it four nodes.
check-cluster:
	$(MAKE) WERROR=-Werror lib tests
	NODES="$(NODES)" RUNS="$(RUNS)" SUITE_RUNS="$(SUITE_RUNS)" IMPLS="$(IMPLS)" PROFILES="$(PROFILES)" TABLE="$(TABLE)" \
	  BUDGET="$(or $(BUDGET),100000)" sh core/test/cluster/suite.sh

# Static analysis of the core, the drop-in library and the Lua module:
# cppcheck must stay quiet (part of make check).
LINT := cppcheck --enable=warning,style,performance,portability --error-exitcode=1 -q \
  --suppress=missingIncludeSystem --suppress=toomanyconfigs
lint: deps
	$(LINT) -Icore/include -Icore/src core/src
	$(LINT) -Icore/include -Icore/src -Icore/dropin core/dropin
	$(LINT) -Icore/include $(LUA_CFLAGS) lua

demo: deps
	$(MAKE) all
	LUA_CPATH_5_4="$(CURDIR)/$(BUILD)/lua/?.so;;" timeout 120 $(MPIRUN) --oversubscribe -n 4 \
	  $(LUA) examples/quickstart.lua $${LMPIO_DEMO_FILE:-/tmp/lmpio-demo.dat}

bench: deps
	$(MAKE) all
	sh bench/run.sh

# The common patterns at 1 to 64 ranks on lmpio, OMPIO and ROMIO, with what
# grows with the rank count (bench/scale.sh, bench/README.md "Scale");
# LMPIO_SCALE_RANKS="1 2 4" and the other knobs of the script pass through.
bench-scale: lib $(BUILD)/bench/scale_bench
	sh bench/scale.sh

# IOR (not part of lmpio; IOR=path of a built ior binary) through the
# drop-in library, OMPIO and ROMIO: bench/ior.sh, bench/README.md.
bench-ior: lib
	@test -n "$(IOR)" || { echo "make bench-ior IOR=/path/to/ior (see bench/README.md)" >&2; exit 2; }
	sh bench/ior.sh "$(IOR)"

# The command goes in PREFIX/bin and its parts (lua/lmpio/command) in
# PREFIX/share/lua/5.4, where it looks for them (beside its own directory).
install: lib $(BUILD)/lmpio.pc
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(LIBA) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBSO) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(DROPIN_SO) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 core/include/lmpio.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/lmpio.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/lua/5.4/lmpio/command
	install -m 755 lua/lmpio-command.lua $(DESTDIR)$(PREFIX)/bin/lmpio
	install -m 644 lua/lmpio/command/*.lua $(DESTDIR)$(PREFIX)/share/lua/5.4/lmpio/command/

clean:
	rm -rf $(BUILD)
