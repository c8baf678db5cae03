#include <understudy/version.h>

/* UST_VERSION comes from project(understudy VERSION ...) (src/CMakeLists.txt
 * gives it to this file alone, so a new version rebuilds one file). */
#ifndef UST_VERSION
#error "UST_VERSION is defined by the build"
#endif

const char *ust_version(void)
{
    return UST_VERSION;
}
