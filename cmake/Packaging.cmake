# `make package`: a .deb for Debian and Ubuntu, and a tarball that runs on any x86-64 Linux with
# glibc (no other library needed from the host). Included last from the top-level CMakeLists.txt,
# after every install() rule.
#
# Components:
#   runtime  bin/cutover and its documentation          in the .deb `cutover` and the tarball
#   cuda     lib/cutover/libcutover_compat_cuda.so       in the .deb `cutover-cuda` and the tarball
#   mpi      lib/cutover/libcutover_compat_mpi.so        in the .deb `cutover-mpi` and the tarball
#   bundled  the non-glibc libraries the binary needs    in the tarball only (the .deb depends on
#            (libstdc++, libcurl and its chain, ...)     Debian's packages instead)

# Every library of the glibc package: the one dependency the tarball leaves to the host. Their
# ABI is versioned per symbol; the package test reports the newest GLIBC_ version needed.
set(CUTOVER_GLIBC_SONAMES
    "^(ld-linux.*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|libmvec|libBrokenLocale|libthread_db|libc_malloc_debug|libnss_[a-z]+|linux-vdso)\\.so(\\.[0-9]+)*$")
install(RUNTIME_DEPENDENCY_SET cutover_runtime_deps
        DESTINATION lib COMPONENT bundled
        PRE_EXCLUDE_REGEXES "${CUTOVER_GLIBC_SONAMES}"
        POST_EXCLUDE_REGEXES "/(ld-linux[^/]*|lib(c|m|dl|pthread|rt|resolv|util)\\.so[^/]*)$")
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/cutover COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/cutover COMPONENT runtime
        PATTERN "benchmarks.md" EXCLUDE)

set(CPACK_PACKAGE_NAME cutover)
set(CPACK_PACKAGE_VENDOR cutover)
set(CPACK_PACKAGE_CONTACT "cutover maintainers <cutover@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "GPU migration toolkit: probe hosts and images, compare kernels, move data, drive the cutover")
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_PACKAGE_FILE_NAME "cutover-${PROJECT_VERSION}-linux-${CMAKE_SYSTEM_PROCESSOR}")
set(CPACK_GENERATOR "TGZ;DEB")
set(CPACK_STRIP_FILES ON)
set(CPACK_SOURCE_GENERATOR "")

# The tarball holds every component under one top directory.
set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF)
set(CPACK_INCLUDE_TOPLEVEL_DIRECTORY ON)

# The .deb: one package per component, the bundled libraries left out (cmake/CPackProjectConfig).
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME cutover)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_CUDA_PACKAGE_NAME cutover-cuda)
# NVIDIA's CUDA, cuDNN and NCCL libraries come from NVIDIA's repository or a CUDA image, not
# from Debian, so dpkg-shlibdeps cannot name them: the plugin says which it needs when loaded.
set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)
# cutover-cuda depends on the cutover package of its own version.
set(CPACK_COMPONENT_CUDA_DEPENDS runtime)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_COMPONENT_CUDA_DESCRIPTION
    "CUDA backend of cutover compat (cuBLAS, cuDNN, NCCL), loaded only for --backend cuda")
# The MPI cluster plugin needs OpenMPI from the host (Depends of cutover-mpi from dpkg-shlibdeps);
# it is loaded only for `compat run --suite cluster`.
set(CPACK_DEBIAN_MPI_PACKAGE_NAME cutover-mpi)
set(CPACK_DEBIAN_MPI_PACKAGE_SHLIBDEPS ON)
set(CPACK_COMPONENT_MPI_DEPENDS runtime)
set(CPACK_COMPONENT_MPI_DESCRIPTION
    "MPI plugin of cutover compat (OpenMPI 4), loaded only for compat run --suite cluster")

# The oneDNN plugin of the compat cpu backend (compat/CMakeLists.txt), its own package so that
# the cutover package does not pull in libdnnl; without it convolutions run our kernels.
set(CPACK_DEBIAN_CPULIBS_PACKAGE_NAME cutover-cpulibs)
set(CPACK_DEBIAN_CPULIBS_PACKAGE_SHLIBDEPS ON)
set(CPACK_COMPONENT_CPULIBS_DEPENDS runtime)
set(CPACK_COMPONENT_CPULIBS_DESCRIPTION
    "oneDNN plugin of cutover compat's cpu backend (convolution and matmul through libdnnl)")
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/cmake/CPackProjectConfig.cmake)
include(CPack)
