#!/usr/bin/env bash
# What `make package` builds, checked the way a user meets it:
#   - the tarball runs `probe collect` in a root that holds nothing but glibc (the property that
#     lets it run on other distributions and inside images), and asks for no newer glibc than
#     the README states;
#   - a control binary that does not carry its libraries fails in that same root, so the root
#     really is bare;
#   - the .deb takes its libraries from Debian's packages (Depends), ships none of its own, and
#     installs and upgrades with dpkg (into a throwaway dpkg root, not this machine).
# Usage: package_itest.sh BUILD_DIR SOURCE_DIR
# Exit 0 pass, 1 fail, 77 skip (a missing tool or no namespaces; a failure when CI=true).
set -euo pipefail

build="$(cd "$1" && pwd)"
src="$(cd "$2" && pwd)"
documented_glibc="2.35"  # README.md, "Install": keep the two in step

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() {
  if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then fail "required in CI: $*"; fi
  echo "SKIP: $*"
  exit 77
}
ok() { echo "ok: $*"; }

for tool in cpack tar readelf objdump dpkg dpkg-deb unshare chroot python3 getconf; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed"
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# --- build the packages, as `make package` does, into a directory of our own -----------------
t0=$(date +%s)
if ! (cd "$build" && cpack -G "TGZ;DEB" -B "$work/packages" >"$work/cpack.log" 2>&1); then
  cat "$work/cpack.log" >&2
  fail "cpack failed"
fi
tarball="$(ls "$work"/packages/cutover-*-linux-*.tar.gz)"
deb="$(ls "$work"/packages/cutover_*.deb)"
ok "cpack built $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB) and $(basename "$deb") in $(( $(date +%s) - t0 )) s"

# --- the tarball: layout, and every library it needs is inside it or part of glibc ----------
root="$work/root"
mkdir -p "$root/opt" "$root/proc" "$root/sys" "$root/out" "$root/tmp"
tar -xzf "$tarball" -C "$root/opt"
top="$(basename "$tarball" .tar.gz)"
pkg="$root/opt/$top"
[ -x "$pkg/bin/cutover" ] || fail "$top/bin/cutover missing from the tarball"

glibc_re='^(ld-linux.*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|libmvec)\.so(\.[0-9]+)*$'
nvidia_re='^lib(cudart|cublas|cublasLt|cudnn|nccl|nvidia-ml|cuda)\.so(\.[0-9]+)*$'
checked=0
while IFS= read -r elf; do
  name="$(basename "$elf")"
  if [[ "$name" =~ $glibc_re ]]; then fail "the tarball ships glibc's $name: it must come from the host"; fi
  while IFS= read -r needed; do
    if [[ "$needed" =~ $glibc_re ]] || [ -e "$pkg/lib/$needed" ]; then continue; fi
    # The CUDA plugin is loaded only for --backend cuda, on a host with NVIDIA's libraries and
    # the C++ runtime they need themselves.
    if [[ "$elf" == */lib/cutover/* ]] &&
       { [[ "$needed" =~ $nvidia_re ]] || [[ "$needed" =~ ^lib(stdc\+\+|gcc_s)\.so ]]; }; then
      continue
    fi
    # The MPI plugin is loaded only for `compat run --suite cluster`, on a host with OpenMPI.
    if [[ "$elf" == */lib/cutover/libcutover_compat_mpi.so ]] && [[ "$needed" =~ ^libmpi\.so ]]; then
      continue
    fi
    # The oneDNN plugin of the compat cpu backend: loaded at run time; a host without libdnnl
    # runs convolutions on cutover's own kernels (the cutover-cpulibs .deb depends on libdnnl).
    if [[ "$elf" == */lib/cutover/libcutover_compat_dnnl.so ]] &&
       [[ "$needed" =~ ^lib(dnnl|gomp|stdc\+\+|gcc_s)\.so ]]; then
      continue
    fi
    fail "${elf#"$root"/opt/} needs $needed, which is neither in $top/lib nor part of glibc"
  done < <(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  checked=$((checked + 1))
done < <(find "$pkg/bin" "$pkg/lib" -type f \( -name cutover -o -name '*.so*' \))
ok "$checked ELF files in the tarball need nothing from the host but glibc"

newest="$(find "$pkg/bin" "$pkg/lib" -type f \( -name cutover -o -name '*.so*' \) -exec objdump -T {} + |
          grep -o 'GLIBC_2\.[0-9]*' | sed 's/GLIBC_//' | sort -uV | tail -1)"
[ -n "$newest" ] || fail "no GLIBC_ symbol versions found (objdump)"
if [ "$(printf '%s\n%s\n' "$newest" "$documented_glibc" | sort -V | tail -1)" != "$documented_glibc" ]; then
  offenders=""
  while IFS= read -r f; do
    if objdump -T "$f" | grep -c "GLIBC_$newest" >/dev/null; then offenders+="${f#"$pkg"/} "; fi
  done < <(find "$pkg/bin" "$pkg/lib" -type f \( -name cutover -o -name '*.so*' \))
  fail "the tarball needs glibc $newest (${offenders% }), newer than the $documented_glibc README states"
fi
ok "newest glibc symbol version needed: $newest (README states $documented_glibc)"

# --- a root with nothing but glibc (the files of this machine's libc6 package) ---------------
interp="$(readelf -l "$pkg/bin/cutover" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')"
[ -n "$interp" ] || fail "no program interpreter in bin/cutover"
libc_files="$(dpkg -L libc6 | grep -E '/lib[^/]*/([^/]+/)?[^/]+\.so(\.[0-9]+)*$' | grep -v -E '/(gconv|audit)/')"
for f in $libc_files "$interp"; do
  [ -e "$f" ] && cp -L --parents "$f" "$root"
done
[ -e "$root$interp" ] || fail "could not copy the program interpreter $interp into the bare root"
mkdir -p "$root/control"
cp "$build/apps/cutover/cutover" "$root/control/cutover"

ns=(unshare --mount --pid --fork)
if [ "$(id -u)" -ne 0 ]; then ns=(unshare --user --map-root-user --mount --pid --fork); fi
"${ns[@]}" true 2>/dev/null || skip "cannot create mount namespaces here (${ns[*]})"

# The control: the build tree's binary, whose libraries are not beside it, must fail here.
if "${ns[@]}" chroot "$root" /control/cutover --version >"$work/control.out" 2>&1; then
  fail "the build-tree binary ran in the bare root: the root is not bare, so this test proves nothing"
fi
grep -q "error while loading shared libraries" "$work/control.out" ||
  fail "the control failed for another reason: $(head -1 "$work/control.out")"
ok "control: the build-tree binary cannot start in the bare root ($(grep -o 'lib[^:]*: cannot open' "$work/control.out" | head -1))"

# The packaged binary, with the real /proc and /sys of this machine.
"${ns[@]}" bash -c '
  set -e
  mount -t proc proc "$1/proc"
  mount --rbind /sys "$1/sys"
  chroot "$1" "/opt/$2/bin/cutover" --version
  chroot "$1" "/opt/$2/bin/cutover" probe collect --json --out /out/fingerprint.json
' _ "$root" "$top" >"$work/run.out" 2>&1 || { cat "$work/run.out" >&2; fail "the packaged cutover failed in the bare root"; }
version_line="$(head -1 "$work/run.out")"
[[ "$version_line" == "cutover "* ]] || fail "unexpected --version output: $version_line"
python3 "$src/tests/harness/validate_schema.py" "$src/docs/schemas/fingerprint-1.json" \
  "$root/out/fingerprint.json" || fail "the fingerprint from the bare root does not validate"
host_glibc="$(getconf GNU_LIBC_VERSION | awk '{print $2}')"
python3 - "$root/out/fingerprint.json" "$host_glibc" <<'EOF' || fail "the fingerprint from the bare root is wrong"
import json, sys
doc = json.load(open(sys.argv[1]))
problems = []
if doc["os"].get("glibc") != sys.argv[2]:
    problems.append(f"os.glibc {doc['os'].get('glibc')!r}, host has {sys.argv[2]!r}")
if not doc["cpu"].get("cores", 0) >= 1:
    problems.append(f"cpu.cores {doc['cpu'].get('cores')!r} (is /proc readable?)")
if doc.get("memory_mib", 0) <= 0:
    problems.append(f"memory_mib {doc.get('memory_mib')!r}")
for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
ok "packaged '$version_line' ran probe collect in the bare root: fingerprint valid, glibc $host_glibc, cpu and memory read"

# --- the .deb: Debian's libraries as Depends, none shipped; install and upgrade with dpkg ----
depends="$(dpkg-deb -f "$deb" Depends)"
for need in "libc6 (>= $documented_glibc)" libcurl4 libssl3 libsqlite3-0 libzstd1; do
  [[ "$depends" == *"$need"* ]] || fail "the .deb's Depends lacks $need: $depends"
done
dpkg-deb -c "$deb" >"$work/deb.list"
if grep -E '\.so(\.[0-9]+)*$' "$work/deb.list" | grep -v '/lib/cutover/'; then
  fail "the .deb ships shared libraries of its own"
fi
grep -q ' \./usr/bin/cutover$' "$work/deb.list" || fail "the .deb has no /usr/bin/cutover"
ok "the .deb depends on: $depends"

# dpkg into a throwaway root: its own database, so this machine's packages are untouched. The
# dependencies are Debian's, not installed in that root, hence --force-depends.
droot="$work/dpkg-root"
mkdir -p "$droot/var/lib/dpkg/info" "$droot/var/lib/dpkg/updates"
: >"$droot/var/lib/dpkg/status"
dpkg_in_root() {
  dpkg --root="$droot" --force-depends --force-not-root --force-script-chrootless "$@"
}
dpkg_in_root -i "$work"/packages/cutover*_*.deb >"$work/dpkg1.log" 2>&1 ||
  { cat "$work/dpkg1.log" >&2; fail "dpkg -i of the packages failed"; }
[ -x "$droot/usr/bin/cutover" ] || fail "dpkg -i installed no /usr/bin/cutover"
"$droot/usr/bin/cutover" --version >/dev/null || fail "the installed /usr/bin/cutover does not run"

version="$(dpkg-deb -f "$deb" Version)"
next="$version+upgrade1"
(cd "$build" && cpack -G DEB -B "$work/next" -D CPACK_PACKAGE_VERSION="$next" >"$work/cpack2.log" 2>&1) ||
  { cat "$work/cpack2.log" >&2; fail "cpack of version $next failed"; }
dpkg_in_root -i "$work"/next/cutover*_*.deb >"$work/dpkg2.log" 2>&1 ||
  { cat "$work/dpkg2.log" >&2; fail "the upgrade to $next failed"; }
installed="$(dpkg --root="$droot" -l | awk '$1 == "ii" {print $2 "=" $3}' | sort | tr '\n' ' ')"
for p in cutover; do
  [[ "$installed" == *"$p=$next"* ]] || fail "after the upgrade dpkg lists: $installed"
done
if ls "$work"/packages/cutover-cuda_*.deb >/dev/null 2>&1; then
  [[ "$installed" == *"cutover-cuda=$next"* ]] || fail "cutover-cuda not upgraded with cutover: $installed"
  [ "$(dpkg-deb -f "$work"/next/cutover-cuda_*.deb Depends)" = "cutover (= $next)" ] ||
    fail "cutover-cuda does not depend on its own version of cutover"
fi
"$droot/usr/bin/cutover" --version >/dev/null || fail "/usr/bin/cutover does not run after the upgrade"
ok "dpkg installed $version and upgraded to $next: $installed"
echo "PASS"
