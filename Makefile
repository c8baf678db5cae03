# Thin wrapper: CMake builds, ctest tests. `make demo` and `make test` each do
# the whole set-up on a fresh Debian machine (missing packages via apt-get).
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= 2
CMAKE_FLAGS ?=
DEB_PACKAGES = cmake make gcc pkg-config libsqlite3-dev libjansson-dev libssl-dev libpq-dev \
               libuv1-dev libcmocka-dev libhttp-parser-dev libsystemd-dev libcurl4-openssl-dev
# The tests also need a browser (the report test opens index.html) and the
# interpreters of the example plugins, and nginx (the mirror test):
# command=package, installed when the command is missing.
TEST_COMMANDS = chromium=chromium python3=python3 node=nodejs nginx=nginx-light
# Packages the tests need whose commands are off PATH: the PostgreSQL server
# (initdb, pg_ctl in /usr/lib/postgresql/N/bin) the PostgreSQL log's tests
# start (psql comes with it).
TEST_PACKAGES = postgresql
# The fuzz targets only: clang, and libFuzzer (Debian ships it in clang's runtime).
FUZZ_PACKAGES = clang libclang-rt-14-dev
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
# promtool (test_metrics runs `promtool check metrics` on a scrape) comes from
# Debian's prometheus package, extracted into the build tree: installing the
# package would start a Prometheus service.
PROMTOOL   ?= $(abspath $(BUILD))/tools/promtool

.PHONY: all deps test-deps configure build test test-unit sanitize fuzz-build fuzz fuzz-regress demo bench \
        clean format

all: build

deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(DEB_PACKAGES)"

test-deps: deps
	@need=""; for pair in $(TEST_COMMANDS); do \
	  command -v $${pair%%=*} >/dev/null 2>&1 || need="$$need $${pair#*=}"; \
	done; \
	if [ -n "$$need" ]; then $(MAKE) --no-print-directory install-packages PACKAGES="$$need"; fi
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(TEST_PACKAGES)"
	@./scripts/get-promtool.sh $(PROMTOOL)

install-packages:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DUST_WERROR=ON $(CMAKE_FLAGS)

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j$(JOBS)

test: test-deps build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# tests/unit alone (ctest label `unit`: no process, no socket), and only what
# they need built: a minute at most, for the edit-compile-test loop.
test-unit: configure
	cmake --build $(BUILD) -j$(JOBS) --target unit_suites
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) -L '^unit$$'

# The whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
sanitize: test-deps
	cmake -S . -B $(ASAN_BUILD) -DUST_WERROR=ON -DUST_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
	  -DUST_PROMTOOL=$(PROMTOOL)
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j$(JOBS)

# libFuzzer targets (tests/fuzz, docs/fuzzing.md) in a clang ASan + UBSan tree.
fuzz-build:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(DEB_PACKAGES) $(FUZZ_PACKAGES)"
	cmake -S . -B $(FUZZ_BUILD) -DUST_WERROR=ON -DUST_FUZZ=ON -DCMAKE_C_COMPILER=clang \
	  -DCMAKE_BUILD_TYPE=Debug
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzz_all

# Each target for FUZZ_SECONDS (FUZZ_TARGETS="config idem_key" picks some);
# new inputs go to $(FUZZ_BUILD)/fuzz-work/, never into the repository.
fuzz: fuzz-build
	./tests/fuzz/run.sh fuzz $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# Every corpus file once through its target (CI): a crash fails.
fuzz-regress: fuzz-build
	./tests/fuzz/run.sh regress $(FUZZ_BUILD) $(FUZZ_TARGETS)

# The demo's in-line run has the example service (Python) as its legacy.
demo: build
	@command -v python3 >/dev/null 2>&1 || $(MAKE) --no-print-directory install-packages PACKAGES=python3
	./scripts/demo.sh $(BUILD)

bench: build
	./tests/bench/run.sh $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) var
