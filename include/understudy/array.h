/* UST_ARRAY_SIZE: the number of elements of an array, the one spelling of
 * sizeof(a) / sizeof(a[0]) in the tree. Given a pointer instead of an array
 * it would silently count sizeof(void *) / sizeof(*p), so under GCC and
 * clang a pointer does not compile (as Linux's ARRAY_SIZE). */
#ifndef UNDERSTUDY_ARRAY_H
#define UNDERSTUDY_ARRAY_H

#include <stddef.h>

#if defined(__GNUC__)
/* 0, or a negative array size (a compile error) when a is a pointer. */
#define UST__MUST_BE_ARRAY(a)                                                          \
    (0 * sizeof(char[1 - 2 * __builtin_types_compatible_p(__typeof__(a),               \
                                                          __typeof__(&(a)[0]))]))
#else
#define UST__MUST_BE_ARRAY(a) 0
#endif

#define UST_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]) + UST__MUST_BE_ARRAY(a))

#endif
