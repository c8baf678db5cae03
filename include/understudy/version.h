/* understudy's version, as CMake's project() declares it: the one place it
 * is written, read by --version, every usage text and the reports. */
#ifndef UNDERSTUDY_VERSION_H
#define UNDERSTUDY_VERSION_H

/* "0.1.0": MAJOR.MINOR.PATCH. */
const char *ust_version(void);

#endif
