# One helper per kind of target, so every directory builds its pieces the same way.

include_guard(GLOBAL)

# cutover_library(NAME SOURCES... [DEPS...]): a static library with rooted includes
# (#include "core/status.h") and the project's warnings.
function(cutover_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE cutover_warnings)
endfunction()

# cutover_tests(NAME LABEL <unit|integration> SOURCES... DEPS...): one GoogleTest binary whose
# tests are registered with ctest one by one, labelled so CI can pick subsets (ctest -L unit).
function(cutover_tests name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "SOURCES;DEPS" ${ARGN})
  if(NOT ARG_LABEL)
    set(ARG_LABEL unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock cutover_warnings)
  if(NOT TARGET cutover_gtest_main)
    message(FATAL_ERROR "cutover_tests: tests/CMakeLists.txt must define cutover_gtest_main first")
  endif()
  target_link_libraries(${name} PRIVATE cutover_gtest_main)
  gtest_discover_tests(${name}
    PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT}
    # Two variables: gtest_discover_tests splits a ';' list, so the second goes in a modification.
    ENVIRONMENT "CUTOVER_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
    ENVIRONMENT_MODIFICATION "CUTOVER_BINARY_DIR=set:${PROJECT_BINARY_DIR}"
    DISCOVERY_TIMEOUT 60)
endfunction()

# cutover_fuzzer(NAME SOURCE DEPS...): a libFuzzer target, built only with CUTOVER_FUZZ=ON.
# Its seed corpus is tests/fuzz/corpus/<NAME>/. `make fuzz` runs every registered target.
set_property(GLOBAL PROPERTY CUTOVER_FUZZERS "")
function(cutover_fuzzer name source)
  if(NOT CUTOVER_FUZZ)
    return()
  endif()
  add_executable(${name} ${source})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARGN} cutover_warnings)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  set_property(GLOBAL APPEND PROPERTY CUTOVER_FUZZERS ${name})
endfunction()

# cutover_bench(NAME SOURCES... DEPS...): a Google Benchmark binary, built with CUTOVER_BENCH=ON.
function(cutover_bench name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark cutover_warnings)
  set_property(GLOBAL APPEND PROPERTY CUTOVER_BENCHES ${name})
endfunction()

# cutover_tests_from_glob(PREFIX DEPS...): every *_test.cc in the calling directory becomes the
# unit-test binary PREFIX_<name>, every *_itest.cc the integration-test binary PREFIX_<name>.
function(cutover_tests_from_glob prefix)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB unit_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  file(GLOB integration_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_itest.cc)
  foreach(src ${unit_sources})
    get_filename_component(n ${src} NAME_WE)
    cutover_tests(${prefix}_${n} LABEL unit SOURCES ${src} DEPS ${ARG_DEPS})
  endforeach()
  foreach(src ${integration_sources})
    get_filename_component(n ${src} NAME_WE)
    cutover_tests(${prefix}_${n} LABEL integration SOURCES ${src} DEPS ${ARG_DEPS})
  endforeach()
endfunction()

# A dlopened plugin links with --no-undefined, so a missing symbol fails the build instead of the
# dlopen. Not under the sanitizers: a sanitized shared library leaves the runtime's symbols
# (__asan_*, __ubsan_*, __sanitizer_cov_*) to the executable that loads it.
function(cutover_plugin_no_undefined target)
  if(NOT CUTOVER_SANITIZE AND NOT CUTOVER_FUZZ)
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
endfunction()

# cutover_embed_text(OUT_VAR HEADER h NAMESPACE ns FUNCTION fn FILES f...): generates a source
# file defining `std::string_view ns::fn(std::string_view file_name)` that returns each file's
# text (cmake/embed_text.cmake), regenerated when a file changes; its path goes to OUT_VAR, for
# the library's SOURCES.
function(cutover_embed_text out_var)
  cmake_parse_arguments(E "" "HEADER;NAMESPACE;FUNCTION" "FILES" ${ARGN})
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${E_FUNCTION}_embedded.cc)
  string(REPLACE ";" "|" inputs "${E_FILES}")
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DINPUTS=${inputs} -DHEADER=${E_HEADER}
            -DNAMESPACE=${E_NAMESPACE} -DFUNCTION=${E_FUNCTION}
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake
    DEPENDS ${E_FILES} ${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake
    COMMENT "Embedding ${E_FILES}"
    VERBATIM)
  set(${out_var} ${out} PARENT_SCOPE)
endfunction()
