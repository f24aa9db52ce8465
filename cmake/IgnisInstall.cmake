# Install rules and the CMake package, so another project can
#   find_package(Ignis REQUIRED)  and  target_link_libraries(app PRIVATE Ignis::ignis)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ignis EXPORT IgnisTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ignis DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT IgnisTargets NAMESPACE Ignis:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Ignis)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/IgnisConfig.cmake.in
  ${PROJECT_BINARY_DIR}/IgnisConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Ignis)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/IgnisConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/IgnisConfig.cmake ${PROJECT_BINARY_DIR}/IgnisConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Ignis)
