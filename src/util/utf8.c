#include <understudy/codec.h>

int ust_utf8_valid(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint32_t cp, min;
        if ((c & 0xE0) == 0xC0) {
            need = 1, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            need = 2, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            need = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return 0;
        }
        if (len - i <= need)
            return 0;
        for (size_t k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += need + 1;
    }
    return 1;
}

uint32_t ust_utf8_bidi_control(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    /* E2 80 AA..AE is U+202A..U+202E, E2 81 A6..A9 is U+2066..U+2069; the
     * checks stop at the first byte that differs, so a NUL ends them. */
    if (u[0] != 0xE2 || !((u[1] == 0x80 && u[2] >= 0xAA && u[2] <= 0xAE) ||
                          (u[1] == 0x81 && u[2] >= 0xA6 && u[2] <= 0xA9)))
        return 0;
    return 0x2000u | (uint32_t)(u[1] & 0x3F) << 6 | (uint32_t)(u[2] & 0x3F);
}
