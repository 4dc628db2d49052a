# `cmake --install`, a Debian package and a tarball beside it through CPack (`cpack -G "DEB;TGZ"` in the build
# tree; tests/packaging/check_packages.sh checks both in CI).
include(GNUInstallDirs)
# The examples a site or a user starts from: /etc/nccl.conf lines that turn wirewise on for every job on a
# node, the PyTorch environment file and toy job, and both static-table formats (docs/quickstart.md).
install(FILES examples/nccl.conf examples/static-table.json examples/nccl_tuner.conf
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES examples/pytorch/README.md examples/pytorch/wirewise.env examples/pytorch/ddp_toy.py
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples/pytorch)
set(CPACK_PACKAGE_NAME "wirewise")
set(CPACK_PACKAGE_VENDOR "wirewise")
set(CPACK_PACKAGE_CONTACT "wirewise maintainers <maintainers@wirewise.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Adaptive NCCL tuner and profiler plugin")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_GENERATOR "DEB;TGZ")
include(CPack)
