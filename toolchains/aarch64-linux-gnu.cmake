# Cross-compiles lmrt for 64-bit ARM Linux on a Debian/Ubuntu x86-64 host with multiarch arm64
# packages (scripts/cross-test-aarch64.sh installs them):
#   cmake -S . -B build-aarch64 -G Ninja --toolchain toolchains/aarch64-linux-gnu.cmake
# Test binaries run under qemu-aarch64 (CMAKE_CROSSCOMPILING_EMULATOR), so gtest discovery and ctest
# work as on a native build.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(LMRT_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${LMRT_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${LMRT_CROSS_TRIPLE}-g++)
# Debian multiarch: arm64 libraries and their CMake packages live in /usr/lib/aarch64-linux-gnu,
# headers in /usr/include (shared) and /usr/include/aarch64-linux-gnu; the cross C library in
# /usr/aarch64-linux-gnu.
set(CMAKE_LIBRARY_ARCHITECTURE ${LMRT_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH /usr/${LMRT_CROSS_TRIPLE})
# Host programs (pkg-config, the shell tools of the ABI checks) come from the host; libraries,
# headers and packages from the cross root first, then the multiarch paths (never the x86-64 ones,
# which CMake searches only under the host's library architecture).
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# pkg-config sees only arm64 (and architecture-independent) .pc files.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${LMRT_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# Runs the test binaries (and gtest_discover_tests) under user-mode QEMU with the cross C library
# the binaries were linked against. LD_LIBRARY_PATH makes the guest's loader take libc from there too:
# otherwise the host's ld.so.cache can hand it the arm64 multiarch libc (libc6:arm64, installed with
# the -dev packages), whose internals need not match the cross loader's, and threads hang in libc.
find_program(LMRT_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(LMRT_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${LMRT_QEMU_AARCH64} -L /usr/${LMRT_CROSS_TRIPLE}
      -E LD_LIBRARY_PATH=/usr/${LMRT_CROSS_TRIPLE}/lib)
endif()
