# bbmm_add_executable(<target> SOURCES <file>... TARGET host|opencl|cuda
#                     [BBMMC_ARGS <arg>...] [BBMMC <path>] [CUDA_OPTIONS <opt>...])
#
# Adds an executable whose C sources containing '#pragma scop' are compiled by bbmmc at
# build time (bbmmc <file> --target=<TARGET> <BBMMC_ARGS> -o <binary dir>/bbmm/<target>/
# <name>.bbmm.c); the generated files are compiled with the other sources and the program
# links bbmm::runtime (and OpenCL::OpenCL for TARGET opencl). bbmmc is the bbmm::bbmmc
# target (in this build tree, or from an installed package found with find_package(bbmm)),
# or the program named by BBMMC. Sources without a scop are compiled as they are.
#
# TARGET cuda: bbmmc writes two files per source, <name>.bbmm.c (the host part, C99, compiled
# by the C compiler like --target=host output) and <name>.bbmm.cu (the kernels and their
# extern "C" launch functions, compiled by nvcc); both are sources of the program, which
# also links CUDA::cudart_static. The caller enables the CUDA language first
# (enable_language(CUDA), after check_language(CUDA) where it is optional); the kernels are
# built for the target's CUDA_ARCHITECTURES (from CMAKE_CUDA_ARCHITECTURES). CUDA_OPTIONS are
# nvcc options for the generated .cu files only (e.g. -fmad=false for verification builds).
#
# The compile definitions and include directories of the target are not seen by bbmmc's
# preprocessor: pass -D/-I in BBMMC_ARGS as well.
function(bbmm_add_executable target)
  cmake_parse_arguments(ARG "" "TARGET;BBMMC" "SOURCES;BBMMC_ARGS;CUDA_OPTIONS" ${ARGN})
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
  if(ARG_TARGET STREQUAL "cuda")
    get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    if(NOT CMAKE_CUDA_COMPILER OR NOT "CUDA" IN_LIST languages)
      message(FATAL_ERROR "bbmm_add_executable(${target}): TARGET cuda needs the CUDA language: "
                          "call enable_language(CUDA) first (check_language(CUDA) tells whether "
                          "nvcc is found; pass -DCMAKE_CUDA_COMPILER=/path/to/nvcc otherwise)")
    endif()
  endif()
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/bbmm/${target})
  set(sources)
  foreach(src IN LISTS ARG_SOURCES)
    get_filename_component(abs ${src} ABSOLUTE)
    file(READ ${abs} text)
    if(text MATCHES "#[ \t]*pragma[ \t]+scop")
      get_filename_component(name ${src} NAME_WE)
      set(gen_main ${out_dir}/${name}.bbmm.c)
      set(gen ${gen_main})
      if(ARG_TARGET STREQUAL "cuda")
        # The same run writes the kernels beside the host part.
        list(APPEND gen ${out_dir}/${name}.bbmm.cu)
      endif()
      add_custom_command(
        OUTPUT ${gen}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
        COMMAND ${bbmmc_cmd} ${abs} --target=${ARG_TARGET} ${ARG_BBMMC_ARGS} -o ${gen_main}
        DEPENDS ${abs} ${bbmmc_dep}
        COMMENT "bbmmc ${src} --target=${ARG_TARGET}"
        VERBATIM)
      list(APPEND sources ${gen})
      if(ARG_TARGET STREQUAL "cuda" AND ARG_CUDA_OPTIONS)
        set_property(SOURCE ${out_dir}/${name}.bbmm.cu APPEND PROPERTY COMPILE_OPTIONS
                     ${ARG_CUDA_OPTIONS})
      endif()
      # The generated files include the input's own headers by relative path.
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
  if(ARG_TARGET STREQUAL "cuda")
    if(NOT TARGET CUDA::cudart_static)
      find_package(CUDAToolkit REQUIRED)
    endif()
    target_link_libraries(${target} PRIVATE CUDA::cudart_static)
  endif()
  if(NOT CMAKE_C_COMPILER_ID STREQUAL "")
    # Generated C uses libm when the input does (exp, sqrt, ...).
    find_library(BBMM_LIBM m)
    if(BBMM_LIBM)
      target_link_libraries(${target} PRIVATE ${BBMM_LIBM})
    endif()
  endif()
endfunction()
