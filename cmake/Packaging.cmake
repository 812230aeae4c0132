# SPDX-License-Identifier: Apache-2.0
# The packages, both made from one build and one install layout (what `cmake --install` writes):
#
#   bin/symmem-info, -bench, -tune, -health, -report, -report-plots, -stat
#   lib/libnccl-tuner-symmem.so                     (RUNPATH $ORIGIN: Zydis beside it is found first)
#   share/doc/nccl-symmem/                          (README.md and docs/)
#   share/nccl-symmem/nccl-tests-configs/
#
# - the .deb (CPack): that tree under /opt/nccl-symmem; `cpack -G DEB` in the build folder, or
#   `cmake --build build --target package`, writes build/packages/nccl-symmem_<version>_amd64.deb.
# - the wheel (python/make_wheel.sh, target `wheel`): bin/ and lib/ of that tree inside the Python
#   package nccl_symmem, with Zydis copied beside the plugin; build/packages/nccl_symmem-*.whl.
#
# The tools find the plugin at ../lib from their own directory (tools/info/plugin_load_check.cpp), which
# holds in every one of these.
if(NOT CMAKE_INSTALL_LIBDIR MATCHES "^lib(64)?$")
  message(WARNING "CMAKE_INSTALL_LIBDIR is ${CMAKE_INSTALL_LIBDIR}: the installed tools look for the plugin "
                  "in ../lib and ../lib64 only, so symmem-info will not find it (leave CMAKE_INSTALL_LIBDIR at lib)")
endif()

set(CPACK_PACKAGE_NAME nccl-symmem)
set(CPACK_PACKAGE_VENDOR nccl-symmem)
set(CPACK_PACKAGE_CONTACT "nccl-symmem maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "NCCL tuner plugin: small all-reduces on symmetric-memory kernels")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
    "libnccl-tuner-symmem.so, loaded by NCCL through NCCL_TUNER_PLUGIN, routes small all-reduces to "
    "one-shot and two-shot kernels over PCIe P2P or NVLink and tunes NCCL's own choices; with the "
    "symmem-info, -bench, -tune, -health and -report tools.")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /opt/nccl-symmem)
set(CPACK_STRIP_FILES ON)  # the default RelWithDebInfo build keeps its debug info in build/, not in the package

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
# Written out rather than found by dpkg-shlibdeps: the plugin NEEDs libnccl.so.2, which on most
# machines is not from a Debian package (CUDA's copy, NVIDIA's repository, a pip wheel), and
# dpkg-shlibdeps stops on it. The C and C++ runtimes are what the objects' symbol versions ask for
# (GLIBC_2.34; GLIBCXX_3.4.29, GCC 11's); Zydis and hwloc are the libraries the plugin loads at run
# time (the code hooks, NUMA placement).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34), libstdc++6 (>= 11), libgcc-s1, libzydis4.0, libhwloc15")
# NCCL is a recommendation, not a dependency: what matters is the NCCL the application loads, and that
# is often not a Debian package (a pip NCCL in a venv, the CUDA toolkit's copy); libnccl2 exists only
# in NVIDIA's repository, so a hard dependency would stop the install wherever that is not set up.
# matplotlib draws symmem-report's plots (without it the report is written without plots).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libnccl2, python3-matplotlib")
include(CPack)

# The wheel, from this build's install tree (python/make_wheel.sh; needs python3-build from Debian).
add_custom_target(wheel
  COMMAND ${CMAKE_SOURCE_DIR}/python/make_wheel.sh ${CMAKE_BINARY_DIR} ${CPACK_PACKAGE_DIRECTORY}
  DEPENDS nccl-tuner-symmem symmem-info symmem-bench symmem-tune symmem-health symmem-report symmem-stat
  COMMENT "Building the nccl-symmem wheel into ${CPACK_PACKAGE_DIRECTORY}"
  USES_TERMINAL VERBATIM)
