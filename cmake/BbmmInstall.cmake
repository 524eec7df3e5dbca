# install(EXPORT) and a package config so `find_package(bbmm CONFIG)` works
# from an install prefix.
include(CMakePackageConfigHelpers)

set(BBMM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/bbmm)
set(BBMM_INSTALL_TARGETS bbmm_runtime)
if(TARGET bbmm_mpi)
  list(APPEND BBMM_INSTALL_TARGETS bbmm_mpi)
endif()
if(TARGET bbmmc)
  list(APPEND BBMM_INSTALL_TARGETS bbmmc)
endif()
install(TARGETS ${BBMM_INSTALL_TARGETS} EXPORT bbmmTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/bbmm DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT bbmmTargets NAMESPACE bbmm:: DESTINATION ${BBMM_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/bbmmConfig.cmake.in
  ${PROJECT_BINARY_DIR}/bbmmConfig.cmake INSTALL_DESTINATION ${BBMM_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/bbmmConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/bbmmConfig.cmake ${PROJECT_BINARY_DIR}/bbmmConfigVersion.cmake
        DESTINATION ${BBMM_INSTALL_CMAKEDIR})
# bbmm_add_executable() for users of the installed package (included by bbmmConfig.cmake).
install(FILES ${PROJECT_SOURCE_DIR}/cmake/BbmmAddExecutable.cmake
        DESTINATION ${BBMM_INSTALL_CMAKEDIR})
