# The installed package: the core libraries and their headers, and an exported CMake package
# (reduce_verifyConfig.cmake) so that a trainer's project does
#   find_package(reduce_verify REQUIRED)
#   target_link_libraries(trainer PRIVATE reduce_verify::core)
# The tool (reduce-verify), its libraries (CLI11, JSON) and the C ABI are not part of it.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(rv_package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/reduce_verify)
set(rv_exported_targets rv_build_rules rv_exact rv_core rv_digest rv_accumulator)
# The optional parts this build has, each a namespaced target of the package.
foreach(part rv_rendezvous rv_reducer rv_launch rv_in_process rv_membership rv_gloo rv_cuda rv_nccl
        rv_cuda_loopback)
  if(TARGET ${part})
    list(APPEND rv_exported_targets ${part})
  endif()
endforeach()

install(TARGETS ${rv_exported_targets}
        EXPORT reduce_verify_targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/reduce_verify)
# The public include tree (cmake/public_headers.cmake): each built part's entry headers and the
# headers they include, at their repository paths ("core/fold.h"), as the code includes them;
# no other header of core/ (detail headers, kernels, CUDA and transport internals).
include(${CMAKE_CURRENT_LIST_DIR}/public_headers.cmake)
set(rv_installed_headers ${RV_PUBLIC_GENERATED_HEADERS})
set(rv_installed_entry_headers ${RV_PUBLIC_GENERATED_HEADERS})
foreach(part IN LISTS RV_PUBLIC_PARTS)
  if(TARGET ${part})
    foreach(header IN LISTS RV_PUBLIC_ENTRY_${part} RV_PUBLIC_INCLUDED_${part})
      get_filename_component(folder ${header} DIRECTORY)
      install(FILES ${PROJECT_SOURCE_DIR}/${header}
              DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/reduce_verify/${folder})
    endforeach()
    list(APPEND rv_installed_headers ${RV_PUBLIC_ENTRY_${part}} ${RV_PUBLIC_INCLUDED_${part}})
    list(APPEND rv_installed_entry_headers ${RV_PUBLIC_ENTRY_${part}})
  endif()
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/core/build_info/generated/core/build_info/build_info.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/reduce_verify/core/build_info)
# What this build installs, one header a line, for the install-consumer test
# (tests/consumer/consumer_test.sh), which holds the installed tree to it.
list(SORT rv_installed_headers)
list(SORT rv_installed_entry_headers)
string(REPLACE ";" "\n" rv_lines "${rv_installed_headers}")
file(WRITE ${PROJECT_BINARY_DIR}/reduce_verify_public_headers.txt "${rv_lines}\n")
string(REPLACE ";" "\n" rv_lines "${rv_installed_entry_headers}")
file(WRITE ${PROJECT_BINARY_DIR}/reduce_verify_public_entry_headers.txt "${rv_lines}\n")
install(EXPORT reduce_verify_targets
        NAMESPACE reduce_verify::
        DESTINATION ${rv_package_dir})

set(RV_PACKAGE_HAS_CUDA ${RV_WITH_CUDA})
if(TARGET rv_membership)
  set(RV_PACKAGE_HAS_MEMBERSHIP ON)
else()
  set(RV_PACKAGE_HAS_MEMBERSHIP OFF)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/reduce_verifyConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/reduce_verifyConfig.cmake
                              INSTALL_DESTINATION ${rv_package_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/reduce_verifyConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/reduce_verifyConfig.cmake
              ${PROJECT_BINARY_DIR}/reduce_verifyConfigVersion.cmake
        DESTINATION ${rv_package_dir})
