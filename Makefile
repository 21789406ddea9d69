# The two commands of the README: `make run` and `make test`. Both install what is missing,
# configure and build first. Everything else here is a helper for them.
BUILD ?= build
FUZZ_BUILD ?= build-fuzz
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
ifdef CI
CMAKE_FLAGS += -DGPUCLOUD_WERROR=ON
endif

.PHONY: run test build fuzz-build fuzz deps install bench clean format

run: build
	$(BUILD)/gpucloud dev $(ARGS)

# The unit and integration tests, then every fuzz target: its seed corpus as a regression test
# and a few seconds of fuzzing (fuzz/README.md).
test: build fuzz-build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 300
	cd $(FUZZ_BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 300

# The fuzz targets: a separate project built with clang++ (libFuzzer, ASan, UBSan).
fuzz-build: deps
	cmake -S fuzz -B $(FUZZ_BUILD) -G Ninja -DCMAKE_CXX_COMPILER=clang++
	cmake --build $(FUZZ_BUILD) -j$(JOBS)

# A long fuzzing session of one target: make fuzz TARGET=job_spec_json SECONDS=3600 [WORKERS=4]
fuzz: fuzz-build
	fuzz/run_long.sh $(FUZZ_BUILD) $(TARGET) $(or $(SECONDS),600) $(or $(WORKERS),$(JOBS))

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

deps:
	@scripts/install-deps.sh

install: build
	cmake --install $(BUILD) --prefix $(or $(PREFIX),/usr/local)

bench: build
	$(BUILD)/bench/bench_dev_throughput

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h' '*.c')

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD)
