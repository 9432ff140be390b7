# idemlab: `make` lists the targets. Everything needs only Go.
SHELL := /bin/bash
GO    ?= go
# Packages tested by `make test`: everything except the student's stages,
# which are meant to fail until solved (the ladder test proves they do).
KIT_PKGS = $$($(GO) list ./... | grep -v -e '/stages/' -e '/grader/ladder')

# The ladder builds and runs every stage and every mutant in
# one test binary: go test's default limit of ten minutes a package is
# too close for it on a busy machine, under -race or on PostgreSQL.
LADDER_TIMEOUT = 30m

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@echo "idemlab — make a money-transfer API safe to retry"
	@echo
	@grep -hE '^[a-zA-Z0-9_%-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([^:]+):.*## /\1\t/' | awk -F'\t' '{ printf "  %-16s %s\n", $$1, $$2 }'
	@echo
	@echo "  stage-N takes SEED=<n> to repeat a run and RUN=<check id> to run one check."

# The demo's right side: make demo STAGE=N, from the command line only. A
# STAGE left in the shell's environment (an export for make serve, a
# stray STAGE=) does not change what the class sees.
DEMO_STAGE = $(if $(filter command line,$(origin STAGE)),$(if $(STAGE),--stage $(STAGE)))

.PHONY: demo
demo: ## the classroom demo: naive vs safe server, side by side (plain text when not on a terminal; make demo STAGE=N: stage N on the right)
	@if [ -t 1 ]; then $(GO) run ./cmd/lab demo $(DEMO_STAGE); else $(GO) run ./cmd/lab demo $(DEMO_STAGE) --plain --duration 10s; fi

.PHONY: test
test: lint ## everything CI runs: format, vet, kit and grader tests, solutions, the ladder test
	$(GO) test -count=1 $(KIT_PKGS)
	@echo "without PostgreSQL, as make stage-N and make watch build the checks on SQLite:"
	$(GO) test -count=1 -tags nopostgres ./kit/labdb ./solutions/stage9
	@[ -n "$$IDEMLAB_DATABASE_URL" ] || echo "postgres: skipped, IDEMLAB_DATABASE_URL is not set (make test-pg runs the tests on a throwaway PostgreSQL)"
	@echo "ladder: every stage passes its checks, and the stage before fails all but the declared guards; every mutant is caught"
	@set -o pipefail; $(GO) test -count=1 -timeout $(LADDER_TIMEOUT) -v ./grader/ladder | grep -v -E '^(=== (RUN|PAUSE|CONT)|    --- PASS|--- PASS)' 

# The packages make test-pg runs on PostgreSQL: the engine's own tests, the
# kit that runs on it, the solutions' checks, the demo's servers, and the
# ladder with its mutants; and lab grade's --db on the cluster (PG_LAB_TESTS:
# the rest of cmd/lab stays on SQLite, the audit examples' SQL is SQLite's).
PG_PKGS = ./kit/labdb ./kit/pgdb ./kit/server ./kit/core ./solutions/... ./dashboard/backend
PG_LAB_TESTS = TestGrade_|TestFreshDB_

.PHONY: test-pg pg-tests
test-pg: ## the kit, the solutions, the ladder and the mutants on a throwaway PostgreSQL cluster of their own (scripts/pg-cluster.sh)
	@scripts/pg-cluster.sh $(MAKE) --no-print-directory pg-tests

# pg-tests runs the PostgreSQL tests on the cluster IDEMLAB_DATABASE_URL
# names; make test-pg starts one for it.
# Each server on PostgreSQL holds a pool of connections: two packages at a
# time, four checks each, stay well within the cluster's max_connections
# however many cores the machine has.
PG_PARALLEL = -p 2 -parallel 4

pg-tests:
	@[ -n "$$IDEMLAB_DATABASE_URL" ] || { echo "pg-tests: set IDEMLAB_DATABASE_URL, or run make test-pg"; exit 2; }
	$(GO) test -count=1 $(PG_PARALLEL) $(PG_PKGS)
	$(GO) test -count=1 $(PG_PARALLEL) -run '$(PG_LAB_TESTS)' ./cmd/lab
	@echo "ladder on postgres: every stage passes its checks, and the stage before fails all but the declared guards; every mutant is caught"
	@set -o pipefail; $(GO) test -count=1 -timeout $(LADDER_TIMEOUT) -v ./grader/ladder | grep -v -E '^(=== (RUN|PAUSE|CONT)|    --- PASS|--- PASS)'

.PHONY: test-race
test-race: ## make test's packages and the ladder under the race detector (-race needs a C compiler)
	$(GO) test -race -count=1 -timeout $(LADDER_TIMEOUT) $(KIT_PKGS) ./grader/ladder

.PHONY: lint
lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

stage-%: lab ## run the checks of stage N (0..9) against YOUR code in stages/stageN, and record your progress
	@SEED="$(SEED)" RUN="$(RUN)" exec bin/lab check $*

solution-%: lab ## run the checks of stage N against the reference solution
	@SEED="$(SEED)" RUN="$(RUN)" exec bin/lab check --solution $*

# The student's loop: N= picks a stage; without it, the first stage that
# does not pass yet.
.PHONY: status watch hint docs diff reset
status: lab ## where each stage stands: not started, failing (on which check), passing
	@exec bin/lab status
watch: lab ## rerun a stage's checks on every save: make watch N=1
	@exec bin/lab watch $(N)
hint: lab ## a hint for the first failing check, one step more each time: make hint N=1
	@exec bin/lab hint $(N)
docs: lab ## a stage's lesson in the terminal: make docs N=1
	@exec bin/lab docs $(N)
diff: lab ## your stage against the reference solution (asks first until it passes): make diff N=1
	@exec bin/lab diff $(N)
reset: lab ## the untouched scaffold of a stage back, yours kept in .idemlab/backup: make reset N=1 (YES=1: without asking; FROM=COMMIT: the scaffold of that commit, if you committed your own work)
	@exec bin/lab reset $(if $(YES),--yes) $(if $(FROM),--from $(FROM)) $(N)

.PHONY: lab
lab: ## build the lab command into bin/lab (then: bin/lab help)
	@$(if $(wildcard bin/lab),,echo "building the lab command (bin/lab): the first build compiles the kit, about half a minute" >&2)
	@$(GO) build -o bin/lab ./cmd/lab

.PHONY: serve
serve: lab ## serve your stage: make serve STAGE=3 (add SOLUTION=1 for the reference)
	@exec bin/lab serve --stage $(or $(STAGE),0) $(if $(SOLUTION),--solution)

.PHONY: grade
grade: lab ## grade your stage N in child processes: make grade STAGE=3 (SEED=, RUN= as for stage-N)
	@exec bin/lab grade --stage $(or $(STAGE),0) $(if $(SOLUTION),--solution) $(if $(SEED),--seed $(SEED)) $(if $(RUN),--run $(RUN))

.PHONY: audit audit-examples
audit: lab ## grade an idempotency middleware through its adapter: make audit PKG=./audit/examples/final (docs/audit.md)
	@exec bin/lab audit --pkg $(or $(PKG),./audit/examples/final) $(if $(SEED),--seed $(SEED)) $(if $(RUN),--run $(RUN))

audit-examples: lab ## the audits of the example middlewares: naive (money harmed), final (clean), aftercommit, nomarker (no money finding), sharedscope, heldlock, successonly (money moved though refused)
	-@bin/lab audit --pkg ./audit/examples/naive $(if $(SEED),--seed $(SEED))
	@bin/lab audit --pkg ./audit/examples/final $(if $(SEED),--seed $(SEED))
	-@bin/lab audit --pkg ./audit/examples/aftercommit $(if $(SEED),--seed $(SEED))
	@bin/lab audit --pkg ./audit/examples/nomarker $(if $(SEED),--seed $(SEED))
	-@bin/lab audit --pkg ./audit/examples/sharedscope $(if $(SEED),--seed $(SEED))
	-@bin/lab audit --pkg ./audit/examples/heldlock $(if $(SEED),--seed $(SEED))
	-@bin/lab audit --pkg ./audit/examples/successonly $(if $(SEED),--seed $(SEED))

.PHONY: conform-examples
conform-examples: lab ## lab conform through the public API only: stage 9, stage 0, two small APIs of its own (one restarted) and the seven audit examples, each with its expected verdict (docs/conform.md)
	@scripts/conform-examples.sh bin/lab

.PHONY: gen
gen: ## generate a day plan into a file, and say which: make gen SEED=7 OPS=1000 (OUT=, else tmp/day-SEED-OPS.plan.jsonl)
	@mkdir -p $(dir $(or $(OUT),tmp/))
	$(GO) run ./cmd/lab gen --seed $(or $(SEED),1) --ops $(or $(OPS),1000) -o $(or $(OUT),tmp/day-$(or $(SEED),1)-$(or $(OPS),1000).plan.jsonl)

.PHONY: scoreboard
scoreboard: lab ## one day against every stage, one row each: make scoreboard (SEED=, OPS=; MINE=1 for your stages)
	@exec bin/lab scoreboard --seed $(or $(SEED),7) --ops $(or $(OPS),2000) $(if $(MINE),--mine)

.PHONY: replay-demo
replay-demo: lab ## a day played into lab dash at classroom speed: make replay-demo (STAGE=0..9, RATE= operations a second, OPS=, PORT=)
	@command -v curl >/dev/null || { echo "replay-demo: curl is needed to wait for the server (and by the curl examples of docs/api.md)"; exit 1; }
	@mkdir -p tmp
	@bin/lab gen --seed $(or $(SEED),7) --ops $(or $(OPS),600) -o tmp/replay-demo.plan.jsonl
	@url=http://127.0.0.1:$(or $(PORT),8090); token=replay-demo-$$$$-$$(date +%s); \
	  if curl -s -o /dev/null $$url/healthz; then echo "replay-demo: something already answers on $$url (a lab server left running?): stop it, or pick another port with PORT="; exit 1; fi; \
	  bin/lab serve --stage $(or $(STAGE),6) --solution --db :memory: --addr 127.0.0.1:$(or $(PORT),8090) --admin-token $$token >tmp/replay-demo.serve.log 2>&1 & server=$$!; \
	  trap 'kill $$server $$replay 2>/dev/null' EXIT INT TERM; \
	  until curl -fs $$url/healthz >/dev/null 2>&1; do kill -0 $$server 2>/dev/null || { cat tmp/replay-demo.serve.log; exit 1; }; sleep 0.1; done; \
	  bin/lab replay --log tmp/replay-demo.plan.jsonl --url $$url --admin-token $$token --rate $(or $(RATE),10) --clients 8 >tmp/replay-demo.report.txt 2>&1 & replay=$$!; \
	  bin/lab dash --url $$url --token $$token; \
	  if kill -0 $$replay 2>/dev/null; then echo "replay-demo: the dashboard closed before the day ended, which stops the replay: no report (it is written once the last operation has run)"; \
	  else echo "the replay's report: tmp/replay-demo.report.txt"; fi

# The timelines docs/timelines keeps: stage:check, each the characteristic
# failure of that stage's untouched scaffold.
TIMELINES = 1:S1.concurrent-duplicates 3:S3.retry-during-original 6:S6.crash-recovery 8:S8.two-clerks 9:S9.posted-once

.PHONY: timelines
timelines: ## redraw docs/timelines from real runs of the untouched scaffolds of stages 1, 3, 6, 8 and 9 (SEED=, default 42)
	@set -e; for t in $(TIMELINES); do n=$${t%%:*}; id=$${t#*:}; rm -f docs/timelines/$$id.html; \
	  IDEMLAB_TIMELINES=$(CURDIR)/docs/timelines SEED=$(or $(SEED),42) RUN=$$id $(GO) test -tags nopostgres -count=1 -run TestStage ./stages/stage$$n >/dev/null || true; \
	  [ -f docs/timelines/$$id.html ] || { echo "timelines: $$id on stages/stage$$n drew no timeline (is the scaffold untouched?)"; exit 1; }; \
	  echo "docs/timelines/$$id.html"; done

.PHONY: datasets
datasets: ## regenerate the larger days into datasets/large/
	$(GO) run ./cmd/lab datasets

# The fuzz targets, as package:target; -fuzz takes one target at a time.
FUZZ_TARGETS = kit/request:FuzzTransfer kit/request:FuzzDeposit kit/request:FuzzSettings kit/idemkey:FuzzParse kit/canonical:FuzzTransform
FUZZTIME ?= 30s

.PHONY: fuzz
fuzz: ## fuzz the body, key and canonical-form decoders, FUZZTIME each (default 30s); a crasher lands in testdata/fuzz
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "fuzz $${t#*:} for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) ./$${t%%:*}; \
	done

# The soak's size: operations in each soak day, and kills under load.
SOAK_OPS   ?= 15000
SOAK_KILLS ?= 10

.PHONY: soak
soak: ## the long tests (docs/reliability.md): kill -9 under load, duplicate load, a large day of faults (SOAK_OPS, SOAK_KILLS, SEED), then make fuzz
	@set -o pipefail; $(GO) test -count=1 -timeout 30m -v ./soak -soak -soak.ops $(SOAK_OPS) -soak.kills $(SOAK_KILLS) $(if $(SEED),-soak.seed $(SEED)) \
	  | grep -v -E '^=== (RUN|PAUSE|CONT)'
	@$(MAKE) --no-print-directory fuzz

.PHONY: delivery-check
delivery-check: ## stage 9 under 64 clients for 30 s: the core down twice, flapping, one posting rejected for good, the server killed -9; one line of figures; fails on a double, a loss, or a lag p99 over 1 s outside the outages (core down, server dead; docs/reliability.md) (on PostgreSQL: scripts/pg-cluster.sh make delivery-check)
	@set -o pipefail; $(GO) test -count=1 -timeout 10m -run '^TestDeliveryCheck$$' -v ./soak -delivery \
	  | grep -v -E '^(=== (RUN|PAUSE|CONT)|--- PASS|PASS$$|ok )'

# BENCH_ROUNDS rounds of every transfer benchmark, taking turns; the summary
# shows each one's median round and, on its last line, the ratios
# (docs/benchmarks.md).
BENCH_ROUNDS ?= 3

.PHONY: bench bench-pg bench-transfers bench-day
bench: ## benchmarks: the dashboard's ingest; naive and final at 1, 8, 64 clients and the engine's ceiling, ratios last
	$(GO) test -run '^$$' -bench . -benchmem ./dashboard
	@$(MAKE) --no-print-directory bench-transfers

bench-pg: ## make bench's transfer benchmarks on a throwaway PostgreSQL cluster (scripts/pg-cluster.sh; BENCH_ROUNDS as for bench)
	@scripts/pg-cluster.sh $(MAKE) --no-print-directory bench-transfers

bench-day: ## a whole day of faults (OPS operations, default 100,000; SEED=; CLIENTS= at once, default 4) replayed against the final solution in this process and reconciled: seconds per day, and of them those after the last answer
	$(GO) test -run '^$$' -bench Day -benchtime 1x -timeout 30m ./bench/day -args -ops $(or $(OPS),100000) -seed $(or $(SEED),7) -clients $(or $(CLIENTS),4)

# bench-transfers: naive, final and ceiling, on SQLite files, or on the
# PostgreSQL cluster IDEMLAB_DATABASE_URL names.
bench-transfers:
	@set -o pipefail; $(GO) test -run '^$$' -bench . -benchmem -benchtime 5000x ./bench -args -rounds $(BENCH_ROUNDS) \
	  | awk '/^bench: /{ summary = summary $$0 "\n"; next } { print } END { printf "%s", summary }'
