# Read by cpack once per generator (CPACK_PROJECT_CONFIG_FILE in cmake/Packaging.cmake).
if(CPACK_GENERATOR STREQUAL "DEB")
  # Debian packages take libcurl, libstdc++, ... from Debian (Depends from dpkg-shlibdeps).
  list(REMOVE_ITEM CPACK_COMPONENTS_ALL bundled)
  set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
endif()
