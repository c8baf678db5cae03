#include <understudy/error.h>

const char *ust_strerror(int err)
{
    switch (err) {
    case UST_OK:
        return "success";
#define UST_ERR_STR_(name, msg)                                                        \
    case UST_E##name:                                                                  \
        return msg;
        UST_ERRNO_MAP(UST_ERR_STR_)
#undef UST_ERR_STR_
    }
    return "unknown error";
}

const char *ust_err_name(int err)
{
    switch (err) {
    case UST_OK:
        return "UST_OK";
#define UST_ERR_NAME_(name, msg)                                                       \
    case UST_E##name:                                                                  \
        return "UST_E" #name;
        UST_ERRNO_MAP(UST_ERR_NAME_)
#undef UST_ERR_NAME_
    }
    return "UST_EUNKNOWN";
}
