# `cmake --install` and a Debian package through CPack (`cpack -G DEB` in the build tree).
set(CPACK_PACKAGE_NAME "wirewise")
set(CPACK_PACKAGE_VENDOR "wirewise")
set(CPACK_PACKAGE_CONTACT "wirewise maintainers <maintainers@wirewise.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Adaptive NCCL tuner and profiler plugin")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_GENERATOR "DEB;TGZ")
include(CPack)
