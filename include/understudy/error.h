/* Error codes shared by every module: 0 is success, a negative UST_E* a failure.
 * Detail for people goes into an out-parameter message (char **err) that the
 * caller frees with ust_free(); library code never prints. */
#ifndef UNDERSTUDY_ERROR_H
#define UNDERSTUDY_ERROR_H

#define UST_ERRNO_MAP(XX)                                                              \
    XX(NOMEM, "out of memory")                                                         \
    XX(INVAL, "invalid argument")                                                      \
    XX(IO, "input/output error")                                                       \
    XX(DB, "database error")                                                           \
    XX(PARSE, "malformed input")                                                       \
    XX(CONFIG, "invalid configuration")                                                \
    XX(TAMPER, "event log chain is broken")                                            \
    XX(NOTFOUND, "not found")                                                          \
    XX(EXISTS, "already exists")                                                       \
    XX(PLUGIN, "plugin failure")                                                       \
    XX(LIMIT, "limit exceeded")                                                        \
    XX(TIMEOUT, "timed out")                                                           \
    XX(EOF, "end of file")

typedef enum {
    UST_OK = 0,
#define UST_ERR_ENUM_(name, msg) UST__ERRBASE_##name,
    UST__ERRBASE_ZERO_ = 0,
    UST_ERRNO_MAP(UST_ERR_ENUM_)
#undef UST_ERR_ENUM_
} ust__errbase;

enum {
#define UST_ERR_NEG_(name, msg) UST_E##name = -(int)UST__ERRBASE_##name,
    UST_ERRNO_MAP(UST_ERR_NEG_)
#undef UST_ERR_NEG_
};

/* Static text for an error code ("out of memory"); never NULL. */
const char *ust_strerror(int err);
/* Static name for an error code ("UST_ENOMEM"); never NULL. */
const char *ust_err_name(int err);

#endif
