# goxio build. `make` builds everything into build/, `make test` runs every test,
# `make bench` runs the benchmarks, `make install` installs library, tools and libvma.conf.
GO      ?= go
BUILD   ?= build
PREFIX  ?= /usr/local
SYSCONFDIR ?= /etc
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.1.0-dev)
GOTAGS  := netgo,osusergo
LDFLAGS := -X github.com/goxio/goxio/internal/version.Version=$(VERSION)
ENGLDFLAGS := $(LDFLAGS) -extldflags=-Wl,-soname,libgoxio-engine.so
LIB     := $(BUILD)/libgoxio.so
ENGINE  := $(BUILD)/libgoxio-engine.so
CC      ?= cc
PRELOAD_SRC := $(wildcard shim/preload/*.c)
PRELOAD_HDR := $(wildcard shim/preload/*.h) shim/goxio.h shim/goxio_extra.h
PRELOAD_CFLAGS := -D_GNU_SOURCE -O2 -g -Wall -Wextra -Wno-unused-parameter -Wno-unused-function -fPIC \
	-fno-strict-aliasing -fvisibility=default

.PHONY: all deps demo lib engine tools test unit integration bench install deb man fuzz clean

all: lib tools

# installs the Debian packages the demo and the tests use (needs root; quick when present)
deps:
	./scripts/install-deps.sh

# the main job: sockperf with and without goxio, and goxio_stats of the offloaded server
demo: deps all
	BUILD=$(BUILD) ./scripts/demo.sh

# Two libraries: libgoxio.so, the one programs preload (plain C: trampolines, fd table, signal and
# fork wrappers), and libgoxio-engine.so (the Go engine, c-shared), which libgoxio.so loads from
# its own directory when a process first moves data on an inet socket.
lib: $(LIB) engine

# Lazy binding (no -z now): every exec of a program under the library binds only the ~40 libc
# functions the library itself calls that the program's calls reach (-z now bound them all, ~6 us of
# each exec, a tenth of a shell command's start). -z noseparate-code: two loadable segments instead
# of four (headers and read-only data share the code's pages), so every process maps the library
# with two mmap calls fewer and faults in 2-3 pages fewer (cat: 87 -> 84 page faults, an empty
# preloaded library 83); the cost is that the library's ~23 KB of headers and read-only data are
# mapped executable with its code.
# RELRO stays (the GOT is read-only after relocation).
$(LIB): $(PRELOAD_SRC) $(PRELOAD_HDR) shim/preload/libgoxio.map Makefile
	@mkdir -p $(BUILD)
	$(CC) $(PRELOAD_CFLAGS) -shared -Wl,-soname,libgoxio.so -Wl,-z,noseparate-code \
		-Wl,--version-script=shim/preload/libgoxio.map -o $@ $(PRELOAD_SRC) -ldl -lpthread

engine:
	@mkdir -p $(BUILD)
	$(GO) build -buildmode=c-shared -tags $(GOTAGS) -ldflags '$(ENGLDFLAGS)' -o $(ENGINE) ./shim
	@rm -f $(BUILD)/libgoxio-engine.h

# goxio is a C front end (cmd/goxio-front) that serves `goxio run` and execs goxio-tool (the Go
# command, cmd/goxio) for every other command: a Go program's start-up (its runtime's ~300-480
# page faults) cost 9-14 ms per `goxio run` on a VM whose page faults are slow, the front end's what
# an exec costs. Static, like the Go tools: no loader work either.
tools: $(BUILD)/goxio
	$(GO) build -tags $(GOTAGS) -ldflags '$(LDFLAGS)' -o $(BUILD)/ ./cmd/goxio-bpf ./cmd/goxio_stats
	$(GO) build -tags $(GOTAGS) -ldflags '$(LDFLAGS)' -o $(BUILD)/goxio-tool ./cmd/goxio

$(BUILD)/goxio: cmd/goxio-front/goxio.c Makefile
	@mkdir -p $(BUILD)
	$(CC) -O2 -Wall -Wextra -static -o $@ cmd/goxio-front/goxio.c

# unit tests (race detector on the engine), then integration tests against the built library.
test: deps all unit integration

unit:
	$(GO) vet -tags $(GOTAGS) ./...
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) test -tags $(GOTAGS) -race -count=1 $$($(GO) list ./... | grep -v -e /shim -e /tests)

integration: all
	GOXIO_LIB=$(abspath $(LIB)) GOXIO_BIN=$(abspath $(BUILD)) $(GO) test -count=1 -timeout 40m ./tests/...
	# The semantic suite, the real programs and CPython's suites again with the shared-memory
	# transports (UDP and TCP, on by default) off: same results on the engine's kernel path.
	GOXIO_LIB=$(abspath $(LIB)) GOXIO_BIN=$(abspath $(BUILD)) GOXIO_TEST_LIB_ENV="GOXIO_SHM=0 GOXIO_SHM_TCP=0" \
		$(GO) test -count=1 -timeout 30m -run 'TestSemantic|TestIntegration|TestCPython' ./tests/

bench: all
	GOXIO_LIB=$(abspath $(LIB)) GOXIO_BIN=$(abspath $(BUILD)) ./tests/bench/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(SYSCONFDIR)
	install -m 0755 $(LIB) $(DESTDIR)$(PREFIX)/lib/libgoxio.so
	install -m 0755 $(ENGINE) $(DESTDIR)$(PREFIX)/lib/libgoxio-engine.so
	install -m 0755 $(BUILD)/goxio $(BUILD)/goxio_stats $(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/lib/goxio
	install -m 0755 $(BUILD)/goxio-bpf $(BUILD)/goxio-tool $(DESTDIR)$(PREFIX)/lib/goxio/
	install -d $(DESTDIR)$(PREFIX)/include
	install -m 0644 shim/goxio_extra.h $(DESTDIR)$(PREFIX)/include/goxio_extra.h
	test -e $(DESTDIR)$(SYSCONFDIR)/libvma.conf || install -m 0644 libvma.conf $(DESTDIR)$(SYSCONFDIR)/libvma.conf
	for m in packaging/man/*.[1-8]; do \
		[ -e "$$m" ] || continue; s=$${m##*.}; \
		install -d $(DESTDIR)$(PREFIX)/share/man/man$$s && install -m 0644 "$$m" $(DESTDIR)$(PREFIX)/share/man/man$$s/; \
	done

# a minute of each fuzzer over the parsers of untrusted input
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseRules -fuzztime 60s ./conf
	$(GO) test -run '^$$' -fuzz FuzzParams -fuzztime 60s ./conf
	$(GO) test -run '^$$' -fuzz FuzzReader -fuzztime 60s -fuzzminimizetime 5s ./stats
	$(GO) test -run '^$$' -fuzz FuzzRingConsumer -fuzztime 60s -fuzzminimizetime 5s ./offload/shm
	$(GO) test -run '^$$' -fuzz FuzzRingHeader -fuzztime 60s -fuzzminimizetime 5s ./offload/shm
	$(GO) test -run '^$$' -fuzz FuzzSlotTable -fuzztime 60s -fuzzminimizetime 5s ./offload/shm
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 60s -fuzzminimizetime 5s ./offload/discovery
	$(GO) test -run '^$$' -fuzz FuzzStreamOps -fuzztime 60s -fuzzminimizetime 5s ./offload/shm
	$(GO) test -run '^$$' -fuzz FuzzConnHeader -fuzztime 60s -fuzzminimizetime 5s ./offload/shm
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 60s -fuzzminimizetime 5s ./offload/xdp/packet
	$(GO) test -run '^$$' -fuzz FuzzParseLinkAnswer -fuzztime 60s -fuzzminimizetime 5s ./offload/xdp
	$(GO) test -run '^$$' -fuzz FuzzParseMcOption -fuzztime 60s -fuzzminimizetime 5s ./offload
	$(GO) test -run '^$$' -fuzz FuzzScan -fuzztime 60s -fuzzminimizetime 5s ./tests/elfscan
	$(GO) test -run '^$$' -fuzz FuzzLdCache -fuzztime 60s -fuzzminimizetime 5s ./tests/elfscan

# Debian and RPM packages into build/pkg/
deb: all
	./packaging/build-deb.sh

# regenerates the parameter list of libgoxio(7) after a change in conf/
man:
	$(GO) run ./packaging/mangen -w packaging/man/libgoxio.7

clean:
	rm -rf $(BUILD)
