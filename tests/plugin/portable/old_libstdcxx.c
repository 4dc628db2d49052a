/* A stand-in for an older libstdc++.so.6 (GCC 8's, as on RHEL 8 or in an older conda environment): the
   same soname and the version names GCC 8's library defines (old_libstdcxx.map, written by CMake), and
   nothing else. A library that needs a newer libstdc++ fails to load where this one comes first on the
   path; the plugin, which links libstdc++ in, must not. */
int ww_old_libstdcxx_stub(void) { return 0; }
