# cutover_probe_package(NAME OK_VAR REASON_VAR): tries `find_package(NAME CONFIG REQUIRED)` in a
# scratch configure of its own, with this build's compilers and search paths, and sets OK_VAR to
# TRUE or FALSE and REASON_VAR to the first error line when it fails.
#
# Why a second configure: a CMake package file may itself call find_package(... REQUIRED) on a
# dependency of its own (Debian's dnnl-config.cmake requires OpenCL, which libdnnl-dev only
# recommends). Such a failure is a FATAL_ERROR that QUIET does not soften and that nothing in the
# calling configure can catch, so an optional library would fail the whole build. Probing it first
# lets AUTO turn the library off with a reason, and ON fail naming the missing piece.
include_guard(GLOBAL)

function(cutover_probe_package name ok_var reason_var)
  set(dir ${CMAKE_BINARY_DIR}/CMakeFiles/cutover-probe-${name})
  file(REMOVE_RECURSE ${dir})
  file(MAKE_DIRECTORY ${dir}/src)
  file(WRITE ${dir}/src/CMakeLists.txt
       "cmake_minimum_required(VERSION 3.25)\n"
       "project(cutover_probe_${name} LANGUAGES C CXX)\n"
       "find_package(${name} CONFIG REQUIRED)\n")
  set(args -S ${dir}/src -B ${dir}/build
      -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER} -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER})
  foreach(var CMAKE_PREFIX_PATH CMAKE_FIND_ROOT_PATH ${name}_DIR)
    if(DEFINED ${var})
      string(REPLACE ";" "\\;" value "${${var}}")
      list(APPEND args "-D${var}=${value}")
    endif()
  endforeach()
  execute_process(COMMAND ${CMAKE_COMMAND} ${args}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    set(${ok_var} TRUE PARENT_SCOPE)
    set(${reason_var} "" PARENT_SCOPE)
    return()
  endif()
  # The first line that says what is missing: "Could NOT find X (missing: ...)", else the first
  # message line after a "CMake Error" header.
  string(REGEX MATCH "Could NOT find [^\n]*" reason "${err}")
  if(NOT reason)
    string(REGEX MATCH "CMake Error[^\n]*\n+ *([^\n]+)" whole "${err}")
    set(reason "${CMAKE_MATCH_1}")
  endif()
  if(NOT reason)
    set(reason "its CMake package failed to load (exit ${rc})")
  endif()
  set(${ok_var} FALSE PARENT_SCOPE)
  set(${reason_var} "${reason}" PARENT_SCOPE)
endfunction()
