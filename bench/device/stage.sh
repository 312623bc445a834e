#!/usr/bin/env bash
# Stages what bench/device/run.sh needs on a GPU host into one folder to carry there (the device
# machine has no package installs and no network, and CUDA code is built here):
#
#   bench/device/stage.sh [BUILD_DIR] [CARRY_DIR]     (defaults: build, .device-carry)
#
# CARRY_DIR/bin/cutover                     the binary, stripped (5 MB instead of 130)
# CARRY_DIR/bin/libcutover_compat_cuda.so   the CUDA plugin, stripped, beside it (where the
#                                           loader looks first)
# CARRY_DIR/bin/libcutover_compat_mpi.so    the MPI plugin, stripped (when built; the cluster
#                                           step uses it with the host's own mpirun)
# CARRY_DIR/bin/compat_cuda_plugin_test     the plugin's GPU tests, stripped (when built)
# CARRY_DIR/lib/                            cutover's shared libraries other than glibc's
#                                           (libcurl, libsqlite3, libcrypto and theirs); run.sh
#                                           uses them only when the host lacks one
# The NVIDIA libraries (libcudart.so.13, libcublas(Lt).so.13, libcudnn.so.9, libnccl.so.2, a few
# hundred MB) are NOT carried: run.sh finds the host's (the CUDA toolkit's or PyTorch's pip
# packages). .gitignore ignores .device-carry, so the device tool can carry it: name it in
# `carry`.
set -euo pipefail

build=${1:-build}
carry=${2:-.device-carry}
die() {
  echo "stage.sh: $*" >&2
  exit 2
}

[[ -x "$build/apps/cutover/cutover" ]] || die "no $build/apps/cutover/cutover: build it first (cmake --build $build --target cutover cutover_compat_cuda)"
[[ -f "$build/apps/cutover/libcutover_compat_cuda.so" ]] || die "no CUDA plugin in $build/apps/cutover: configure with -DCUTOVER_CUDA=ON or AUTO on a host with the CUDA toolkit"
command -v strip >/dev/null || die "strip (binutils) is not installed"

rm -rf "$carry"
mkdir -p "$carry/bin" "$carry/lib"
strip -o "$carry/bin/cutover" "$build/apps/cutover/cutover"
strip -o "$carry/bin/libcutover_compat_cuda.so" "$build/apps/cutover/libcutover_compat_cuda.so"
# The MPI plugin for the cluster step (it runs only where the GPU host has its own mpirun).
if [[ -f "$build/apps/cutover/libcutover_compat_mpi.so" ]]; then
  strip -o "$carry/bin/libcutover_compat_mpi.so" "$build/apps/cutover/libcutover_compat_mpi.so"
fi
if [[ -x "$build/tests/compat/compat_cuda_plugin_test" ]]; then
  strip -o "$carry/bin/compat_cuda_plugin_test" "$build/tests/compat/compat_cuda_plugin_test"
fi

# glibc's, GCC's runtime (any newer one runs what we built) and the NVIDIA libraries stay on
# the host.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libstdc\+\+|libgcc_s|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libcuda|libcublas|libcudnn|libnccl|libnvidia)'
for exe in "$carry/bin/cutover" "$carry/bin/compat_cuda_plugin_test"; do
  [[ -f "$exe" ]] || continue
  while read -r name _ path _; do
    [[ "$name" =~ $skip ]] && continue
    [[ -f "${path:-}" ]] || continue
    [[ -f "$carry/lib/$name" ]] || cp -L "$path" "$carry/lib/$name"
  done < <(ldd "$exe" | grep '=>')
done

# The device tool carries only ignored paths (.gitignore names .device-carry); another folder
# must be ignored by hand.
if command -v git >/dev/null && ! git check-ignore -q "$carry/bin/cutover" 2>/dev/null; then
  echo "stage.sh: $carry is not ignored by git: add it to .gitignore or .git/info/exclude to carry it" >&2
fi
du -sh "$carry" | awk '{print "stage.sh: " $2 " holds " $1 " (the device tool carries at most 64 MiB in all)"}'
