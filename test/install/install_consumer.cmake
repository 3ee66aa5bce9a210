# cmake -P script run by the install_consumer test: install, configure the consumer, build it, run it.
# Every step must succeed; the first failure ends the script with a non-zero exit and the step's output.
cmake_minimum_required(VERSION 3.25)
foreach(var MAPRECT_BUILD_DIR WORK_DIR CONSUMER_SOURCE_DIR CONSUMER_GENERATOR CONSUMER_CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_consumer.cmake: -D${var}=... is required")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer-build)
file(REMOVE_RECURSE ${WORK_DIR})  # a stale prefix could hide a file the install rules no longer ship

function(step name)
  message(STATUS "install_consumer: ${name}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: ${name} failed (${rc})")
  endif()
endfunction()

step("install into ${prefix}" ${CMAKE_COMMAND} --install ${MAPRECT_BUILD_DIR} --prefix ${prefix})
step("configure consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${consumer_build}
  -G ${CONSUMER_GENERATOR} -DCMAKE_CXX_COMPILER=${CONSUMER_CXX_COMPILER}
  "-DCMAKE_CXX_FLAGS=${CONSUMER_CXX_FLAGS}" -DCMAKE_BUILD_TYPE=${CONSUMER_BUILD_TYPE}
  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
step("build consumer" ${CMAKE_COMMAND} --build ${consumer_build})
step("run consumer" ${consumer_build}/consumer)
