# install_test.cmake: the install / downstream-consumer test, run by ctest as `cmake -P`.
#
# 1. `cmake --install <build> --prefix <work>/prefix` installs every component.
# 2. tests/consumer is configured against that prefix (find_package(rlx-<pkg>) per package and the
#    umbrella find_package(rlx COMPONENTS ...)), built with the build tree's compiler, compile flags
#    and linker flags (RLX_CXX_FLAGS, RLX_EXE_LINKER_FLAGS: a sanitizer build needs its runtime in
#    the downstream program too), and its programs are run.
# 3. `cmake --install <build> --component rlx-<pkg> --prefix <work>/only-<pkg>` must install that
#    package's headers, library and config files, and nothing of any other package.
cmake_minimum_required(VERSION 3.25)

foreach(v RLX_BUILD_DIR RLX_CONSUMER_DIR RLX_WORK_DIR RLX_PACKAGES RLX_GENERATOR RLX_CXX_COMPILER
          RLX_INCLUDEDIR RLX_LIBDIR RLX_BINDIR)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "install_test.cmake: -D${v}=... is required")
  endif()
endforeach()
if(NOT RLX_CONFIG)
  set(RLX_CONFIG Release)
endif()
string(REPLACE "," ";" packages "${RLX_PACKAGES}")

# Runs a command; on failure prints its output and stops the test.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR "install test: ${what} failed (${rc})\n$ ${cmd}\n${out}")
  endif()
  message(STATUS "install test: ${what}: ok")
endfunction()

file(REMOVE_RECURSE "${RLX_WORK_DIR}")
file(MAKE_DIRECTORY "${RLX_WORK_DIR}")
set(prefix "${RLX_WORK_DIR}/prefix")

# ---- 1. full install ------------------------------------------------------------------------------
run("cmake --install (all components)"
    ${CMAKE_COMMAND} --install "${RLX_BUILD_DIR}" --prefix "${prefix}" --config ${RLX_CONFIG})

# ---- 2. downstream consumer -----------------------------------------------------------------------
set(consumer_build "${RLX_WORK_DIR}/consumer-build")
run("configure the consumer"
    ${CMAKE_COMMAND} -S "${RLX_CONSUMER_DIR}" -B "${consumer_build}" -G "${RLX_GENERATOR}"
    "-DCMAKE_CXX_COMPILER=${RLX_CXX_COMPILER}" "-DCMAKE_BUILD_TYPE=${RLX_CONFIG}"
    "-DCMAKE_CXX_FLAGS=${RLX_CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${RLX_EXE_LINKER_FLAGS}"
    "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    "-DRLX_CONSUMER_PACKAGES=${RLX_PACKAGES}")
run("build the consumer" ${CMAKE_COMMAND} --build "${consumer_build}" --config ${RLX_CONFIG})
foreach(pkg IN LISTS packages)
  if(EXISTS "${RLX_CONSUMER_DIR}/${pkg}.cpp")
    run("run consumer_${pkg}" "${consumer_build}/consumer_${pkg}")
  endif()
endforeach()

# ---- 3. one component alone -----------------------------------------------------------------------
foreach(pkg IN LISTS packages)
  set(only "${RLX_WORK_DIR}/only-${pkg}")
  run("cmake --install --component rlx-${pkg}"
      ${CMAKE_COMMAND} --install "${RLX_BUILD_DIR}" --component rlx-${pkg} --prefix "${only}"
      --config ${RLX_CONFIG})
  file(GLOB_RECURSE files LIST_DIRECTORIES false RELATIVE "${only}" "${only}/*")
  if(NOT files)
    message(FATAL_ERROR "install test: --component rlx-${pkg} installed nothing")
  endif()
  # What rlx-<pkg> may install: its headers, its library, its CMake package files, executables.
  set(own "^(${RLX_INCLUDEDIR}/rlx/${pkg}/.+|${RLX_INCLUDEDIR}/rlx/${pkg}\\.hpp"
          "|${RLX_LIBDIR}/librlx_${pkg}\\.(a|so[.0-9]*)|${RLX_LIBDIR}/cmake/rlx-${pkg}/[^/]+"
          "|${RLX_BINDIR}/[^/]+)$")
  string(JOIN "" own ${own})
  foreach(f IN LISTS files)
    if(NOT f MATCHES "${own}")
      message(FATAL_ERROR "install test: --component rlx-${pkg} installed '${f}', which is not "
                          "part of rlx-${pkg}")
    endif()
  endforeach()
  set(cfg "${RLX_LIBDIR}/cmake/rlx-${pkg}")
  foreach(required "${cfg}/rlx-${pkg}Config.cmake" "${cfg}/rlx-${pkg}ConfigVersion.cmake"
                   "${cfg}/rlx-${pkg}Targets.cmake")
    if(NOT required IN_LIST files)
      message(FATAL_ERROR "install test: --component rlx-${pkg} did not install ${required}")
    endif()
  endforeach()
  list(FILTER files INCLUDE REGEX "^${RLX_INCLUDEDIR}/rlx/")
  if(NOT files)
    message(FATAL_ERROR "install test: --component rlx-${pkg} installed no headers")
  endif()
  message(STATUS "install test: --component rlx-${pkg} installs rlx-${pkg} alone: ok")
endforeach()
