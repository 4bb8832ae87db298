# tirc's CMake package: TIR modules built by `tirc build` into a static library.
#
#   cmake -S . -B build -Dtirc_DIR="$(tirc --cmake-dir)"
#
#   find_package(tirc REQUIRED)
#   tirc_add_library(kernels SOURCES a.tir b.tir
#                    [TARGET "cuda -arch=sm_80,sm_90"] [HOST llvm]
#                    [ABI c|packed] [DEVICE_FORMAT ptx|cubin|fatbin] [SYMBOL_PREFIX P]
#                    [OUTPUT_DIRECTORY dir]
#                    [OPTIONS flag...] [NO_OPENMP])
#   target_link_libraries(app PRIVATE kernels)   # and #include "a.h" in app's sources
#
# Each source is one `tirc build` run, a custom command whose outputs are NAME.o, NAME.h
# and NAME.json (plus the device images, NAME.ptx or NAME.<arch>.ptx) in
# OUTPUT_DIRECTORY (default: <current binary dir>/tirc/<library>), with a depfile
# (-MF NAME.d -MT NAME.o: Ninja refuses depfiles naming undeclared outputs, and the
# device images' names depend on the module) that Ninja and the Makefile generators
# both read: an edited .tir is rebuilt, and only it. The objects make up the static library <library>; it carries the
# include directory of the headers and what the objects need at link time: libm,
# libdl and pthreads (device code: libcuda.so.1 is opened with dlopen at the first
# kernel launch, so neither the library nor the program links libcuda, and both run
# where no driver is installed) and libgomp for T.parallel loops (NO_OPENMP: not).
#
# ABI defaults to c: plain C functions declared in NAME.h, callable from C and C++
# without any runtime. ABI packed gives tvm-ffi functions (__tvm_ffi_<name>); link
# tvm-ffi's library yourself for those. SYMBOL_PREFIX P puts P before every symbol the
# objects export (--symbol-prefix: Pf, PNAME_last_error, __tvm_ffi_Pf), so libraries of
# modules with the same function names (te.create_prim_func's main) link into one
# program; NAME.h declares the prefixed names. TARGET and HOST are tirc's --target and --host
# (one string each; functions that carry a target keep it); OPTIONS are more
# `tirc build` flags (e.g. --emit ptx).
#
# TIRC_EXECUTABLE names the tirc program; by default the one installed next to this
# package (<prefix>/bin/tirc), else `tirc` on the PATH.

if(CMAKE_VERSION VERSION_LESS 3.20)
  message(FATAL_ERROR "tirc: tirc_add_library needs CMake 3.20 or newer (DEPFILE with "
                      "every generator); this is CMake ${CMAKE_VERSION}")
endif()
include_guard(GLOBAL)
# Paths in depfiles are taken as written (tirc writes absolute ones), no warning.
cmake_policy(SET CMP0116 NEW)

# <prefix>/lib/pythonX.Y/site-packages/tirc/cmake -> <prefix>/bin
find_program(TIRC_EXECUTABLE tirc
             HINTS "${CMAKE_CURRENT_LIST_DIR}/../../../../../bin"
             DOC "the tirc compiler driver")
if(NOT TIRC_EXECUTABLE)
  set(tirc_FOUND FALSE)
  set(tirc_NOT_FOUND_MESSAGE
      "the tirc program was not found: put it on the PATH or set TIRC_EXECUTABLE")
  return()
endif()
find_package(Threads REQUIRED)

function(tirc_add_library name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "NO_OPENMP"
                        "TARGET;HOST;ABI;DEVICE_FORMAT;SYMBOL_PREFIX;OUTPUT_DIRECTORY"
                        "SOURCES;OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tirc_add_library(${name}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "tirc_add_library(${name}): no SOURCES")
  endif()
  if(NOT arg_ABI)
    set(arg_ABI c)
  endif()
  if(NOT arg_ABI MATCHES "^(c|packed)$")
    message(FATAL_ERROR "tirc_add_library(${name}): ABI must be c or packed, not '${arg_ABI}'")
  endif()
  if(DEFINED arg_SYMBOL_PREFIX AND NOT arg_SYMBOL_PREFIX MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "tirc_add_library(${name}): SYMBOL_PREFIX must start a C identifier "
                        "(a letter or _, then letters, digits and _), not '${arg_SYMBOL_PREFIX}'")
  endif()
  set(out "${arg_OUTPUT_DIRECTORY}")
  if(NOT out)
    set(out "${CMAKE_CURRENT_BINARY_DIR}/tirc/${name}")
  endif()
  get_filename_component(out "${out}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  file(MAKE_DIRECTORY "${out}")

  set(flags --abi ${arg_ABI})
  if(arg_TARGET)
    list(APPEND flags --target "${arg_TARGET}")
  endif()
  if(arg_HOST)
    list(APPEND flags --host "${arg_HOST}")
  endif()
  if(arg_DEVICE_FORMAT)
    list(APPEND flags --device-format "${arg_DEVICE_FORMAT}")
  endif()
  if(arg_SYMBOL_PREFIX)
    list(APPEND flags --symbol-prefix "${arg_SYMBOL_PREFIX}")
  endif()
  list(APPEND flags ${arg_OPTIONS})

  set(objects)
  set(headers)
  set(stems)
  foreach(src IN LISTS arg_SOURCES)
    get_filename_component(src "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    get_filename_component(stem "${src}" NAME_WLE)
    if(stem IN_LIST stems)
      message(FATAL_ERROR "tirc_add_library(${name}): two sources named ${stem}.tir would "
                          "both write ${out}/${stem}.*")
    endif()
    list(APPEND stems "${stem}")
    add_custom_command(
      OUTPUT "${out}/${stem}.o" "${out}/${stem}.h" "${out}/${stem}.json"
      COMMAND "${TIRC_EXECUTABLE}" build "${src}" ${flags} -q -o "${out}"
              -MF "${out}/${stem}.d" -MT "${out}/${stem}.o"
      DEPENDS "${src}"
      DEPFILE "${out}/${stem}.d"
      COMMENT "tirc build ${stem}.tir"
      VERBATIM)
    list(APPEND objects "${out}/${stem}.o")
    list(APPEND headers "${out}/${stem}.h")
  endforeach()

  add_library(${name} STATIC ${objects} ${headers})
  set_source_files_properties(${objects} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  set_source_files_properties(${headers} PROPERTIES HEADER_FILE_ONLY TRUE GENERATED TRUE)
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if("CXX" IN_LIST languages)
    set(language CXX)
  elseif("C" IN_LIST languages)
    set(language C)
  else()
    message(FATAL_ERROR "tirc_add_library(${name}): enable C or CXX in project()")
  endif()
  set_target_properties(${name} PROPERTIES LINKER_LANGUAGE ${language})
  target_include_directories(${name} INTERFACE "${out}")
  target_link_libraries(${name} INTERFACE m ${CMAKE_DL_LIBS} Threads::Threads)
  if(NOT arg_NO_OPENMP)
    target_link_libraries(${name} INTERFACE gomp)
  endif()
endfunction()
