"""What scripts/install-deps brings to a fresh Debian machine, and which package owns a file.

One home for the dpkg reading that tools_check.py (programs) and build_deps_check.py (what the
build reads) share. A package counts as brought when install-deps lists it, when it is a Depends
or Pre-Depends of one that is (transitively, through virtual packages too; Recommends do not
count: install-deps installs with --no-install-recommends), or when a minimal Debian root has it
(debootstrap --variant=minbase: the Essential and Priority: required packages).
"""
import os
import subprocess


def parse_status(admin):
    """Installed packages: name -> (priority, essential, [dependency names], [provides])."""
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
    """Path -> set of packages, from the .list files; merged-/usr paths under both names."""
    owners = {}
    info = os.path.join(admin, "info")
    for name in os.listdir(info):
        if not name.endswith(".list"):
            continue
        package = name[: -len(".list")].split(":")[0]
        with open(os.path.join(info, name), encoding="utf-8", errors="replace") as f:
            for path in f:
                path = path.rstrip("\n")
                owners.setdefault(path, set()).add(package)
                if not path.startswith("/usr/"):
                    owners.setdefault("/usr" + path, set()).add(package)
    return owners


def install_deps_list(src):
    """The packages `scripts/install-deps --list` names."""
    return subprocess.run([os.path.join(src, "scripts", "install-deps"), "--list"],
                          check=True, capture_output=True, text=True).stdout.split()


def brought_packages(listed, packages):
    """Every package a fresh machine has after install-deps installs LISTED."""
    provided_by = {}
    for name, (_, _, _, provides) in packages.items():
        for p in provides:
            provided_by.setdefault(p, []).append(name)
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
    return brought


def unbrought_owners(path, owners, brought):
    """Whether dpkg owns PATH or, for a link, its target, and the packages that own one of the
    two without a brought package beside them: {package: the file it owns}. A -dev package often
    owns only the unversioned link (libOpenCL.so) and a runtime package the file behind it, so
    both count."""
    owned, missing = False, {}
    for p in dict.fromkeys((path, os.path.realpath(path))):
        found = owners.get(p, set())
        owned |= bool(found)
        if found and not found & brought:
            for package in found:
                missing.setdefault(package, p)
    return owned, missing
