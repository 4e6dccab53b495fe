# RlxPackage.cmake: the one helper that declares an rlx package.
#
#   rlx_add_package(<name>
#     [INTERFACE]                       header-only package (rlx-opt)
#     [SOURCES src...]
#     [PUBLIC_LINK targets...]          linked PUBLIC (INTERFACE for header-only)
#     [PRIVATE_LINK targets...])
#
# creates target `rlx_<name>` with alias `rlx::<name>`, include dirs through BUILD/INSTALL interfaces,
# install rules under `COMPONENT rlx-<name>`, an export set, and a generated `rlx-<name>Config.cmake`
# + version file. The config's `find_dependency` calls are derived from what the target links: sibling
# rlx packages (`rlx::x` -> `rlx-x <version> EXACT`) and the third-party packages known to
# `_rlx_dependency_call` below. Linking a target the table does not know is a configure error, so an
# installed config can never silently miss a dependency.
include_guard(GLOBAL)
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

set(RLX_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake")

# Maps a link target to the find_dependency() line that provides it in an installed config.
function(_rlx_dependency_call target out_var)
  if(target MATCHES "^rlx::(.+)$")
    # Siblings are looked up beside this config first, so a consumer that points rlx-<x>_DIR at
    # one package of a prefix finds its siblings in the same prefix.
    set(call "find_dependency(rlx-${CMAKE_MATCH_1} ${PROJECT_VERSION} EXACT CONFIG "
             "HINTS \"\${CMAKE_CURRENT_LIST_DIR}/..\")")
    string(JOIN "" call ${call})
  elseif(target STREQUAL "nlohmann_json::nlohmann_json")
    set(call "find_dependency(nlohmann_json CONFIG)")
  elseif(target STREQUAL "Eigen3::Eigen")
    set(call "find_dependency(Eigen3 CONFIG)")
  elseif(target STREQUAL "DNNL::dnnl")
    set(call "find_dependency(dnnl CONFIG)")
  elseif(target MATCHES "^TBB::")
    set(call "find_dependency(TBB CONFIG)")
  elseif(target STREQUAL "OpenCL::OpenCL")
    set(call "find_dependency(OpenCL)")
  elseif(target STREQUAL "BLAS::BLAS")
    set(call "set(BLA_VENDOR OpenBLAS)\nfind_dependency(BLAS)")
  elseif(target STREQUAL "CLI11::CLI11")
    set(call "find_dependency(CLI11 CONFIG)")
  elseif(target STREQUAL "onnx_proto" OR target STREQUAL "onnx")
    # ONNX's config does not look for protobuf itself; its targets need protobuf::libprotobuf.
    set(call "find_dependency(Protobuf)\nfind_dependency(ONNX CONFIG)")
  elseif(target STREQUAL "Threads::Threads")
    set(call "find_dependency(Threads)")
  else()
    message(FATAL_ERROR "rlx_add_package: no find_dependency rule for linked target '${target}'; "
                        "add one to _rlx_dependency_call in cmake/RlxPackage.cmake")
  endif()
  set(${out_var} "${call}" PARENT_SCOPE)
endfunction()

function(rlx_add_package name)
  cmake_parse_arguments(PKG "INTERFACE" "" "SOURCES;PUBLIC_LINK;PRIVATE_LINK" ${ARGN})
  set(pkg "rlx-${name}")
  set(tgt "rlx_${name}")
  set(dir "${CMAKE_CURRENT_SOURCE_DIR}")

  if(PKG_INTERFACE)
    add_library(${tgt} INTERFACE)
    set(scope INTERFACE)
  else()
    add_library(${tgt} ${PKG_SOURCES})
    set(scope PUBLIC)
    target_compile_features(${tgt} PUBLIC cxx_std_20)
    target_compile_options(${tgt} PRIVATE ${RLX_WARNING_FLAGS})
    set_target_properties(${tgt} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    if(PKG_PRIVATE_LINK)
      target_link_libraries(${tgt} PRIVATE ${PKG_PRIVATE_LINK})
    endif()
  endif()
  add_library(rlx::${name} ALIAS ${tgt})
  set_target_properties(${tgt} PROPERTIES EXPORT_NAME ${name})
  if(PKG_INTERFACE)
    target_compile_features(${tgt} INTERFACE cxx_std_20)
  endif()
  target_include_directories(${tgt} ${scope} $<BUILD_INTERFACE:${dir}/include>
                                             $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  if(PKG_PUBLIC_LINK)
    target_link_libraries(${tgt} ${scope} ${PKG_PUBLIC_LINK})
  endif()

  # Config file: one find_dependency per distinct package linked (static archives carry their
  # private dependencies as LINK_ONLY, so private links need them too).
  set(deps "")
  foreach(t IN LISTS PKG_PUBLIC_LINK PKG_PRIVATE_LINK)
    _rlx_dependency_call(${t} call)
    if(NOT call IN_LIST deps)
      list(APPEND deps "${call}")
    endif()
  endforeach()
  list(JOIN deps "\n" RLX_PACKAGE_DEPENDENCIES)
  set(RLX_PACKAGE_NAME ${pkg})
  set(cfg_dir "${CMAKE_CURRENT_BINARY_DIR}/cmake")
  configure_file("${RLX_CMAKE_DIR}/rlx-package-config.cmake.in" "${cfg_dir}/${pkg}Config.cmake"
                 @ONLY)
  if(PKG_INTERFACE)
    set(arch ARCH_INDEPENDENT)
  endif()
  write_basic_package_version_file("${cfg_dir}/${pkg}ConfigVersion.cmake"
                                   VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion ${arch})

  install(TARGETS ${tgt} EXPORT ${pkg}-targets COMPONENT ${pkg}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(DIRECTORY "${dir}/include/" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT ${pkg})
  install(EXPORT ${pkg}-targets NAMESPACE rlx:: FILE ${pkg}Targets.cmake
          DESTINATION "${RLX_INSTALL_CMAKEDIR}/${pkg}" COMPONENT ${pkg})
  install(FILES "${cfg_dir}/${pkg}Config.cmake" "${cfg_dir}/${pkg}ConfigVersion.cmake"
          DESTINATION "${RLX_INSTALL_CMAKEDIR}/${pkg}" COMPONENT ${pkg})
  export(EXPORT ${pkg}-targets NAMESPACE rlx:: FILE "${cfg_dir}/${pkg}Targets.cmake")

  set_property(GLOBAL APPEND PROPERTY RLX_PACKAGES ${name})
endfunction()

# The environment of every test: `--gemm auto` records its measured choices in the build tree, never
# in the user's ~/.cache/rlx (choices timed under a loaded test run, or under the sanitizers, would
# then steer the user's own runs).
set(RLX_TEST_ENV "RLX_GEMM_CHOICES=${CMAKE_BINARY_DIR}/gemm-choices.tsv")

# rlx_add_test(<package> <name> SOURCES ... [LINK ...]): one gtest executable with the package label.
function(rlx_add_test pkg name)
  cmake_parse_arguments(T "" "" "SOURCES;LINK" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_compile_options(${name} PRIVATE ${RLX_WARNING_FLAGS})
  target_link_libraries(${name} PRIVATE ${T_LINK} GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${name} PROPERTIES LABELS rlx-${pkg} ENVIRONMENT "${RLX_TEST_ENV}"
                       DISCOVERY_TIMEOUT 60)
endfunction()
