# SPDX-License-Identifier: Apache-2.0
# cmake -DPART=code-hooks|hwloc -DROOT=<prefix> [-DSWITCHED_OFF=1] -P required_parts_check.cmake
# Runs the build's own search for one required part (cmake/RequiredParts.cmake) with only ROOT to look
# in, as a configure on a machine without the system's copy would: with the part missing the script
# stops with the configure's message, with it present (or the option off) it prints "part ok".
cmake_minimum_required(VERSION 3.25)
get_filename_component(_source ${CMAKE_CURRENT_LIST_DIR}/../.. ABSOLUTE)
include(${_source}/cmake/RequiredParts.cmake)
set(_SYMMEM_PART_NO_DEFAULT NO_DEFAULT_PATH)
if(PART STREQUAL "code-hooks")
  set(SYMMEM_ZYDIS_ROOT ${ROOT})
  if(SWITCHED_OFF)
    set(SYMMEM_CODE_HOOKS OFF)
  endif()
  symmem_find_code_hook_parts()
elseif(PART STREQUAL "hwloc")
  set(SYMMEM_HWLOC_ROOT ${ROOT})
  if(SWITCHED_OFF)
    set(SYMMEM_HWLOC OFF)
  endif()
  symmem_find_hwloc_parts()
else()
  message(FATAL_ERROR "PART must be code-hooks or hwloc")
endif()
message(STATUS "part ok")
