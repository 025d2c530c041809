# lmrt_add_plugin(NAME SOURCES...): builds an lmrt plugin as a shared object (a MODULE library)
# named lmrt-NAME.so, compiled against lmrt_plugin.h only; it does not link liblmrt.
#
# Used in this tree (plugins/CMakeLists.txt) and, installed beside lmrtConfig.cmake, out of tree:
#
#   find_package(lmrt REQUIRED)
#   lmrt_add_plugin(myplugin myplugin.c)
#
# The header directory comes from LMRT_PLUGIN_INCLUDE_DIR when set, else from this tree
# (abi/include), else from the install prefix (this file in <prefix>/lib/cmake/lmrt, headers in
# <prefix>/include).
include_guard(GLOBAL)

if(NOT LMRT_PLUGIN_INCLUDE_DIR)
  if(EXISTS "${CMAKE_CURRENT_LIST_DIR}/../abi/include/lmrt/lmrt_plugin.h")
    get_filename_component(LMRT_PLUGIN_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../abi/include" ABSOLUTE)
  else()
    get_filename_component(LMRT_PLUGIN_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../../../include" ABSOLUTE)
  endif()
endif()

function(lmrt_add_plugin name)
  if(NOT ARGN)
    message(FATAL_ERROR "lmrt_add_plugin(${name}): no sources given")
  endif()
  if(NOT EXISTS "${LMRT_PLUGIN_INCLUDE_DIR}/lmrt/lmrt_plugin.h")
    message(FATAL_ERROR "lmrt_add_plugin: lmrt/lmrt_plugin.h not found under '${LMRT_PLUGIN_INCLUDE_DIR}'; "
                        "set LMRT_PLUGIN_INCLUDE_DIR")
  endif()
  add_library(${name} MODULE ${ARGN})
  target_include_directories(${name} PRIVATE "${LMRT_PLUGIN_INCLUDE_DIR}")
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    OUTPUT_NAME "lmrt-${name}"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  # Every symbol must resolve at link time: a plugin never depends on liblmrt's symbols.
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
    target_link_options(${name} PRIVATE "-Wl,--no-undefined")
  endif()
endfunction()
