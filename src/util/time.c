#include <understudy/array.h>
#include <understudy/codec.h>
#include <understudy/error.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Days since 1970-01-01 of a proleptic Gregorian date; pure arithmetic so the
 * result never depends on the machine's time zone. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

static int expect(const char **p, char c)
{
    if (**p != c)
        return -1;
    (*p)++;
    return 0;
}

int ust_time_parse(const char *text, int64_t *out_us)
{
    const char *p = text;
    int y, mo, d, h, mi, s;
    if (digits(&p, 4, &y) || expect(&p, '-') || digits(&p, 2, &mo) || expect(&p, '-') ||
        digits(&p, 2, &d) || (*p != 'T' && *p != 't') || (p++, digits(&p, 2, &h)) ||
        expect(&p, ':') || digits(&p, 2, &mi) || expect(&p, ':') || digits(&p, 2, &s))
        return UST_EPARSE;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
        (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 || s > 60)
        return UST_EPARSE;
    int64_t frac_us = 0;
    if (*p == '.') {
        p++;
        int n = 0;
        while (isdigit((unsigned char)*p)) {
            if (n < 6)
                frac_us = frac_us * 10 + (*p - '0');
            n++, p++;
        }
        if (n == 0 || n > 9)
            return UST_EPARSE;
        for (; n < 6; n++)
            frac_us *= 10;
    }
    int64_t offset_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh, om;
        p++;
        if (digits(&p, 2, &oh) || expect(&p, ':') || digits(&p, 2, &om) || oh > 23 ||
            om > 59)
            return UST_EPARSE;
        offset_s = sign * (oh * 3600 + om * 60);
    } else {
        return UST_EPARSE;
    }
    if (*p != '\0')
        return UST_EPARSE;
    int64_t secs =
        days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset_s;
    *out_us = secs * 1000000 + frac_us;
    return 0;
}

void ust_time_format(int64_t us, char buf[32])
{
    int64_t secs = us / 1000000, frac = us % 1000000;
    if (frac < 0)
        frac += 1000000, secs -= 1;
    time_t t = (time_t)secs;
    struct tm tm;
    gmtime_r(&t, &tm);
    /* tm fields are ints; the compiler cannot see they are in range, so
     * format into room enough for any int and copy the 27 bytes. */
    char tmp[96];
    snprintf(tmp, sizeof(tmp), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
             tm.tm_sec, (long long)frac);
    memcpy(buf, tmp, 31);
    buf[31] = '\0';
}

int ust_duration_parse(const char *text, int64_t *out_us)
{
    static const struct {
        const char *suffix;
        int64_t us;
    } units[] = {{"ms", 1000},        {"s", 1000000},       {"m", 60000000},
                 {"h", 3600000000LL}, {"d", 86400000000LL}, {"", 1000000}};
    /* Digits only (strtod would take "nan", "inf", "1e9", a sign and
     * spaces), and at most a century, so the product cannot overflow. */
    const int64_t max_us = 100LL * 366 * 86400000000LL;
    const char *p = text;
    int64_t whole = 0, frac = 0, scale = 1;
    if (!isdigit((unsigned char)*p))
        return UST_EPARSE;
    for (; isdigit((unsigned char)*p); p++)
        if ((whole = whole * 10 + (*p - '0')) > max_us)
            return UST_EPARSE;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return UST_EPARSE;
        for (; isdigit((unsigned char)*p); p++)
            if (scale < 1000000000LL) /* finer than a nanosecond day is noise */
                frac = frac * 10 + (*p - '0'), scale *= 10;
    }
    for (size_t i = 0; i < UST_ARRAY_SIZE(units); i++) {
        if (strcmp(p, units[i].suffix) != 0)
            continue;
        if (whole > max_us / units[i].us)
            return UST_EPARSE;
        int64_t us = whole * units[i].us +
                     (int64_t)((double)frac / (double)scale * (double)units[i].us);
        if (us <= 0 || us > max_us)
            return UST_EPARSE;
        *out_us = us;
        return 0;
    }
    return UST_EPARSE;
}
