# bbmm_add_executable(<target> SOURCES <file>... TARGET host|opencl|cuda
#                     [BBMMC_ARGS <arg>...] [BBMMC <path>])
#
# Adds an executable whose C sources containing '#pragma scop' are compiled by bbmmc at
# build time (bbmmc <file> --target=<TARGET> <BBMMC_ARGS> -o <binary dir>/bbmm/<target>/
# <name>.bbmm.c); the generated files are compiled with the other sources and the program
# links bbmm::runtime (and OpenCL::OpenCL for TARGET opencl). bbmmc is the bbmm::bbmmc
# target (in this build tree, or from an installed package found with find_package(bbmm)),
# or the program named by BBMMC. Sources without a scop are compiled as they are.
#
# The compile definitions and include directories of the target are not seen by bbmmc's
# preprocessor: pass -D/-I in BBMMC_ARGS as well.
function(bbmm_add_executable target)
  cmake_parse_arguments(ARG "" "TARGET;BBMMC" "SOURCES;BBMMC_ARGS" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "bbmm_add_executable(${target}): no SOURCES")
  endif()
  if(NOT ARG_TARGET)
    set(ARG_TARGET host)
  endif()
  if(NOT ARG_TARGET MATCHES "^(host|opencl|cuda)$")
    message(FATAL_ERROR "bbmm_add_executable(${target}): TARGET must be host, opencl or cuda, "
                        "not '${ARG_TARGET}'")
  endif()
  if(ARG_BBMMC)
    set(bbmmc_cmd ${ARG_BBMMC})
    set(bbmmc_dep)
  elseif(TARGET bbmm::bbmmc)
    set(bbmmc_cmd $<TARGET_FILE:bbmm::bbmmc>)
    set(bbmmc_dep bbmm::bbmmc)
  elseif(TARGET bbmmc)
    set(bbmmc_cmd $<TARGET_FILE:bbmmc>)
    set(bbmmc_dep bbmmc)
  else()
    message(FATAL_ERROR "bbmm_add_executable(${target}): bbmmc not found (build BBMM with "
                        "BBMM_BUILD_COMPILER=ON, or pass BBMMC <path>)")
  endif()
  set(ext c)
  if(ARG_TARGET STREQUAL "cuda")
    set(ext cu)
  endif()
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/bbmm/${target})
  set(sources)
  foreach(src IN LISTS ARG_SOURCES)
    get_filename_component(abs ${src} ABSOLUTE)
    file(READ ${abs} text)
    if(text MATCHES "#[ \t]*pragma[ \t]+scop")
      get_filename_component(name ${src} NAME_WE)
      set(gen ${out_dir}/${name}.bbmm.${ext})
      add_custom_command(
        OUTPUT ${gen}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
        COMMAND ${bbmmc_cmd} ${abs} --target=${ARG_TARGET} ${ARG_BBMMC_ARGS} -o ${gen}
        DEPENDS ${abs} ${bbmmc_dep}
        COMMENT "bbmmc ${src} --target=${ARG_TARGET}"
        VERBATIM)
      list(APPEND sources ${gen})
      # The generated file includes the input's own headers by relative path.
      set_property(SOURCE ${gen} APPEND PROPERTY INCLUDE_DIRECTORIES ${CMAKE_CURRENT_SOURCE_DIR})
      get_filename_component(src_dir ${abs} DIRECTORY)
      set_property(SOURCE ${gen} APPEND PROPERTY INCLUDE_DIRECTORIES ${src_dir})
    else()
      list(APPEND sources ${src})
    endif()
  endforeach()
  add_executable(${target} ${sources})
  target_link_libraries(${target} PRIVATE bbmm::runtime)
  if(ARG_TARGET STREQUAL "opencl")
    find_package(OpenCL REQUIRED)
    target_link_libraries(${target} PRIVATE OpenCL::OpenCL)
  endif()
  if(NOT CMAKE_C_COMPILER_ID STREQUAL "" AND NOT ARG_TARGET STREQUAL "cuda")
    # Generated C uses libm when the input does (exp, sqrt, ...).
    find_library(BBMM_LIBM m)
    if(BBMM_LIBM)
      target_link_libraries(${target} PRIVATE ${BBMM_LIBM})
    endif()
  endif()
endfunction()
