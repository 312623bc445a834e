#!/usr/bin/python3
"""Every file the build reads from outside the source tree, the build tree and the CUDA toolkit
comes from a Debian package that scripts/install-deps brings (debian_packages.py says which
those are). A library, header or CMake package that merely happens to be on this machine (as
OpenCL's were for Debian's oneDNN CMake package) fails here, naming the package to add.

    build_deps_check.py [--without PKG,...] SOURCE_DIR BINARY_DIR [DPKG_ADMIN_DIR]

--without takes packages off install-deps' list, as if it did not name them: the test that the
guard fails when a package is missing runs it so.

What the build reads, three ways:
  - a scratch configure with BINARY_DIR's options (compilers, CUTOVER_*), traced by CMake
    (--trace-expand, JSON): every CMake file it runs, every existing file named in an expanded
    argument, and each find_path result joined with the names it looked for;
  - BINARY_DIR's compiler dependency files (`ninja -t deps`): every header each object included;
  - BINARY_DIR's link lines (build.ninja): every library file and -l name, resolved by the
    compiler as the linker would.

Exit 0 when every file is accounted for, 1 otherwise (one line per package, with a file of it
and what read it), 2 on bad arguments or a configure that fails.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

from debian_packages import (brought_packages, file_owners, install_deps_list, parse_status,
                             unbrought_owners)

# Options of BINARY_DIR passed on to the scratch configure: what decides which packages it reads.
CACHE_OPTIONS = ("CMAKE_C_COMPILER", "CMAKE_CXX_COMPILER", "CMAKE_BUILD_TYPE", "CUTOVER_CUDA",
                 "CUTOVER_CPU_LIBS", "CUTOVER_SANITIZE", "CUTOVER_FUZZ", "CUTOVER_BENCH",
                 "CUTOVER_TESTS", "CUTOVER_STATIC_CXX_RUNTIME", "CUTOVER_CCACHE")
# Not Debian's to supply: the CUDA toolkit (and cuDNN/NCCL beside it) is NVIDIA's download.
OUTSIDE_DEBIAN = ("/usr/local/cuda",)


def read_cache(binary_dir):
    values = {}
    with open(os.path.join(binary_dir, "CMakeCache.txt"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"([A-Za-z0-9_.+-]+):([A-Z]+)=(.*)$", line.rstrip("\n"))
            if m:
                values[m.group(1)] = m.group(3)
    return values


def cmake_own(where):
    """CMake's own modules and its compiler detection files. What they look for is optional to
    them (LLVM's binutils for clang when a machine has them, else GNU's; every CUDA library
    FindCUDAToolkit can see), so their arguments are not evidence of a need: what the build then
    uses of it shows up in its link lines and compiler dependencies, which are checked."""
    return re.search(r"/share/cmake-[0-9.]+/|/CMakeFiles/[0-9.]+/", where) is not None


def traced_configure(src, cache, scratch):
    """Files a configure with CACHE's options reads: (path, who) pairs."""
    trace = os.path.join(scratch, "trace.json")
    args = ["cmake", "-S", src, "-B", os.path.join(scratch, "build"), "-G", "Ninja",
            "--trace-expand", "--trace-format=json-v1", "--trace-redirect=" + trace]
    args += ["-D%s=%s" % (k, cache[k]) for k in CACHE_OPTIONS if k in cache]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-15:])
        raise RuntimeError("the scratch configure failed (exit %d):\n%s" % (run.returncode, tail))
    scratch_cache = read_cache(os.path.join(scratch, "build"))
    files = []
    with open(trace, encoding="utf-8", errors="replace") as f:
        for line in f:
            entry = json.loads(line)
            where = entry.get("file")
            if not where:
                continue
            files.append((where, "cmake runs it"))
            cmd, cargs = entry.get("cmd", "").lower(), entry.get("args", [])
            who = "%s:%s %s" % (where, entry.get("line"), cmd)
            if cmake_own(where):
                continue
            for a in cargs:
                for piece in a.split(";"):
                    if piece.startswith("/") and os.path.isfile(piece):
                        files.append((piece, who))
            if cmd == "find_path" and cargs:
                found = scratch_cache.get(cargs[0], "")
                if found and os.path.isdir(found):
                    for name in cargs[1:]:
                        if os.path.isfile(os.path.join(found, name)):
                            files.append((os.path.join(found, name), who))
    return files


def compiler_deps(binary_dir):
    """Headers and sources each built object read, from ninja's dependency log."""
    run = subprocess.run(["ninja", "-C", binary_dir, "-t", "deps"], capture_output=True,
                         text=True)
    if run.returncode != 0:
        raise RuntimeError("ninja -t deps failed: " + run.stderr.strip())
    files, target = [], None
    for line in run.stdout.splitlines():
        if line and not line.startswith(" "):
            target = line.split(":")[0]
        elif line.strip():
            path = os.path.normpath(os.path.join(binary_dir, line.strip()))
            files.append((path, "compiling " + (target or "?")))
    return files


def link_inputs(binary_dir, compiler):
    """Libraries on the link lines of build.ninja, -l names resolved as the linker would."""
    files, seen, target = [], set(), None
    with open(os.path.join(binary_dir, "build.ninja"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("build "):
                target = line.split(":")[0][len("build "):]
            elif line.startswith("  LINK_LIBRARIES = "):
                for tok in shlex.split(line.split("=", 1)[1]):
                    if tok.startswith("-Wl,"):
                        continue
                    if tok.startswith("-l"):
                        name = tok[2:]
                        if name in seen:
                            continue
                        seen.add(name)
                        for suffix in (".so", ".a"):
                            out = subprocess.run([compiler, "-print-file-name=lib%s%s" %
                                                  (name, suffix)], capture_output=True,
                                                 text=True).stdout.strip()
                            if out.startswith("/") and os.path.exists(out):
                                files.append((os.path.normpath(out), "linking " + target))
                                break
                    elif tok.startswith("/") and os.path.isfile(tok):
                        files.append((tok, "linking " + target))
    return files


def main(argv):
    without = set()
    if len(argv) > 2 and argv[1] == "--without":
        without = set(argv[2].split(","))
        argv = argv[:1] + argv[3:]
    if len(argv) not in (3, 4):
        print("usage: build_deps_check.py [--without PKG,...] SOURCE_DIR BINARY_DIR "
              "[DPKG_ADMIN_DIR]", file=sys.stderr)
        return 2
    src, binary_dir = os.path.realpath(argv[1]), os.path.realpath(argv[2])
    admin = argv[3] if len(argv) == 4 else "/var/lib/dpkg"
    if not os.path.isfile(os.path.join(binary_dir, "CMakeCache.txt")):
        print("build-deps: %s is not a configured build tree (no CMakeCache.txt)" % binary_dir)
        return 2
    cache = read_cache(binary_dir)
    packages = parse_status(admin)
    listed = [p for p in install_deps_list(src) if p not in without]
    brought = brought_packages(listed, packages)
    owners = file_owners(admin)

    with tempfile.TemporaryDirectory(prefix="cutover-build-deps-") as scratch:
        try:
            files = traced_configure(src, cache, scratch)
            files += compiler_deps(binary_dir)
            files += link_inputs(binary_dir, cache.get("CMAKE_CXX_COMPILER", "c++"))
        except RuntimeError as e:
            print("build-deps: " + str(e))
            return 2
        skip = (src + "/", binary_dir + "/", scratch + "/") + OUTSIDE_DEBIAN
        missing, unowned, checked = {}, {}, set()
        for path, who in files:
            if path in checked:
                continue
            checked.add(path)
            real = os.path.realpath(path)
            if path.startswith(skip) or real.startswith(skip):
                continue
            owned, lacking = unbrought_owners(path, owners, brought)
            if not owned:
                unowned.setdefault(path, who)
            for package, owned_path in lacking.items():
                missing.setdefault(package, (owned_path, who))

    for package, (path, who) in sorted(missing.items()):
        print("build-deps: %s comes from package %s (%s), which scripts/install-deps does not "
              "install" % (path, package, who))
    for path, who in sorted(unowned.items()):
        print("build-deps: %s belongs to no Debian package (%s): install-deps cannot bring it "
              "to a fresh machine" % (path, who))
    if missing or unowned:
        return 1
    print("build-deps: all %d files the build reads come from install-deps, a minimal Debian "
          "root, the CUDA toolkit or the trees" % len(checked))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
