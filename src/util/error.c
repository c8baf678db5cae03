#include <understudy/array.h>
#include <understudy/error.h>

#include <stddef.h>

/* One row per code from the one X-macro, so the message and the name of a
 * code cannot drift apart; a miss gives the caller's fallback. */
static const struct {
    int err;
    const char *name;
    const char *msg;
} codes[] = {{UST_OK, "UST_OK", "success"},
#define UST_ERR_ROW_(name, msg) {UST_E##name, "UST_E" #name, msg},
             UST_ERRNO_MAP(UST_ERR_ROW_)
#undef UST_ERR_ROW_
};

static int code_index(int err)
{
    for (size_t i = 0; i < UST_ARRAY_SIZE(codes); i++)
        if (codes[i].err == err)
            return (int)i;
    return -1;
}

const char *ust_strerror(int err)
{
    int i = code_index(err);
    return i < 0 ? "unknown error" : codes[i].msg;
}

const char *ust_err_name(int err)
{
    int i = code_index(err);
    return i < 0 ? "UST_EUNKNOWN" : codes[i].name;
}
