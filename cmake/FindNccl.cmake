# SPDX-License-Identifier: Apache-2.0
# Finds NCCL's header and library: NCCL_HOME first, then CUDA's install, then the system.
# Defines symmem::nccl_headers (include path only) and symmem::nccl (the shared library).
set(_nccl_hints)
if(DEFINED ENV{NCCL_HOME})
  list(APPEND _nccl_hints $ENV{NCCL_HOME})
endif()
if(NCCL_HOME)
  list(APPEND _nccl_hints ${NCCL_HOME})
endif()
list(APPEND _nccl_hints ${CUDAToolkit_LIBRARY_ROOT} /usr/local/cuda /usr)

find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include REQUIRED)
find_library(NCCL_LIBRARY NAMES libnccl.so.2 nccl HINTS ${_nccl_hints}
             PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu REQUIRED)
file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_ver REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*" "\\1" NCCL_VERSION_MAJOR "${_nccl_ver}")
string(REGEX REPLACE ".*NCCL_MINOR ([0-9]+).*" "\\1" NCCL_VERSION_MINOR "${_nccl_ver}")
string(REGEX REPLACE ".*NCCL_PATCH ([0-9]+).*" "\\1" NCCL_VERSION_PATCH "${_nccl_ver}")
set(NCCL_VERSION "${NCCL_VERSION_MAJOR}.${NCCL_VERSION_MINOR}.${NCCL_VERSION_PATCH}")
get_filename_component(NCCL_LIBRARY_DIR ${NCCL_LIBRARY} DIRECTORY)
message(STATUS "NCCL ${NCCL_VERSION}: ${NCCL_INCLUDE_DIR}/nccl.h, ${NCCL_LIBRARY}")

add_library(symmem::nccl_headers INTERFACE IMPORTED)
target_include_directories(symmem::nccl_headers INTERFACE ${NCCL_INCLUDE_DIR})
add_library(symmem::nccl SHARED IMPORTED)
set_target_properties(symmem::nccl PROPERTIES IMPORTED_LOCATION ${NCCL_LIBRARY}
                      INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
