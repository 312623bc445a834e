#!/usr/bin/python3
"""Every program the tests, `make package` and the scripts call is installed by
scripts/install-deps (or pulled in by a package it installs), or comes with a minimal Debian root
(debootstrap --variant=minbase: the Essential and Priority: required packages). A tool that merely
happens to be on this machine (as file(1) was for CPack's .deb generator) fails here, naming the
package to add.

    tools_check.py SOURCE_DIR [DPKG_ADMIN_DIR]

Exit 0 when every tool is accounted for, 1 otherwise (one line per tool that is not), 2 on bad
arguments.
"""
import os
import shutil
import sys

from debian_packages import (brought_packages, file_owners, install_deps_list, parse_status,
                             unbrought_owners)

# The tools, each with who calls it. A tool optional to its caller (the caller skips with a
# reason when it is absent) is not listed. Add a tool here when a test or script starts calling it.
TOOLS = [
    # build and packaging (make test, make package)
    "cmake", "ninja", "make", "g++", "gcc", "clang", "pkg-config", "git", "cpack",
    "dpkg-shlibdeps", "dpkg-deb", "file", "objdump", "readelf",
    # the real servers of the integration tests (tests/harness/servers.cc)
    "nginx", "haproxy", "prometheus", "promtool", "node", "npm", "socat",
    # called by tests and scripts (python3 by absolute path: the tests use Debian's)
    "/usr/bin/python3", "openssl", "curl", "sqlite3", "zstd", "xz", "tar", "diff", "timeout",
    "ps", "ss", "ip", "flock", "unshare", "mount", "chroot", "ldd", "stat", "truncate", "dd",
    "awk", "sed", "grep", "chromium", "hey",
    # the cluster suite's tests: mpirun, and a cluster of network namespaces shaped with tc
    "mpirun", "mpicc", "tc", "bridge", "nsenter",
    # datasync's unprivileged re-pull, the soak's CPU hog
    "setpriv", "taskset",
    # scripts/bare-root-check
    "debootstrap",
]


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: tools_check.py SOURCE_DIR [DPKG_ADMIN_DIR]", file=sys.stderr)
        return 2
    src, admin = argv[1], argv[2] if len(argv) == 3 else "/var/lib/dpkg"
    packages = parse_status(admin)
    brought = brought_packages(install_deps_list(src), packages)

    owners = file_owners(admin)
    bad = 0
    for tool in TOOLS:
        path = tool if tool.startswith("/") else shutil.which(tool)
        if not path or not os.path.exists(path):
            print(f"tools: {tool} is not installed")
            bad += 1
            continue
        owned, lacking = unbrought_owners(path, owners, brought)
        if not owned:
            print(f"tools: {tool} ({os.path.realpath(path)}) belongs to no Debian package: "
                  "install-deps cannot bring it to a fresh machine")
            bad += 1
        elif lacking:
            package = sorted(lacking)[0]
            print(f"tools: {tool} comes from package {package} "
                  f"(priority {packages.get(package, ('?',))[0]}), "
                  "which scripts/install-deps does not install")
            bad += 1
    if bad == 0:
        print(f"tools: all {len(TOOLS)} tools come from install-deps or a minimal Debian root")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
