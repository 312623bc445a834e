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
import subprocess
import sys

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
]


def parse_status(admin):
    """Installed packages: name -> (priority, essential, [dependency names])."""
    packages, fields = {}, {}

    def flush():
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            deps = []
            for key in ("Depends", "Pre-Depends"):
                for item in fields.get(key, "").replace("|", ",").split(","):
                    name = item.strip().split(" ")[0].split(":")[0]
                    if name:
                        deps.append(name)
            provides = [p.strip().split(" ")[0] for p in fields.get("Provides", "").split(",")]
            packages[fields["Package"]] = (fields.get("Priority", ""),
                                           fields.get("Essential", "no"), deps,
                                           [p for p in provides if p])

    with open(os.path.join(admin, "status"), encoding="utf-8", errors="replace") as f:
        key = None
        for line in f:
            line = line.rstrip("\n")
            if not line:
                flush()
                fields, key = {}, None
            elif line[0] in " \t" and key:
                fields[key] += " " + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        flush()
    return packages


def file_owners(admin):
    """Path -> package, from the .list files; merged-/usr paths under both names."""
    owners = {}
    info = os.path.join(admin, "info")
    for name in os.listdir(info):
        if not name.endswith(".list"):
            continue
        package = name[: -len(".list")].split(":")[0]
        with open(os.path.join(info, name), encoding="utf-8", errors="replace") as f:
            for path in f:
                path = path.rstrip("\n")
                owners.setdefault(path, package)
                if not path.startswith("/usr/"):
                    owners.setdefault("/usr" + path, package)
    return owners


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: tools_check.py SOURCE_DIR [DPKG_ADMIN_DIR]", file=sys.stderr)
        return 2
    src, admin = argv[1], argv[2] if len(argv) == 3 else "/var/lib/dpkg"
    listed = subprocess.run([os.path.join(src, "scripts", "install-deps"), "--list"],
                            check=True, capture_output=True, text=True).stdout.split()
    packages = parse_status(admin)
    provided_by = {}
    for name, (_, _, _, provides) in packages.items():
        for p in provides:
            provided_by.setdefault(p, []).append(name)

    # Everything install-deps brings: its packages and, transitively, what they depend on.
    brought, todo = set(), list(listed)
    while todo:
        name = todo.pop()
        if name in brought:
            continue
        brought.add(name)
        todo.extend(provided_by.get(name, []))
        if name in packages:
            todo.extend(packages[name][2])
    for name, (priority, essential, _, _) in packages.items():
        if priority == "required" or essential == "yes":
            brought.add(name)

    owners = file_owners(admin)
    bad = 0
    for tool in TOOLS:
        path = tool if tool.startswith("/") else shutil.which(tool)
        if not path or not os.path.exists(path):
            print(f"tools: {tool} is not installed")
            bad += 1
            continue
        real = os.path.realpath(path)
        package = owners.get(real) or owners.get(path)
        if package is None:
            print(f"tools: {tool} ({real}) belongs to no Debian package: "
                  "install-deps cannot bring it to a fresh machine")
            bad += 1
        elif package not in brought:
            print(f"tools: {tool} comes from package {package} "
                  f"(priority {packages.get(package, ('?',))[0]}), "
                  "which scripts/install-deps does not install")
            bad += 1
    if bad == 0:
        print(f"tools: all {len(TOOLS)} tools come from install-deps or a minimal Debian root")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
