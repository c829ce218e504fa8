# Installation and the Debian package (README "Installing"; docs/daemon.md
# "Deployment"). Included from the top-level CMakeLists.txt.
#
#   cmake --install build --prefix /usr/local      (or any staging prefix)
#   scripts/package-deb.sh                          (cpack -G DEB: build/stripeline_<v>_<arch>.deb)
#
# What goes where (prefix P; the .deb's P is /usr):
#   P/bin/stripeline                                the program
#   P/<libdir>/stripeline/gentl/stripeline-sim.cti  the simulated GenTL producer (docs/cameras.md)
#   P/lib/systemd/system/stripeline.service         the hardened unit, its paths rewritten for P
#                                                   (/lib/systemd/system with the .deb, as Debian 12 packages do)
#   P/share/stripeline/configs/                     every example configuration, as in the repository
#   P/share/stripeline/python/                      the Python package's sources (pip install P/share/stripeline/python)
#   P/share/doc/stripeline/                         README.md and docs/*.md
#   SYSCONF/stripeline/daemon.toml                  the service's configuration (scans in /var/lib/stripeline/scans)
#   SYSCONF/stripeline/keys/                        CURVE keys handed to the unit by LoadCredential= (mode 0700)
# SYSCONF is /etc when P is /usr (the .deb), P/etc otherwise: decided at
# install time, so `cmake --install --prefix` never writes outside its prefix.

install(TARGETS stripeline RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# (stripeline_gentl_sim is installed beside its target above.)

install(FILES configs/demo.toml configs/replay.toml configs/camera.toml configs/daemon.toml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/stripeline/configs)
install(DIRECTORY configs/targets DESTINATION ${CMAKE_INSTALL_DATADIR}/stripeline/configs)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md")
install(DIRECTORY python/ DESTINATION ${CMAKE_INSTALL_DATADIR}/stripeline/python
        PATTERN "__pycache__" EXCLUDE PATTERN ".gitignore" EXCLUDE PATTERN "*.egg-info" EXCLUDE PATTERN "build" EXCLUDE)

# The unit and /etc: paths depend on the prefix given at install time
# (--prefix, or CPack's /usr), so they are written by install-time code.
set(STRIPELINE_UNIT_SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/configs/stripeline.service)
set(STRIPELINE_DAEMON_CONFIG_SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/configs/daemon.toml)
set(STRIPELINE_INSTALL_STAGING ${CMAKE_CURRENT_BINARY_DIR}/install-staging)
install(CODE "
  set(prefix \"\${CMAKE_INSTALL_PREFIX}\")
  if(prefix STREQUAL \"/usr\")
    set(etc /etc)
    set(units /lib/systemd/system)  # Debian 12's place for packaged units (merged /usr: the same folder)
  else()
    set(etc \"\${prefix}/etc\")
    set(units \"\${prefix}/lib/systemd/system\")
  endif()
  set(bin \"\${prefix}/${CMAKE_INSTALL_BINDIR}\")
  file(READ \"${STRIPELINE_UNIT_SOURCE}\" unit)
  string(REPLACE \"/usr/bin/stripeline\" \"\${bin}/stripeline\" unit \"\${unit}\")
  string(REPLACE \"/etc/stripeline\" \"\${etc}/stripeline\" unit \"\${unit}\")
  string(REPLACE \"file:/usr/share/doc/stripeline/\" \"file:\${prefix}/${CMAKE_INSTALL_DATAROOTDIR}/doc/stripeline/\" unit \"\${unit}\")
  file(MAKE_DIRECTORY \"${STRIPELINE_INSTALL_STAGING}\")
  file(WRITE \"${STRIPELINE_INSTALL_STAGING}/stripeline.service\" \"\${unit}\")
  file(INSTALL DESTINATION \"\${units}\" TYPE FILE
       PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
       FILES \"${STRIPELINE_INSTALL_STAGING}/stripeline.service\")
  # The service's configuration: the example daemon.toml with its scans
  # under the unit's StateDirectory.
  file(READ \"${STRIPELINE_DAEMON_CONFIG_SOURCE}\" config)
  string(REPLACE \"dir = \\\"out/daemon\\\"\" \"dir = \\\"/var/lib/stripeline/scans\\\"\" config \"\${config}\")
  file(WRITE \"${STRIPELINE_INSTALL_STAGING}/daemon.toml\" \"\${config}\")
  file(INSTALL DESTINATION \"\${etc}/stripeline\" TYPE FILE
       PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
       FILES \"${STRIPELINE_INSTALL_STAGING}/daemon.toml\")
  file(MAKE_DIRECTORY \"${STRIPELINE_INSTALL_STAGING}/keys\")
  file(INSTALL DESTINATION \"\${etc}/stripeline\" TYPE DIRECTORY
       DIR_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
       FILES \"${STRIPELINE_INSTALL_STAGING}/keys\")
")

# ---------------------------------------------------------------------------
# CPack: a Debian package. Depends come from dpkg-shlibdeps over the
# installed ELF files (Debian's package names of the shared libraries they
# need: libtbb12, libzmq5, libspdlog1.10, libaravis-0.8-0, ...). The CUDA
# runtime is linked statically (CUDA::cudart_static), so a CUDA build needs
# only the NVIDIA driver (libcuda.so.1, loaded at run time: Recommends).
set(CPACK_PACKAGE_NAME stripeline)
set(CPACK_PACKAGE_VENDOR "stripeline")
set(CPACK_PACKAGE_CONTACT "stripeline maintainers <stripeline@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Real-time laser profilometry on the GPU and the CPU")
set(CPACK_PACKAGE_DESCRIPTION "Turns laser-stripe frames into sub-pixel height rows, 16-bit height maps and PLY point clouds; live GigE Vision / USB3 Vision cameras, recordings, ZeroMQ streaming and a systemd daemon.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)  # Debian packages ship stripped binaries
if(STRIPELINE_HAVE_CUDA)
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libcuda1 | nvidia-driver-libs")
  set(CPACK_DEBIAN_PACKAGE_DESCRIPTION_EXTRA " Built with the CUDA backend (CUDA runtime linked statically; the NVIDIA driver is needed for the GPU, the CPU backend works without).")
endif()
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-zmq, python3-numpy")
# /etc/stripeline/daemon.toml is a conffile: an upgrade keeps the admin's edits.
set(STRIPELINE_DEB_CONTROL ${CMAKE_CURRENT_BINARY_DIR}/deb-control)
file(MAKE_DIRECTORY ${STRIPELINE_DEB_CONTROL})
file(WRITE ${STRIPELINE_DEB_CONTROL}/conffiles "/etc/stripeline/daemon.toml\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${STRIPELINE_DEB_CONTROL}/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
