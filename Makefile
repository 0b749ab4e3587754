# replaycheck — the two commands a newcomer needs are `make run` and `make test`.
GO      ?= go
BIN     := bin/replaycheck
ARGS    ?=

.PHONY: help run test suites check build install bench fuzz vet fmt-check clean device-check device-bundle fakes plugins interposer

## help: every target with what it does (these ## lines)
help:
	@sed -n -e 's/^## \([a-z-]*:\)/\1/p' -e 's/^## /    /p' $(firstword $(MAKEFILE_LIST))

## build: the replaycheck CLI into bin/; with gcc present it carries the acl and cuda backends
## (cgo), and CGO_ENABLED=0 builds one that runs everything on the simulator
build:
	@$(GO) build -o $(BIN) ./cmd/replaycheck

## install: bin/replaycheck into $(DESTDIR)$(PREFIX)/bin, PREFIX /usr/local unless given, e.g.
## make install PREFIX=$HOME/.local (or go install ./cmd/replaycheck, into $(go env GOPATH)/bin)
PREFIX ?= /usr/local
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/replaycheck

## run: the probe catalog (specs/) on the simulated device, default profile cann; every report
## format also goes to $(RUN_OUT) (git ignores build/), named on stderr. Quiet: stdout is
## replaycheck's alone, so `make run ARGS="--format json" > report.json` writes a JSON document.
RUN_OUT ?= build/report
run: build
	@rm -rf $(RUN_OUT)
	@$(abspath $(BIN)) run --out $(RUN_OUT) $(strip $(ARGS) specs)

## test: formatting, vet, then every Ginkgo suite, each package once with cgo: under the race
## detector where goroutines, OS threads and cgo meet (RACE_PKGS: device workers, the bindings,
## the plugin loader, the engine's watched calls, the run's processes), without it elsewhere (the
## probe language, judging, the CLI's scripts, which run an ordinary build); and, at the same
## time, the cgo-free build and again without cgo the packages whose files depend on it
## (NOCGO_PKGS), where the bindings and plugins say they cannot load. No test writes into the
## checkout. A test skipped for a missing tool (the browser test without Chromium) says so in a
## line at the end.
RACE_PKGS := ./device/... ./internal/dl/... ./runtime/... ./capture/... ./run/... ./harness/... \
	./cmd/replaycheck/internal/...
# The packages with a file built only with or only without cgo. Their cgo-free pass leaves out the
# specs labelled cgo-neutral, which the cgo pass ran.
NOCGO_ARGS := -args -ginkgo.label-filter='!cgo-neutral'
NOCGO_PKGS = $(sort $(patsubst %/,%,$(dir $(shell grep -rl --include='*.go' -E '^//go:build .*cgo' .))))
# go test shows a passing package's output only with -v: a suite that skips a test for a missing
# tool appends a line to $$REPLAYCHECK_SKIP_LOG, printed here whatever the suites' status.
test: fmt-check vet
	@skips=$$(mktemp) && status=0 && \
	{ REPLAYCHECK_SKIP_LOG=$$skips scripts/untouched.sh bin build -- $(MAKE) --no-print-directory suites || status=$$?; } && \
	if [ -s "$$skips" ]; then echo "make test: skipped:"; sort -u "$$skips" | sed 's/^/  /'; fi; \
	rm -f "$$skips"; exit $$status

# suites: the test suites of make test, without the check that they left the checkout alone. The
# race packages, every other package (a new one lands there unless RACE_PKGS names it) and the
# cgo-free build and packages run at the same time: one after the other, each left a CPU idle
# while its slowest package finished.
suites:
	@race=$$($(GO) list $(RACE_PKGS)) && all=$$($(GO) list ./...) && \
		other=$$(echo "$$all" | grep -vxF -e "$$race") && \
		echo "$(GO) test -race -count=1 $(RACE_PKGS) &" && \
		echo "CGO_ENABLED=0 $(GO) build ./... && CGO_ENABLED=0 $(GO) test -count=1 $(NOCGO_PKGS) $(NOCGO_ARGS) &" && \
		echo "$(GO) test -count=1" $$other && \
		{ $(GO) test -race -count=1 $(RACE_PKGS) & race=$$!; \
		  { CGO_ENABLED=0 $(GO) build ./... && CGO_ENABLED=0 $(GO) test -count=1 $(NOCGO_PKGS) $(NOCGO_ARGS); } & nocgo=$$!; \
		  $(GO) test -count=1 $$other; s1=$$?; wait $$race; s2=$$?; wait $$nocgo; s3=$$?; \
		  [ $$s1 -eq 0 ] && [ $$s2 -eq 0 ] && [ $$s3 -eq 0 ]; }

## check: the inner loop between commits, under two minutes: formatting, vet, and every
## suite once without cgo and without the race detector: the simulator, the engine, the probe
## language, the reports and the CLI. The cgo bindings over the fakes, the plugin loader and the
## race detector are make test's: run it before you push.
check: fmt-check vet
	CGO_ENABLED=0 $(GO) test -count=1 ./...

## bench: benchmarks, each printing ratios against a yardstick measured in the same run, one
## package at a time (-p 1): go test runs packages side by side, and a benchmark sharing the CPUs
## with another package's times neither side of its ratio the way it would run alone.
bench:
	$(GO) test -p 1 -run '^$$' -bench . -benchmem ./...

## fuzz: every fuzz target for $(FUZZTIME) each, one at a time (go test -fuzz takes one target per
## run): the probe loader, oracle against simulator, the engine, the localisation of differences,
## the baseline and journal readers.
## A failure stops it and leaves the input under the package's testdata/fuzz/, where `make test`
## runs it from then on, with the seeds.
FUZZTIME ?= 30s
# Go minimises every input that finds new coverage for up to a minute by default, which would
# eat a short run on the engine's slow targets; a failing input is still minimised this long.
FUZZFLAGS ?= -fuzzminimizetime 2s
FUZZ_TARGETS := ./probes:FuzzParse ./capture:FuzzOracleSimulator ./capture:FuzzEngine \
	./capture:FuzzLocalise ./verdict:FuzzBaseline ./run:FuzzJournal
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; \
		echo "fuzz: $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) $$pkg; \
	done

## device-check: on a device host (NPU or GPU with its driver): devices, the conformance suite on
## the real driver, the catalog in every mode with guards off and on, the reports, the platform's
## baseline under specs/baselines/, and last the table of the profile's unsettled rules measured on
## the device (replaycheck measure specs/measure; see scripts/device-check.sh)
device-check:
	GO=$(GO) scripts/device-check.sh

## device-bundle: for a device host without Go: the CLI and the test binaries device-check runs
## (cgo, stripped) into build/device-bundle/; copy the clone with it and run scripts/device-check.sh
device-bundle:
	@mkdir -p build/device-bundle
	CGO_ENABLED=1 $(GO) build -ldflags='-s -w' -o build/device-bundle/replaycheck ./cmd/replaycheck
	CGO_ENABLED=1 $(GO) test -c -ldflags='-s -w' -o build/device-bundle/cuda.test ./device/cuda
	CGO_ENABLED=1 $(GO) test -c -ldflags='-s -w' -o build/device-bundle/acl.test ./device/acl
	CGO_ENABLED=1 $(GO) test -c -ldflags='-s -w' -o build/device-bundle/capture.test ./capture
	CGO_ENABLED=1 $(GO) test -c -ldflags='-s -w' -o build/device-bundle/watch.test ./watch

## fakes: the fake driver libraries (C, built with $$CC or cc) into build/fake/: libascendcl.so,
## libcuda.so.1, stub/ and missing-<symbol>/ variants, for the cgo bindings' tests without hardware
fakes:
	@$(GO) run ./device/fake/cmd/mkfakes build/fake

## plugins: the seed runtime plugins (C, built with $$CC or cc) into build/plugins/: reference.so, the
## built-in guards' rules for `replaycheck run --runtime`, and one .so per defective variant
plugins:
	@$(GO) run ./runtime/plugin/seed/cmd/mkplugins build/plugins

## interposer: replaycheck watch's interposer (C, built with $$CC or cc) into
## build/watch/libreplaycheck-watch.so; watch builds its own copy in the user cache directory when
## REPLAYCHECK_WATCH_LIB does not name one
interposer:
	@$(GO) run ./watch/interpose/cmd/mkinterposer build/watch

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

clean:
	rm -rf bin build
