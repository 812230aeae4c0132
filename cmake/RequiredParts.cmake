# SPDX-License-Identifier: Apache-2.0
# The parts a build needs beyond the compilers: Zydis (the code hooks) and hwloc (NUMA placement).
# Both are required unless switched off on purpose: a part that is asked for and missing stops the
# configure with the one apt line that installs it, because a plugin built without the code hooks does
# not reach ctypes clients (vLLM's and SGLang's pynccl), the clients this project exists for.
#
# Only headers are needed to build; the libraries are loaded at run time (plugin/hooks/x86_decoder.cpp,
# topology/hwloc_library.cpp). Script mode (cmake -P) can include this file too: the tests
# (tests/cmake/required_parts_check.cmake) call the same functions the build does.

option(SYMMEM_CODE_HOOKS "Hook libnccl's entry points (needs the Zydis headers, libzydis-dev)" ON)
option(SYMMEM_HWLOC "Read NUMA placement and hwloc XML topologies (needs the hwloc headers, libhwloc-dev)" ON)
set(SYMMEM_ZYDIS_ROOT "" CACHE PATH "Prefix whose include/ holds the Zydis and Zycore headers")
set(SYMMEM_HWLOC_ROOT "" CACHE PATH "Prefix whose include/ holds hwloc.h")

# symmem_require_headers(<option> <apt packages> <what is lost without it> <VAR header>...)
# Finds each header (result in VAR), or stops naming the apt line and the option. With the option
# off, clears the variables: the build then has no trace of the part.
function(symmem_require_headers option apt without)
  set(pairs ${ARGN})
  set(missing "")
  while(pairs)
    list(POP_FRONT pairs var header)
    if(NOT ${option})
      set(${var} "${var}-NOTFOUND" CACHE PATH "Directory holding ${header}" FORCE)
      continue()
    endif()
    find_path(${var} ${header} HINTS ${SYMMEM_PART_HINTS} ${_SYMMEM_PART_NO_DEFAULT})
    if(NOT ${var})
      list(APPEND missing ${header})
    endif()
  endwhile()
  if(NOT ${option})
    message(STATUS "${option}=OFF: built without it (${without})")
  elseif(missing)
    list(JOIN missing ", " missing_text)
    message(FATAL_ERROR "${missing_text} not found (${option} is ON). Install it with\n"
                        "  sudo apt-get install ${apt}\n"
                        "or configure with -D${option}=OFF to build without it (${without}).")
  endif()
endfunction()

# Zydis and Zycore headers, for plugin/hooks/x86_decoder.cpp. Sets ZYDIS_INCLUDE_DIR, ZYCORE_INCLUDE_DIR.
macro(symmem_find_code_hook_parts)
  set(SYMMEM_PART_HINTS "")
  if(SYMMEM_ZYDIS_ROOT)
    set(SYMMEM_PART_HINTS ${SYMMEM_ZYDIS_ROOT}/include)
  endif()
  symmem_require_headers(SYMMEM_CODE_HOOKS libzydis-dev
    "no code hooks: the plugin attaches through GOT slots only, which ctypes clients such as vLLM's and SGLang's pynccl do not use"
    ZYDIS_INCLUDE_DIR Zydis/Zydis.h ZYCORE_INCLUDE_DIR Zycore/Zycore.h)
endmacro()

# hwloc's header, for topology/hwloc_*.cpp. Sets HWLOC_INCLUDE_DIR.
macro(symmem_find_hwloc_parts)
  set(SYMMEM_PART_HINTS "")
  if(SYMMEM_HWLOC_ROOT)
    list(APPEND SYMMEM_PART_HINTS ${SYMMEM_HWLOC_ROOT}/include)
  endif()
  if(COMMAND pkg_check_modules AND SYMMEM_HWLOC AND NOT _SYMMEM_PART_NO_DEFAULT)
    pkg_check_modules(HWLOC_PC QUIET hwloc)
    list(APPEND SYMMEM_PART_HINTS ${HWLOC_PC_INCLUDE_DIRS})
  endif()
  symmem_require_headers(SYMMEM_HWLOC libhwloc-dev
    "no NUMA placement from hwloc, and hwloc XML topology files are refused"
    HWLOC_INCLUDE_DIR hwloc.h)
endmacro()
