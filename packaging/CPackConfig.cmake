# `cpack -G DEB` (or `cmake --build build --target package`) builds powerctl_<version>_<arch>.deb
# with the binary, the shell completions and the man page.
set(CPACK_PACKAGE_NAME powerctl)
set(CPACK_PACKAGE_VENDOR "powerctl")
set(CPACK_PACKAGE_CONTACT "powerctl maintainers <maintainers@powerctl.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Power-aware scheduling toolkit for Kubernetes")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)
include(CPack)
