# One cmocka executable per test file, registered with ctest under its file
# name and labelled with what it is: `unit` (no process, no socket, quick)
# or `integration` (the real binary, child processes, sockets).
function(ust_add_cmocka_test source label)
  get_filename_component(name ${source} NAME_WE)
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE ust_test_support understudy_core PkgConfig::CMOCKA
                        Threads::Threads ${ARGN})
  # Tests build paths with snprintf into PATH_MAX buffers; gcc's truncation
  # guesses about them are noise there, not in the product code.
  target_compile_options(${name} PRIVATE -Wno-format-truncation)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES
    LABELS ${label}
    ENVIRONMENT "UST_SOURCE_DIR=${PROJECT_SOURCE_DIR};UST_BUILD_DIR=${PROJECT_BINARY_DIR};UST_BIN=$<TARGET_FILE:understudy>;UST_PLUGIN_SHIM=$<TARGET_FILE:understudy>"
    TIMEOUT 300)
endfunction()
