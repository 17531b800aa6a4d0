# `cmake --install`: the public headers (with the generated C header), the static library, a CMake
# package (find_package(tileops CONFIG) -> tileops::tileops) and a pkg-config file (tileops.pc).
# tests/consumer/ builds against the installed tree (CTest packaging/consumer).
include(CMakePackageConfigHelpers)

set(TILEOPS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tileops)
install(TARGETS tileops EXPORT tileops-targets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tileops ${TILEOPS_GENERATED}/include/tileops
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(EXPORT tileops-targets NAMESPACE tileops:: DESTINATION ${TILEOPS_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tileops-config.cmake.in
                              ${CMAKE_BINARY_DIR}/tileops-config.cmake
                              INSTALL_DESTINATION ${TILEOPS_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tileops-config-version.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/tileops-config.cmake
              ${CMAKE_BINARY_DIR}/tileops-config-version.cmake
        DESTINATION ${TILEOPS_CMAKE_DIR})

# pkg-config: the static library's private dependencies are its consumers' link dependencies;
# paths relative to the .pc file, so that any --prefix works.
set(TILEOPS_PC_DNNL "")
if(TILEOPS_ONEDNN_FOUND)
  set(TILEOPS_PC_DNNL " -ldnnl")
endif()
set(TILEOPS_PC_PREFIX /p)
cmake_path(RELATIVE_PATH TILEOPS_PC_PREFIX BASE_DIRECTORY /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig)
configure_file(${PROJECT_SOURCE_DIR}/cmake/tileops.pc.in ${CMAKE_BINARY_DIR}/tileops.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/tileops.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
