# Thin wrapper over scripts/install-deps, CMake and CTest. The two commands of the quick start:
#   make demo   install deps, configure, build the cutover binary, run the main job on this host
#   make test   install deps, configure (CUDA AUTO), build, run every test with ctest
# and `make package`: the .deb packages and the tarball, into $(BUILD)/packages/.
BUILD      ?= build
CUDA       ?= AUTO
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
FUZZ_SECONDS ?= 10

.PHONY: all deps configure build test unit demo package bench fuzz sanitize clean

all: build

deps:
	@scripts/install-deps

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCUTOVER_CUDA=$(CUDA) $(CMAKE_ARGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

unit: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -L unit

# The demo runs only the cutover binary: build that target, not every test.
demo: configure
	@cmake --build $(BUILD) -j $(JOBS) --target cutover
	@scripts/demo $(BUILD)

# The .deb packages and the tarball (cmake/Packaging.cmake) into $(BUILD)/packages/.
package: configure
	@cmake --build $(BUILD) -j $(JOBS) --target cutover
	@cd $(BUILD) && cpack >/dev/null
	@ls -1 $(BUILD)/packages/*.deb $(BUILD)/packages/*.tar.gz

bench: deps
	@cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUTOVER_BENCH=ON \
	  -DCUTOVER_TESTS=OFF -DCUTOVER_CUDA=$(CUDA) $(CMAKE_ARGS) >/dev/null
	@cmake --build build-bench -j $(JOBS) --target run_benchmarks

fuzz: deps
	@CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCUTOVER_FUZZ=ON -DCUTOVER_CUDA=OFF \
	  -DCUTOVER_FUZZ_SECONDS=$(FUZZ_SECONDS) $(CMAKE_ARGS) >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzz

sanitize: deps
	@cmake -S . -B build-asan -G Ninja -DCUTOVER_SANITIZE=address,undefined -DCUTOVER_CUDA=OFF \
	  -DCUTOVER_CPU_LIBS=OFF \
	  $(CMAKE_ARGS) >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir build-asan --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) build-bench build-fuzz build-asan
