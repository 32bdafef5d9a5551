# Install rules: headers, libraries, a CMake package (find_package(memarena CONFIG) gives
# memarena::memarena) and a pkg-config file (memarena.pc).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/memarena DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The pytest guard (python/memarena): PYTHONPATH=<prefix>/share/memarena/python, then
# pytest -p memarena.pytest.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/memarena
        DESTINATION ${CMAKE_INSTALL_DATADIR}/memarena/python PATTERN __pycache__ EXCLUDE)
# Components append their installable targets to this global property.
get_property(_memarena_extra_targets GLOBAL PROPERTY MEMARENA_INSTALL_TARGETS)
install(TARGETS memarena ${_memarena_extra_targets} EXPORT memarenaTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT memarenaTargets NAMESPACE memarena::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memarena)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/memarenaConfig.cmake.in
  ${PROJECT_BINARY_DIR}/memarenaConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memarena)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/memarenaConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/memarenaConfig.cmake
              ${PROJECT_BINARY_DIR}/memarenaConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/memarena)
# memarena.pc finds its prefix relative to itself, so `cmake --install --prefix` works.
file(RELATIVE_PATH MEMARENA_PC_UP /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
set(MEMARENA_PC_EXTRA_LIBS "")
if(MEMARENA_SANITIZE)
  set(MEMARENA_PC_EXTRA_LIBS "-fsanitize=${MEMARENA_SANITIZE}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/memarena.pc.in ${PROJECT_BINARY_DIR}/memarena.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/memarena.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
