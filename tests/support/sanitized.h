/* UST_TEST_SANITIZED: defined in a build under AddressSanitizer, where a
 * process's resident size is its shadow memory and quarantine, not its
 * data: the suites that bound memory skip those assertions there. */
#ifndef UST_TEST_SANITIZED_H
#define UST_TEST_SANITIZED_H

#if defined(__SANITIZE_ADDRESS__)
#define UST_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UST_TEST_SANITIZED 1
#endif
#endif

#endif
