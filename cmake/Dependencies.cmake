# Every dependency is a Debian package; a missing one stops configure with the
# name of the package to install, so nobody has to guess from a linker error.
find_package(PkgConfig)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found: apt-get install pkg-config")
endif()

function(ust_require_pkg target module debian_pkg)
  pkg_check_modules(${target} QUIET IMPORTED_TARGET ${module})
  if(NOT ${target}_FOUND)
    message(FATAL_ERROR "${module} not found: apt-get install ${debian_pkg}")
  endif()
endfunction()

ust_require_pkg(SQLITE3 sqlite3 libsqlite3-dev)
ust_require_pkg(JANSSON jansson libjansson-dev)
ust_require_pkg(OPENSSL libcrypto libssl-dev)
ust_require_pkg(LIBUV libuv libuv1-dev)
ust_require_pkg(CMOCKA cmocka libcmocka-dev)
# sd_notify for Type=notify units (READY=1, the watchdog).
ust_require_pkg(SYSTEMD libsystemd libsystemd-dev)
# The HTTP client (http_client.h): keep-alive, timeouts, https.
ust_require_pkg(CURL libcurl libcurl4-openssl-dev)
# The event log in PostgreSQL (docs/log.md).
ust_require_pkg(LIBPQ libpq libpq-dev)

# Debian's http-parser ships no pkg-config file.
find_path(HTTP_PARSER_INCLUDE_DIR http_parser.h)
find_library(HTTP_PARSER_LIBRARY http_parser)
if(NOT HTTP_PARSER_INCLUDE_DIR OR NOT HTTP_PARSER_LIBRARY)
  message(FATAL_ERROR "http_parser not found: apt-get install libhttp-parser-dev")
endif()
add_library(ust_http_parser INTERFACE)
target_include_directories(ust_http_parser INTERFACE ${HTTP_PARSER_INCLUDE_DIR})
target_link_libraries(ust_http_parser INTERFACE ${HTTP_PARSER_LIBRARY})
