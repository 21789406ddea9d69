# The two commands of the README: `make run` and `make test`. Both install what is missing,
# configure and build first. Everything else here is a helper for them.
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
ifdef CI
CMAKE_FLAGS += -DGPUCLOUD_WERROR=ON
endif

.PHONY: run test build deps install bench clean format

run: build
	$(BUILD)/gpucloud dev $(ARGS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 300

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
	rm -rf $(BUILD)
