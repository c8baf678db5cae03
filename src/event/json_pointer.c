/* RFC 6901 JSON Pointer: lookup without copying the pointer (a reference
 * token is unescaped only when it holds a '~'), and the syntax check the
 * config validation uses. */
#include <understudy/alloc.h>
#include <understudy/event.h>
#include <understudy/request.h>

#include "event/event_internal.h"

#include <string.h>

int ust__pointer_valid(const char *p)
{
    if (p == NULL)
        return 0;
    if (*p == '\0')
        return 1;
    if (*p != '/')
        return 0;
    for (; *p != '\0'; p++)
        if (*p == '~' && p[1] != '0' && p[1] != '1')
            return 0;
    return 1;
}

int ust__source_valid(const char *s)
{
    if (s == NULL)
        return 0;
    if (strncmp(s, UST__HEADER_PREFIX, UST__HEADER_PREFIX_LEN) == 0) {
        const char *name = s + UST__HEADER_PREFIX_LEN;
        return ust_http_token(name, strlen(name));
    }
    return ust__pointer_valid(s);
}

/* Array index token: "0" or [1-9][0-9]*, within size_t. */
static int parse_index(const char *tok, size_t len, size_t *out)
{
    if (len == 0 || (len > 1 && tok[0] == '0'))
        return -1;
    size_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (tok[i] < '0' || tok[i] > '9')
            return -1;
        size_t d = (size_t)(tok[i] - '0');
        if (v > ((size_t)-1 - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* Unescapes tok[0..len) into dst (room for len bytes); returns the new length
 * or (size_t)-1 for a bad escape. */
static size_t unescape(const char *tok, size_t len, char *dst)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (tok[i] != '~') {
            dst[n++] = tok[i];
            continue;
        }
        if (i + 1 >= len || (tok[i + 1] != '0' && tok[i + 1] != '1'))
            return (size_t)-1;
        dst[n++] = tok[i + 1] == '0' ? '~' : '/';
        i++;
    }
    return n;
}

static json_t *step(json_t *node, const char *tok, size_t len)
{
    if (json_is_object(node)) {
        if (memchr(tok, '~', len) == NULL)
            return json_object_getn(node, tok, len);
        char local[256];
        char *buf = len <= sizeof(local) ? local : ust_malloc(len);
        if (buf == NULL)
            return NULL;
        size_t n = unescape(tok, len, buf);
        json_t *child = n == (size_t)-1 ? NULL : json_object_getn(node, buf, n);
        if (buf != local)
            ust_free(buf);
        return child;
    }
    if (json_is_array(node)) {
        size_t idx;
        /* "-" (past the end) and malformed indices fall out here. */
        if (parse_index(tok, len, &idx) != 0)
            return NULL;
        return json_array_get(node, idx);
    }
    return NULL;
}

json_t *ust_json_pointer(json_t *root, const char *pointer)
{
    if (root == NULL || pointer == NULL)
        return NULL;
    if (*pointer == '\0')
        return root;
    if (*pointer != '/')
        return NULL;
    json_t *node = root;
    const char *p = pointer + 1;
    for (;;) {
        const char *end = strchr(p, '/');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        node = step(node, p, len);
        if (node == NULL || end == NULL)
            return node;
        p = end + 1;
    }
}

json_t *ust_json_pointer_parent(json_t *root, const char *pointer, char *last,
                                size_t cap)
{
    const char *slash = pointer ? strrchr(pointer, '/') : NULL;
    if (slash == NULL || cap == 0)
        return NULL;
    size_t n = 0;
    for (const char *p = slash + 1; *p; p++) {
        if (n + 1 >= cap)
            return NULL;
        if (p[0] == '~' && (p[1] == '0' || p[1] == '1'))
            last[n++] = p[1] == '0' ? '~' : '/', p++;
        else
            last[n++] = *p;
    }
    last[n] = '\0';
    char *parent = ust_strndup(pointer, (size_t)(slash - pointer));
    json_t *found = parent ? ust_json_pointer(root, parent) : NULL;
    ust_free(parent);
    return found;
}
