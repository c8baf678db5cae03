# A reference plugin (legacy, candidate): a self-contained shared library
# understudy-NAME.so from NAME.c and plugin_util.c that uses only plugin.h and
# jansson (never understudy_core), as any third-party plugin would.
include_guard(GLOBAL)

function(ust_reference_plugin name)
  add_library(understudy-${name} MODULE
              ${name}.c ${PROJECT_SOURCE_DIR}/src/plugins/common/plugin_util.c)
  set_target_properties(understudy-${name} PROPERTIES
                        PREFIX ""
                        OUTPUT_NAME understudy-${name}
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}
                        C_VISIBILITY_PRESET hidden)
  target_include_directories(understudy-${name} PRIVATE
                             ${PROJECT_SOURCE_DIR}/include
                             ${PROJECT_SOURCE_DIR}/src/plugins/common)
  target_link_libraries(understudy-${name} PRIVATE PkgConfig::JANSSON)
endfunction()
